"""Claude Code's auto-memory: where its MEMORY.md load limit drops lines (`hafiza doctor`), and importing it
(`hafiza import claude-code`). An agent adapter: it reads Claude Code's own files, outside the vault.

Claude Code loads only the first 200 lines or 25,000 bytes of
~/.claude/projects/<project>/memory/MEMORY.md, whichever comes first, and the
file is append-newest, so the newest corrections are the first to vanish
(anthropics/claude-code #25006). Topic files beside it are read on demand.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from hafiza.vault.errors import HafizaError

MAX_LINES = 200
MAX_BYTES = 25_000
# Claude Code's topic-file types, mapped onto hafiza's.
TYPES = {"user": "identity", "feedback": "rule", "project": "knowledge", "reference": "knowledge"}
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+\.md)\)")


@dataclass
class Cliff:
    path: Path
    lines: int
    bytes: int
    dropped: list[tuple[int, str]] = field(default_factory=list)  # (line number, text) never loaded

    @property
    def over(self) -> bool:
        return bool(self.dropped)


def projects_root(home: Path | None = None) -> Path:
    return (home or Path.home()) / ".claude" / "projects"


def memory_dirs(home: Path | None = None) -> list[Path]:
    root = projects_root(home)
    return sorted(p.parent for p in root.glob("*/memory/MEMORY.md")) if root.is_dir() else []


def cliff(path: Path) -> Cliff:
    """Which lines of a MEMORY.md Claude Code never loads."""
    from hafiza.vault.files import read_regular

    data = read_regular(path, limit=64 << 20)
    lines = data.splitlines(keepends=True)
    dropped, used = [], 0
    for number, raw in enumerate(lines, 1):
        used += len(raw)
        if number > MAX_LINES or used > MAX_BYTES:
            text = raw.decode("utf-8", "replace").rstrip("\r\n")
            if text.strip():
                dropped.append((number, text))
    return Cliff(path, len(lines), len(data), dropped)


def project_name(memory_dir: Path) -> str | None:
    """The project's folder name, read from a session transcript's `cwd` beside the memory folder."""
    from hafiza.vault.files import is_regular

    for transcript in sorted(memory_dir.parent.glob("*.jsonl"))[:5]:
        if not is_regular(transcript):  # a pipe would block, a link could lead anywhere
            continue
        try:
            with open(transcript, encoding="utf-8") as fh:
                for _, line in zip(range(50), fh):
                    cwd = json.loads(line).get("cwd")
                    if cwd:
                        return Path(cwd).name
        except (OSError, ValueError, AttributeError):
            continue
    return None


def slug_project(slug: str) -> str | None:
    """The project folder's name from Claude Code's folder slug (its path with `/` as `-`), found by walking
    the folders that exist on this machine: `-home-ada-src-my-app` is /home/ada/src/my-app. None when the
    path is not here, since `my-app` and `app` cannot be told apart from the slug alone."""
    parts = slug.split("-")
    if len(parts) < 2 or parts[0] != "":
        return None
    here, i = Path("/"), 1
    while i < len(parts):
        for j in range(len(parts), i, -1):  # the longest name that exists: folders may hold `-`
            candidate = here / "-".join(parts[i:j])
            if candidate.is_dir():
                here, i = candidate, j
                break
        else:
            return None
    return here.name if here != Path("/") else None


def items(memory_dir: Path, scope: str | None = None) -> list[dict]:
    """Import items from MEMORY.md (entries that are not links) and every topic file.

    Each item's `source` names where it came from, so a second import can skip it.
    """
    import yaml

    from hafiza.vault.files import read_regular, read_text
    from hafiza.vault.format.model import split

    slug = memory_dir.parent.name
    found = []
    index = memory_dir / "MEMORY.md"
    linked: dict[str, str] = {}  # topic file -> the title MEMORY.md's link gives it
    for number, line in enumerate(read_regular(index).decode("utf-8", "replace").splitlines(), 1):
        text = line.strip().lstrip("-*").strip()
        links = _LINK.findall(line)
        for title, target in links:
            linked.setdefault(target, title)
        if not text or text.startswith("#") or links:
            continue
        digest = hashlib.blake2b(text.encode(), digest_size=6).hexdigest()
        found.append({"text": text, "scope": scope, "source": f"claude-code:{slug}/MEMORY.md#{digest}",
                      "tags": ["claude-code"], "_where": f"{slug}/MEMORY.md:{number}"})
    for topic in sorted(memory_dir.glob("*.md")):
        if topic.name == "MEMORY.md":
            continue
        try:
            text = read_text(topic)
        except (OSError, UnicodeDecodeError):
            continue  # a link out of the folder, a pipe, not text: not a topic file
        try:
            meta, body = split(text)
        except (yaml.YAMLError, ValueError, RecursionError):
            meta, body = None, text
        meta = meta if isinstance(meta, dict) else {}
        body = body.strip() or str(meta.get("description") or "")
        if not body:
            continue
        found.append({"title": topic_title(topic, meta, body, linked.get(topic.name)), "text": body,
                      "type": TYPES.get(str(meta.get("type", "")).lower(), "knowledge"),
                      "scope": scope, "tags": ["claude-code"], "source": f"claude-code:{slug}/{topic.name}",
                      "_where": f"{slug}/{topic.name}"})
    return found


def topic_title(topic: Path, meta: dict, body: str, link: str | None = None) -> str:
    """A topic file's title: its frontmatter `name` when that is a name and not just the file's (`name: build`
    in build.md), else its `description`, the heading it opens with, the title MEMORY.md links it by, and
    only then its file name (new-user trial: build.md with a description and a heading came in as "build")."""
    from hafiza.vault.format.text import first_line, heading

    name = str(meta.get("name") or "").strip()
    if re.fullmatch(r"[a-z0-9_-]+", name) and name.replace("_", "-") == topic.stem.replace("_", "-"):
        name = ""  # the file's name again: a key, not a title
    for title in (name, str(meta.get("description") or ""), heading(body) or "", link or ""):
        if title.strip():
            return first_line(title)
    return str(meta.get("name") or "").strip() or topic.stem.replace("_", " ")


def import_into(vault, dirs: list[Path], scope: str | None = None,
                dry_run: bool = False) -> tuple[list, int, list[str]]:
    """Import the given memory folders as one commit; items imported before are skipped. `dry_run` checks it
    all and writes nothing.

    Returns (the memories imported, or that would be; how many were imported before; a line per other item
    skipped, with why).
    """
    done = {m.source for m in vault.load_all()[0]}
    fresh, seen = [], 0
    for memory_dir in dirs:
        name = None if scope else project_name(memory_dir) or slug_project(memory_dir.parent.name)
        if not scope and name is None:
            raise HafizaError(f"cannot tell which project {memory_dir.parent.name} is (no session transcript "
                              "beside it, and its folder is not on this machine); pass --scope "
                              "project:<name> (or --scope global). Nothing was imported.", field="scope")
        project = scope or f"project:{name}"
        for item in items(memory_dir, project):
            if item["source"] in done:
                seen += 1
                continue
            done.add(item["source"])
            fresh.append(item)
    if not fresh:
        return [], seen, []
    imported, skipped = vault.import_many(fresh, source="claude-code", dry_run=dry_run)
    return imported, seen, skipped


def find_dirs(project: str | None, home: Path | None = None) -> list[Path]:
    """Memory folders for PROJECT (a folder path, a project's slug, or None for all)."""
    dirs = memory_dirs(home)
    if not project:
        return dirs
    slug = re.sub(r"[^A-Za-z0-9]", "-", str(Path(project).expanduser().resolve())) if "/" in project else project
    chosen = [d for d in dirs if d.parent.name in (slug, project)]
    return chosen


def check_memory(vault):
    """Claude Code loads only the first 200 lines / 25,000 bytes of each MEMORY.md; say what it drops."""
    from hafiza.indexer.doctor import Check
    from hafiza.vault.format.text import agree, plural

    dirs = memory_dirs()
    if not dirs:
        return Check("claude-code memory", "ok", "no Claude Code MEMORY.md found")
    details, over = [], 0
    for memory_dir in dirs:
        try:
            found = cliff(memory_dir / "MEMORY.md")
        except OSError as exc:
            details.append(f"{memory_dir / 'MEMORY.md'}: not read ({getattr(exc, 'reason', None) or exc})")
            continue
        details.append(f"{found.path}: {plural(found.lines, 'line')}, {plural(found.bytes, 'byte')} "
                       f"(limit {MAX_LINES} lines / {MAX_BYTES} bytes)")
        if found.over:
            over += 1
            details.append(f"  never loaded ({plural(len(found.dropped), 'line')}):")
            details += [f"    {number}: {text[:100]}" for number, text in found.dropped]
    if over:
        return Check("claude-code memory", "warn", f"{plural(over, 'MEMORY.md file')} {agree(over, 'is', 'are')} "
                     "past Claude Code's load limit; "
                     "`hafiza import claude-code` keeps every line", details)
    return Check("claude-code memory", "ok", f"{plural(len(dirs), 'MEMORY.md file')} within the load limit", details)
