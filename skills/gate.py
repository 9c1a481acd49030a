"""The guards every skill draft passes before it is proposed; a draft that fails one is not written.

A draft must say what repetition it prevents, at least half of the paths and commands it cites must
exist in the project (the verifier's probes: a path, a make/npm/just target), it must hold no bypass
flag and no secret, stay under MAX_CHARS, and its name must not shadow a command the clients have built in.
"""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path, PurePosixPath

from hafiza.verifier import probes
from hafiza.vault.guard.secrets import find_secrets

from .steps import ASSIGN, Step, command_step

MAX_CHARS = 7_000          # the SKILL.md body
MAX_DESCRIPTION = 200
MIN_EXISTING = 0.5         # share of cited paths and commands that must exist
BYPASS = re.compile(r"--force\b|--no-verify\b|\bFORCE=1\b|#\s*noqa\b|\|\|\s*true\b")
NAME = re.compile(r"^[a-z0-9][a-z0-9-]{1,62}$")
# Slash commands built into the clients that read skills (Claude Code 2.1, Codex, Gemini CLI, opencode):
# a skill named like one would shadow it or be shadowed.
BUILT_IN = frozenset("""
add-dir agents approvals bashes bug chat clear compact compress config context copy cost details diff
directory docs doctor editor exit export extensions feedback help hooks ide init install-github-app login
logout mcp memory mention model models new output-style permissions plugin pr-comments privacy
privacy-settings quit redo release-notes restore resume review rewind sandbox security-review sessions
settings share skills stats status statusline terminal-setup theme themes todos tools undo upgrade usage vim
""".split())
RUNNERS = {"make": "Makefile", "just": "justfile", "npm": "package.json", "pnpm": "package.json",
           "yarn": "package.json", "bun": "package.json"}
LOCAL_BINS = (".venv/bin", "node_modules/.bin", "bin")
_CITED = re.compile(r"`([^`\n]{1,300})`")


def problems(name: str, description: str, text: str, why: str, cited: list[Step], project: Path | None,
             search_path: str | None, counted: str, strict: bool = False) -> list[str]:
    """What keeps this draft from being proposed (empty: it passes). `cited`: the steps it gives;
    `counted`: the number of sessions the draft says it saw, which its `why` must name; `strict` (prose a
    model wrote): every path or command the text cites beyond the steps must exist."""
    found = []
    if not NAME.match(name) or name in BUILT_IN:
        found.append(f"the name {name!r} is not a skill name or shadows a built-in command")
    if not description.strip() or len(description) > MAX_DESCRIPTION or "\n" in description:
        found.append(f"the description is empty, on several lines or over {MAX_DESCRIPTION} characters")
    if not (counted in why or any(f"`{s.text}`" in why for s in cited)):
        found.append("it does not name the repetition it prevents")
    if len(text) > MAX_CHARS:
        found.append(f"it is {len(text)} characters; a skill stays under {MAX_CHARS}")
    bypass = BYPASS.search(text)
    if bypass:
        found.append(f"it holds a bypass flag ({bypass.group(0).strip()})")
    if find_secrets(text):
        found.append("it holds what looks like a secret")
    extra = extra_citations(text, cited)
    citations = cited + extra
    invented = [s.path or s.text for s in extra if strict and not exists(s, project, search_path)]
    if invented:
        found.append(f"it cites what is not in the project: {', '.join(invented[:3])}")
    if citations:
        existing = sum(exists(step, project, search_path) for step in citations)
        if existing < MIN_EXISTING * len(citations):
            found.append(f"only {existing} of the {len(citations)} paths and commands it cites exist in the project")
    return found


def extra_citations(text: str, cited: list[Step]) -> list[Step]:
    """Paths and commands quoted in `text` (between backticks) beyond the steps themselves."""
    known = {s.text for s in cited} | {s.path for s in cited if s.path} | {s.template[5:] for s in cited if s.path}
    out = []
    for span in dict.fromkeys(_CITED.findall(text)):
        span = span.strip()
        if span in known or span.startswith("edit "):
            continue
        if " " not in span and ("/" in span or PurePosixPath(span).suffix[1:].isalpha()):
            out.append(Step(f"edit {span}", f"edit {span}", "edit", span))
        elif " " in span:
            step = command_step(span)
            if step is not None:
                out.append(step)
    return out


def exists(step: Step, project: Path | None, search_path: str | None) -> bool:
    """Whether the path or the command of `step` exists in `project` (False when it is not on this machine)."""
    if project is None:
        return False
    ctx = probes.Context(project=project)
    if step.kind == "edit":
        return _path(step.path, ctx) or _matches(step.template.removeprefix("edit "), project)
    try:
        words = shlex.split(step.text)
    except ValueError:
        return False
    while words and ASSIGN.match(words[0]):  # FOO=1 make x: the command is make
        words = words[1:]
    if not words:
        return False
    program = PurePosixPath(words[0]).name
    if "/" in words[0]:
        return _path(words[0], ctx)
    if program in RUNNERS:
        return _runner(program, words[1:], ctx)
    return bool(shutil.which(program, path=search_path)) or any((project / b / program).exists() for b in LOCAL_BINS)


def _path(path: str, ctx) -> bool:
    return probes.check({"probe": "path", "args": {"path": path}}, ctx).status == "ok"


def _matches(pattern: str, project: Path) -> bool:
    """A file like the pattern (`migrations/*.sql`) is in the project."""
    if pattern.startswith("/") or ".." in PurePosixPath(pattern).parts:
        return False
    try:
        return any(project.glob(pattern))
    except (ValueError, OSError):
        return False


def _runner(program: str, args: list[str], ctx) -> bool:
    """`make X`, `just X`, `npm run X`: the target X is in the manifest; `npm ci`: the manifest is there."""
    words = [w for w in args if not w.startswith("-")]
    if program in ("make", "just"):
        target = words[0] if words else None
    elif words[:1] in (["run"], ["run-script"]):
        target = words[1] if len(words) > 1 else None
    elif words[:1] in (["test"], ["start"]):
        target = words[0]
    else:
        target = None
    if target is None:
        manifest = RUNNERS[program]
        return _path(manifest, ctx) or (program == "make" and _path("makefile", ctx))
    return probes.check({"probe": "script", "args": {"name": target}}, ctx).status == "ok"
