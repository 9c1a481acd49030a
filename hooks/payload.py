"""Normalising each client's hook payload into one Event. Stdlib only (prompt path)."""

from __future__ import annotations

import re


CLIENTS = ("claude-code", "codex", "gemini", "cursor", "goose", "opencode")
CLIENT_ALIASES = {"claude": "claude-code", "claudecode": "claude-code", "gemini-cli": "gemini"}

# Every client's own event names, and short ones, mapped to what hafiza does.
EVENTS = {
    "prompt": "prompt", "UserPromptSubmit": "prompt", "BeforeAgent": "prompt", "beforeSubmitPrompt": "prompt",
    "chat.message": "prompt",
    "start": "start", "SessionStart": "start", "sessionStart": "start",
    "end": "end", "SessionEnd": "end", "sessionEnd": "end",
    "precompact": "precompact", "PreCompact": "precompact", "PreCompress": "precompact", "preCompact": "precompact",
}


class Event:
    """One hook call, whatever the client. A plain class: dataclasses costs the hook ~7 ms to import."""

    __slots__ = ("client", "kind", "name", "session", "prompt", "cwd", "transcript", "source")

    def __init__(self, client: str, kind: str, name: str, session: str, prompt: str = "",
                 cwd: str | None = None, transcript: str | None = None, source: str | None = None):
        self.client = client
        self.kind = kind              # prompt | start | end | precompact
        self.name = name              # the client's own event name, echoed back where the format needs it
        self.session = session
        self.prompt = prompt
        self.cwd = cwd
        self.transcript = transcript
        self.source = source          # SessionStart: startup | resume | clear | compact | fork


def client_name(raw: str) -> str:
    name = CLIENT_ALIASES.get(raw.lower(), raw.lower())
    if name not in CLIENTS:
        raise ValueError(f"unknown client {raw!r}; one of {', '.join(CLIENTS)}")
    return name


def normalise(client: str, event: str, data: dict) -> Event:
    """One Event from a client's stdin JSON (field names differ per client)."""
    client = client_name(client)
    kind = EVENTS.get(event) or EVENTS.get(data.get("hook_event_name", ""))
    if kind is None:
        raise ValueError(f"unknown event {event!r}")
    roots = data.get("workspace_roots") or []
    return Event(
        client=client,
        kind=kind,
        name=data.get("hook_event_name") or _native_name(client, kind, event),
        session=str(data.get("session_id") or data.get("conversation_id") or data.get("sessionID") or "default"),
        prompt=_own_words(client, str(data.get("prompt") or data.get("message") or data.get("text") or "")),
        cwd=data.get("cwd") or data.get("working_dir") or (roots[0] if roots else None),
        transcript=data.get("transcript_path"),
        source=data.get("source") or data.get("trigger"),
    )


# Headless Gemini CLI (0.61) puts the SessionStart context in front of the first prompt, inside
# <hook_context>, and hands that to the next hook as the prompt: recall would see the profile's words.
_GEMINI_CONTEXT = re.compile(r"^\s*(?:<hook_context>.*?</hook_context>\s*)+", re.S)


def _own_words(client: str, prompt: str) -> str:
    """The prompt as the user wrote it, without context a hook added earlier."""
    return _GEMINI_CONTEXT.sub("", prompt) if client == "gemini" else prompt


_NATIVE = {
    "claude-code": {"prompt": "UserPromptSubmit", "start": "SessionStart", "end": "SessionEnd", "precompact": "PreCompact"},
    "gemini": {"prompt": "BeforeAgent", "start": "SessionStart", "end": "SessionEnd", "precompact": "PreCompress"},
    "cursor": {"prompt": "beforeSubmitPrompt", "start": "sessionStart", "end": "sessionEnd", "precompact": "preCompact"},
}


def _native_name(client: str, kind: str, given: str) -> str:
    table = _NATIVE.get(client) or _NATIVE["claude-code"]  # codex uses Claude Code's names
    return table.get(kind, given) if given == kind else given
