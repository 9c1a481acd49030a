"""Careful edits of client config files: JSON objects, one TOML table, one YAML mapping entry.

Every function takes a file's text (None when the file does not exist) and
returns the new text; nothing here touches the disk (install.py plans and
writes). A client's config file belongs to the user: whatever hafiza did not
add must survive byte for byte. JSON is re-serialised in the file's own
indent; TOML and YAML are edited as lines (a parse-and-dump round trip would
drop the user's comments and reorder keys) and the result is parsed again to
prove that only hafiza's entry changed.
"""

from __future__ import annotations

import copy
import json
import re
import tomllib
from pathlib import Path
from typing import Callable

from hafiza.vault.errors import HafizaError


class ConfigError(HafizaError):
    """A client config file hafiza cannot edit safely. Nothing was written."""


# --- JSON -------------------------------------------------------------------

def parse_json(text: str | None, path: Path) -> dict:
    if not text or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        hint = " (comments are not supported)" if re.search(r"^\s*//|/\*", text, re.M) else ""
        raise ConfigError(f"{path} is not valid JSON{hint}: {exc.msg} at line {exc.lineno}, column {exc.colno}. "
                          "Fix or move the file and run again; nothing was changed.") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object at the top level; nothing was changed.")
    return data


def dump_json(data: dict, like: str | None) -> str:
    """`data` as JSON in the style of `like` (the file's old text): its indent, final newline and line ends."""
    indent: str | None = "  "
    if like and like.strip() and like.strip() not in ("{}", "[]"):
        match = re.match(r"\s*[{\[][ \t]*\r?\n([ \t]+)\S", like)
        indent = match.group(1) if match else None
    if indent is None:  # a one-line file stays on one line
        compact = '":' in like and '": ' not in like
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":") if compact else None)
    else:
        text = json.dumps(data, ensure_ascii=False, indent=indent)
    if like is None or like.endswith("\n"):
        text += "\n"
    return text.replace("\n", "\r\n") if like and "\r\n" in like else text


def edit_json(text: str | None, path: Path, change: Callable[[dict], None]) -> str | None:
    """Apply `change` to the parsed object; the old text comes back untouched if nothing changed."""
    data = parse_json(text, path)
    before = copy.deepcopy(data)
    change(data)
    return text if data == before else dump_json(data, text)


def _child(parent: dict, key: str, kind: type, path: Path, where: str):
    value = parent.setdefault(key, kind())
    if not isinstance(value, kind):
        raise ConfigError(f"{path}: expected {where} to be a JSON {'object' if kind is dict else 'list'}; "
                          "nothing was changed.")
    return value


def is_ours(handler, marks: tuple[str, ...]) -> bool:
    command = str(handler.get("command", "")) if isinstance(handler, dict) else ""
    return any(mark in command for mark in marks)


def _strip(items: list, marks: tuple[str, ...], nested: bool) -> bool:
    """Remove our handlers from an event's list (and groups left empty by that); True if any went."""
    removed = False
    for item in list(items):
        if nested and isinstance(item, dict) and isinstance(item.get("hooks"), list):
            inner = item["hooks"]
            kept = [h for h in inner if not is_ours(h, marks)]
            if len(kept) != len(inner):
                removed = True
                if kept:
                    item["hooks"] = kept
                else:
                    items.remove(item)
        elif not nested and is_ours(item, marks):
            items.remove(item)
            removed = True
    return removed


def _first_ours(items: list, marks: tuple[str, ...], nested: bool) -> int | None:
    for i, item in enumerate(items):
        handlers = item.get("hooks") if nested and isinstance(item, dict) else [item]
        if isinstance(handlers, list) and handlers and all(is_ours(h, marks) for h in handlers):
            return i
    return None


