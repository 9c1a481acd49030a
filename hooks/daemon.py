"""The warm recall process: one per vault, holding the index, the embedder and the vectors.

A fresh Python process that imports Whoosh lands near 70-80 ms per hook and
loading the embedder costs far more (docs/architecture.md, the prompt path), so hooks ask this process
over a Unix socket and fall back to cold keyword recall when it is not up.
It waits for the bytes of every open connection at once, each with its own
deadline, and answers complete requests one at a time (`Loop`). It exits by
itself when idle, when its memory grows past a bound, or when its vault
disappears.
"""

from __future__ import annotations

import json
import os
import resource
import selectors
import signal
import socket
import sys
import time
from pathlib import Path

from hafiza.vault.files import atomic_write
from hafiza.vault.store.lock import claim

from .hafiza_hook import MAGIC, MAX_STDIN, peer_uid, private, unframe
from .wire import DAEMON_LOCK, run_dir, socket_path

IDLE_SECONDS = 30 * 60
# The memory cap guards against growth (a leak, a runaway request), not against the vault's size. A fixed
# 768 MB was crossed by merely loading 35,000-45,000 memories with embeddings: the process then exited after
# every request and the next hook started it again to load the same (issue 18). So the cap is a measured
# figure: the memory this process holds once loaded and warmed up (`warm_up`), times CAP_GROWTH, and at
# least MIN_CAP_MB. CAP_GROWTH: at 20,000-100,000 memories with embeddings, prompts (which page in more of
# the model), a first full scan and a hand edit's sync raised what it holds (VmRSS) by at most 27% over the
# loaded figure (16% at 100,000: 369 -> 428 MB, cap 553 MB; bench/results/vector-memory-2026-12-02.md);
# 1.5 leaves room for those and stops a leak.
CAP_GROWTH = 1.5
MIN_CAP_MB = 512.0
TICK = 2.0          # how often an idle process looks at the clock
# Without a kernel watch (hooks/watch.py), how often an idle process scans every file for in-place hand
# edits (~90 ms at 20,000). With one it never scans: the kernel names what changed.
FULL_SYNC = 5.0
PACK_EVERY = 3600.0  # seconds between two `git gc --auto` (which does nothing until objects pile up)
# A process that prompts keep busy scans after answering, where a scan delays whichever prompt comes
# next: at most this share of its time (every 5 s at 5,000 memories, every ~18 s at 20,000).
BUSY_SCAN_SHARE = 0.005
REQUEST_LIMIT = 1.0  # seconds of work per request; the hook waits 1.5 s for the answer (hafiza_hook.REPLY_TIMEOUT)
# A connection has REQUEST_LIMIT from its accept to send its whole request, then REQUEST_LIMIT of work.
# Past this many still sending, the oldest is dropped for the newest: idle ones cannot lock out a hook.
MAX_PENDING = 128
SEND_LIMIT = 0.2  # a reply fits the socket's buffer at once; only a client that does not read a large one waits


class RequestTimeout(Exception):
    pass


def serve(root: Path, settings) -> int:
    """Serve the vault at `root` until idle (settings: hafiza.indexer.config.Settings)."""
    root = Path(root).resolve()
    os.chdir(root)  # hold no other folder open (the hook that started it may have run anywhere)
    run = run_dir(root)
    if not private_folder(run):
        return 0
    lock_fd = claim(run / DAEMON_LOCK)
    if lock_fd is None:
        return 0  # another instance owns this vault
    from functools import partial

    from hafiza.indexer.vaults import open_recall
    from hafiza.vault import __version__

    from .service import answer

    answer = partial(answer, profile_chars=settings.profile_chars)
    path = socket_path(root)
    if not private_folder(path.parent):  # the stand-in under /tmp for a long vault path
        return 0
    path.unlink(missing_ok=True)  # a killed process's socket and status: nobody is answering them
    (run / "daemon.json").unlink(missing_ok=True)
    # Loading before listening: a hook that connected to a process still loading waited its 1.5 s for
    # nothing and printed nothing (the first prompt of a first session). Until the socket is there, hooks
    # answer in-process, and those of a burst poll for this process meanwhile (entry.cold_asker).
    recall, mode = open_recall(root, embedder=settings)
    warm_up(recall, mode)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    umask = os.umask(0o077)  # only this user may connect
    try:
        server.bind(str(path))
    finally:
        os.umask(umask)
    server.listen(64)
    server.setblocking(False)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGALRM, _expire)
    loaded = resident_mb()
    # The version this process runs: a hook of another (an upgrade since) retires it (hafiza_hook.warm).
    stats = {"pid": os.getpid(), "version": __version__, "vault": str(root), "mode": mode, "started": time.time(),
             "served": 0, "loaded_mb": round(loaded, 1), "cap_mb": round(memory_cap(loaded), 1)}
    write_status(run, stats)
    try:
        Loop(server, recall, mode, stats, answer, root, settings.daemon_idle or IDLE_SECONDS).run()
        return 0
    finally:
        server.close()
        path.unlink(missing_ok=True)
        (run / "daemon.json").unlink(missing_ok=True)
        os.close(lock_fd)


