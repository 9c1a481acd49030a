"""Claims a memory makes and the probes that check them (built later)."""
