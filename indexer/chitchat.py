"""How sure the meaning channel is that a prompt is chit-chat: a logistic regression on the prompt's vector.

The background sentences (background.py) say how close a prompt comes to the closest thing said about nothing;
this says which side of the line between the two kinds of prompt it falls on, learned from many of each: chit-chat
and general programming questions ("Kotlin'de data class copy derin kopya mı yapıyor?", "what is a Helm chart?")
against questions and tasks about a team's own work ("deploy et", "staging db hangi portta?"). A prompt it is
sure of asks a general question's evidence of recall (recall.Floor.general): no memory comes because its words
happen to be a tool the team also uses.

The weights are trained off the prompt path by bench/train_chitchat.py, from sources that are none of the
evaluation prompts (its docstring), and ship in data/ per embedder: another embedder, or none, has no classifier.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

DATA = Path(__file__).parent / "data"
# The likelihood above which a prompt counts as chit-chat (bench/recall/README.md, tuned constants).
SURE = 0.95
_weights: dict[tuple[str, int], np.ndarray | None] = {}


def weights_path(embedder_name: str) -> Path:
    return DATA / f"chitchat-{embedder_name}.npy"


def weights(embedder) -> np.ndarray | None:
    """The classifier for `embedder`'s vectors (its dim weights and a bias), or None when none was trained."""
    key = (embedder.name, embedder.dim)
    if key not in _weights:
        path = weights_path(embedder.name)
        w = np.load(path) if path.exists() else None
        _weights[key] = w if w is not None and w.shape == (embedder.dim + 1,) else None
    return _weights[key]


def likelihood(w: np.ndarray, vector: np.ndarray) -> float:
    """The chance that the prompt with unit `vector` is chit-chat, by the classifier `w`."""
    return float(1.0 / (1.0 + np.exp(-(float(w[:-1] @ vector) + float(w[-1])))))
