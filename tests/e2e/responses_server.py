"""A real model server on 127.0.0.1 speaking the OpenAI Responses API, streamed, as Codex calls it.

Codex 0.171 (`wire_api = "responses"`, the only wire API it has) POSTs `{base_url}/responses` with
`"stream": true`, `input` (a list of items: developer and user messages, function calls and their
outputs) and `tools`, and reads server-sent events until `response.completed`. This server answers
from a script instead of a model: `script(request)` returns the model's turn, or a list of turns is
consumed in order. A turn is the assistant's text (str), a `Call` (the model calls a function tool)
or a `Status` (an HTTP error). Codex offers an MCP server's tools as a namespace (`mcp__hafiza`), and
the model calls one by name within it. Every request is recorded, so a test reads what the model saw:

    with ResponsesServer([Call("remember", {"text": "..."}, namespace="mcp__hafiza"), "saved"]) as server:
        ...  # base_url = server.url + "/v1"
        assert server.requests[-1].outputs()  # the tool's result, sent back to the model
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

# tests/ is on sys.path (its conftest.py): the server, its recording and the scripted HTTP error are shared.
from model_server import Exchange, ModelServer, Status, named_event
from model_server import Request as _Request

__all__ = ["Call", "Request", "ResponsesServer", "Status"]


@dataclass
class Call:
    """The model calls function tool `name` (in `namespace`, as Codex offers MCP tools) with `arguments`."""

    name: str
    arguments: dict = field(default_factory=dict)
    namespace: str | None = None
    call_id: str = "call_1"


class Request(_Request):
    """A recorded request, read as the Responses API's: `input` items rather than `messages`."""

    def items(self, kind: str = "message", role: str | None = None) -> list[dict]:
        """The request's input items of one type (and role)."""
        items = self.body.get("input", []) if isinstance(self.body, dict) else []
        return [i for i in items if isinstance(i, dict) and i.get("type", "message") == kind
                and (role is None or i.get("role") == role)]

    def texts(self, role: str | None = None) -> list[str]:
        """The text of every message (of `role`), one string per message."""
        return ["\n".join(part.get("text", "") for part in item.get("content", []) if isinstance(part, dict))
                if isinstance(item.get("content"), list) else str(item.get("content", ""))
                for item in self.items("message", role)]

    @property
    def text(self) -> str:
        """Everything the model reads as messages, joined: the place to look for injected context."""
        return "\n".join(self.texts())

    @property
    def prompt(self) -> str:
        """The last user message's text."""
        users = self.texts("user")
        return users[-1] if users else ""

    def outputs(self) -> list[dict]:
        """The function call outputs the client sent back (tool results)."""
        return self.items("function_call_output")

    def tool_names(self) -> list[str]:
        """The names of the tools offered, with a namespace's tools as `namespace.tool` too."""
        names = []
        for tool in self.body.get("tools", []) if isinstance(self.body, dict) else []:
            name = tool.get("name") or tool.get("type", "")
            names.append(name)
            names += [f"{name}.{t.get('name')}" for t in tool.get("tools", []) if isinstance(t, dict)]
        return names


class ResponsesServer(ModelServer):
    """`with ResponsesServer(script) as server:` then `server.url` (no trailing /v1) and `server.requests`.
    A callable script is given the whole Request."""

    request_type = Request
    http_version = "HTTP/1.1"  # keep-alive, as the Responses API serves it
    whole_request = True

    def responses(self) -> list[Request]:
        """The recorded model requests (POST …/responses), in order."""
        with self._lock:
            return [r for r in self.requests if r.path.endswith("/responses")]

    def post(self, http: Exchange, request: Request) -> None:
        if not request.path.endswith("/responses"):
            return self.not_found(http, request, {"error": {"message": f"no route {request.path}"}})
        number, answer = self.take(request)
        if isinstance(answer, Status):
            return http.send_json(answer.code, {"error": {"type": "server_error", "message": answer.message}},
                                  answer.headers)
        http.send_events(map(named_event, _events(answer, f"resp_{number}", self.model, self.usage)))


def _item(answer, index: int) -> dict:
    if isinstance(answer, Call):
        call = {"type": "function_call", "id": f"fc_{index}", "status": "completed", "call_id": answer.call_id,
                "name": answer.name, "arguments": json.dumps(answer.arguments)}
        return {**call, "namespace": answer.namespace} if answer.namespace else call
    text = answer if isinstance(answer, str) else json.dumps(answer)
    return {"type": "message", "id": f"msg_{index}", "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def _events(answer, response_id: str, model: str, usage: tuple[int, int]) -> list[dict]:
    """The Responses API's stream for one turn (text or function call), in the order the API sends it."""
    item = _item(answer, 0)
    response = {"id": response_id, "object": "response", "created_at": 0, "status": "in_progress",
                "model": model, "output": []}
    events: list[dict] = [{"type": "response.created", "response": response},
                          {"type": "response.output_item.added", "output_index": 0,
                           "item": {**item, "status": "in_progress"}}]
    if item["type"] == "message":
        text = item["content"][0]["text"]
        events += [{"type": "response.content_part.added", "item_id": item["id"], "output_index": 0,
                    "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}},
                   {"type": "response.output_text.delta", "item_id": item["id"], "output_index": 0,
                    "content_index": 0, "delta": text},
                   {"type": "response.output_text.done", "item_id": item["id"], "output_index": 0,
                    "content_index": 0, "text": text}]
    else:
        events.append({"type": "response.function_call_arguments.done", "item_id": item["id"],
                       "output_index": 0, "arguments": item["arguments"]})
    events.append({"type": "response.output_item.done", "output_index": 0, "item": item})
    tokens = {"input_tokens": usage[0], "input_tokens_details": {"cached_tokens": 0},
              "output_tokens": usage[1], "output_tokens_details": {"reasoning_tokens": 0},
              "total_tokens": sum(usage)}
    events.append({"type": "response.completed",
                   "response": {**response, "status": "completed", "output": [item], "usage": tokens}})
    return events