def place_hooks(settings: dict, entries: dict[str, dict], marks: tuple[str, ...], path: Path, nested: bool = True) -> None:
    """Make `settings["hooks"]` hold exactly `entries` (event → group or handler) of ours.

    Our old entries are removed from every event; a new one takes the place of
    the old one, so a reinstall moves nothing. Everything else stays as it was,
    and an event list or the "hooks" object is removed only if taking ours out
    emptied it.
    """
    had_hooks = "hooks" in settings
    if not entries and not had_hooks:
        return
    hooks = _child(settings, "hooks", dict, path, '"hooks"')
    removed_any = False
    for event in list(hooks):
        items = hooks[event]
        if not isinstance(items, list):
            if event in entries:
                raise ConfigError(f"{path}: expected hooks.{event} to be a list; nothing was changed.")
            continue
        index = _first_ours(items, marks, nested)
        if _strip(items, marks, nested):
            removed_any = True
            if event in entries:
                items.insert(len(items) if index is None else min(index, len(items)), entries[event])
            elif not items:
                del hooks[event]
    for event, entry in entries.items():
        items = _child(hooks, event, list, path, f"hooks.{event}")
        if not any(item == entry for item in items):
            items.append(entry)
    if not hooks and (removed_any or not had_hooks):
        del settings["hooks"]


def place_server(data: dict, key: str, name: str, spec: dict | None, path: Path) -> None:
    """Set (or with spec=None remove) one named server under `data[key]`; remove `key` only if that emptied it."""
    if spec is not None:
        _child(data, key, dict, path, f'"{key}"')[name] = spec
        return
    servers = data.get(key)
    if isinstance(servers, dict) and name in servers:
        del servers[name]
        if not servers:
            del data[key]


# --- lines (TOML and YAML are edited as lines) ------------------------------

def _lines(text: str | None) -> tuple[list[str], str, bool]:
    """Lines without their ends, the line end in use, and whether the text ends with one."""
    if not text:
        return [], "\n", True
    eol = "\r\n" if "\r\n" in text else "\n"
    final = text.endswith(eol)
    return (text[:-len(eol)] if final else text).split(eol), eol, final


def _join(lines: list[str], eol: str, final: bool) -> str:
    return eol.join(lines) + (eol if final and lines else "")


# --- TOML: one marked table (Codex's [mcp_servers.hafiza]) ------------------

# The marker is a comment on the line above the table header. Codex rewrites
# config.toml itself (toml_edit: `/hooks` trust state, project trust, TUI
# flags), appending tables at the end and keeping a file's trailing comment
# last, so an end marker would end up below Codex's own tables. The table
# therefore ends where the next table that is not one of its sub-tables begins.
TOML_MARK = "# hafiza: added by `hafiza install codex`; `hafiza uninstall codex` removes this table"
_OLD_END = "# <<< hafiza"   # the end marker of an earlier layout, removed wherever it is
_HEADER = re.compile(r"\s*\[")


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a JSON string is a valid TOML basic string
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    keys = (k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else json.dumps(k) for k in value)
    return "{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in zip(keys, value.values())) + " }"


def _parse_toml(text: str | None, path: Path) -> dict:
    try:
        return tomllib.loads(text or "")
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}. Fix it and run again; nothing was changed.") from None


def _toml_span(lines: list[str], section: str, name: str) -> tuple[int, int, bool] | None:
    """(first line, end, marked) of the `[section.name]` table and its sub-tables, or None."""
    table = rf"\s*{re.escape(section)}\s*\.\s*(?:{re.escape(name)}|\"{re.escape(name)}\")\s*"
    header = re.compile(rf"\s*\[{table}\]\s*(#.*)?$")
    sub = re.compile(rf"\s*\[{table}\.")
    start = next((i for i, line in enumerate(lines) if header.match(line)), None)
    if start is None:
        return None
    end = start + 1
    while end < len(lines) and (not _HEADER.match(lines[end]) or sub.match(lines[end])):
        end += 1
    while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")):
        end -= 1  # blank lines and comments before the next table belong to it
    marked = start > 0 and lines[start - 1] == TOML_MARK
    return (start - 1 if marked else start), end, marked


