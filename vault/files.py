"""Two ways hafiza writes files: atomic replacement, and appending whole lines. Stdlib only."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable


def atomic_write(path: Path, data: str | bytes | Callable, fsync: bool = True) -> None:
    """Write via a temp file in the same folder and rename: readers see old or new, never half.

    `data` is text, bytes, or a callable that writes to the open binary file.
    Skipping the fsync suits bulk writes followed by a commit (3.6 s vs 0.4 s
    for 2,000 files).
    """
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
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
