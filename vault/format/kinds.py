"""A memory's types and statuses, and how each type decays: the file format's vocabulary.

Imports nothing: the command line reads it at every start (`--type` choices), where importing
the whole format (vault/format/model.py) cost ~14 ms.
"""

# Half-life in days per type; None means the memory never decays (docs/architecture.md, memory types).
HALF_LIFE = {
    "identity": None,
    "rule": None,
    "preference": 365.0,
    "lesson": 365.0,
    "knowledge": 150.0,
    "fact": None,  # the current value of a fact never decays; its history is superseded
}
TYPES = tuple(HALF_LIFE)
STATUSES = ("active", "superseded", "archived")
SCOPE_PATTERN = r"^(global|project:[\w.\-]+)$"  # where a memory applies: everywhere, or in one project
