"""`hafiza hook <client> <event>`: read the client's JSON on stdin, print what it should inject.

Fails open: any error, a missing vault or a timeout means exit 0, nothing
injected and one line in .hafiza/hooks.log. Imports only the standard
library and hafiza's stdlib-only modules unless it must fall back to cold
recall.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

from hafiza.vault import usage
from hafiza.vault.files import atomic_write
from hafiza.vault.paths import SIDECAR, is_vault, project_of, resolve_vault

from . import render, session, wire
from .payload import Event, normalise

TIMEOUT_SECONDS = 3.0     # well inside every client's own hook timeout
MAX_STDIN = 4 << 20
LOG_MAX_BYTES = 1 << 20


class HookTimeout(Exception):
    pass


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    started = time.monotonic()
    root = None
    client = argv[0] if argv else "?"
    try:
        if len(argv) < 2 or argv[0] in ("-h", "--help"):
            print("usage: hafiza hook <client> <event>  (reads the client's hook JSON on stdin)", file=sys.stderr)
            return 0
        _arm_timeout(float(os.environ.get("HAFIZA_HOOK_TIMEOUT", TIMEOUT_SECONDS)))
        data = json.loads(sys.stdin.read(MAX_STDIN) or "{}")
        event = normalise(argv[0], argv[1], data if isinstance(data, dict) else {})
        client = event.client
        root = resolve_vault(os.environ.get("HAFIZA_VAULT"))
        if not is_vault(root):
            _log(None, f"{event.client} {event.kind}: no vault at {root}; nothing injected")
            text = ""
        else:
            text = handle(event, root)
        _emit(event, text, root)
        _log(root, f"{event.client} {event.kind} {'injected ' + str(len(text)) + ' chars' if text else 'silent'} "
                   f"in {(time.monotonic() - started) * 1000:.0f} ms", verbose=True)
    except BaseException as exc:  # fail open, whatever happened
        signal.alarm(0)
        _log(root, f"{client} hook failed open: {type(exc).__name__}: {exc}")
        if client in ("gemini", "gemini-cli"):
            sys.stdout.write("{}")
    finally:
        signal.alarm(0)
    return 0


def handle(event: Event, root: Path) -> str:
    sidecar = root / SIDECAR
    if event.kind == "prompt":
        return prompt_block(event, root)
    if event.kind == "start":
        if event.source in ("compact", "clear"):
            session.reset(sidecar, event.client, event.session)
        session.prune(sidecar)
        return profile_block(event, root)
    session.spool(sidecar, event)
    if event.kind == "precompact":
        session.reset(sidecar, event.client, event.session)
    return ""


def prompt_block(event: Event, root: Path) -> str:
    from hafiza.indexer.gate import silence_reason

    if silence_reason(event.prompt):
        return ""
    sidecar = root / SIDECAR
    seen = session.seen(sidecar, event.client, event.session)
    request = {"op": "recall", "query": event.prompt, "project": project_of(event.cwd) if event.cwd else None,
               "exclude": sorted(seen), "context": recent_turns(event.transcript, event.prompt)}
    reply = ask_warm(root, request)
    chosen = render.select(reply.get("hits", []), seen)
    text, ids = render.block(chosen)
    if ids:
        session.add_seen(sidecar, event.client, event.session, ids)
        usage.append(sidecar, "shown", ids, event.session)
    return text


def profile_block(event: Event, root: Path) -> str:
    request = {"op": "profile", "project": project_of(event.cwd) if event.cwd else None}
    return ask_warm(root, request).get("text", "")


def ask_warm(root: Path, request: dict) -> dict:
    """The warm process's answer, or cold keyword-only recall while it starts in the background."""
    reply = wire.ask(root, request)
    if reply is not None:
        return reply
    if os.environ.get("HAFIZA_DAEMON", "1") != "0":
        wire.spawn(root)
    from .service import cold

    return cold(root, request)


def recent_turns(transcript: str | None, prompt: str, turns: int = 2, tail_bytes: int = 64 << 10) -> str:
    """The last few user turns before this one (Claude Code and Codex transcripts), or ''."""
    from hafiza.indexer.gate import silence_reason

    if not transcript:
        return ""
    try:
        with open(transcript, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            start = max(0, fh.tell() - tail_bytes)
            fh.seek(start)
            lines = fh.read().decode("utf-8", "replace").splitlines()[1 if start else 0:]  # a cut first line
    except OSError:
        return ""
    texts = []
    for line in lines:
        try:
            item = json.loads(line)
        except ValueError:
            continue
        text = _user_text(item)
        if text and text.strip() != prompt.strip() and silence_reason(text) != "machine-generated turn":
            texts.append(text)
    return " ".join(texts[-turns:])[:2000]


def _user_text(item: dict) -> str:
    if item.get("type") == "user":  # Claude Code
        content = (item.get("message") or {}).get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return " ".join(c.get("text", "") for c in content if isinstance(c, dict) and c.get("type") == "text")
    payload = item.get("payload") or {}
    if item.get("type") == "event_msg" and payload.get("type") == "user_message":  # Codex
        return str(payload.get("message") or "")
    return ""


def _emit(event: Event, text: str, root: Path) -> None:
    if event.client == "goose":
        moim = os.environ.get("GOOSE_MOIM_MESSAGE_FILE")
        if moim and event.kind in ("prompt", "start") and is_vault(root):
            # One file carries everything Goose sees each turn: the session's profile, then this turn's recall.
            sidecar = root / SIDECAR
            if event.kind == "start":
                session.save_text(sidecar, event.client, event.session, "profile", text)
                profile = text
            else:
                profile = session.load_text(sidecar, event.client, event.session, "profile")
            _write_moim(Path(moim), "\n\n".join(part for part in (profile, text if event.kind == "prompt" else "")
                                                 if part))
        return
    out = render.output(event.client, event.name, event.kind, text)
    if out:
        sys.stdout.write(out)
        sys.stdout.flush()


def _write_moim(path: Path, text: str) -> None:
    """Goose re-reads this file every turn; replace it whole (an empty file clears stale recall)."""
    atomic_write(path, text, fsync=False)


def _arm_timeout(seconds: float) -> None:
    def expire(*_):
        raise HookTimeout(f"hook took longer than {seconds:.1f} s")

    signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)


def _log(root: Path | None, line: str, verbose: bool = False) -> None:
    if verbose and not os.environ.get("HAFIZA_HOOK_LOG_ALL"):
        return
    try:
        folder = (root / SIDECAR) if root and (root / ".git").exists() else Path.home() / ".cache" / "hafiza"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "hooks.log"
        if path.exists() and path.stat().st_size > LOG_MAX_BYTES:
            os.replace(path, path.with_suffix(".log.1"))
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {line}\n")
    except OSError:
        pass


if __name__ == "__main__":
    sys.exit(main())
