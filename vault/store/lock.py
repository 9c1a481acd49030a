"""flock, in one place: the per-vault writer lock, and the probes the hooks and the warm process use.

Writers queue on the writer lock; readers never take it. Stdlib only (the hook path imports it).
flock is released by the kernel when the process dies, so a crashed holder never leaves a lock behind.
"""

from __future__ import annotations

import fcntl
import os
import time
from contextlib import contextmanager
from pathlib import Path

from hafiza.vault.errors import VaultLocked

DEFAULT_TIMEOUT = 30.0


def claim(path: Path) -> int | None:
    """A descriptor holding an exclusive flock on `path` (created 0600), this process's pid written in it
    for `holder`; None at once when another process holds it. Closing the descriptor lets go."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    if not _take(fd):
        os.close(fd)
        return None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


def _take(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


@contextmanager
def locked(path: Path, timeout: float = DEFAULT_TIMEOUT, what: str = "vault"):
    """Hold an exclusive flock on `path`; raise VaultLocked after `timeout` seconds."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    deadline = time.monotonic() + timeout
    delay = 0.005
    while (fd := claim(path)) is None:
        if time.monotonic() >= deadline:
            raise VaultLocked(f"the {what} is locked by another writer (pid {holder(path) or '?'}); try again")
        time.sleep(delay)
        delay = min(delay * 2, 0.1)
    try:
        yield
    finally:
        os.close(fd)


@contextmanager
def try_locked(path: Path, wait: float = 0.0):
    """Yield True while holding the lock, or False if someone else still holds it after `wait` seconds
    (at once by default)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    deadline, delay = time.monotonic() + wait, 0.005
    while (fd := claim(path)) is None and time.monotonic() < deadline:
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
    try:
        yield fd is not None
    finally:
        if fd is not None:
            os.close(fd)


def is_held(path: Path) -> bool:
    """Whether another process holds the flock on `path` now (False when there is no such file)."""
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        return not _take(fd)
    finally:
        os.close(fd)


def holder(path: Path) -> int | None:
    """Pid recorded by the current (or last) holder, or None."""
    try:
        text = path.read_text().strip()
        return int(text) if text else None
    except (OSError, ValueError):
        return None
