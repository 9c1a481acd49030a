"""The per-vault writer lock. Writers queue on it; readers never take it."""

from __future__ import annotations

import fcntl
import os
import time
from contextlib import contextmanager
from pathlib import Path

from .errors import VaultLocked

DEFAULT_TIMEOUT = 30.0


@contextmanager
def locked(path: Path, timeout: float = DEFAULT_TIMEOUT, what: str = "vault"):
    """Hold an exclusive flock on `path`; raise VaultLocked after `timeout` seconds.

    flock is released by the kernel when the process dies, so a crashed writer
    never leaves the vault locked.
    """
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + timeout
        delay = 0.005
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise VaultLocked(
                        f"the {what} is locked by another writer (pid {holder(path) or '?'}); try again") from None
                time.sleep(delay)
                delay = min(delay * 2, 0.1)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield
    finally:
        os.close(fd)  # closing releases the lock


@contextmanager
def try_locked(path: Path):
    """Yield True while holding the lock, or False at once if someone else holds it."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def holder(path: Path) -> int | None:
    """Pid recorded by the current (or last) holder, or None."""
    try:
        text = path.read_text().strip()
        return int(text) if text else None
    except (OSError, ValueError):
        return None


def is_held(path: Path) -> bool:
    if not path.exists():
        return False
    with try_locked(path) as got:
        return not got
