"""hafiza: long-term memory for AI coding agents."""
