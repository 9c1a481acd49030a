"""Reading import sources into plain items for Vault.import_many."""

from __future__ import annotations

import json
from pathlib import Path

from hafiza.vault.errors import HafizaError
from hafiza.vault.files import NotRegularFile, read_text
from hafiza.vault.format.model import split
from hafiza.vault.format.text import heading

ITEM_KEYS = ("id", "title", "text", "type", "tags", "scope", "created", "aliases", "supersedes", "last_used", "source")


def read_source(source: Path) -> tuple[list[dict], list[str]]:
    """Items from a JSONL file or a folder of markdown files, and a line per unreadable one."""
    if source.is_dir():
        return read_markdown_folder(source)
    if source.is_file():
        return read_jsonl(source)
    raise HafizaError(f"{source}: no such file or folder")


def read_jsonl(path: Path) -> tuple[list[dict], list[str]]:
    """Items of a JSONL file, and a line per line that is not one: not UTF-8, not JSON, nested too deeply to
    read (each a line of its own, never a traceback: issue 29, item 6)."""
    items, problems = [], []
    with open(path, "rb") as fh:
        for n, raw in enumerate(fh, 1):
            where = f"{path.name}:{n}"
            try:
                line = raw.decode("utf-8-sig" if n == 1 else "utf-8")  # a BOM on the first line is no error
            except UnicodeDecodeError as exc:
                problems.append(f"{where}: not UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1}); "
                                "save the file as UTF-8")
                continue
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except ValueError as exc:
                problems.append(f"{where}: not JSON ({exc.msg})")
                continue
            except RecursionError:
                problems.append(f"{where}: a value nested too deeply to read")
                continue
            if not isinstance(data, dict) or not str(data.get("text") or "").strip():
                problems.append(f"{where}: expected an object with a non-empty \"text\"")
                continue
            items.append({**{k: data[k] for k in ITEM_KEYS if k in data}, "_where": where})
    return items, problems


def read_markdown_folder(folder: Path) -> tuple[list[dict], list[str]]:
    """Any markdown files: hafiza's own keys are used where present, the rest is the text."""
    import yaml

    items, problems = [], []
    for path in sorted(folder.rglob("*.md")):
        where = str(path.relative_to(folder))
        try:
            meta, content = split(read_text(path))
        except NotRegularFile as exc:
            problems.append(f"{where}: {exc.reason}")
            continue
        except (yaml.YAMLError, ValueError, RecursionError) as exc:
            problems.append(f"{where}: unreadable frontmatter ({(str(exc).splitlines() or [type(exc).__name__])[0]})")
            continue
        except (UnicodeDecodeError, OSError) as exc:
            problems.append(f"{where}: unreadable ({type(exc).__name__}: {exc})")
            continue
        if not content.strip():
            problems.append(f"{where}: empty")
            continue
        item = {k: meta[k] for k in ITEM_KEYS if meta and k in meta and k != "text"}
        item.setdefault("title", heading(content) or path.stem.replace("-", " "))
        items.append({**item, "text": content, "_where": where})
    return items, problems

