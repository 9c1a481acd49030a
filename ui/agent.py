"""What the agent sees: for a prompt, a client and a project folder, exactly what the hook would print (the
hook's own code, run without recording anything), why each memory ranked where it did (`hafiza search
--explain`) and why others were left out; and the session-start profile with what it left out."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

from hafiza.hooks.payload import CLIENTS

from .web import render

# The events each client's installed hook is called with (hooks/clients.py, the opencode plugin).
EVENTS = {"claude-code": ("UserPromptSubmit", "SessionStart"), "codex": ("UserPromptSubmit", "SessionStart"),
          "gemini": ("BeforeAgent", "SessionStart"), "cursor": ("beforeSubmitPrompt", "sessionStart"),
          "goose": ("UserPromptSubmit", "SessionStart"), "opencode": ("prompt", "start")}
CANDIDATES = 12  # what the explanation lists: the hook's picks and the next ones it left out


async def agent(request):
    hold = request.app.state.hold
    params = request.query_params
    prompt = (params.get("prompt") or "")[:8000]
    client = params.get("client") if params.get("client") in CLIENTS else "claude-code"
    project = (params.get("project") or "").strip()
    seen = see(hold, prompt, client, project or None) if prompt or params.get("start") else None
    return render(request, "agent.html", prompt=prompt, client=client, project=project, clients=CLIENTS, seen=seen)


def see(hold, prompt: str, client: str, cwd: str | None) -> dict:
    """The hook's output for `prompt` in a new session of `client` in the folder `cwd`, and why."""
    from hafiza.hooks.entry import respond
    from hafiza.indexer.gate import silence_reason
    from hafiza.indexer.profile import build_profile
    from hafiza.vault.format.paths import project_of

    ask = asker(hold)
    prompt_event, start_event = EVENTS[client]
    payload = {"session_id": f"hafiza-ui-{secrets.token_hex(6)}", "prompt": prompt, "cwd": cwd or "",
               "hook_event_name": prompt_event}
    raw = json.dumps(payload).encode()
    out = respond([client, prompt_event], raw, hold.root, {}, ask, record=False) if prompt else ""
    start = respond([client, start_event], json.dumps({**payload, "hook_event_name": start_event}).encode(),
                    hold.root, {}, ask, record=False)
    project = project_of(cwd) if cwd else None
    from hafiza.indexer.index import Index

    profile = build_profile(Index(hold.root, notice=lambda _: None), hold.root, project, hold.settings.profile_chars)
    return {"output": out, "block": _block(out), "start": start, "silent": silence_reason(prompt) if prompt else None,
            "candidates": explain(hold, ask, prompt, project, _block(out)) if prompt and not silence_reason(prompt) else [],
            "profile": profile, "project": project}


def asker(hold):
    """What the hook asks recall through: the warm process when it answers, else in-process keyword recall
    (hooks/service.py, the hook's own fallback), without starting anything."""
    from hafiza.hooks import service, wire

    def ask(root: Path, request: dict) -> dict:
        return wire.ask(root, request) or service.cold(root, request, hold.settings)

    return ask


def explain(hold, ask, prompt: str, project: str | None, block: str) -> list[dict]:
    """The memories a looser search finds, each with its score's parts and why the hook took or left it."""
    from hafiza.indexer.recall import FLOOR

    hook = ask(hold.root, {"op": "recall", "query": prompt, "project": project, "explain": True})
    passed = {h["id"] for h in hook.get("hits", [])}
    wide = ask(hold.root, {"op": "recall", "query": prompt, "project": project, "explain": True, "floor": "search",
                           "limit": CANDIDATES})
    out = []
    for rank, hit in enumerate(wide.get("hits", []), 1):
        parts = hit.get("parts") or {}
        if f" {hit['id']}:" in block or f"] {hit['id']}:" in block:
            why = "injected"
        elif hit["id"] in passed:
            why = "relevant, but the block was full (at most 4 memories, 2 facts, ~1,400 characters)"
        else:
            why = (f"below the hook's relevance floor: matched IDF {parts.get('idf', 0):.2f} of {FLOOR.idf} needed"
                   + (f", meaning margin {parts['margin']:.3f} of {FLOOR.margin} needed" if "margin" in parts else ""))
        out.append({"rank": rank, "id": hit["id"], "title": hit.get("title"), "score": hit.get("score"),
                    "type": hit.get("type"), "status": hit.get("status"), "why": why, "parts": parts,
                    "vault": hit.get("vault")})
    return out


def _block(out: str) -> str:
    """The injected text inside a client's output (JSON for most, the text itself for opencode and goose)."""
    if not out.startswith("{"):
        return out
    try:
        data = json.loads(out)
    except ValueError:
        return out
    if isinstance(data, dict):
        found = (data.get("hookSpecificOutput") or {}).get("additionalContext") or data.get("additional_context")
        return found or ""
    return ""