def toml_table(text: str | None, path: Path, table: tuple[str, str], values: dict | None) -> str | None:
    """Set (values) or remove (None) hafiza's marked `[a.b]` table; everything else stays byte for byte."""
    old = _parse_toml(text, path)
    lines, eol, final = _lines(text)
    section, name = table
    span = _toml_span(lines, section, name)
    if span and not span[2]:
        if values is None:
            return text  # the user's own table: not ours to remove
        raise ConfigError(f"{path} already defines [{section}.{name}] without hafiza's marker line above it "
                          f"(added by hand or by the client's own `mcp add`?); remove it and run again. "
                          "Nothing was changed.")
    if values is None:
        new = lines if span is None else lines[:span[0]] + lines[span[1]:]
    else:
        block = [TOML_MARK, f"[{section}.{name}]", *(f"{k} = {_toml_value(v)}" for k, v in values.items())]
        new = lines + block if span is None else lines[:span[0]] + block + lines[span[1]:]
    new = [line for line in new if line != _OLD_END]
    new_text = _join(new, eol, final or not lines) if new else None
    if new_text != text:
        _check_toml(old, new_text, path, table, values)
    return text if new_text == text else new_text


TOML_KEY_MARK = "# hafiza: added by `hafiza install codex`; `hafiza uninstall codex` removes the next line"


def toml_top_key(text: str | None, path: Path, key: str, value) -> str | None:
    """Set (value) or remove (None) a top-level key hafiza added, on the line under its marker at the top
    of the file (a top-level key must come before every table). A key the user set is theirs: kept."""
    old = _parse_toml(text, path)
    lines, eol, final = _lines(text)
    ours = next((i for i, line in enumerate(lines[:-1]) if line == TOML_KEY_MARK
                 and lines[i + 1].split("=")[0].strip() == key), None)
    if ours is not None:
        lines = lines[:ours] + lines[ours + 2:]
    elif key in old:
        return text  # the user's own setting
    if value is not None:
        lines = [TOML_KEY_MARK, f"{key} = {_toml_value(value)}", *lines]
    new_text = _join(lines, eol, final or len(lines) <= 2) if lines else None
    if new_text != text:
        new = _parse_toml(new_text, path)
        new.pop(key, None), old.pop(key, None)
        if new != old:
            raise ConfigError(f"{path}: could not set {key} without changing other settings; set it by hand. "
                              "Nothing was changed.")
    return new_text


def _check_toml(old: dict, new_text: str | None, path: Path, table: tuple[str, str], values: dict | None) -> None:
    section, name = table
    try:
        new = tomllib.loads(new_text or "")
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: adding [{section}.{name}] would make the file invalid TOML ({exc}); "
                          f"is [{section}] an inline table? Add the table by hand. Nothing was changed.") from None
    got = (new.get(section) or {}).pop(name, None)
    (old.get(section) or {}).pop(name, None)
    for doc in (old, new):
        if section in doc and not doc[section]:
            del doc[section]
    if got != values or old != new:
        raise ConfigError(f"{path}: could not add [{section}.{name}] without changing other settings; "
                          "add it by hand. Nothing was changed.")


# --- YAML: one entry of a top-level mapping (Goose's extensions.hafiza) -----

YAML_ADDED = "# added by hafiza"
YAML_WAS_EMPTY = "# hafiza: was {}"


_PLAIN = re.compile(r"[A-Za-z_/][A-Za-z0-9_./+-]*")
_RESERVED = {"true", "false", "yes", "no", "on", "off", "y", "n", "null"}


