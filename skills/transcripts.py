"""The four clients' transcripts, read into turns: who said what, when, in which session and project.

Formats as the pinned clients write them (tests/fixtures/sessions/home, recorded from the real
clients by tests/e2e): Claude Code 2.1 and Codex 0.171 append one JSON object a line; Gemini CLI
0.61 appends JSON lines too, repeating a message's id when it updates it; opencode 1.18 keeps
sessions, messages and parts in SQLite (opencode.db). JSONL files are read from the byte offset
where the last read stopped, and only up to the last complete line, so a growing transcript is
read once; opencode is read from the last part-update time seen.

What the clients add around the user's words (hafiza's own recalled blocks, environment and
session context, system reminders) is cut out: conversation search finds what people said.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import NamedTuple

CLIENTS = ("claude-code", "codex", "gemini", "opencode")
TOOL_CHARS = 400   # a tool call is kept as its name and the start of its arguments
CHUNK = 32 << 20     # bytes read at once: a transcript of hundreds of MB (tool outputs) is read in pieces
TURN_CHARS = 20_000  # a pasted log is cut: the index holds words to find, `show` the rest
_INJECTED = re.compile(
    r"<(hafiza-recall|hafiza-profile|hook_context|session_context|environment_context|system-reminder|"
    r"user_instructions|permissions instructions|skills_instructions|local-command-caveat)>.*?(?:</\1>|\Z)",
    re.S)
_ESCAPED = re.compile(r"&lt;(hafiza-recall|hafiza-profile)&gt;.*?(?:&lt;/\1&gt;|\Z)", re.S)


class Call(NamedTuple):
    """A tool call as the client wrote it: the tool's name, its arguments (a dict, or the text a
    free-form tool took, e.g. Codex's apply_patch) and the folder the session ran in."""

    name: str
    args: object
    cwd: str


class Turn(NamedTuple):
    """One message of a conversation. `key` is unique per client and session; `pos` orders a session.
    A tool turn read from a transcript carries its whole `call` (its `text` is cut at TOOL_CHARS);
    turns read back from the conversation index have none."""

    key: str
    client: str
    session: str
    project: str
    role: str       # user | assistant | tool
    time: str       # ISO 8601, UTC where the client says so
    pos: int
    text: str
    call: Call | None = None


def clean(text: str) -> str:
    """`text` without blocks a client or hafiza injected (recall, profile, environment, reminders)."""
    text = _ESCAPED.sub("", _INJECTED.sub("", text))
    return text.strip()[:TURN_CHARS]


def project_name(cwd: str | None) -> str:
    """The project a conversation ran in: the last part of its folder (hafiza's scope names)."""
    return Path(cwd).name if cwd else ""


def read_lines(path: Path, offset: int, limit: int = CHUNK):
    """(byte offset, parsed object) for each complete JSON line from `offset` (at most `limit` bytes), and
    the offset after the last complete line. A line still being written is left for the next read."""
    with open(path, "rb") as fh:
        fh.seek(offset)
        data = fh.read(limit)
    end = data.rfind(b"\n") + 1
    if not end and len(data) == limit:  # one line longer than a chunk: a tool's output, not a turn; skipped
        return [], offset + limit
    items, at = [], offset
    for raw in data[:end].split(b"\n")[:-1]:
        try:
            item = json.loads(raw)
        except ValueError:
            item = None
        if isinstance(item, dict):
            items.append((at, item))
        at += len(raw) + 1
    return items, offset + end


