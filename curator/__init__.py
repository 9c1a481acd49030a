"""Deterministic and offline passes over the vault: duplicates, contradictions, decay (built later)."""
