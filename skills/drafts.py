"""Skill drafts: each recurring procedure written as an inert Claude Code skill on a review branch.

A draft is `skills/drafts/<name>/SKILL.md` with `disable-model-invocation: true`, so no client runs it
on its own; it lands on a review branch `skills/<date>` (one commit per draft), never on main, and
becomes a skill only through `hafiza skills promote`. The steps, the commands in them and the evidence are
written by code, verbatim; with a model provider the model may write the prose around them (when to
use it, what it prevents), and that prose passes the same gate or is dropped for the code's own.
At most MAX_DRAFTS per run; a rejected draft is a ruling and is not drafted again.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from pathlib import Path

from hafiza.vault.offline.answers import InvalidAnswer
from hafiza.vault.errors import HafizaError
from hafiza.vault.review import Action, Review
from hafiza.vault.format.text import fold_text

from . import gate
from .procedures import Procedure

ACTOR = "skills"
MAX_DRAFTS = 3
EVIDENCE_LINES = 12
DRAFTS, ACTIVE = "skills/drafts", "skills"
PROSE = {"type": "object", "required": ["description", "when", "why"], "properties": {
    "description": {"type": "string"}, "when": {"type": "string"}, "why": {"type": "string"}}}
SYSTEM = ("You write the prose of a skill file for a coding agent. The steps are fixed and shown to you; never "
          "add a command, flag or path that is not in them. Answer in the language of the task.")


@dataclass
class Draft:
    name: str
    description: str
    text: str
    procedure: Procedure
    by_model: bool = False


@dataclass
class Report:
    branch: str | None = None
    drafted: list[Draft] = field(default_factory=list)
    refused: list[tuple[str, list[str]]] = field(default_factory=list)  # (name, why not)
    known: int = 0       # already drafted, promoted or rejected
    left: int = 0        # over MAX_DRAFTS: the next run drafts them
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"branch": self.branch, "drafted": [d.name for d in self.drafted],
                "refused": [{"name": n, "problems": p} for n, p in self.refused],
                "known": self.known, "left": self.left, "notes": self.notes}


# ---- the text

GENERIC = {"git", "npm", "pnpm", "yarn", "bun", "npx", "make", "just", "python", "python3", "uv", "docker",
           "cargo", "go", "node", "bash", "sh", "run", "exec"}   # programs whose subcommand says more


def name_of(procedure: Procedure) -> str:
    """A name from the procedure's own words (what each step runs: `npm run lint` -> lint,
    `./scripts/migrate.sh` -> migrate), at most three; or the episode's task."""
    if procedure.source == "episodes":
        words = re.findall(r"[a-z0-9]+", fold_text(procedure.task))[:5]
    else:
        words = [w for step in procedure.steps if step.kind == "run" for w in _said(step.template)[:1]][:3]
    name = "-".join(dict.fromkeys(w for w in words if w))[:48].strip("-") or "procedure"
    return name + "-steps" if name in gate.BUILT_IN else name


def _said(template: str) -> list[str]:
    """The words of a step's template that name what it does: a script's stem, subcommands, not flags."""
    out = []
    for word in template.split()[1:]:
        stem = Path(word).stem if "/" in word or word.endswith((".sh", ".py")) else word
        if re.fullmatch(r"[a-z][a-z0-9-]*", stem) and stem not in GENERIC:
            out.append(stem)
    return out


def code_prose(procedure: Procedure) -> dict:
    """Description, when to use and what it prevents, written without a model."""
    n, days = len(procedure.seen), procedure.days
    span = days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}"
    if procedure.source == "episodes":
        return {"description": _cut(f"{procedure.task}: done the same way {n} times with no failure since ({span})."),
                "when": f"When the task is \u201c{procedure.task}\u201d again.",
                "why": f"Prevents working \u201c{procedure.task}\u201d out again: it succeeded {n} times with no "
                       f"failure since ({', '.join(days)})."}
    first, last = procedure.steps[0].text, procedure.steps[-1].text
    return {"description": _cut(f"The {len(procedure.steps)} steps from `{first}` to `{last}`, repeated by hand "
                                f"in {n} sessions ({span})."),
            "when": f"When you are about to run `{first}` and what followed it in the sessions below.",
            "why": f"Prevents repeating these {len(procedure.steps)} steps by hand and missing one: they recurred "
                   f"in {n} sessions on {len(days)} days ({', '.join(days)})."}


def _cut(text: str, limit: int = gate.MAX_DESCRIPTION) -> str:
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "\u2026"


def render(name: str, prose: dict, procedure: Procedure) -> str:
    """The SKILL.md of a draft: inert front matter, prose, the steps verbatim, the evidence."""
    lines = ["---", f"name: {name}", f"description: {_yaml_line(prose['description'])}",
             "disable-model-invocation: true", "---", f"# {name}", "", prose["when"].strip(), "",
             "## Why", prose["why"].strip(), "", "## Steps"]
    for n, step in enumerate(procedure.steps, 1):
        if step.kind == "edit":
            like = step.template.removeprefix("edit ")
            lines.append(f"{n}. Edit `{step.path}`" + (f" (files like `{like}`)" if like != step.path else ""))
        else:
            lines.append(f"{n}. Run `{step.text}`")
    if not procedure.steps:
        lines.append("No command was recorded; the notes below say what was done.")
    if procedure.notes:
        lines += ["", "## How it went", *(f"- {note[:600]}" for note in procedure.notes)]
    lines += ["", "## Evidence"]
    shown = procedure.seen[-EVIDENCE_LINES:]
    if len(procedure.seen) > len(shown):
        lines.append(f"- \u2026 and {len(procedure.seen) - len(shown)} earlier")
    lines += [f"- {s.day} \u00b7 {s.client} {'episode' if s.client == 'episode' else 'session'} `{s.session}`"
              + (f" \u00b7 {s.project}" if s.project else "") for s in shown]
    return "\n".join(lines) + "\n"


