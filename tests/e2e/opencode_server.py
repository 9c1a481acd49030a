"""tests/model_server.py's ModelServer as opencode needs it: streamed chat completions and tool calls.

opencode (through the AI SDK's `@ai-sdk/openai-compatible`) always asks for `"stream": true`, and the
remember check needs a model that calls a tool. Everything else (the recording, Status, Delay, the 404
for any other path) is ModelServer's own. The script here is a function of the whole request, not only
its prompt: after a tool call the last user message is unchanged and only a `tool` message follows it.
`Tripwire` is the proxy the client is given so that nothing it tries to fetch leaves the machine.
"""

from __future__ import annotations

import json
import socketserver
from dataclasses import dataclass, field

from model_server import Exchange, LocalServer, ModelServer, Request, Status

__all__ = ["Status", "StreamingModelServer", "ToolCall", "Tripwire"]


@dataclass
class ToolCall:
    """The model calls the tool `name` with `arguments`."""

    name: str
    arguments: dict = field(default_factory=dict)
    id: str = "call_1"


class StreamingModelServer(ModelServer):
    """`StreamingModelServer(script)`: `script(request)` returns a str, a ToolCall, a Status or a Delay."""

    whole_request = True

    def answer(self, http: Exchange, request: Request, answer) -> None:
        if not request.path.endswith("/chat/completions") or isinstance(answer, Status):
            return super().answer(http, request, answer)
        chunks = _chunks(answer, self.model, self.usage)
        if isinstance(request.body, dict) and request.body.get("stream"):
            return http.send_events([*(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks), "data: [DONE]\n\n"])
        http.send_json(200, _whole(chunks))


def _chunks(answer, model: str, usage: tuple[int, int]) -> list[dict]:
    """The chat completions stream for one text or one tool call, as the OpenAI API sends it."""
    def chunk(delta: dict, finish: str | None = None, **extra) -> dict:
        return {"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 0, "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}

    if isinstance(answer, ToolCall):
        call = {"index": 0, "id": answer.id, "type": "function",
                "function": {"name": answer.name, "arguments": json.dumps(answer.arguments)}}
        body, finish = [chunk({"role": "assistant", "content": None, "tool_calls": [call]})], "tool_calls"
    else:
        text = answer if isinstance(answer, str) else json.dumps(answer)
        body, finish = [chunk({"role": "assistant", "content": ""}), chunk({"content": text})], "stop"
    totals = {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}
    return [*body, chunk({}, finish), {**chunk({}), "choices": [], "usage": totals}]


def _whole(chunks: list[dict]) -> dict:
    """The same answer unstreamed (a client that does not ask for `stream`)."""
    message: dict = {"role": "assistant", "content": ""}
    finish = "stop"
    for item in chunks:
        for choice in item["choices"]:
            delta = choice["delta"]
            message["content"] += delta.get("content") or ""
            if delta.get("tool_calls"):
                message["tool_calls"] = delta["tool_calls"]
            finish = choice["finish_reason"] or finish
    return {"id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": chunks[0]["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": chunks[-1]["usage"]}


class Tripwire(LocalServer):
    """An HTTP(S) proxy that lets nothing through and records what tried: `with Tripwire() as wire:`, then
    HTTPS_PROXY=wire.url (with NO_PROXY=127.0.0.1) and `wire.attempts` ("CONNECT registry.npmjs.org:443")."""

    def __init__(self):
        self.attempts: list[str] = []

    def _serve(self) -> socketserver.ThreadingTCPServer:
        wire = self

        class Refuse(socketserver.StreamRequestHandler):
            def handle(self):
                wire.attempts.append(self.rfile.readline(2048).decode("latin-1").strip())
                self.wfile.write(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

        server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Refuse)
        server.daemon_threads = True
        return server