class Pending:
    """A connection whose request has not all arrived: a JSON line, or a HOOK1 frame until the client
    shuts its side."""

    __slots__ = ("conn", "deadline", "chunks", "size", "line")

    def __init__(self, conn, deadline: float):
        self.conn, self.deadline = conn, deadline
        self.chunks: list[bytes] = []
        self.size = 0
        self.line: bool | None = None  # a JSON line rather than a HOOK1 frame; known from the first byte

    def receive(self) -> bool:
        """Take every byte that has arrived; True once the request is complete (OSError: the peer broke off)."""
        while True:
            try:
                chunk = self.conn.recv(65536)
            except BlockingIOError:
                return False
            if not chunk:
                return True
            self.chunks.append(chunk)
            self.size += len(chunk)
            if self.line is None:
                self.line = not chunk.startswith(MAGIC[:1])
            if (self.line and b"\n" in chunk) or self.size > MAX_STDIN + 4096:
                return True

    def data(self) -> bytes:
        return b"".join(self.chunks)


class Loop:
    """Waits for the bytes of many connections at once and answers complete requests one at a time.

    Only the waiting is multiplexed: the recall objects are not thread-safe,
    and a request's work is bounded (REQUEST_LIMIT). Reading one connection
    at a time, three idle connections held every hook for 1.0 s each, and
    the hooks (1.5 s) answered empty (the hardening fault pass).
    """

    def __init__(self, server, recall, mode: str, stats: dict, answer, root: Path, idle: float = IDLE_SECONDS):
        from hafiza.vault.format.paths import FACTS, MEMORIES

        from .watch import FolderWatch

        self.server, self.recall, self.mode = server, recall, mode
        self.stats, self.answer, self.root = stats, answer, root
        self.idle = idle  # seconds without a request before the process exits
        self.selector = selectors.DefaultSelector()
        self.selector.register(server, selectors.EVENT_READ)
        self.watch = FolderWatch.open(root / MEMORIES, {f"{FACTS}/": root / FACTS})  # facts/, if there is one
        if self.watch is not None:
            self.selector.register(self.watch, selectors.EVENT_READ)
        stats["watch"] = self.watch is not None
        self.embeds = None  # the lock telling writers this process embeds what they write (indexer/refresh.py)
        if self.watch is not None and recall.embedder is not None:
            from hafiza.indexer.refresh import WARM_EMBEDDER
            from hafiza.vault.store.lock import claim
            from hafiza.vault.format.paths import SIDECAR

            (root / SIDECAR / WARM_EMBEDDER).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            self.embeds = claim(root / SIDECAR / WARM_EMBEDDER)
        self.pending: dict[socket.socket, Pending] = {}  # oldest first
        self.last = self.last_full = time.monotonic()
        self.scan_cost = 0.0
        self.full_synced = False
        self.sessions = None  # what tells of ended sessions (hooks/ingest.py), made at the first quiet moment
        self.last_pack = None  # when `git gc --auto` was last started: at the first quiet moment, then hourly

    def run(self) -> None:
        """Serve until idle, asked to stop, grown past its memory cap, or the vault is gone."""
        try:
            while True:
                events = self.selector.select(self._timeout())
                # Deadlines are checked against the time of the select, after its events are read: a
                # request complete by then is answered, however long the one before it took.
                now = time.monotonic()
                for key, _ in events:
                    if key.fileobj is self.server:
                        self._accept()
                    elif key.fileobj is self.watch:
                        self._changed()
                    elif key.fileobj in self.pending and self._receive(key.data) and self._answer(key.data):
                        return
                for request in [r for r in self.pending.values() if r.deadline <= now]:
                    self._drop(request, f"no complete request within {REQUEST_LIMIT:.1f} s")
                if not events and not self.pending and self._idle():
                    return
        finally:
            for request in list(self.pending.values()):
                self._drop(request)
            self.selector.close()
            if self.watch is not None:
                self.watch.close()
            if self.embeds is not None:
                os.close(self.embeds)

    def _timeout(self) -> float:
        tick = min(TICK, max(0.2, self.idle / 2))
        if not self.pending:
            return tick
        soonest = min(r.deadline for r in self.pending.values())
        return max(0.0, min(tick, soonest - time.monotonic()))

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except BlockingIOError:
                return
            except OSError:  # out of descriptors: make room; the rest wait in the backlog
                if self.pending:
                    self._drop(next(iter(self.pending.values())), "too many connections")
                return
            if not _own(conn):
                conn.close()  # the socket is the owner's only; nobody else is answered
                continue
            if len(self.pending) >= MAX_PENDING:
                self._drop(next(iter(self.pending.values())), "too many connections")
            conn.setblocking(False)
            self.last = time.monotonic()
            request = Pending(conn, self.last + REQUEST_LIMIT)
            self.pending[conn] = request
            self.selector.register(conn, selectors.EVENT_READ, request)
            self.stats["served"] += 1  # counted when taken, so one still sending shows in `status`

    def _receive(self, request: Pending) -> bool:
        """Read what `request` has sent; True, and it is no longer waited on, once it is complete."""
        try:
            done = request.receive()
        except OSError:
            self._drop(request)
            return False
        if done:
            self._forget(request)
        return done

    def _answer(self, request: Pending) -> bool:
        """Answer a complete request; True when the process should exit."""
        with request.conn as conn:
            try:
                self.recall.view()  # take in a write first: under the request's time limit it could be cut short
            except Exception:
                pass  # the request itself meets the problem and answers with it
            out, stop = handle(request.data(), self.recall, self.mode, self.stats, self.answer, self.root)
            _send(conn, out, SEND_LIMIT)
        if stop or self._over_cap():
            return True
        if self._full_sync_due(max(FULL_SYNC, self.scan_cost / BUSY_SCAN_SHARE)):  # busy: now and then
            self._full_sync()
        return False

    def _over_cap(self) -> bool:
        """Whether this process holds more memory than its cap; says so in hooks.log when it does."""
        now, cap = resident_mb(), self.stats["cap_mb"]
        if now <= cap:
            return False
        from .hafiza_hook import log

        log(self.root, f"warm process {os.getpid()} stopping: it holds {now:.0f} MB, past its cap of {cap:.0f} MB "
                       f"({CAP_GROWTH}x the {self.stats['loaded_mb']:.0f} MB it held once loaded); the next hook "
                       "starts a fresh one")
        return True

    def _full_sync_due(self, every: float) -> bool:
        """A comparison of every file is due: with a kernel watch only once (for edits made before this
        process started), without one every `every` seconds (for edits made in place)."""
        return time.monotonic() - self.last_full > every and (self.watch is None or not self.full_synced)

    def _changed(self) -> None:
        """Files changed in memories/ (a write, an edit in place): read just those, or all if the kernel lost count."""
        try:
            catch_up(self.recall, self.watch.changed)
        except Exception:  # a prompt meets the problem and answers with it; the watch goes on
            pass

    def _idle(self) -> bool:
        """Work for a quiet moment; True when the process should exit (idle too long, vault gone)."""
        if time.monotonic() - self.last > self.idle or not (self.root / ".git").exists():
            return True
        if self._full_sync_due(FULL_SYNC):
            self._full_sync()
        self._read_sessions()
        self._pack()
        self.recall.prepare()  # a write since the last prompt: read the new generation's documents now
        return False

    def _pack(self) -> None:
        """Let git pack the vault's objects when it has piled up enough of them (`git gc --auto`, detached
        and niced). hafiza commits through plumbing, which never does this itself: a write at 5,000
        memories leaves a new tree of the memories folder, ~150 KB as a loose object, so a used vault
        grew by megabytes a day, and at 100,000 memories by hundreds of them after an import."""
        if self.last_pack is not None and time.monotonic() - self.last_pack < PACK_EVERY:
            return
        self.last_pack = time.monotonic()
        try:
            from hafiza.vault.git import pack

            pack(self.root)
        except OSError:
            pass  # no git to run now: the next hour tries again

    def _read_sessions(self) -> None:
        """Sessions ended since the last look (the spool grew, opencode's database moved): start the
        transcript reader, which runs apart from this process, so no prompt waits for a long transcript."""
        from . import ingest

        try:
            if self.sessions is None:
                from hafiza.skills.sources import locations

                self.sessions = ingest.Watch(self.root, locations(os.environ)["opencode"])
            if self.sessions.due():
                ingest.start(self.root)
                self.sessions.started()
        except OSError:
            self.sessions = None  # no process to start now: the next quiet moment looks again from the state

    def _full_sync(self) -> None:
        self.scan_cost = full_sync(self.recall)
        self.full_synced = True
        self.stats["full_sync_s"] = round(self.scan_cost, 3)  # for `status`: the last full comparison's cost
        self.last_full = time.monotonic()

    def _forget(self, request: Pending) -> None:
        self.selector.unregister(request.conn)
        del self.pending[request.conn]

    def _drop(self, request: Pending, why: str | None = None) -> None:
        """Stop waiting for `request`: tell it why if it still listens, and close it."""
        self._forget(request)
        with request.conn as conn:
            if why:
                _send(conn, _error(why), 0.0)


