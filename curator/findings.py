"""What a pass finds, before it becomes a proposal: a kind, the memories, why, on what evidence."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Finding:
    kind: str                      # merge-duplicate, mark-stale, archive, supersede, add-aliases, conflict, profile
    ids: tuple[str, ...]           # for merge/supersede: (kept or current, retired)
    reason: str                    # a sentence a person reads in `git log`
    evidence: str                  # the ids, shared terms or cosine, the path that is gone, the model's words
    confidence: float
    key: str                       # the proposal's identity, compared with rulings and open branches
    guards: tuple[str, ...] = ()
    exact: bool = False            # needs no judgement: may be applied straight to main
    data: dict = field(default_factory=dict)  # what the action needs (a path's detail, aliases, a verdict)
    proposable: bool = True        # False: a report line only ("possible conflict, needs a person")

    def to_json(self) -> dict:
        return {"kind": self.kind, "memories": list(self.ids), "reason": self.reason, "evidence": self.evidence,
                "confidence": round(self.confidence, 2), "guards": list(self.guards), "key": self.key,
                "exact": self.exact, "proposable": self.proposable}


def pair_key(kind: str, a: str, b: str, ordered: bool = False) -> str:
    """`kind:a+b` with the ids sorted (a pair is a pair whichever way round), or `kind:a>b` when order matters."""
    return f"{kind}:{a}>{b}" if ordered else f"{kind}:{'+'.join(sorted((a, b)))}"
