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
from dataclasses import dataclass, field
from typing import Any, Callable

# tests/ is on sys.path (its conftest.py): the server, its recording and the scripted HTTP error are shared.
from model_server import Exchange, ModelServer, Status
from model_server import Request as _Request

__all__ = ["FunctionCall", "GeminiServer", "Request", "Status"]


@dataclass
class FunctionCall:
    """The model calls tool `name` with `args` (a functionCall part, as the API streams it)."""

    name: str
    args: dict = field(default_factory=dict)


class Request(_Request):
    """A recorded request, read as the Gemini API's: `contents` of `parts`. Its path is e.g.
    /v1beta/models/gemini-2.5-flash:streamGenerateContent, its query alt=sse."""

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


class GeminiServer(ModelServer):
    """`with GeminiServer(script) as server:` then `server.url` (for GOOGLE_GEMINI_BASE_URL) and `server.requests`.
    A callable script is given the whole Request."""

    request_type = Request
    http_version = "HTTP/1.1"  # the client keeps connections alive
    whole_request = True

    def __init__(self, script: Callable[[Request], Any] | list):
        super().__init__(script, model="gemini-test")

    @property
    def turns(self) -> list[Request]:
        """The agent's model calls (streamGenerateContent), without one-shot and token-count calls."""
        return [r for r in self.requests if r.path.endswith(":streamGenerateContent")]

    def post(self, http: Exchange, request: Request) -> None:
        method = request.path.rpartition(":")[2]
        if method == "countTokens":
            self.record(request)
            return http.send_json(200, {"totalTokens": self.usage[0]})
        if method not in ("streamGenerateContent", "generateContent"):
            return self.not_found(http, request, _error(404, f"no route {request.path}"))
        answer = self.next_answer(request)
        if isinstance(answer, Status):
            return http.send_json(answer.code, _error(answer.code, answer.message))
        reply = _reply(answer, self.model, self.usage)
        if method == "generateContent":
            return http.send_json(200, reply)
        # The API frames each chunk as `data: <json>` and a blank line, with CRLF line ends.
        http.send_events([f"data: {json.dumps(reply)}\r\n\r\n"])


def _reply(answer, model: str, usage: tuple[int, int]) -> dict:
    """One GenerateContentResponse holding the whole answer."""
    if isinstance(answer, FunctionCall):
        part = {"functionCall": {"name": answer.name, "args": answer.args}}
    else:
        part = {"text": answer if isinstance(answer, str) else json.dumps(answer)}
    candidate = {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}
    tokens = {"promptTokenCount": usage[0], "candidatesTokenCount": usage[1], "totalTokenCount": sum(usage)}
    return {"candidates": [candidate], "usageMetadata": tokens, "modelVersion": model}


def _error(code: int, message: str) -> dict:
    status = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED"}.get(code, "INTERNAL")
    return {"error": {"code": code, "message": message, "status": status}}
