"""Two ways hafiza writes files: atomic replacement, and appending whole lines. Stdlib only."""

from __future__ import annotations

import itertools
import os
import time
from pathlib import Path
from typing import Callable


_SEQ = itertools.count()  # threads of one process never share a temp name


def atomic_write(path: Path, data: str | bytes | Callable, fsync: bool = True) -> None:
    """Write via a temp file in the same folder and rename: readers see old or new, never half.

    `data` is text, bytes, or a callable that writes to the open binary file.
    Skipping the fsync suits bulk writes followed by a commit (3.6 s vs 0.4 s
    for 2,000 files).
    """
    # A unique name without `tempfile` (it costs the hook ~5 ms to import).
    tmp = path.parent / f".{path.name}.{os.getpid()}.{time.monotonic_ns()}.{next(_SEQ)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        with os.fdopen(fd, "wb") as fh:
            if callable(data):
                data(fh)
            else:
                fh.write(data.encode("utf-8") if isinstance(data, str) else data)
            fh.flush()
            if fsync:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def append_lines(path: Path, text: str) -> None:
    """Append with one O_APPEND write, so concurrent writers' lines never interleave."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, text.encode("utf-8"))
    finally:
        os.close(fd)