def full_sync(recall) -> float:
    """Sync the index with every file (not only what the folder's mtime shows), and embed what an
    editor changed since; its cost in seconds."""
    return catch_up(recall)


def catch_up(recall, changed=None) -> float:
    """Sync the index with the files `changed()` names (see hooks/watch.py), or with every file when
    there is no `changed` or it lost count, and embed what an editor changed since; the cost in seconds."""
    started = time.monotonic()
    recall.index.follow(changed) if changed is not None else recall.index.sync()
    if recall.embedder is not None:
        generation = recall.index.open(quick=True).latest_generation()
        if generation != recall.embedded_generation:
            from hafiza.indexer.refresh import WARM_EMBEDS, sync_vectors

            # A few writes or hand edits are embedded here (50 take ~0.4 s with USE); a whole vault (a new
            # model) waits for `reindex`, which doctor asks for, rather than holding every hook for minutes.
            # The documents, read as the prompts will want them anyway, tell which files changed: only
            # those are read again to be checked (refresh.embedding_items).
            recall.prepare()
            sync_vectors(recall.index, recall.embedder, limit=WARM_EMBEDS, view=recall.view(sync=False))
            recall.embedded_generation = generation
    return time.monotonic() - started


def handle(data: bytes, recall, mode, stats, answer, root: Path) -> tuple[bytes, bool]:
    """The reply to one complete request, worked out within REQUEST_LIMIT, and whether it asks to stop.

    Any bytes at all get a reply, an error at worst: the hardening fault pass
    took the process down with a JSON array, parsed outside this error path.
    """
    try:
        try:
            signal.setitimer(signal.ITIMER_REAL, REQUEST_LIMIT)  # a transcript path that blocks, a slow query
            return _work(data, recall, mode, stats, answer, root)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except Exception as exc:  # one bad request must not take the process down; by now the alarm is spent or off
        return _error(f"{type(exc).__name__}: {exc}"), False


