"""The command every client's hook runs: `python -S .../hafiza_hook.py <client> <event>`.

A hook runs on every prompt, so its start-up is the floor of hafiza's
latency. With `-S` the interpreter sets up no site-packages (in a venv
with an editable install, site alone costs ~15 ms), and this file imports
nothing the interpreter has not already loaded but the C socket module
(`socket.py` pulls in enum and selectors; `json` pulls in `re`: ~10 ms
between them). It hands the client's raw payload to the vault's warm
recall process, which does all of the hook's work (hafiza.hooks.entry.respond),
and prints the answer. When no warm process answers, it sets up
site-packages and runs the same hook in-process, keyword-only, which also
starts a warm process for the next prompt.

The wire format of the hook request (`HOOK1`; JSON requests are the
other kind the warm process answers):

    HOOK1 <client> <event>\\n
    NAME=value\\n ...       the PASSED environment variables that are set
    \\n
    <the client's payload, raw, until the end of the stream>

and the reply is `OK\\n` followed by exactly what the hook prints.

Imported as a module (hafiza.hooks.hafiza_hook), it lends the same
`warm`, `socket_file` and `log` to the in-process entry point and to wire.py.
"""

import os
import sys

MAGIC = b"HOOK1"
PASSED = ("GOOSE_MOIM_MESSAGE_FILE", "HAFIZA_HOOK_LOG_ALL")  # what the warm process needs of the hook's env
MAX_STDIN = 4 << 20
TIMEOUT = 3.0           # for reading stdin and the warm answer; the in-process fallback has its own
CONNECT_TIMEOUT = 0.05  # a live warm process accepts at once; anything slower means fall back
REPLY_TIMEOUT = 1.5
LOG_MAX_BYTES = 1 << 20  # hooks.log is rotated past this (one old copy kept)
_SUN_PATH_MAX = 100     # sockaddr_un holds 108 bytes on Linux, 104 on macOS
_SHUT_WR = 1            # socket.SHUT_WR, without importing socket.py


def vault_dir(environ=os.environ) -> str:
    """`HAFIZA_VAULT`, else `$XDG_DATA_HOME/hafiza/vault`: as hafiza.vault.format.paths.default_vault, without pathlib."""
    given = environ.get("HAFIZA_VAULT")
    if given:
        return os.path.realpath(os.path.expanduser(given))
    data = environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.realpath(os.path.join(data, "hafiza", "vault"))


def socket_file(root) -> str:
    """`.hafiza/run/recall.sock`, or a short stand-in under the temp dir when that path is too long."""
    path = os.path.join(os.fspath(root), ".hafiza", "run", "recall.sock")
    if len(os.fsencode(path)) < _SUN_PATH_MAX:
        return path
    import zlib

    key = f"{zlib.crc32(os.fsencode(os.path.realpath(root))):08x}"
    return os.path.join(os.environ.get("TMPDIR") or "/tmp", f"hafiza-{os.getuid()}", f"{key}.sock")


def frame(argv: list[str], raw: bytes, environ=os.environ) -> bytes | None:
    """The HOOK1 request for this hook call, or None when a field cannot be framed."""
    if len(argv) < 2:
        return None
    header = [f"{argv[0]} {argv[1]}", *(f"{name}={environ[name]}" for name in PASSED if environ.get(name))]
    if " " in argv[0] + argv[1] or any(c in line for line in header for c in "\r\n\0"):
        return None
    return MAGIC + b" " + "\n".join(header).encode("utf-8", "surrogateescape") + b"\n\n" + raw


def unframe(data: bytes) -> tuple[list[str], dict[str, str], bytes]:
    """(argv, passed environment, raw payload) of a HOOK1 request; ValueError if it is not one."""
    head, sep, raw = data.partition(b"\n\n")
    if not sep or not head.startswith(MAGIC + b" "):
        raise ValueError("not a HOOK1 request")
    first, *lines = head[len(MAGIC) + 1:].decode("utf-8", "surrogateescape").split("\n")
    environ = dict(line.split("=", 1) for line in lines if "=" in line)
    return first.split(" "), {k: v for k, v in environ.items() if k in PASSED}, raw


