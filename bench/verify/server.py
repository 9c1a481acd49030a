"""The local HTTP server the url claims of memories.jsonl are labelled against (stdlib only).

    from server import start
    base, stop = start()          # base is "http://127.0.0.1:PORT"; substitute it for `@server`
    ...
    stop()

Routes (ROUTES): /health 200, /redirect 302 -> /health, /missing 404, /error 500, /slow answers only after
SLOW_SECONDS (longer than any sensible probe timeout; stop() releases it at once). Anything else is 404.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SLOW_SECONDS = 30.0

# path -> (what the server does, the outcome a url probe with --network must report)
ROUTES = {
    "/health": ("200", "ok"),
    "/redirect": ("302 to /health", "ok"),
    "/missing": ("404", "unknown"),
    "/error": ("500", "unknown"),
    "/slow": ("no answer for SLOW_SECONDS", "unknown"),
}


def start(host: str = "127.0.0.1", port: int = 0, slow_seconds: float = SLOW_SECONDS):
    """Serve ROUTES on a thread; returns (base URL, stop)."""
    released = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def _answer(self, body: bool) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/slow":
                released.wait(slow_seconds)
            if path == "/redirect":
                self.send_response(302)
                self.send_header("Location", "/health")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            code, text = {"/health": (200, b"ok\n"), "/error": (500, b"boom\n"),
                          "/slow": (200, b"late\n")}.get(path, (404, b"not found\n"))
            self.send_response(code)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(text)))
            self.end_headers()
            if body:
                try:
                    self.wfile.write(text)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the probe gave up (the /slow route): nothing to answer

        def do_GET(self):  # noqa: N802
            self._answer(True)

        def do_HEAD(self):  # noqa: N802
            self._answer(False)

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer((host, port), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()

    def stop() -> None:
        released.set()
        httpd.shutdown()
        httpd.server_close()

    return f"http://{host}:{httpd.server_address[1]}", stop