def _work(data: bytes, recall, mode, stats, answer, root: Path) -> tuple[bytes, bool]:
    if data.startswith(MAGIC):
        return b"OK\n" + _hook(data, recall, mode, answer, root), False
    request = json.loads(data.split(b"\n", 1)[0] or b"{}")
    if not isinstance(request, dict):
        raise ValueError(f"a request is a JSON object, not {type(request).__name__}")
    op = request.get("op")
    if op == "stop":
        reply = {"stopping": True, **stats}
    elif op == "status":
        vectors = recall.vectors() if recall.embedder is not None else None
        reply = {**stats, "rss_mb": round(rss_mb(), 1), "resident_mb": round(resident_mb(), 1),
                 "vectors": len(vectors) if vectors is not None else 0, "documents": recall.documents()}
    else:
        reply = answer(recall, request, mode)
    return json.dumps(reply, ensure_ascii=False).encode("utf-8") + b"\n", op == "stop"


def _error(message: str) -> bytes:
    return json.dumps({"error": message}).encode("utf-8") + b"\n"


def _send(conn, out: bytes, timeout: float) -> None:
    try:
        conn.settimeout(timeout)
        conn.sendall(out)
    except OSError:
        pass  # the client gave up or does not read: its loss


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
    atomic_write(run / "daemon.json", json.dumps(stats), fsync=False, mode=None)


def memory_cap(loaded_mb: float) -> float:
    """The most memory (MB) a warm process that held `loaded_mb` once loaded may hold before it exits."""
    return max(MIN_CAP_MB, loaded_mb * CAP_GROWTH)


def resident_mb() -> float:
    """Memory held now (VmRSS, MB); where /proc is missing, the peak (`rss_mb`)."""
    try:
        with open("/proc/self/statm", "rb") as fh:
            pages = int(fh.read().split()[1])
    except (OSError, ValueError, IndexError):
        return rss_mb()
    return pages * os.sysconf("SC_PAGE_SIZE") / (1 << 20)


def rss_mb() -> float:
    """Peak resident memory: ru_maxrss is in KiB on Linux, in bytes on macOS."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1 << 20) if sys.platform == "darwin" else peak / 1024


if __name__ == "__main__":
    from hafiza.indexer.config import settings

    sys.exit(serve(Path(sys.argv[1]), settings()))
