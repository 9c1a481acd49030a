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
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable
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


class ModelServer:
    """`with ModelServer(script) as server:` then `server.url` (no trailing /v1) and `server.requests`."""

    def __init__(self, script: Callable[[str], Any] | list, *, usage: tuple[int, int] = (12, 5),
                 model: str = "test-model"):
        self.script = script if callable(script) else list(script)
        self.usage = usage  # (input, output) tokens reported for every answer
        self.model = model
        self.requests: list[Request] = []
        self._lock = threading.Lock()

    def __enter__(self) -> ModelServer:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        # serve_forever polls for shutdown every 0.5 s by default: that would be the cost of every test.
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True)
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    def next_answer(self, request: Request):
        """What the script says to `request`; an exhausted list answers 500 (and the test sees it)."""
        self.record(request)
        with self._lock:
            if callable(self.script):
                return self.script(request.prompt)
            return self.script.pop(0) if self.script else Status(500, "the test script has no more answers")


def _handler(server: ModelServer):
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            path = urlsplit(self.path).path
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"null")
            except ValueError:
                body = None
            headers = {k.lower(): v for k, v in self.headers.items()}
            request = Request(path, headers, body)
            if path.endswith("/messages/count_tokens"):  # the API has it; Claude Code 2.1 did not call it
                server.record(request)
                return self._send(200, {"input_tokens": server.usage[0]})
            if not path.endswith(("/chat/completions", "/messages")):
                server.record(request)
                return self._send(404, {"error": {"message": f"no route {path}"}})
            self._answer(request, server.next_answer(request))

        def do_GET(self):
            server.record(Request(urlsplit(self.path).path, {k.lower(): v for k, v in self.headers.items()}, None))
            self._send(404, {"error": {"message": "not found"}})

        def _answer(self, request: Request, answer):
            while isinstance(answer, Delay):
                time.sleep(answer.seconds)
                answer = answer.then
            anthropic = request.path.endswith("/messages")
            if isinstance(answer, Status):
                error = {"type": "api_error", "message": answer.message}
                payload = {"type": "error", "error": error} if anthropic else {"error": error}
                return self._send(answer.code, payload, answer.headers)
            if isinstance(answer, ToolUse) and anthropic:
                if isinstance(request.body, dict) and request.body.get("stream"):
                    return self._stream(_tool_use_events(answer, server.model, server.usage))
                return self._send(200, _tool_use_reply(answer, server.model, server.usage))
            text = answer if isinstance(answer, str) else json.dumps(answer)
            if not anthropic:
                return self._send(200, _openai_reply(text, server.model, server.usage))
            if isinstance(request.body, dict) and request.body.get("stream"):
                return self._stream(_anthropic_events(text, server.model, server.usage))
            self._send(200, _anthropic_reply(text, server.model, server.usage))

        def _send(self, code: int, payload, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(payload).encode()
            try:
                self.send_response(code)
                for name, value in {"Content-Type": "application/json", **(headers or {})}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except ConnectionError:
                pass  # the client gave up (a timeout test): nothing to tell it

        def _stream(self, events) -> None:
            try:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()
                for event in events:
                    self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
                    self.wfile.flush()
            except ConnectionError:
                pass

        def log_message(self, *args):
            pass  # keep test output clean; `server.requests` is the record

    return Handler


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
