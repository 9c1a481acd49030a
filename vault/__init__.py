"""The memory vault: file format, atomic writes, git store, locking, secret guard."""
