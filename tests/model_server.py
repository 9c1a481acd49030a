"""A real model server on 127.0.0.1 for tests: the OpenAI chat completions and Anthropic Messages protocols.

It answers from a script, not a model: a callable `script(prompt_text)` or a list of answers consumed in
order. An answer is the model's text (str), a JSON value it "wrote" (dict or list, sent as its text), a
`Status` (an HTTP error, e.g. 500 once and then a good answer), a `Delay` (for timeouts) or a `ToolUse`
(the model calls a tool; Anthropic protocol). Every request is recorded. A model that is confidently wrong is a script that says so:

    with ModelServer([Status(500), {"verdict": "stale"}]) as server:
        provider = OpenAIProvider(server.url + "/v1", "test-model", backoff=0)
        assert provider.ask("...", SCHEMA).data == {"verdict": "stale"}
        assert len(server.requests) == 2 and server.requests[-1].body["model"] == "test-model"

Anthropic requests with `"stream": true` (Claude Code sends those) are answered as server-sent events.

ModelServer is also the base of the end-to-end tests' servers for other protocols (tests/e2e/*_server.py):
the thread on 127.0.0.1, the recording, the script and the HTTP writing are here; a subclass sets its
`request_type` and overrides `post` (its routes) or `answer` (its reply to a scripted answer).
"""

from __future__ import annotations

import gzip
import json
import socketserver
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterable, Self
from urllib.parse import urlsplit


@dataclass
class Status:
    """Answer with this HTTP status and an error body in the protocol's shape."""

    code: int
    message: str = "scripted failure"
    headers: dict[str, str] = field(default_factory=dict)  # e.g. Location, for a redirect


@dataclass
class Delay:
    """Wait `seconds`, then answer `then`."""

    seconds: float
    then: Any = field(default_factory=dict)


@dataclass
class ToolUse:
    """The model calls tool `name` with `input` (Anthropic: a tool_use block, stop_reason "tool_use")."""

    name: str
    input: dict = field(default_factory=dict)
    id: str = "toolu_test_1"


@dataclass
class Request:
    path: str                # without the query string
    headers: dict[str, str]  # names lowercased
    body: Any                # the parsed JSON body (None when there was none)
    query: str = ""          # the query string, e.g. alt=sse

    @property
    def prompt(self) -> str:
        return prompt_text(self.body)


def prompt_text(body) -> str:
    """The last user message's text, from either protocol (content as a string or a list of blocks)."""
    messages = body.get("messages", []) if isinstance(body, dict) else []
    users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    if not users:
        return ""
    content = users[-1].get("content", "")
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return str(content)


class LocalServer:
    """A socketserver on 127.0.0.1, served from a daemon thread inside `with`; `self.url` is its address."""

    def _serve(self) -> socketserver.BaseServer:
        raise NotImplementedError

    def __enter__(self) -> Self:
        self._httpd = self._serve()
        # serve_forever polls for shutdown every 0.5 s by default: that would be the cost of every test.
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True)
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


class ModelServer(LocalServer):
    """`with ModelServer(script) as server:` then `server.url` (no trailing /v1) and `server.requests`."""

    request_type: type[Request] = Request
    http_version = "HTTP/1.0"  # HTTP/1.1: the connection is kept alive between requests
    whole_request = False      # True: a callable script is given the Request, not only its prompt

    def __init__(self, script: Callable[[Any], Any] | list, *, usage: tuple[int, int] = (12, 5),
                 model: str = "test-model"):
        self.script = script if callable(script) else list(script)
        self.usage = usage  # (input, output) tokens reported for every answer
        self.model = model
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._answered = 0

    def _serve(self) -> ThreadingHTTPServer:
        handler = type("Handler", (Exchange,), {"model": self, "protocol_version": self.http_version})
        return ThreadingHTTPServer(("127.0.0.1", 0), handler)

    def record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    def take(self, request: Request) -> tuple[int, Any]:
        """Record `request` and take the script's answer to it, numbered from 1; an exhausted list answers
        500 (and the test sees it). A `Delay` is waited out here, outside the lock."""
        self.record(request)
        with self._lock:
            self._answered += 1
            number = self._answered
            if callable(self.script):
                answer = self.script(request if self.whole_request else request.prompt)
            else:
                answer = self.script.pop(0) if self.script else Status(500, "the test script has no more answers")
        while isinstance(answer, Delay):
            time.sleep(answer.seconds)
            answer = answer.then
        return number, answer

    def next_answer(self, request: Request):
        """What the script says to `request` (recorded)."""
        return self.take(request)[1]

    def not_found(self, http: Exchange, request: Request, payload) -> None:
        """Record `request` and answer 404 with `payload`: a route the protocol does not have."""
        self.record(request)
        http.send_json(404, payload)

    def post(self, http: Exchange, request: Request) -> None:
        """Route a POST: here the chat completions and Messages APIs."""
        if request.path.endswith("/messages/count_tokens"):  # the API has it; Claude Code 2.1 did not call it
            self.record(request)
            return http.send_json(200, {"input_tokens": self.usage[0]})
        if not request.path.endswith(("/chat/completions", "/messages")):
            return self.not_found(http, request, {"error": {"message": f"no route {request.path}"}})
        self.answer(http, request, self.next_answer(request))

    def answer(self, http: Exchange, request: Request, answer) -> None:
        """Send the scripted `answer` to `request` in its protocol's shape."""
        anthropic = request.path.endswith("/messages")
        stream = isinstance(request.body, dict) and request.body.get("stream")
        if isinstance(answer, Status):
            error = {"type": "api_error", "message": answer.message}
            payload = {"type": "error", "error": error} if anthropic else {"error": error}
            return http.send_json(answer.code, payload, answer.headers)
        if isinstance(answer, ToolUse) and anthropic:
            if stream:
                return http.send_events(map(named_event, _tool_use_events(answer, self.model, self.usage)))
            return http.send_json(200, _tool_use_reply(answer, self.model, self.usage))
        text = answer if isinstance(answer, str) else json.dumps(answer)
        if not anthropic:
            return http.send_json(200, _openai_reply(text, self.model, self.usage))
        if stream:
            return http.send_events(map(named_event, _anthropic_events(text, self.model, self.usage)))
        http.send_json(200, _anthropic_reply(text, self.model, self.usage))


