"""Talking to the warm recall process over a Unix socket. Stdlib only: this runs in every hook."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from .hafiza_hook import REPLY_TIMEOUT, connect, socket_file

MAX_REPLY = 1 << 20
DAEMON_LOCK = "daemon.lock"  # in run_dir: held by the warm process for its whole life
SPAWN_GRACE = 5.0  # seconds a just-started warm process has to take its lock before another is started


def run_dir(root: Path) -> Path:
    return Path(root) / ".hafiza" / "run"


def socket_path(root: Path) -> Path:
    return Path(socket_file(root))


def ask(root: Path, request: dict, timeout: float = REPLY_TIMEOUT) -> dict | None:
    """Send one request; the reply, or None when no warm process (of this user's) answers in time."""
    try:
        sock = connect(root)
    except OSError:
        return None
    try:
        sock.settimeout(timeout)
        sock.sendall(json.dumps(request, ensure_ascii=False).encode("utf-8") + b"\n")
        data = b""
        while not data.endswith(b"\n") and len(data) < MAX_REPLY:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        reply = json.loads(data)
        return reply if isinstance(reply, dict) and "error" not in reply else None
    except (OSError, ValueError):
        return None
    finally:
        sock.close()


def starting(root: Path) -> bool:
    """A warm process is loading (its lock is held) or was just spawned: worth a short wait."""
    from hafiza.vault.store.lock import is_held

    run = run_dir(root)
    if is_held(run / DAEMON_LOCK):
        return True
    try:
        return time.time() - (run / "spawned").stat().st_mtime < SPAWN_GRACE
    except FileNotFoundError:
        return False


def wait_for(root: Path, request: dict, seconds: float) -> dict | None:
    """The warm process's answer once it is up, polling for at most `seconds`; None if it never answers."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        reply = ask(root, request, timeout=max(0.05, deadline - time.monotonic()))
        if reply is not None:
            return reply
        time.sleep(0.1)
    return None


def spawn(root: Path) -> bool:
    """Start the warm process detached (own session: a client killing its hook cannot take it down).

    Only one hook spawns at a time (a non-blocking lock); the daemon's own
    lock keeps a second instance from staying up. posix_spawn rather than
    subprocess: the cold hook would otherwise import subprocess and fork a
    process that has Whoosh loaded, ~5 ms of a prompt's time.
    """
    from hafiza.vault.store.lock import claim, is_held

    run = run_dir(root)
    run.mkdir(mode=0o700, parents=True, exist_ok=True)  # private, as the warm process requires (daemon.private_folder)
    fd = claim(run / "spawn.lock")
    if fd is None:
        return False
    try:
        if is_held(run / DAEMON_LOCK):  # one is up or still loading its model: do not start another
            return False
        stamp = run / "spawned"
        try:
            if time.time() - stamp.stat().st_mtime < SPAWN_GRACE:  # started a moment ago, not locked yet
                return False
        except FileNotFoundError:
            pass
        stamp.touch()
        argv = [sys.executable, "-m", "hafiza.hooks.daemon", str(root)]
        devnull = os.open(os.devnull, os.O_RDWR)
        try:
            os.posix_spawn(sys.executable, argv, os.environ,
                           file_actions=[(os.POSIX_SPAWN_DUP2, devnull, n) for n in (0, 1, 2)], setsid=True)
        except (AttributeError, NotImplementedError):  # no posix_spawn, or no setsid for it on this platform
            import subprocess

            subprocess.Popen(argv, stdin=devnull, stdout=devnull, stderr=devnull, start_new_session=True)
        finally:
            os.close(devnull)
        return True
    finally:
        os.close(fd)
