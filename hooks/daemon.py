"""The warm recall process: one per vault, holding the index, the embedder and the vectors.

A fresh Python process that imports Whoosh lands near 70-80 ms per hook and
loading the embedder costs far more (DESIGN.md), so hooks ask this process
over a Unix socket and fall back to cold keyword recall when it is not up.
It exits by itself when idle, when its memory grows past a bound, or when
its vault disappears.
"""

from __future__ import annotations

import fcntl
import json
import os
import resource
import signal
import socket
import sys
import time
from pathlib import Path

from .hafiza_hook import MAGIC, MAX_STDIN, peer_uid, private, unframe
from .wire import run_dir, socket_path

IDLE_SECONDS = 30 * 60
MAX_RSS_MB = 768   # a bound, not a budget: the model is ~30 MB mapped, 5,000 vectors ~10 MB
TICK = 2.0          # how often an idle process looks at the clock
WARM_EMBED_LIMIT = 50  # memories the warm process embeds after hand edits (~0.4 s with USE)
FULL_SYNC = 5.0     # how often an idle process scans every file for in-place hand edits (~90 ms at 20,000)
# A process that prompts keep busy scans after answering, where a scan delays whichever prompt comes
# next: at most this share of its time (every 5 s at 5,000 memories, every ~18 s at 20,000).
BUSY_SCAN_SHARE = 0.005
REQUEST_LIMIT = 1.0  # seconds of work per request; the hook waits 1.5 s for the answer (hafiza_hook.REPLY_TIMEOUT)


class RequestTimeout(Exception):
    pass


def idle_seconds() -> float:
    return float(os.environ.get("HAFIZA_DAEMON_IDLE", IDLE_SECONDS))


def serve(root: Path) -> int:
    root = Path(root).resolve()
    os.chdir(root)  # hold no other folder open (the hook that started it may have run anywhere)
    run = run_dir(root)
    if not private_folder(run):
        return 0
    lock_fd = os.open(run / "daemon.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return 0  # another instance owns this vault
    os.ftruncate(lock_fd, 0)
    os.write(lock_fd, f"{os.getpid()}\n".encode())
    from hafiza.indexer.recall import open_recall

    from .service import answer

    recall, mode = open_recall(root)
    recall.quick_sync = True
    warm_up(recall, mode)
    path = socket_path(root)
    if not private_folder(path.parent):  # the stand-in under /tmp for a long vault path
        return 0
    path.unlink(missing_ok=True)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    umask = os.umask(0o077)  # only this user may connect
    try:
        server.bind(str(path))
    finally:
        os.umask(umask)
    server.listen(64)
    server.settimeout(min(TICK, max(0.2, idle_seconds() / 2)))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGALRM, _expire)
    stats = {"pid": os.getpid(), "vault": str(root), "mode": mode, "started": time.time(), "served": 0}
    write_status(run, stats)
    last = last_full = time.monotonic()
    scan_cost = 0.0
    try:
        while True:
            try:
                conn, _ = server.accept()
            except socket.timeout:
                if time.monotonic() - last > idle_seconds() or not (root / ".git").exists():
                    return 0
                if time.monotonic() - last_full > FULL_SYNC:
                    scan_cost = full_sync(recall)  # picks up in-place hand edits the quick check cannot see
                    last_full = time.monotonic()
                recall.prepare()  # a write since the last prompt: read the new generation's documents now
                continue
            last = time.monotonic()
            with conn:
                if not _own(conn):
                    continue  # the socket is the owner's only; nobody else is answered
                try:
                    recall.view()  # take in a write first: under the request's time limit it could be cut short
                except Exception:
                    pass  # the request itself meets the problem and answers with it
                stop = handle(conn, recall, mode, stats, answer, root)
            stats["served"] += 1
            if stop or rss_mb() > MAX_RSS_MB:
                return 0
            if time.monotonic() - last_full > max(FULL_SYNC, scan_cost / BUSY_SCAN_SHARE):  # busy: after answering
                scan_cost = full_sync(recall)
                last_full = time.monotonic()
    finally:
        server.close()
        path.unlink(missing_ok=True)
        (run / "daemon.json").unlink(missing_ok=True)
        os.close(lock_fd)


