"""Train the chit-chat classifier (indexer/chitchat.py) and check it on every spent set's prompts.

    .venv/bin/python bench/train_chitchat.py            # train, write indexer/data/chitchat-usem3.npy, check
    .venv/bin/python bench/train_chitchat.py --check    # check the weights shipped, train nothing

Chit-chat (label 1): the 600 calibration chit-chat prompts (bench/recall/calib/chitchat.jsonl), the background
sentences (indexer/data/background.txt) and bench/recall/chitchat-corpus/chitchat.jsonl. About a team's own work
(label 0): the aliases agents wrote for the memories of the tuning set and of r50-r53 (their aliases.jsonl: what
a person would type when that memory helps), the calibration prompts with a subject (calib/subjects.jsonl) and
chitchat-corpus/team.jsonl. Each was written blind, and none of them is a prompt of an evaluation set: the check
runs on the prompts of every spent set (bench/tune.py's sets), so it is held out as a whole. The texts are embedded
as the meaning channel embeds a prompt (recall._subject_clauses, the start and end); an L2-regularised logistic
regression, the two labels weighed equally, fitted by Newton's method (numpy; 513 numbers).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
DATA = HERE / "recall"
sys.path.insert(0, str(HERE))

import recall as evaluation  # noqa: E402

REGULARISATION = 1.0
ALIASES = ["aliases.jsonl", "r50/aliases.jsonl", "r51/aliases.jsonl", "r52/aliases.jsonl", "r53/aliases.jsonl"]


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def examples() -> tuple[list[str], list[str]]:
    """(chit-chat texts, texts about a team's own work)."""
    from hafiza.indexer.background import DATA as BACKGROUND

    chitchat = [row["query"] for row in lines(DATA / "calib" / "chitchat.jsonl")]
    chitchat += [line.strip() for line in BACKGROUND.read_text(encoding="utf-8").splitlines()
                 if line.strip() and not line.startswith("#")]
    chitchat += [row["query"] for row in lines(DATA / "chitchat-corpus" / "chitchat.jsonl")]
    team = [row["query"] for row in lines(DATA / "calib" / "subjects.jsonl")]
    team += [row["query"] for row in lines(DATA / "chitchat-corpus" / "team.jsonl")]
    for name in ALIASES:
        team += [phrase for row in lines(DATA / name) for phrase in row["aliases"]]
    return chitchat, team


def embed(model, texts: list[str]) -> np.ndarray:
    from hafiza.indexer.recall import MAX_EMBED_CHARS, _head_and_tail, _subject_clauses

    return model.embed([_head_and_tail(_subject_clauses(t), MAX_EMBED_CHARS) for t in texts])


def fit(X: np.ndarray, y: np.ndarray, lam: float = REGULARISATION, steps: int = 30) -> np.ndarray:
    """Weights and bias of the logistic regression, each label weighed as much as the other."""
    X1 = np.hstack([X, np.ones((len(X), 1))])
    w = np.zeros(X1.shape[1])
    share = np.where(y == 1, len(y) / (2 * y.sum()), len(y) / (2 * (len(y) - y.sum())))
    ridge = lam * np.diag(np.r_[np.ones(X.shape[1]), 0.0])  # the bias is not shrunk
    for _ in range(steps):
        p = 1 / (1 + np.exp(-X1 @ w))
        gradient = X1.T @ (share * (p - y)) + ridge @ w
        hessian = (X1 * (share * p * (1 - p))[:, None]).T @ X1 + ridge
        w -= np.linalg.solve(hessian, gradient)
    return w.astype(np.float32)


def check(model, w: np.ndarray) -> None:
    """Per spent set: the AUC of chit-chat against answerable prompts, and how many of each pass SURE."""
    import tune
    from hafiza.indexer.chitchat import SURE, likelihood

    print(f"{'set':<6} {'AUC':>6} {'chit-chat sure':>15} {'answerable sure':>16}")
    for name, (_, files) in tune.tuning_sets().items():
        prompts = [p for f in files for p in evaluation.load(f)]
        p = [likelihood(w, v) for v in embed(model, [x["query"] for x in prompts])]
        chit = [q for x, q in zip(prompts, p) if x["kind"] == "chitchat"]
        ans = [q for x, q in zip(prompts, p) if x["expect"]]
        auc = float(np.mean([[1.0 if a > b else 0.5 if a == b else 0.0 for b in ans] for a in chit]))
        print(f"{name:<6} {auc:>6.3f} {sum(q > SURE for q in chit):>8}/{len(chit):<6} "
              f"{sum(q > SURE for q in ans):>8}/{len(ans):<7}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="check the shipped weights only")
    args = ap.parse_args(argv)
    from hafiza.indexer.chitchat import weights_path
    from hafiza.indexer.embed import make_embedder

    model = make_embedder("usem3")
    path = weights_path(model.name)
    if not args.check:
        chitchat, team = examples()
        X = np.vstack([embed(model, chitchat), embed(model, team)])
        y = np.r_[np.ones(len(chitchat)), np.zeros(len(team))]
        w = fit(X, y)
        np.save(path, w)
        print(f"trained on {len(chitchat)} chit-chat and {len(team)} team texts: {path.relative_to(HERE.parent)}")
    check(model, np.load(path))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