def private(folder) -> bool:
    """Whether only this user can have put a socket in `folder`: it is ours and nobody else may write to it."""
    try:
        st = os.stat(folder)
    except OSError:
        return False
    return st.st_uid == os.getuid() and not st.st_mode & 0o022


def peer_uid(sock) -> int | None:
    """The user id of the process at the other end of a Unix socket, where the platform tells (Linux)."""
    import _socket

    option = getattr(_socket, "SO_PEERCRED", None)
    if option is None:
        return None
    credentials = sock.getsockopt(_socket.SOL_SOCKET, option, 12)  # struct ucred: pid, uid, gid
    return int.from_bytes(credentials[4:8], sys.byteorder)


def connect(root):
    """A socket connected to the vault's warm process; OSError when there is none, or when another user
    could have put the socket there or answers it (they would choose what the agent is told)."""
    import _socket

    path = socket_file(root)
    if not private(os.path.dirname(path)):
        raise PermissionError(f"{os.path.dirname(path)} is missing or open to other users")
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(CONNECT_TIMEOUT)
        sock.connect(path)
        if peer_uid(sock) not in (None, os.getuid()):
            raise PermissionError("the warm process belongs to another user")
    except BaseException:
        sock.close()
        raise
    return sock


def warm(root, argv: list[str], raw: bytes) -> bytes | None:
    """What the hook prints, as the vault's warm process answers it; None when no warm process took
    the request (the hook then runs in-process). One that took it but gave no proper answer in time
    gets the hook's empty answer: running it again in-process would record its impressions twice."""
    request = frame(argv, raw)
    if request is None or not current(root):
        return None
    try:
        sock = connect(root)
        sock.settimeout(REPLY_TIMEOUT)
        sock.sendall(request)
    except OSError:  # no warm process, a stale socket, one of another user's
        return None
    chunks = []
    try:
        sock.shutdown(_SHUT_WR)
        while chunk := sock.recv(65536):
            chunks.append(chunk)
        problem = "no proper answer"
    except OSError as exc:
        problem = f"{type(exc).__name__}: {exc}"
    finally:
        sock.close()
    reply = b"".join(chunks)
    if reply.startswith(b"OK\n"):
        return reply[3:]
    log(root, f"{argv[0]} hook failed open: the warm process took the request and gave {problem}")
    return empty(argv)


def version() -> str | None:
    """The version of the hafiza this file belongs to, read from hafiza/vault/__init__.py (importing hafiza
    would cost the thin hook its start-up); None if it cannot be read."""
    try:
        with open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "vault",
                               "__init__.py"), "rb") as fh:
            text = fh.read(8192)
    except OSError:
        return None
    head, sep, rest = text.partition(b'__version__ = "')
    return rest.split(b'"', 1)[0].decode("ascii", "replace") if sep else None


def current(root) -> bool:
    """False when the vault's warm process runs another version of hafiza than this hook (an upgrade since it
    started): it is asked to stop, and the next hook starts one of this version. True when it runs this
    one, or nothing tells (no status file: none is up; an unreadable version: the hook fails open)."""
    mine = version()
    try:
        with open(os.path.join(os.fspath(root), ".hafiza", "run", "daemon.json"), "rb") as fh:
            status = fh.read(65536)
    except OSError:
        return True
    if mine is None or f'"version": "{mine}"'.encode() in status:
        return True
    try:
        sock = connect(root)
    except OSError:
        return True  # gone already, or not ours to stop
    try:
        sock.settimeout(REPLY_TIMEOUT)
        sock.sendall(b'{"op": "stop"}\n')
        while sock.recv(65536):  # its reply comes once it has decided to exit
            pass
    except OSError:
        pass
    finally:
        sock.close()
    log(root, f"the warm process ran another version of hafiza than {mine}: asked it to stop; this prompt is "
              "answered in-process")
    return False


def empty(argv: list[str]) -> bytes:
    """The hook's answer when it has nothing to say: Gemini CLI reads stdout as JSON."""
    return b"{}" if argv[:1] in (["gemini"], ["gemini-cli"]) else b""


