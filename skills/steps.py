"""A tool call as a step of a procedure: its exact words, and a template that two runs of the same step share.

Shell commands keep their program, subcommands, flags and plain words; what changes from one run to the
next is masked: numbers and versions (`v1.4.2`, `0042`), quoted text (a commit message), flag values,
and file names (a path becomes its folder and extension: `migrations/0007_add_orders.sql` ->
`migrations/*.sql`). File edits become `edit <path pattern>`. Reading, searching and looking around
(`Read`, `ls`, `git status`...) are not steps: an agent does them between steps in any order.
"""

from __future__ import annotations

import re
import shlex
from functools import lru_cache
from pathlib import PurePosixPath
from typing import NamedTuple

# Tool names as the four clients write them (Claude Code, Codex, Gemini CLI, opencode).
SHELL_TOOLS = {"bash", "shell", "exec_command", "shell_command", "local_shell_call", "local_shell",
               "run_shell_command"}
EDIT_TOOLS = {"edit", "multiedit", "write", "notebookedit", "replace", "write_file", "apply_patch", "patch"}
PATH_KEYS = ("file_path", "filePath", "notebook_path", "path")
# Commands that only look: never a step of a procedure however often they recur.
LOOKING = {"ls", "cat", "pwd", "cd", "echo", "head", "tail", "grep", "rg", "find", "wc", "less", "more", "which",
           "tree", "sed", "awk", "sort", "uniq", "stat", "file", "true", "clear", "history", "env", "printenv",
           "type", "whoami", "date", "diff"}
GIT_LOOKING = {"status", "diff", "log", "show", "branch", "remote", "rev-parse", "blame", "describe", "ls-files"}
_PATCH_FILE = re.compile(r"^\*\*\* (?:Update|Add) File: (.+)$", re.M)
_NUMBERED = re.compile(r"\d")
ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


class Step(NamedTuple):
    template: str   # what runs of the same step share: `run make changelog`, `edit migrations/*.sql`
    text: str       # the step exactly as seen: the command, or `edit <path>`
    kind: str       # run | edit
    path: str = ""  # an edit's file, relative to the session's folder where it lies inside it


def steps(call) -> list[Step]:
    """The steps of one tool call (a `transcripts.Call`): none for a call that only reads or looks."""
    name, args = (call.name or "").lower(), call.args
    if name in SHELL_TOOLS:
        return [s for s in (command_step(seg) for seg in segments(shell_text(args))) if s is not None]
    if name in EDIT_TOOLS:
        return [edit_step(p, call.cwd) for p in edited_paths(args)]
    return []


def shell_text(args) -> str:
    """The command line a shell tool ran: `command` as a string or argv (`bash -lc X` is X), or `cmd`."""
    if isinstance(args, dict):
        value = args.get("command", args.get("cmd"))
        if value is None and isinstance(args.get("action"), dict):  # Codex's local_shell_call
            value = args["action"].get("command")
    else:
        value = args
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        if len(value) == 3 and PurePosixPath(value[0]).name in ("bash", "sh", "zsh") and value[1] in ("-lc", "-c"):
            return value[2]
        return shlex.join(value)
    return value if isinstance(value, str) else ""


def segments(command: str) -> list[str]:
    """The commands of a command line, split at `&&`, `;` and new lines outside quotes, each exactly as
    written (a pipe or `||` stays in its command)."""
    out, start, quote, n = [], 0, "", 0
    while n < len(command):
        c = command[n]
        if c == "\\" and quote != "'":
            n += 2
            continue
        if quote:
            quote = "" if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c in ";\n" or command.startswith("&&", n):
            out.append(command[start:n])
            n += 2 if c == "&" else 1
            start = n
            continue
        n += 1
    out.append(command[start:])
    return [part.strip() for part in out if part.strip()]


@lru_cache(maxsize=65536)  # a history repeats its commands; shlex is most of the time a session's steps take
def command_step(command: str) -> Step | None:
    """One command as a step, or None when it only looks around."""
    words = _words(command)
    run = words
    while run and ASSIGN.match(run[0]):
        run = run[1:]
    if not run or looking(run):
        return None
    return Step("run " + " ".join(mask(words)), command, "run")


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def looking(words: list[str]) -> bool:
    program = PurePosixPath(words[0]).name
    if program == "git":
        sub = next((w for w in words[1:] if not w.startswith("-")), "")
        return sub in GIT_LOOKING
    return program in LOOKING


def mask(command: str | list[str]) -> list[str]:
    """The words of `command` with what changes between runs replaced (see the module's docstring)."""
    words = _words(command) if isinstance(command, str) else command
    out, program = [], True
    for word in words:
        if ASSIGN.match(word):
            out.append(word.split("=", 1)[0] + "=<v>")
            continue
        if program or (word.startswith("-") and "=" not in word and not _NUMBERED.search(word)):
            out.append(word)
        elif word.startswith("-"):
            out.append(word.split("=", 1)[0] + "=<v>" if "=" in word else "<n>")
        elif any(c.isspace() for c in word) or not word:
            out.append("<text>")
        elif "/" in word or re.fullmatch(r"\.[A-Za-z][A-Za-z0-9]*", PurePosixPath(word).suffix):
            out.append(pattern(word))
        elif _NUMBERED.search(word):
            out.append("<n>")
        else:
            out.append(word)
        program = False
    return out


def pattern(path: str) -> str:
    """A path as the files like it: its folder (numbers masked) and extension; `a/0007_x.sql` -> `a/*.sql`."""
    p = PurePosixPath(path)
    folder = [("*" if _NUMBERED.search(part) else part) for part in p.parent.parts]
    name = f"*{p.suffix}" if p.suffix and not p.name.startswith(".") else ("*" if _NUMBERED.search(p.name) else p.name)
    if p.suffix and not _NUMBERED.search(p.stem) and p.stem.isupper():
        name = p.name  # CHANGELOG.md, README.md: the same file every time, not one of many
    return str(PurePosixPath(*folder, name)) if folder and folder != ["."] else name


def edited_paths(args) -> list[str]:
    """The files an edit tool wrote: a path argument, or each file of a Codex patch."""
    if isinstance(args, str):
        return _PATCH_FILE.findall(args)
    if not isinstance(args, dict):
        return []
    for key in PATH_KEYS:
        if isinstance(args.get(key), str) and args[key]:
            return [args[key]]
    patch = args.get("input") or args.get("patch") or args.get("patchText")
    return _PATCH_FILE.findall(patch) if isinstance(patch, str) else []


def edit_step(path: str, cwd: str) -> Step:
    rel = relative(path.strip(), cwd)
    return Step(f"edit {pattern(rel)}", f"edit {rel}", "edit", rel)


def relative(path: str, cwd: str) -> str:
    """`path` relative to the session's folder when it lies inside it; as written otherwise."""
    p, base = PurePosixPath(path), PurePosixPath(cwd) if cwd else None
    if base is not None and p.is_absolute():
        try:
            return str(p.relative_to(base))
        except ValueError:
            return path
    return path.removeprefix("./")