def _yaml_line(text: str) -> str:
    """One YAML scalar on one line, quoted."""
    import json

    return json.dumps(" ".join(text.split()), ensure_ascii=False)


def model_prose(provider, procedure: Procedure, fallback: dict) -> dict | None:
    """The model's description/when/why for the procedure; None when there is no model or it failed."""
    if provider is None or not provider.available or getattr(provider, "spent", False):
        return None
    steps = "\n".join(f"{n}. {s.text}" for n, s in enumerate(procedure.steps, 1))
    prompt = (f"A user repeated this procedure ({fallback['why']})\n\nSteps:\n{steps}\n\n"
              + (f"Task: {procedure.task}\n" if procedure.task else "")
              + "Write: description (one line, at most 200 characters, what it does and when to use it), "
                "when (one short paragraph: when to follow it), why (one sentence naming the repetition or "
                f"failure it prevents; say it was seen in {len(procedure.seen)} sessions).")
    try:
        data = provider.ask(prompt, PROSE, system=SYSTEM).data
    except (InvalidAnswer, HafizaError):
        return None
    return {k: " ".join(str(data[k]).split()) if k == "description" else str(data[k]).strip() for k in PROSE["required"]}


# ---- a run

def make(procedure: Procedure, name: str, provider, project: Path | None, search_path: str | None,
         notes: list[str]) -> tuple[Draft | None, list[str]]:
    """The draft of `procedure` that passes the gate (the model's prose first, then the code's), or why not."""
    fallback = code_prose(procedure)
    tries = [(p, True) for p in [model_prose(provider, procedure, fallback)] if p] + [(fallback, False)]
    found: list[str] = []
    for prose, by_model in tries:
        text = render(name, prose, procedure)
        found = gate.problems(name, prose["description"], text, prose["why"], procedure.steps, project,
                              search_path, str(len(procedure.seen)), strict=by_model)
        if not found:
            return Draft(name, prose["description"], text, procedure, by_model), []
        if by_model:
            notes.append(f"{name}: the model's prose was dropped ({'; '.join(found)})")
    return None, found


def run(vault, procedures: list[Procedure], *, provider=None, projects: dict | None = None,
        search_path: str | None = None, limit: int = MAX_DRAFTS, here: Path | None = None,
        now: dt.datetime | None = None) -> Report:
    """Draft up to `limit` of `procedures` not drafted, promoted or rejected before, on one review branch.
    `here`: the project an episode's commands are checked in (an episode names no folder)."""
    review = Review(vault, actor=ACTOR)
    decided = set(review.rulings()) | review.open_keys()
    report, taken = Report(), set(active_names(vault.root))
    for procedure in procedures:
        name = name_of(procedure)
        if procedure.key in decided or name in taken:
            report.known += 1
            continue
        if len(report.drafted) >= limit:
            report.left += 1
            continue
        draft, found = make(procedure, name, provider, project_of(procedure, projects or {}, here), search_path,
                            report.notes)
        if draft is None:
            report.refused.append((name, found))
            continue
        taken.add(name)
        report.drafted.append(draft)
    if report.drafted:
        report.branch = review.start("skills", now)
        review.propose_all(report.branch, [action(d) for d in report.drafted])
    return report


def project_of(procedure: Procedure, projects: dict, here: Path | None = None) -> Path | None:
    """Where the project of the procedure's last run is on this machine: its folder, or a known project
    (for an episode: `here`)."""
    last = procedure.last
    for folder in (last.cwd, projects.get(last.project) if last.project else here):
        if folder and Path(folder).is_dir():
            return Path(folder)
    return None


def action(draft: Draft) -> Action:
    p = draft.procedure
    evidence = "; ".join(f"{s.client}:{s.session} {s.day}" for s in p.seen[-EVIDENCE_LINES:])
    return Action("draft-skill", f"draft skill {draft.name}", p.key,
                  {f"{DRAFTS}/{draft.name}/SKILL.md": draft.text.encode("utf-8")},
                  reason=code_prose(p)["why"], evidence=evidence[:1000], confidence=1.0,
                  guards=("recurs in 3+ sessions on 2+ days" if p.source == "transcripts" else
                          "3+ successes, no failure since", "cited paths and commands exist", "no bypass flags",
                          "under 7000 characters", "not a built-in command", "inert until promoted")
                  + (("prose by model",) if draft.by_model else ()),
                  body=f"{draft.description}\n\nSteps: " + " | ".join(s.text for s in p.steps)[:1500])


def active_names(root: Path) -> list[str]:
    """The promoted skills: skills/<name>/SKILL.md in the vault."""
    folder = Path(root) / ACTIVE
    return sorted(p.parent.name for p in folder.glob("*/SKILL.md") if p.parent.name != "drafts") if folder.is_dir() else []