def log(root, line: str) -> None:
    """One line in the vault's .hafiza/hooks.log (without a vault, ~/.cache/hafiza/hooks.log); past
    LOG_MAX_BYTES the log moves to hooks.log.1 first. The one hook log writer: the in-process hook
    (hafiza.hooks.entry) and the warm process write through it too. Never raises OSError."""
    import time

    try:
        if root and os.path.exists(os.path.join(os.fspath(root), ".git")):
            folder = os.path.join(os.fspath(root), ".hafiza")
        else:
            folder = os.path.join(os.path.expanduser("~"), ".cache", "hafiza")
        os.makedirs(folder, mode=0o700, exist_ok=True)
        path = os.path.join(folder, "hooks.log")
        try:
            if os.stat(path).st_size > LOG_MAX_BYTES:
                os.replace(path, path + ".1")
        except FileNotFoundError:
            pass
        # One O_APPEND write, so the lines of hooks running at once never interleave; O_NONBLOCK, so a
        # FIFO put in the log's place cannot hold the hook; O_NOFOLLOW, so a link cannot lead the line elsewhere.
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        fd = os.open(path, flags, 0o600)
        try:
            os.write(fd, f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {line}\n".encode("utf-8", "replace"))
        finally:
            os.close(fd)
    except OSError:
        pass


def main(argv: list[str]) -> int:
    import _signal  # signal.py imports enum

    def expire(*_):
        raise TimeoutError

    os.umask(0o077)  # what this hook, and the warm process it may start, write is the user's alone
    raw, out = b"", None
    try:
        try:
            _signal.signal(_signal.SIGALRM, expire)
            _signal.setitimer(_signal.ITIMER_REAL, TIMEOUT)  # a client that never closes stdin, a stuck process
            raw = sys.stdin.buffer.read(MAX_STDIN)
            out = warm(vault_dir(), argv, raw)
        finally:
            _signal.setitimer(_signal.ITIMER_REAL, 0)
    except BaseException:  # the alarm, or anything else: the in-process hook decides, and fails open itself
        out = None
    try:
        if out is not None:
            sys.stdout.buffer.write(out)
            sys.stdout.flush()
            return 0
        return _in_process(argv, raw)
    except BaseException as exc:  # fail open: hafiza not importable, a closed stdout...
        sys.stderr.write(f"hafiza hook failed open: {type(exc).__name__}: {exc}\n")
        sys.stdout.buffer.write(empty(argv))
        return 0


def _in_process(argv: list[str], raw: bytes) -> int:
    """No warm process: the whole hook in this process (it fails open by itself)."""
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]  # hooks/ would shadow packages
    import site

    site.main()  # the site-packages -S skipped: hafiza and its dependencies
    # The one import cycle kept on purpose (tests/test_architecture.py, DELIBERATE): entry.py and wire.py use
    # this file's socket helpers and log, and this file falls back to entry.py. Imported here, not at the top,
    # because the thin hook must import nothing beyond the interpreter's own modules until it falls back.
    from hafiza.hooks.entry import main as in_process

    return in_process(argv, raw, try_warm=False)


def leave(code) -> None:
    """Exit with `code` (as SystemExit takes it) without tearing down every module and object: ~20 ms of a
    `hafiza remember` (interleaved at 100,000 memories: 155 against 133 ms), and of a hook run in-process.
    Only when nothing is left for the teardown to do: the output flushed, no other thread running, nothing
    registered to run at exit (logging, a pool's threads, a temporary folder's cleanup). Otherwise the
    ordinary way."""
    import atexit

    status = 0 if code is None else code if isinstance(code, int) else 1
    threading = sys.modules.get("threading")
    if atexit._ncallbacks() or (threading is not None and threading.active_count() > 1):
        sys.exit(code)
    streams = [stream for stream in (sys.stdout, sys.stderr) if stream is not None]  # None: closed (`>&-`)
    if not isinstance(code, int) and code is not None and sys.stderr is not None:
        print(code, file=sys.stderr)  # what Python prints for sys.exit("message")
    try:
        for stream in streams:
            stream.flush()
    except (OSError, ValueError):  # a reader that went away: Python says so on its way out
        sys.exit(code)
    os._exit(status)


if __name__ == "__main__":
    leave(main(sys.argv[1:]))
