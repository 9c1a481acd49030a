"""A real `hafiza ui` server on 127.0.0.1 for the tests, and a small client that holds its cookie and reads
the CSRF token from its pages, as a browser does (tests/test_ui.py, tests/e2e/test_ui_browser.py)."""

from __future__ import annotations

import http.client
import os
import re
import subprocess
import sys
import time
from contextlib import contextmanager
from urllib.parse import urlencode, urlsplit


class Server:
    """`hafiza ui --no-browser` as a process; `url` is the first line it printed (with the token)."""

    def __init__(self, env: dict | None = None, args=()):
        self.proc = subprocess.Popen([sys.executable, "-m", "hafiza.cli.main", "ui", "--no-browser", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env={**os.environ, **(env or {})})
        self.url = self.proc.stdout.readline().strip()
        if not self.url.startswith("http://127.0.0.1:"):
            self.stop()
            raise AssertionError(f"hafiza ui printed {self.url!r}; stderr: {self.proc.stderr.read()}")
        parts = urlsplit(self.url)
        self.port = parts.port
        self.base = f"http://127.0.0.1:{self.port}"
        self.token = dict(p.split("=", 1) for p in parts.query.split("&"))["token"]
        self._wait_up()

    def _wait_up(self, seconds: float = 30) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                conn.request("GET", "/static/hafiza.css")
                conn.getresponse().read()
                conn.close()
                return
            except OSError:
                time.sleep(0.05)
        raise AssertionError("hafiza ui did not answer")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for stream in (self.proc.stdout, self.proc.stderr):
            stream.close()


class Client:
    """Requests with the session cookie once logged in; `csrf` is read from the last page that had a form."""

    def __init__(self, server: Server, host: str | None = None):
        self.server = server
        self.host = host if host is not None else f"127.0.0.1:{server.port}"
        self.cookie: str | None = None
        self.csrf: str | None = None

    def request(self, method: str, path: str, body: dict | list | None = None, headers: dict | None = None):
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=60)
        sent = {"Host": self.host, **({"Cookie": self.cookie} if self.cookie else {}), **(headers or {})}
        data = None
        if body is not None:
            data = urlencode(body).encode()
            sent["Content-Type"] = "application/x-www-form-urlencoded"
        conn.request(method, path, body=data, headers=sent)
        response = conn.getresponse()
        text = response.read().decode("utf-8", "replace")
        conn.close()
        found = re.search(r'name="csrf" value="([^"]+)"', text)
        if found:
            self.csrf = found.group(1)
        return response, text

    def login(self):
        response, text = self.request("GET", f"/?token={self.server.token}")
        cookie = response.getheader("Set-Cookie") or ""
        self.cookie = cookie.split(";", 1)[0]
        return response, cookie

    def get(self, path: str):
        return self.request("GET", path)

    def post(self, path: str, fields: dict | list, csrf: bool = True):
        items = list(fields.items()) if isinstance(fields, dict) else list(fields)
        if csrf:
            items.append(("csrf", self.csrf))
        return self.request("POST", path, items)


@contextmanager
def logged_in(env: dict | None = None):
    """A `hafiza ui` started for one test (no warm process) and a Client logged into it; stopped on the way out."""
    server = Server(env={"HAFIZA_DAEMON": "0", **(env or {})})
    try:
        client = Client(server)
        client.login()
        yield client
    finally:
        server.stop()


def conflicted(tmp_path, vault, memory_id: str, texts: tuple[str, str, str], title: str | None = None,
               by_hand: bool = False) -> None:
    """`vault` holding an open sync conflict on `memory_id`: written as `texts[0]`, then changed to `texts[1]`
    here and to `texts[2]` on a second machine, synced both ways. `by_hand`: the second machine's text is
    committed by hand (with git), as a teammate's tool might, so the guard never sees it."""
    from conftest import git
    from hafiza.vault.store.vault import Vault
    from hafiza.vault.sync.machines import clone, set_remote, sync

    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    vault.remember(texts[0], id=memory_id, title=title)
    set_remote(vault, str(remote))
    sync(vault)
    clone(str(remote), tmp_path / "other")
    other = Vault.init(tmp_path / "other", actor="cli-other")
    vault.update(memory_id, texts[1])
    if by_hand:
        path = other.memories_dir / f"{memory_id}.md"
        path.write_text(path.read_text().replace(texts[0], texts[2]))
        git(other.root, "commit", "-qam", "hand edit")
    else:
        other.update(memory_id, texts[2])
    sync(vault), sync(other), sync(vault)