class Exchange(BaseHTTPRequestHandler):
    """One HTTP exchange with `model`, a ModelServer: it reads the request and writes JSON or server-sent events."""

    model: ModelServer

    def do_POST(self):
        data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.headers.get("Content-Encoding") == "gzip":  # Codex may compress its requests
            data = gzip.decompress(data)
        try:
            body = json.loads(data or b"null")
        except ValueError:
            body = None
        self.model.post(self, self._request(body))

    def do_GET(self):
        self.model.not_found(self, self._request(None), {"error": {"message": "not found"}})

    def _request(self, body) -> Request:
        url = urlsplit(self.path)
        return self.model.request_type(url.path, {k.lower(): v for k, v in self.headers.items()}, body, url.query)

    def send_json(self, code: int, payload, headers: dict[str, str] | None = None) -> None:
        self._send(code, json.dumps(payload).encode(), {"Content-Type": "application/json", **(headers or {})})

    def send_events(self, frames: Iterable[str]) -> None:
        """A 200 whose body is a server-sent event stream: `frames` joined, each already framed."""
        self._send(200, "".join(frames).encode(), {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})

    def _send(self, code: int, data: bytes, headers: dict[str, str]) -> None:
        try:
            self.send_response(code)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except ConnectionError:
            pass  # the client gave up (a timeout test): nothing to tell it

    def log_message(self, *args):
        pass  # keep test output clean; `server.requests` is the record


def named_event(event: dict) -> str:
    """One server-sent event named by its `type` (the Messages and Responses APIs' framing)."""
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n"


def _openai_reply(text: str, model: str, usage: tuple[int, int]) -> dict:
    return {"id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}}


def _anthropic_reply(text: str, model: str, usage: tuple[int, int]) -> dict:
    return {"id": "msg_test", "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": usage[0], "output_tokens": usage[1]}}


def _anthropic_events(text: str, model: str, usage: tuple[int, int]) -> list[dict]:
    """The Messages API's stream for one text block, in the order the API sends it."""
    message = {**_anthropic_reply("", model, (usage[0], 1)), "content": [], "stop_reason": None}
    return [
        {"type": "message_start", "message": message},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
         "usage": {"output_tokens": usage[1]}},
        {"type": "message_stop"},
    ]


def _tool_use_reply(call: ToolUse, model: str, usage: tuple[int, int]) -> dict:
    block = {"type": "tool_use", "id": call.id, "name": call.name, "input": call.input}
    return {**_anthropic_reply("", model, usage), "content": [block], "stop_reason": "tool_use"}


def _tool_use_events(call: ToolUse, model: str, usage: tuple[int, int]) -> list[dict]:
    """The stream for one tool_use block: its input arrives as JSON text in input_json_delta events."""
    message = {**_anthropic_reply("", model, (usage[0], 1)), "content": [], "stop_reason": None}
    block = {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}
    return [
        {"type": "message_start", "message": message},
        {"type": "content_block_start", "index": 0, "content_block": block},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "input_json_delta", "partial_json": json.dumps(call.input)}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
         "usage": {"output_tokens": usage[1]}},
        {"type": "message_stop"},
    ]
