"""Transcript ingestion and inert skill drafts for recurring procedures (built later)."""
