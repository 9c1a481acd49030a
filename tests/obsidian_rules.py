"""Obsidian's documented rules for a vault's notes, checked without Obsidian (issue 32).

help.obsidian.md, Properties: a property is text, a list (of text), a number, a checkbox, a date or a date
and time, and one name has one type across the vault; a link in a property is a quoted string `"[[note]]"`.
Internal links: `[[note]]`, `[[folder/note#heading|shown]]`; a name without a folder resolves to the note of
that file name, one with a folder to that path from the vault's root. Tags: letters, digits, `_`, `-` and `/`
(nesting), no spaces, not only digits.

Read with PyYAML's safe loader, as Obsidian reads YAML, never with hafiza's own parser.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import yaml

SKIPPED = (".git", ".hafiza", ".obsidian", ".trash")  # not notes: git, the sidecar, Obsidian's own folders
LINK = re.compile(r"\[\[([^\[\]]+)\]\]")
TAG = re.compile(r"^[\w/-]+$")  # \w: letters of any script, digits, _


def notes(root: Path) -> dict[str, Path]:
    """Every markdown note of the vault by its path from the root (`memories/a.md`)."""
    found = {}
    for path in sorted(root.rglob("*.md")):
        rel = path.relative_to(root).as_posix()
        if not rel.split("/")[0] in SKIPPED:
            found[rel] = path
    return found


def frontmatter(text: str) -> tuple[dict, str]:
    if not text.startswith("---\n"):
        return {}, text
    header, _, body = text[4:].partition("\n---\n")
    return yaml.safe_load(header) or {}, body


def property_type(value) -> str | None:
    """The Properties view's type of a value, None for one it cannot show (a mapping, a nested list)."""
    if isinstance(value, bool):
        return "checkbox"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, dt.datetime):
        return "datetime"
    if isinstance(value, dt.date):
        return "date"
    if isinstance(value, str) or value is None:
        return "text"
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value):
        return "list"
    return None


def resolves(link: str, names: dict[str, Path]) -> bool:
    """Whether `[[link]]` names exactly one note of the vault."""
    target = link.split("|", 1)[0].split("#", 1)[0].strip()
    if not target:
        return True  # a heading of the same note
    wanted = target if target.endswith(".md") else f"{target}.md"
    if "/" in target:
        return wanted in names
    return sum(1 for rel in names if rel.rsplit("/", 1)[-1] == wanted) == 1


def valid_tag(value) -> bool:
    return isinstance(value, str) and bool(TAG.match(value)) and not value.isdigit()


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def problems(root: Path) -> list[str]:
    """Every way the vault's notes break the rules above, one line each; empty when none does."""
    names = notes(root)
    found, types = [], {}
    for rel, path in names.items():
        meta, body = frontmatter(path.read_text(encoding="utf-8"))
        for key, value in meta.items():
            kind = property_type(value)
            if kind is None:
                found.append(f"{rel}: {key} is {type(value).__name__}, which Properties cannot show: {value!r}")
            elif value not in (None, "", []):
                types.setdefault(key, {}).setdefault(kind, rel)
            for text in _strings(value):
                for link in LINK.findall(text):
                    if not (text.startswith("[[") and text.endswith("]]")):
                        found.append(f"{rel}: {key} holds a link inside other text: {text!r}")
                    if not resolves(link, names):
                        found.append(f"{rel}: {key} links to {link!r}, which names no one note")
        for tag in meta.get("tags") or []:
            if not valid_tag(tag):
                found.append(f"{rel}: tag {tag!r} is not one Obsidian takes")
        for link in LINK.findall(body):
            if not resolves(link, names):
                found.append(f"{rel}: the text links to {link!r}, which names no one note")
    for key, kinds in types.items():
        if len(kinds) > 1:
            found.append(f"property {key} has {len(kinds)} types across the vault: {kinds}")
    return found


def links(path: Path) -> list[str]:
    """The links in a note's properties."""
    meta, _ = frontmatter(path.read_text(encoding="utf-8"))
    return [link for value in meta.values() for text in _strings(value) for link in LINK.findall(text)]
