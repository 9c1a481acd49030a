"""The offline layer: review branches, and the model provider and its answers. Never on the prompt or the write
path (tests/test_architecture.py)."""