def full_sync(recall) -> float:
    """Sync the index with every file (not only what the folder's mtime shows), and embed what an
    editor changed since; its cost in seconds."""
    started = time.monotonic()
    recall.index.sync()
    if recall.embedder is not None:
        generation = recall.index.open(quick=True).latest_generation()
        if generation != recall.embedded_generation:
            from hafiza.indexer.refresh import sync_vectors

            # A few hand edits are embedded here; a whole vault (a new model) waits for `reindex`,
            # which doctor asks for, rather than holding every hook for minutes.
            sync_vectors(recall.index, recall.embedder, limit=WARM_EMBED_LIMIT)
            recall.embedded_generation = generation
    return time.monotonic() - started


def handle(conn, recall, mode, stats, answer, root: Path) -> bool:
    """Answer one request within REQUEST_LIMIT; True when asked to stop.

    One process answers every hook in turn, so no request may hold it: a
    transcript path that blocks, a stalled client. Past the limit the hook
    gets its empty answer and the process goes on to the next.
    """
    conn.settimeout(REQUEST_LIMIT)
    request: dict = {}
    signal.setitimer(signal.ITIMER_REAL, REQUEST_LIMIT)
    try:
        data = _receive(conn)
        if data.startswith(MAGIC):
            out = b"OK\n" + _hook(data, recall, mode, answer, root)
        else:
            request = json.loads(data or b"{}")
            if request.get("op") == "stop":
                reply = {"stopping": True, **stats}
            elif request.get("op") == "status":
                vectors = recall.vectors() if recall.embedder is not None else None
                reply = {**stats, "rss_mb": round(rss_mb(), 1), "vectors": len(vectors) if vectors is not None else 0}
            else:
                reply = answer(recall, request, mode)
            out = json.dumps(reply, ensure_ascii=False).encode("utf-8") + b"\n"
    except Exception as exc:  # one bad request must not take the process down
        out = json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode("utf-8") + b"\n"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    try:
        conn.sendall(out)
    except OSError:
        pass
    return request.get("op") == "stop"


def _own(conn) -> bool:
    try:
        return peer_uid(conn) in (None, os.getuid())
    except OSError:
        return False


def _expire(*_):
    raise RequestTimeout(f"the request took longer than {REQUEST_LIMIT:.1f} s")


def private_folder(folder: Path) -> bool:
    """Create `folder` for this user alone (0700); False if it exists and someone else could write to it."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.stat(folder)
        if st.st_uid == os.getuid() and st.st_mode & 0o077:
            os.chmod(folder, 0o700)  # made by an earlier version with the default mode
    except OSError:
        return False
    return private(folder)


def _receive(conn) -> bytes:
    """A JSON request (one line) or a HOOK1 request (until the client shuts its side)."""
    chunks, size, line = [], 0, None
    while True:
        chunk = conn.recv(65536)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if line is None:
            line = not chunks[0].startswith(MAGIC[:1])
        if (line and chunk.endswith(b"\n")) or size > MAX_STDIN + 4096:
            break
    return b"".join(chunks)


def _hook(data: bytes, recall, mode, answer, root: Path) -> bytes:
    """The whole hook for the thin hook command, answered from this process's index and model."""
    from .entry import respond

    argv, environ, raw = unframe(data)
    return respond(argv, raw, root, environ, lambda _root, request: answer(recall, request, mode)).encode("utf-8")


def warm_up(recall, mode: str) -> None:
    """Open the index and vectors and run the model once, so the first hook is already fast."""
    recall.prepare()
    if recall.embedder is not None:
        recall.vectors()
        recall.embedder.embed(["warm up"])
    recall.search("warm up", mode=mode)


def write_status(run: Path, stats: dict) -> None:
    tmp = run / f"daemon.json.{os.getpid()}"
    tmp.write_text(json.dumps(stats))
    os.replace(tmp, run / "daemon.json")


def rss_mb() -> float:
    """Peak resident memory: ru_maxrss is in KiB on Linux, in bytes on macOS."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1 << 20) if sys.platform == "darwin" else peak / 1024


if __name__ == "__main__":
    sys.exit(serve(Path(sys.argv[1])))
