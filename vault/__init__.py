"""The memory vault: file format, atomic writes, git store, locking, secret guard."""

# The version of the whole distribution (pyproject.toml reads it from here): `hafiza --version` and the MCP
# server print it without importlib.metadata, whose import (email parsing) cost `--version` ~60 ms.
__version__ = "0.1.0"