def _yaml_scalar(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(map(_yaml_scalar, value)) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_yaml_scalar(k)}: {_yaml_scalar(v)}" for k, v in value.items()) + "}"
    if _PLAIN.fullmatch(value) and value.lower() not in _RESERVED:
        return value  # stdio, /abs/path: plain, as goose itself writes them
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a valid YAML double-quoted scalar


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _content(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


def _yaml_section(lines: list[str], key: str, path: Path) -> tuple[int, int, str] | None:
    """(line of `key:`, end of its block, the block's child indent), or None if the key is absent."""
    head = next((i for i, line in enumerate(lines) if re.match(rf"{re.escape(key)}\s*:", line)), None)
    if head is None:
        return None
    rest = lines[head].split(":", 1)[1].strip()
    if rest and not rest.startswith("#") and rest != "{}":
        raise ConfigError(f"{path}: `{key}:` is written in flow style; hafiza edits the block style only. "
                          "Rewrite it as an indented mapping and run again. Nothing was changed.")
    end = head + 1
    while end < len(lines) and (not _content(lines[end]) or _indent(lines[end]) > 0):
        end += 1
    child = next((lines[i] for i in range(head + 1, end) if _content(lines[i])), None)
    return head, end, " " * (_indent(child) if child else 2)


def _yaml_entry(lines: list[str], start: int, end: int, indent: str, name: str) -> tuple[int, int] | None:
    pattern = re.compile(rf"{indent}(?:{re.escape(name)}|\"{re.escape(name)}\"|'{re.escape(name)}')\s*:\s*(#.*)?$")
    for i in range(start, end):
        if pattern.match(lines[i]):
            stop = i + 1
            while stop < end and (not lines[stop].strip() or _indent(lines[stop]) > len(indent)):
                stop += 1
            while stop > i + 1 and not lines[stop - 1].strip():
                stop -= 1
            return i, stop
    return None


def yaml_entry(text: str | None, path: Path, key: str, name: str, spec: dict | None) -> str | None:
    """Set (spec) or remove (None) `key.name` in a YAML file by editing its lines only."""
    import yaml  # only the installer needs it (Goose's config)

    try:
        old = yaml.safe_load(text or "") or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path} is not valid YAML: {exc}. Fix it and run again; nothing was changed.") from None
    if not isinstance(old, dict) or not isinstance(old.get(key) or {}, dict):
        raise ConfigError(f"{path}: expected a mapping with a `{key}:` mapping; nothing was changed.")
    lines, eol, final = _lines(text)
    section = _yaml_section(lines, key, path)
    if section is None and key in old:
        raise ConfigError(f"{path}: could not find the `{key}:` line; edit it by hand. Nothing was changed.")
    if spec is None:
        new = _yaml_remove(lines, section, name, key)
    else:
        new = _yaml_insert(lines, section, name, key, spec)
    new_text = _join(new, eol, final or not lines) if new else None
    _check_yaml(old, new_text, path, key, name, spec, yaml)
    return text if new_text == text else new_text


def _yaml_insert(lines: list[str], section, name: str, key: str, spec: dict) -> list[str]:
    if section is None:
        head, indent = None, "  "
        lines = [*lines, f"{key}:  {YAML_ADDED}"]
        start = end = len(lines)
    else:
        head, end, indent = section
        start = head + 1
        if lines[head].split(":", 1)[1].strip() == "{}":
            lines = [*lines[:head], f"{key}:  {YAML_WAS_EMPTY}", *lines[head + 1:]]
    body = [f"{indent}{name}:"] + [f"{indent * 2}{k}: {_yaml_scalar(v)}" for k, v in spec.items()]
    found = _yaml_entry(lines, start, end, indent, name)
    if found:
        return lines[:found[0]] + body + lines[found[1]:]
    at = max([i + 1 for i in range(start, end) if _content(lines[i])] or [start])
    return lines[:at] + body + lines[at:]


def _yaml_remove(lines: list[str], section, name: str, key: str) -> list[str]:
    if section is None:
        return lines
    head, end, indent = section
    found = _yaml_entry(lines, head + 1, end, indent, name)
    if not found:
        return lines
    lines = lines[:found[0]] + lines[found[1]:]
    end -= found[1] - found[0]
    if not any(_content(lines[i]) for i in range(head + 1, end)):
        if lines[head].endswith(YAML_ADDED):
            return lines[:head] + lines[head + 1:]
        # An empty mapping, never a null: goose reads `extensions:` alone as null.
        return [*lines[:head], f"{key}: {{}}", *lines[head + 1:]]
    return lines


def _check_yaml(old: dict, new_text: str | None, path: Path, key: str, name: str, spec, yaml) -> None:
    try:
        new = yaml.safe_load(new_text or "") or {}
    except yaml.YAMLError:
        new = None
    if isinstance(new, dict):
        got = dict(new.get(key) or {}).pop(name, None)
        rest_old, rest_new = dict(old), dict(new)
        rest_old[key] = {k: v for k, v in (old.get(key) or {}).items() if k != name}
        rest_new[key] = {k: v for k, v in (new.get(key) or {}).items() if k != name}
        for doc in (rest_old, rest_new):
            if not doc[key]:
                del doc[key]
        if got == spec and rest_old == rest_new:
            return
    raise ConfigError(f"{path}: could not {'add' if spec else 'remove'} `{key}.{name}` without touching other "
                      "settings; edit it by hand. Nothing was changed.")