def _texts(content, kinds=("text", "input_text", "output_text")) -> str:
    """The text parts of a message's content (a string, or a list of typed parts)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = [c.get("text", "") for c in content if isinstance(c, dict)
             and (c.get("type") in kinds or ("type" not in c and isinstance(c.get("text"), str)))]
    return "\n".join(p for p in parts if isinstance(p, str))


def _tool(name, args) -> str:
    if not isinstance(args, str):
        args = json.dumps(args, ensure_ascii=False)
    return f"{name} {args}"[:TOOL_CHARS]


def claude(path: Path, state: dict) -> list[Turn]:
    """Claude Code: ~/.claude/projects/<cwd slug>/<session>.jsonl."""
    items, state["offset"] = read_lines(path, state.get("offset", 0))
    out = []
    for at, item in items:
        kind, message = item.get("type"), item.get("message")
        if kind not in ("user", "assistant") or not isinstance(message, dict) or item.get("isMeta"):
            continue
        state.setdefault("session", item.get("sessionId") or path.stem)
        if item.get("cwd"):
            state["project"], state["cwd"] = project_name(item["cwd"]), str(item["cwd"])
        when, key = str(item.get("timestamp", "")), str(item.get("uuid") or at)
        content = message.get("content")
        text = clean(_texts(content))
        if text:
            out.append(_turn("claude-code", state, key, kind, when, at, text))
        if kind == "assistant" and isinstance(content, list):
            for n, part in enumerate(c for c in content if isinstance(c, dict) and c.get("type") == "tool_use"):
                out.append(_tool_turn("claude-code", state, f"{key}:{n}", when, at, part.get("name"),
                                      part.get("input")))
    return out


def codex(path: Path, state: dict) -> list[Turn]:
    """Codex: ~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl (the response items; event messages repeat them)."""
    items, state["offset"] = read_lines(path, state.get("offset", 0))
    out = []
    for at, item in items:
        payload = item.get("payload") if isinstance(item.get("payload"), dict) else {}
        if item.get("type") == "session_meta":
            state["session"] = str(payload.get("id") or payload.get("session_id") or path.stem)
            state["project"], state["cwd"] = project_name(payload.get("cwd")), str(payload.get("cwd") or "")
            continue
        if item.get("type") != "response_item":
            continue
        when = str(item.get("timestamp", ""))
        if payload.get("type") == "message" and payload.get("role") in ("user", "assistant"):
            text = clean(_texts(payload.get("content")))
            if text:
                out.append(_turn("codex", state, str(at), payload["role"], when, at, text))
        elif payload.get("type") in ("function_call", "custom_tool_call", "local_shell_call"):
            args = payload.get("arguments") or payload.get("input") or payload.get("action")
            if isinstance(args, str) and payload.get("type") == "function_call":
                args = _json(args) or args  # a function call's arguments are JSON in a string
            name = payload.get("name") or payload.get("type")
            out.append(_tool_turn("codex", state, str(at), when, at, name, args))
    return out


def gemini(path: Path, state: dict) -> list[Turn]:
    """Gemini CLI: ~/.gemini/tmp/<project>/chats/session-*.jsonl; a message whose id comes again replaces
    the earlier line (the same key), `$set` lines carry the first messages."""
    items, state["offset"] = read_lines(path, state.get("offset", 0))
    if "project" not in state:
        state["project"] = path.parent.parent.name if path.parent.name == "chats" else ""
        state["cwd"] = _gemini_folder(path, state["project"])
    out = []
    for at, item in items:
        if "sessionId" in item and "id" not in item:
            state["session"] = str(item["sessionId"])
            continue
        messages = (item.get("$set") or {}).get("messages") if isinstance(item.get("$set"), dict) else [item]
        for n, message in enumerate(messages if isinstance(messages, list) else []):
            if isinstance(message, dict) and message.get("type") in ("user", "gemini"):
                out += _gemini_message(message, state, at + n)
    return out


def _gemini_message(message: dict, state: dict, at: int) -> list[Turn]:
    role = "user" if message["type"] == "user" else "assistant"
    key, when = str(message.get("id") or at), str(message.get("timestamp", ""))
    out = []
    text = clean(_texts(message.get("content")))
    if text:
        out.append(_turn("gemini", state, key, role, when, at, text))
    for n, call in enumerate(c for c in message.get("toolCalls") or [] if isinstance(c, dict)):
        out.append(_tool_turn("gemini", state, f"{key}:{n}", when, at, call.get("name"), call.get("args")))
    return out


def _gemini_folder(path: Path, project: str) -> str:
    """The folder a Gemini CLI project runs in: ~/.gemini/projects.json maps each folder to its name."""
    if not project:
        return ""
    known = _json(_read_small(path.parent.parent.parent.parent / "projects.json")).get("projects")
    return next((folder for folder, name in known.items() if name == project), "") if isinstance(known, dict) else ""


def _read_small(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8") if path.stat().st_size < (1 << 20) else ""
    except (OSError, UnicodeDecodeError):
        return ""


def _turn(client: str, state: dict, key: str, role: str, when: str, at: int, text: str,
          call: Call | None = None) -> Turn:
    session = str(state.get("session") or "")
    return Turn(f"{client}:{session}:{key}", client, session, state.get("project", ""), role, when, at, text, call)


def _tool_turn(client: str, state: dict, key: str, when: str, at: int, name, args) -> Turn:
    call = Call(str(name or ""), args, str(state.get("cwd") or ""))
    return _turn(client, state, key, "tool", when, at, _tool(name, args), call)


JSONL_READERS = {"claude-code": claude, "codex": codex, "gemini": gemini}
UNREADABLE = (OSError, ValueError, KeyError, sqlite3.Error)  # what `read` raises for a file it cannot read now


def read(client: str, path: Path, state: dict, size: int | None = None) -> list[Turn]:
    """The turns of one transcript from where `state` says the last read stopped (all of it for a fresh
    state), a chunk at a time; raises one of UNREADABLE."""
    if client == "opencode":
        return opencode(path, state)
    size = path.stat().st_size if size is None else size
    new, read_to = [], -1
    while read_to != state.get("offset", 0) < size:  # until nothing moves
        read_to = state.get("offset", 0)
        new += JSONL_READERS[client](path, state)
    return new


def opencode(db: Path, state: dict) -> list[Turn]:
    """opencode: <data>/opencode/opencode.db; the messages whose parts changed since the last read."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    try:
        since = int(state.get("updated", 0))
        rows = con.execute(
            "SELECT p.message_id, p.id, p.data, p.time_updated, m.data, m.time_created, s.id, s.directory "
            "FROM part p JOIN message m ON m.id = p.message_id JOIN session s ON s.id = p.session_id "
            "WHERE p.message_id IN (SELECT message_id FROM part WHERE time_updated > ?) "
            "ORDER BY m.time_created, p.id", (since,)).fetchall()
    finally:
        con.close()
    texts: dict[str, list] = {}
    out = []
    for message_id, part_id, data, updated, message, created, session, directory in rows:
        state["updated"] = max(int(state.get("updated", 0)), int(updated))
        part, meta = _json(data), _json(message)
        role = "user" if meta.get("role") == "user" else "assistant"
        ctx = {"session": session, "project": project_name(directory), "cwd": directory or ""}
        when = _iso(created)
        if part.get("type") == "text" and not part.get("synthetic"):
            texts.setdefault(message_id, [ctx, role, when, created, []])[4].append(str(part.get("text", "")))
        elif part.get("type") == "tool":
            args = (part.get("state") or {}).get("input") if isinstance(part.get("state"), dict) else None
            out.append(_tool_turn("opencode", ctx, f"{message_id}:{part_id}", when, created, part.get("tool"), args))
    for message_id, (ctx, role, when, created, parts) in texts.items():
        text = clean("\n".join(parts))
        if text:
            out.append(_turn("opencode", ctx, message_id, role, when, created, text))
    return out


def _json(data) -> dict:
    try:
        value = json.loads(data)
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _iso(ms) -> str:
    import datetime as dt

    try:
        return dt.datetime.fromtimestamp(int(ms) / 1000, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    except (TypeError, ValueError, OverflowError, OSError):
        return ""
