"""A real Gemini API server on 127.0.0.1, for the Gemini CLI end-to-end tests.

It speaks the routes the pinned gemini-cli (0.61) calls with an API key and `GOOGLE_GEMINI_BASE_URL`,
as recorded from the real client:

    POST /v1beta/models/<model>:streamGenerateContent?alt=sse   every agent turn (server-sent events)
    POST /v1beta/models/<model>:generateContent                 one-shot calls (the model router's
                                                                classifier, when no -m pins a model)
    POST /v1beta/models/<model>:countTokens

It answers from a script, not a model: a list of answers consumed in order, or a callable
`script(request)`. An answer is the model's text (str), a `FunctionCall` (the model calls a tool) or
a `Status` (an HTTP error). Every request is recorded:

    with GeminiServer([FunctionCall("mcp_hafiza_remember", {"text": "..."}), "Saved."]) as server:
        ...run gemini with GOOGLE_GEMINI_BASE_URL=server.url...
        assert server.requests[-1].function_responses[0]["name"] == "mcp_hafiza_remember"
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable
from urllib.parse import urlsplit

MODEL_VERSION = "gemini-test"
USAGE = {"promptTokenCount": 12, "candidatesTokenCount": 5, "totalTokenCount": 17}


@dataclass
class FunctionCall:
    """The model calls tool `name` with `args` (a functionCall part, as the API streams it)."""

    name: str
    args: dict = field(default_factory=dict)


@dataclass
class Status:
    """Answer with this HTTP status and an error body in the API's shape."""

    code: int
    message: str = "scripted failure"


@dataclass
class Request:
    path: str                # e.g. /v1beta/models/gemini-2.5-flash:streamGenerateContent
    query: str               # e.g. alt=sse
    headers: dict[str, str]  # names lowercased
    body: Any                # the parsed JSON body (None when there was none)

    @property
    def parts(self) -> list[dict]:
        """Every part of every content, in order."""
        contents = self.body.get("contents", []) if isinstance(self.body, dict) else []
        return [p for c in contents if isinstance(c, dict) for p in c.get("parts", []) if isinstance(p, dict)]

    @property
    def texts(self) -> list[str]:
        """The text parts of the last user content: the prompt and what hooks added to it."""
        contents = self.body.get("contents", []) if isinstance(self.body, dict) else []
        users = [c for c in contents if isinstance(c, dict) and c.get("role") == "user"]
        return [p["text"] for p in (users[-1].get("parts", []) if users else []) if "text" in p]

    @property
    def function_declarations(self) -> dict[str, dict]:
        """The tools offered to the model, by name."""
        tools = self.body.get("tools", []) if isinstance(self.body, dict) else []
        return {d["name"]: d for t in tools for d in t.get("functionDeclarations", [])}

    @property
    def function_responses(self) -> list[dict]:
        return [p["functionResponse"] for p in self.parts if "functionResponse" in p]


class GeminiServer:
    """`with GeminiServer(script) as server:` then `server.url` (for GOOGLE_GEMINI_BASE_URL) and `server.requests`."""

    def __init__(self, script: Callable[[Request], Any] | list):
        self.script = script if callable(script) else list(script)
        self.requests: list[Request] = []
        self._lock = threading.Lock()

    def __enter__(self) -> GeminiServer:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True)
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    @property
    def turns(self) -> list[Request]:
        """The agent's model calls (streamGenerateContent), without one-shot and token-count calls."""
        return [r for r in self.requests if r.path.endswith(":streamGenerateContent")]

    def next_answer(self, request: Request):
        """What the script says to `request`; an exhausted list answers 500 (and the test sees it)."""
        with self._lock:
            self.requests.append(request)
            if callable(self.script):
                return self.script(request)
            return self.script.pop(0) if self.script else Status(500, "the test script has no more answers")


def _handler(server: GeminiServer):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # the client keeps connections alive

        def do_POST(self):
            url = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"null")
            except ValueError:
                body = None
            request = Request(url.path, url.query, {k.lower(): v for k, v in self.headers.items()}, body)
            method = url.path.rpartition(":")[2]
            if method == "countTokens":
                with server._lock:
                    server.requests.append(request)
                return self._send(200, {"totalTokens": USAGE["promptTokenCount"]})
            if method not in ("streamGenerateContent", "generateContent"):
                with server._lock:
                    server.requests.append(request)
                return self._send(404, _error(404, f"no route {url.path}"))
            answer = server.next_answer(request)
            if isinstance(answer, Status):
                return self._send(answer.code, _error(answer.code, answer.message))
            reply = _reply(answer)
            if method == "generateContent":
                return self._send(200, reply)
            self._stream([reply])

        def _send(self, code: int, payload) -> None:
            data = json.dumps(payload).encode()
            try:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except ConnectionError:
                pass

        def _stream(self, chunks: list[dict]) -> None:
            # The API frames each chunk as `data: <json>` and a blank line, with CRLF line ends.
            data = b"".join(f"data: {json.dumps(chunk)}\r\n\r\n".encode() for chunk in chunks)
            try:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except ConnectionError:
                pass

        def log_message(self, *args):
            pass  # `server.requests` is the record

    return Handler


def _reply(answer) -> dict:
    """One GenerateContentResponse holding the whole answer."""
    if isinstance(answer, FunctionCall):
        part = {"functionCall": {"name": answer.name, "args": answer.args}}
    else:
        part = {"text": answer if isinstance(answer, str) else json.dumps(answer)}
    candidate = {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}
    return {"candidates": [candidate], "usageMetadata": USAGE, "modelVersion": MODEL_VERSION}


def _error(code: int, message: str) -> dict:
    status = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED"}.get(code, "INTERNAL")
    return {"error": {"code": code, "message": message, "status": status}}
