"""Commits as hafiza writes and reads them: the message with its trailers, and `log`'s records."""

from __future__ import annotations

import re
from typing import NamedTuple

TRAILERS = ("Hafiza-Action", "Hafiza-Actor", "Hafiza-Reason")
_TRAILER = re.compile(r"^(Hafiza-[A-Za-z-]+): ?(.*)$", re.MULTILINE)

LOG_FORMAT = "--format=%H%x1f%aI%x1f%an%x1f%s%x1f%b%x1e"  # fields and records split by US and RS


def blob_id(data: bytes, like: str) -> str:
    """The id git gives a file holding `data`, in the hash of the id `like` (SHA-1, or SHA-256)."""
    from .trees import object_id

    return object_id(data, len(like) // 2, b"blob").hex()


class Commit(NamedTuple):
    """One commit as `log` reads it. A named tuple, not a dataclass: importing dataclasses (inspect, ast)
    cost every write ~5 ms."""

    sha: str
    date: str
    author: str
    subject: str
    trailers: dict[str, str] = {}  # never changed in place
    body: str = ""

    @property
    def is_hafiza(self) -> bool:
        return self.subject.startswith("hafiza:") and "Hafiza-Action" in self.trailers

    @property
    def action(self) -> str | None:
        return self.trailers.get("Hafiza-Action")


def message(subject: str, action: str, actor: str, reason: str | None = None, *, body: str = "",
            trailers: dict[str, str] | None = None) -> str:
    """A commit message: `hafiza: <subject>`, an optional paragraph, then the structured trailers
    (each value on one line: a trailer that wraps is read back cut)."""
    lines = [f"hafiza: {subject}", ""]
    if body.strip():
        lines += [body.strip(), ""]
    lines += [f"Hafiza-Action: {action}", f"Hafiza-Actor: {actor}"]
    if reason:
        lines.append("Hafiza-Reason: " + " ".join(reason.split()))
    for key, value in (trailers or {}).items():
        lines.append(f"{key}: " + " ".join(str(value).split()))
    return "\n".join(lines) + "\n"



def _entries(out: str) -> list[Commit]:
    return [_parse_entry(chunk) for chunk in out.split("\x1e") if chunk.strip()]


def _parse_entry(chunk: str) -> Commit:
    sha, date, author, subject, body = (chunk.strip("\n").split("\x1f") + [""] * 5)[:5]
    trailers = {k: v.strip() for k, v in _TRAILER.findall(body)}
    prose = "\n".join(line for line in body.splitlines() if not _TRAILER.match(line)).strip()
    return Commit(sha=sha, date=date, author=author, subject=subject, trailers=trailers, body=prose)
