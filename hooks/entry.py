"""The hook itself: a client's JSON in, what the client should inject out.

`respond` is the one implementation. The warm recall process runs it for
the thin hook command (hafiza_hook.py); `main` runs it in-process when no
warm process answers (keyword-only, and it starts one) and for
`hafiza hook <client> <event>`.

Fails open: any error, a missing vault or a timeout means exit 0, nothing
injected and one line in .hafiza/hooks.log. Imports only the standard
library and hafiza's stdlib-only modules unless it must fall back to cold
recall.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import sys
import time
from pathlib import Path

from hafiza.indexer.config import Settings, settings
from hafiza.vault.store import projects
from hafiza.vault.files import atomic_write
from hafiza.vault.format.paths import SIDECAR, is_vault, no_vault, project_of, resolve_vault

from . import render, session, wire
from .hafiza_hook import MAX_STDIN, empty, log, warm
from .payload import Event, normalise

TIMEOUT_SECONDS = 3.0     # well inside every client's own hook timeout
COLD_RESERVE = 0.6        # seconds of the budget a prompt keeps for its own cold recall if no warm process answers


class HookTimeout(Exception):
    pass


def main(argv: list[str] | None = None, raw: bytes | None = None, try_warm: bool = True, environ=None) -> int:
    """The hook as a command: stdin in, stdout out, exit 0 whatever happens. The environment is read
    here (`environ`, else the process's) and nowhere below."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 2 or argv[0] in ("-h", "--help"):
        print("usage: hafiza hook <client> <event>  (reads the client's hook JSON on stdin)", file=sys.stderr)
        return 0
    root = None
    try:
        try:
            environ = os.environ if environ is None else environ
            found = settings(environ)
            _arm_timeout(found.hook_timeout or TIMEOUT_SECONDS)
            raw = sys.stdin.buffer.read(MAX_STDIN) if raw is None else raw
            root = resolve_vault(environ.get("HAFIZA_VAULT"))
            out = warm(root, argv, raw) if try_warm else None
            if out is None:
                out = respond(argv, raw, root, environ, cold_asker(found)).encode("utf-8")
        finally:
            # Disarmed here, not in the handler below: an alarm that fired as the handler began (after some
            # other error) escaped it with a traceback. It fires once, so past this line it cannot fire.
            signal.setitimer(signal.ITIMER_REAL, 0)
        sys.stdout.buffer.write(out)
        sys.stdout.flush()
    except BaseException as exc:  # fail open, whatever happened (a timeout, a client that never closes stdin, Ctrl-C)
        try:
            sys.stdout.buffer.write(empty(argv))
            sys.stdout.flush()
        except (AttributeError, OSError, ValueError):  # no stdout to answer on (closed, or the client went away)
            pass
        log(root, f"{argv[0]} hook failed open: {type(exc).__name__}: {exc}")
    return 0


def respond(argv: list[str], raw: bytes, root: Path, environ, ask, record: bool = True) -> str:
    """What the hook prints for one call. `ask(root, request)` answers recall and profile requests. Without
    `record` nothing is kept of the call (what the session was shown, the impressions, the project's folder):
    what `hafiza ui` shows a person of what the agent would see."""
    started = time.monotonic()
    client = argv[0]
    try:
        data = json.loads(raw or b"{}")
        event = normalise(argv[0], argv[1], data if isinstance(data, dict) else {})
        client = event.client
        if not is_vault(root):
            log(None, f"{event.client} {event.kind}: {no_vault(root).message}; nothing injected")
            text = ""
        else:
            text = handle(event, root, ask, record)
        out = _emit(event, text, root, environ)
        if environ.get("HAFIZA_HOOK_LOG_ALL"):  # every call's outcome and time, when asked for
            log(root, f"{event.client} {event.kind} {'injected ' + str(len(text)) + ' chars' if text else 'silent'}"
                      f" in {(time.monotonic() - started) * 1000:.0f} ms")
        return out
    except Exception as exc:  # fail open
        log(root, f"{client} hook failed open: {type(exc).__name__}: {exc}")
        return empty(argv).decode()


def handle(event: Event, root: Path, ask, record: bool = True) -> str:
    sidecar = root / SIDECAR
    if event.kind == "prompt":
        return prompt_block(event, root, ask, record)
    if not record:
        return profile_block(event, root, ask, record) if event.kind == "start" else ""
    if event.kind == "start":
        if event.source in ("compact", "clear"):
            session.reset(sidecar, event.client, event.session)
        session.prune(sidecar)
        return profile_block(event, root, ask)
    session.spool(sidecar, event)
    if event.kind == "precompact":
        session.reset(sidecar, event.client, event.session)
    return ""


def prompt_block(event: Event, root: Path, ask, record: bool = True) -> str:
    from hafiza.indexer.gate import silence_reason

    if silence_reason(event.prompt):
        return ""
    sidecar = root / SIDECAR
    seen = session.seen(sidecar, event.client, event.session) if record else set()
    request = {"op": "recall", "query": event.prompt, "project": project_of(event.cwd) if event.cwd else None,
               "exclude": sorted(seen), "context": recent_turns(event.transcript, event.prompt)}
    reply = ask(root, request)
    chosen = render.select(reply.get("hits", []), seen)
    text, ids = render.block(chosen)
    if ids and record:
        from hafiza.indexer.vaults import log_shown

        session.add_seen(sidecar, event.client, event.session, ids)
        log_shown(root, chosen[:len(ids)], reply.get("vaults"), event.session)  # each in its own vault's log
    return text


def profile_block(event: Event, root: Path, ask, record: bool = True) -> str:
    if event.cwd and record:  # once a session: where this project lives, for the curator's path checks
        try:
            projects.record(root / SIDECAR, event.cwd)
        except OSError:
            pass
    request = {"op": "profile", "project": project_of(event.cwd) if event.cwd else None}
    return ask(root, request).get("text", "")


def cold_asker(found: Settings):
    """`ask` for `respond` without a warm process: in-process keyword-only recall, which also starts the
    warm process in the background for the next prompt (unless the settings say not to)."""
    def ask(root: Path, request: dict) -> dict:
        if found.daemon:
            try:
                wire.spawn(root)  # unless one runs, is loading, or another hook just started it
            except OSError as exc:  # this prompt still gets keyword recall
                log(root, f"could not start the warm process: {exc}")
            # A warm process loading (SessionStart's, this hook's, or another's in a burst of hooks): wait
            # for it a moment, inside the hook's budget, rather than answer with keywords only, or have
            # twenty hooks each run a cold recall at once and all run out of time.
            if request.get("op") == "recall" and wire.starting(root):
                reply = wire.wait_for(root, request, _warm_wait())
                if reply is not None and "error" not in reply:
                    return reply
        from .service import cold

        return cold(root, request, found)

    return ask


def _warm_wait() -> float:
    """Seconds to wait for a warm process that is loading: the hook's budget left (its timer) but what a
    cold recall needs. Twenty hooks at once on 20,000 memories were answered 17 times in 20 when each waited
    1.5 s: the process was up by then, but answered the queue one prompt at a time while those that gave
    up each loaded the index themselves and ran out of time."""
    left = signal.getitimer(signal.ITIMER_REAL)[0] or TIMEOUT_SECONDS  # 0: no timer armed (a test)
    return max(0.2, left - COLD_RESERVE)


def recent_turns(transcript: str | None, prompt: str, turns: int = 2, tail_bytes: int = 64 << 10) -> str:
    """The last few user turns before this one (Claude Code and Codex transcripts), or ''."""
    from hafiza.indexer.gate import silence_reason

    if not transcript:
        return ""
    try:
        # O_NONBLOCK and a regular file only: the path comes from the payload, and a FIFO there would
        # hold the warm process that answers every hook.
        fd = os.open(transcript, os.O_RDONLY | os.O_NONBLOCK)
        with open(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return ""
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


def _emit(event: Event, text: str, root: Path, environ) -> str:
    """What to print; Goose reads recall from a file instead (its MOIM file)."""
    if event.client == "goose":
        moim = environ.get("GOOSE_MOIM_MESSAGE_FILE")
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
        return ""
    return render.output(event.client, event.name, event.kind, text) or ""


def _write_moim(path: Path, text: str) -> None:
    """Goose re-reads this file every turn; replace it whole (an empty file clears stale recall)."""
    atomic_write(path, text, fsync=False)


def _arm_timeout(seconds: float) -> None:
    def expire(*_):
        raise HookTimeout(f"hook took longer than {seconds:.1f} s")

    signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)


if __name__ == "__main__":
    sys.exit(main())
