"""The model-talking code: the provider that asks a language model (provider.py) and the checks of what it
answered (answers.py). Only the offline jobs that choose to ask a model (the curator, the verifier, skills,
their commands) import it; nothing on the write path (vault/store, git, format, guard) or the prompt path
(the prompt hook, recall and search, the warm process) does, even inside a function (tests/test_architecture.py)."""
