"""The skills of a vault: drafts waiting on review branches, promoted skills on main, and the two decisions.

`promote` is the only way a draft becomes a skill: one commit on main writes `skills/<name>/SKILL.md`
without the inert flag (the draft's proposal counts as accepted), then the file is installed where the
client reads skills. `reject` records a ruling, so no later run drafts the procedure again.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from hafiza.vault.errors import HafizaError, MemoryNotFound
from hafiza.vault.files import atomic_write
from hafiza.vault.review import Review

from .drafts import ACTIVE, DRAFTS, active_names

INERT = "disable-model-invocation: true"


class SkillNotFound(MemoryNotFound):
    """No draft or skill of that name."""


@dataclass
class Entry:
    name: str
    state: str            # draft | active
    branch: str = ""      # a draft's review branch
    number: int = 0       # its action number there
    evidence: str = ""

    def to_json(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if v not in ("", 0)}


def drafts(vault) -> list[tuple[Entry, object, object]]:
    """(entry, branch, proposal) for each open skill draft, oldest branch first."""
    out = []
    for branch in Review(vault).branches():
        if branch.name.startswith("skills/"):
            for p in branch.open:
                name = p.commit.subject.removeprefix("hafiza: draft skill ").strip()
                out.append((Entry(name, "draft", branch.name, p.number, p.to_json()["evidence"]), branch, p))
    return out


def entries(vault) -> list[Entry]:
    """Every draft and every promoted skill."""
    return [e for e, _, _ in drafts(vault)] + [Entry(n, "active") for n in active_names(vault.root)]


def show(vault, name: str) -> tuple[Entry, str]:
    """The entry and SKILL.md text of the draft or skill `name` (a draft first: it is what waits on you)."""
    for entry, branch, proposal in drafts(vault):
        if entry.name == name:
            data = vault.git.blob(proposal.commit.sha, f"{DRAFTS}/{name}/SKILL.md") or b""
            return entry, data.decode("utf-8", "replace")
    path = Path(vault.root) / ACTIVE / name / "SKILL.md"
    if name in active_names(vault.root):
        return Entry(name, "active"), path.read_text(encoding="utf-8", errors="replace")
    raise SkillNotFound(f"no skill draft or skill named {name!r}; `hafiza skills list` shows them")


def _draft(vault, name: str):
    for entry, branch, proposal in drafts(vault):
        if entry.name == name:
            return branch, proposal
    if name in active_names(vault.root):
        raise HafizaError(f"{name} is already a skill (skills/{name}/SKILL.md)")
    raise SkillNotFound(f"no skill draft named {name!r}; `hafiza skills list` shows the drafts")


def active_text(draft: str) -> str:
    """The draft's text without the flag that kept it inert (its line in the front matter)."""
    head, sep, rest = draft.partition("\n---\n")
    lines = [line for line in head.split("\n") if line.strip() != INERT]
    return "\n".join(lines) + sep + rest


def targets(environ: Mapping[str, str], client: str = "claude-code", project: Path | None = None) -> Path:
    """The folder the client reads skills from: Claude Code's $CLAUDE_CONFIG_DIR/skills (~/.claude/skills)
    or <project>/.claude/skills, Codex's $CODEX_HOME/skills (~/.codex/skills)."""
    home = Path(environ.get("HOME") or Path.home())
    if client == "codex":
        return Path(environ.get("CODEX_HOME") or home / ".codex") / "skills"
    if project is not None:
        return Path(project) / ".claude" / "skills"
    return Path(environ.get("CLAUDE_CONFIG_DIR") or home / ".claude") / "skills"


def promote(vault, name: str, install: list[Path]) -> tuple[str, list[Path]]:
    """Make draft `name` a skill: one commit on main, then the file in each folder of `install`;
    (sha, installed files). A different skill of that name already installed stops it before the commit."""
    branch, proposal = _draft(vault, name)
    data = vault.git.blob(proposal.commit.sha, f"{DRAFTS}/{name}/SKILL.md")
    if data is None:
        raise HafizaError(f"the draft of {name} has no SKILL.md on {branch.name}")
    text = active_text(data.decode("utf-8"))
    places = [Path(folder) / name / "SKILL.md" for folder in install]
    for place in places:
        if place.exists() and place.read_text(encoding="utf-8", errors="replace") != text:
            raise HafizaError(f"{place} already holds a different skill named {name}; move it away first",
                              field="name")
    sha = Review(vault).accept_as(branch, proposal, {f"{ACTIVE}/{name}/SKILL.md": text.encode("utf-8")},
                                  f"promote skill {name}", "promote-skill")
    for place in places:
        place.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(place, text, mode=0o644)  # the client reads it as any skill file
    return sha, places


def reject(vault, name: str, why: str | None = None) -> None:
    """Drop draft `name` and record a ruling: the same procedure is never drafted again."""
    branch, proposal = _draft(vault, name)
    Review(vault).reject(branch, [proposal.number], why)
