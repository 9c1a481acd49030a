"""The offline model provider: one interface for every offline feature (the curator, the verifier...).

A provider takes a prompt and a JSON schema and returns an `Answer` whose data validates against the
schema, or raises: `ProviderError` when the model could not be reached (after a few retries),
`InvalidAnswer` when it answered something else (the answer is discarded, never half-applied). The
prompt path never calls a model; these run only in explicit offline passes, bounded by a `Budget`.

Three transports cover the local and hosted models people have: a command (`claude -p`, `codex exec`,
`llm`), an OpenAI-compatible server (Ollama, llama.cpp, vLLM, OpenAI) and the Anthropic Messages API.
Stdlib only: urllib and subprocess are all this needs, and the prompt path must stay light.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import random
import shlex
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any, Mapping

from .answers import InvalidAnswer, UnsupportedSchema, check_schema, extract_json, loads, validate  # noqa: F401  (part of this API)
from hafiza.vault.errors import HafizaError

RETRIES = 2     # transport retries: a model server that is down stays down; three tries tell it from a blip
BACKOFF = 0.5   # seconds before the first retry, doubled after each, times a random 0.5-1.5 (jitter: passes
                # started together by a scheduler do not retry in step)
MAX_WAIT = 30.0      # the longest Retry-After honoured; a server asking for more is given up on at once
MAX_REPLY = 4 << 20  # bytes of a reply read: a chat answer is kilobytes; more is a wrong or hostile server
MAX_ERROR = 64 << 10  # bytes of an error body read for its message
ANTHROPIC_VERSION = "2023-06-01"
FORMS = ("none", "command:<program and arguments>", "openai:<model>@<base url>", "anthropic:<model>@<base url>")


class ProviderError(HafizaError):
    """The model could not be reached or did not speak its protocol (after retries)."""


class BudgetSpent(HafizaError):
    """The pass used all the model calls it was given."""


@dataclass
class Answer:
    data: Any           # the validated JSON value
    raw: str            # the model's text, as it came
    tokens_in: int = 0  # 0 when the transport does not say
    tokens_out: int = 0


def _checked(text: str, schema: Mapping, tokens_in: int = 0, tokens_out: int = 0) -> Answer:
    """The Answer in `text`, or InvalidAnswer: nothing that fails the schema reaches a caller."""
    try:
        data = extract_json(text)
    except InvalidAnswer as e:
        raise InvalidAnswer(e.message, text, tokens_in=tokens_in, tokens_out=tokens_out) from None
    problems = validate(data, schema)
    if problems:
        shown = "; ".join(problems[:3]) + (f" (and {len(problems) - 3} more)" if len(problems) > 3 else "")
        raise InvalidAnswer(f"the model's answer does not match the schema: {shown}", text,
                            tokens_in=tokens_in, tokens_out=tokens_out)
    return Answer(data, text, tokens_in, tokens_out)


def instruction(prompt: str, schema: Mapping) -> str:
    """The user's part of a prompt: the task, then the shape its answer must take."""
    return (f"{prompt}\n\nAnswer with a single JSON value and nothing else (no prose, no code fence), "
            f"matching this JSON schema:\n{json.dumps(schema, ensure_ascii=False)}")


# -- providers ---------------------------------------------------------------------------------------

class Provider:
    """A model behind a transport. Subclasses implement `_complete(system, user) -> (text, in, out)`."""

    name = "provider"
    available = True  # False only for NoProvider: callers skip model passes and say so

    def ask(self, prompt: str, schema: Mapping, *, system: str | None = None) -> Answer:
        """The model's answer to `prompt`, validated against `schema` (one the checker cannot check in full is
        refused before the model is asked)."""
        check_schema(schema)
        text, tokens_in, tokens_out = self._complete(system, instruction(prompt, schema))
        return _checked(text, schema, tokens_in, tokens_out)

    def _complete(self, system: str | None, user: str) -> tuple[str, int, int]:
        raise NotImplementedError


class NoProvider(Provider):
    """No model configured: the offline passes that need one are skipped."""

    name = "none"
    available = False

    def ask(self, prompt: str, schema: Mapping, *, system: str | None = None) -> Answer:
        raise HafizaError("no model provider configured: set HAFIZA_MODEL (one of: " + ", ".join(FORMS) + ")")


class CommandProvider(Provider):
    """A program that reads the prompt on stdin and prints the answer: `claude -p --output-format json`,
    `codex exec`, `llm`. `env` is the child's whole environment (None: this process's)."""

    def __init__(self, argv: list[str], timeout: float = 60.0, *, env: Mapping[str, str] | None = None):
        if not argv:
            raise HafizaError("a command provider needs a program to run")
        self.argv, self.timeout, self.env = list(argv), timeout, None if env is None else dict(env)
        self.name = f"command:{argv[0]}"

    def _complete(self, system: str | None, user: str) -> tuple[str, int, int]:
        prompt = f"{system}\n\n{user}" if system else user
        try:
            done = subprocess.run(self.argv, input=prompt, capture_output=True, text=True, encoding="utf-8",
                                  errors="replace", timeout=self.timeout, env=self.env)
        except subprocess.TimeoutExpired:
            raise ProviderError(f"{self.argv[0]} gave no answer within {self.timeout:g} s") from None
        except OSError as e:
            raise ProviderError(f"cannot run {self.argv[0]}: {e.strerror or e}") from None
        envelope = _envelope(done.stdout)
        if done.returncode != 0:
            # claude -p reports its failures (a refused key, a 400) in the envelope, with stderr empty.
            detail = _last_line(str(envelope["result"]) if envelope else done.stderr) or _last_line(done.stdout)
            raise ProviderError(f"{self.argv[0]} exited with {done.returncode}: {detail or 'no message'}")
        if envelope is None:
            return done.stdout, 0, 0
        if envelope.get("is_error"):
            raise ProviderError(f"{self.argv[0]} failed: {_last_line(str(envelope['result'])) or 'no message'}")
        usage = envelope.get("usage") or {}
        # Cached prompt tokens are reported apart from the rest; all of them were read.
        tokens_in = sum(_int(usage.get(k)) for k in
                        ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
        return str(envelope["result"]), tokens_in, _int(usage.get("output_tokens"))


def _envelope(stdout: str) -> dict | None:
    """The result envelope `claude -p --output-format json` wraps the model's text in; None for plain text."""
    printed = loads(stdout.strip())
    if isinstance(printed, list):  # with --verbose claude prints every event; the result is the last
        printed = next((e for e in reversed(printed) if isinstance(e, dict) and e.get("type") == "result"), None)
    if isinstance(printed, dict) and printed.get("type") == "result" and "result" in printed:
        return printed
    return None


class OpenAIProvider(Provider):
    """An OpenAI-compatible chat completions server: Ollama, llama.cpp, vLLM, OpenAI."""

    def __init__(self, base_url: str, model: str, api_key: str | None = None, timeout: float = 60.0, *,
                 retries: int = RETRIES, backoff: float = BACKOFF, sleep=time.sleep):
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model, self.timeout, self.retries, self.backoff, self.sleep = model, timeout, retries, backoff, sleep
        self._key = api_key
        self.name = f"openai:{model}"

    def _complete(self, system: str | None, user: str) -> tuple[str, int, int]:
        messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": user}]
        body = {"model": self.model, "messages": messages, "temperature": 0,
                "response_format": {"type": "json_object"}}
        headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
        reply = post_json(self.url, body, headers, self.timeout, secret=self._key, retries=self.retries,
                          backoff=self.backoff, sleep=self.sleep)
        try:
            text = reply["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise ProviderError(f"{self.url} did not answer in the chat completions format") from None
        usage = reply.get("usage") or {}
        return text or "", _int(usage.get("prompt_tokens")), _int(usage.get("completion_tokens"))


class AnthropicProvider(Provider):
    """The Anthropic Messages API (or a server speaking it)."""

    def __init__(self, base_url: str, model: str, api_key: str | None = None, timeout: float = 60.0, *,
                 max_tokens: int = 4096, retries: int = RETRIES, backoff: float = BACKOFF, sleep=time.sleep):
        base = base_url.rstrip("/")
        self.url = base.removesuffix("/v1") + "/v1/messages"  # both the bare host and .../v1 name the API
        self.model, self.timeout, self.max_tokens = model, timeout, max_tokens
        self.retries, self.backoff, self._key, self.sleep = retries, backoff, api_key, sleep
        self.name = f"anthropic:{model}"

    def _complete(self, system: str | None, user: str) -> tuple[str, int, int]:
        body = {"model": self.model, "max_tokens": self.max_tokens, "temperature": 0,
                "messages": [{"role": "user", "content": user}], **({"system": system} if system else {})}
        headers = {"anthropic-version": ANTHROPIC_VERSION, **({"x-api-key": self._key} if self._key else {})}
        reply = post_json(self.url, body, headers, self.timeout, secret=self._key, retries=self.retries,
                          backoff=self.backoff, sleep=self.sleep)
        blocks = reply.get("content") if isinstance(reply, dict) else None
        if not isinstance(blocks, list):
            raise ProviderError(f"{self.url} did not answer in the Messages format")
        text = "".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")
        usage = reply.get("usage") or {}
        return text, _int(usage.get("input_tokens")), _int(usage.get("output_tokens"))


def _int(value) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _last_line(text: str) -> str:
    return next((line.strip() for line in reversed(text.splitlines()) if line.strip()), "")[:300]


# -- HTTP --------------------------------------------------------------------------------------------

class _Transient(Exception):
    """A failure worth another try: no connection, a timeout, 429 or 5xx; `wait`: the Retry-After asked for."""

    def __init__(self, message: str, wait: float | None = None):
        super().__init__(message)
        self.wait = wait


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    # urllib would follow a redirect with the same headers, sending the API key to wherever it points.
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def post_json(url: str, body: Mapping, headers: Mapping[str, str], timeout: float, *, secret: str | None = None,
              retries: int = RETRIES, backoff: float = BACKOFF, sleep=time.sleep) -> Any:
    """POST `body` as JSON and return the JSON reply, retrying transient failures `retries` times: after the
    server's Retry-After (up to MAX_WAIT), else after a backoff with jitter. `sleep` waits (tests pass one
    that notes the waits instead).

    `secret` (the API key) is struck from every message: some servers quote the key they refused."""
    data = json.dumps(body).encode("utf-8")
    headers = {"Content-Type": "application/json", "Accept": "application/json", **headers}
    for attempt in range(retries + 1):
        try:
            return _post_once(url, data, headers, timeout)
        except _Transient as e:
            if attempt == retries:
                raise ProviderError(_redact(f"{e} (tried {retries + 1} times)", secret)) from None
            if e.wait is not None and e.wait > MAX_WAIT:
                raise ProviderError(_redact(f"{e}, and asks to wait {e.wait:g} s before trying again", secret)) \
                    from None
            # Never before the time the server named; a backoff of our own spread both ways.
            pause = e.wait * random.uniform(1.0, 1.2) if e.wait is not None else \
                backoff * 2 ** attempt * random.uniform(0.5, 1.5)
        except ProviderError as e:
            raise ProviderError(_redact(e.message, secret)) from None
        sleep(pause)


def _post_once(url: str, data: bytes, headers: Mapping[str, str], timeout: float) -> Any:
    request = urllib.request.Request(url, data=data, headers=dict(headers), method="POST")
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            raw = response.read(MAX_REPLY + 1)
    except urllib.error.HTTPError as e:
        message = f"{url} answered HTTP {e.code}: {_error_detail(e)}"
        if e.code == 429 or e.code >= 500:
            raise _Transient(message, retry_after(e.headers.get("Retry-After"))) from None
        raise ProviderError(message) from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
        # URLError wraps a refused connection or a connect timeout; a slow reply raises TimeoutError itself.
        reason = getattr(e, "reason", None) or e
        raise _Transient(f"cannot reach {url}: {'timed out' if isinstance(reason, TimeoutError) else reason}")
    if len(raw) > MAX_REPLY:
        raise ProviderError(f"{url} answered more than {MAX_REPLY >> 20} MB; not read")
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        raise ProviderError(f"{url} answered with something that is not JSON") from None


def retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds a Retry-After header asks to wait: a number of seconds or an HTTP date; None when absent or
    unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None or when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _error_detail(error: urllib.error.HTTPError) -> str:
    """The server's own error message (OpenAI and Anthropic both nest it as error.message), else its reason."""
    try:
        body = json.loads(error.read(MAX_ERROR) or b"null")
        detail = body["error"]["message"] if isinstance(body.get("error"), dict) else body["error"]
    except (ValueError, KeyError, TypeError, AttributeError, OSError):
        detail = None
    return str(detail or error.reason)[:300]


def _redact(text: str, secret: str | None) -> str:
    return text.replace(secret, "***") if secret else text


# -- budget and the one spec string ------------------------------------------------------------------

class Budget:
    """A provider with a cap on calls; counts the calls, tokens and discarded answers of one pass."""

    def __init__(self, provider: Provider, calls: int | None):
        self.provider, self.limit = provider, calls
        self.calls = self.tokens_in = self.tokens_out = self.invalid = 0
        self.log: list[str] = []  # one line per discarded answer

    @property
    def name(self) -> str:
        return self.provider.name

    @property
    def available(self) -> bool:
        return self.provider.available

    @property
    def spent(self) -> bool:
        return self.limit is not None and self.calls >= self.limit

    def ask(self, prompt: str, schema: Mapping, *, system: str | None = None) -> Answer:
        """The provider's answer; BudgetSpent once `calls` have been made, InvalidAnswer passed on."""
        if self.spent:
            raise BudgetSpent(f"the model budget of {self.limit} calls is spent")
        self.calls += 1
        try:
            answer = self.provider.ask(prompt, schema, system=system)
        except InvalidAnswer as e:
            self.invalid += 1
            self.tokens_in, self.tokens_out = self.tokens_in + e.tokens_in, self.tokens_out + e.tokens_out
            self.log.append(f"discarded an answer from {self.name}: {e.message} [{e.raw[:120]!r}]")
            raise
        self.tokens_in, self.tokens_out = self.tokens_in + answer.tokens_in, self.tokens_out + answer.tokens_out
        return answer


def make_provider(spec: str | None, *, api_key: str | None = None, timeout: float = 60.0) -> Provider:
    """The provider a spec names (HAFIZA_MODEL): none, command:..., openai:model@url, anthropic:model@url.

    `api_key` (HAFIZA_MODEL_KEY) goes to the HTTP providers; a command brings its own credentials."""
    spec = (spec or "").strip()
    if spec.lower() in ("", "none"):
        return NoProvider()
    kind, _, rest = spec.partition(":")
    kind = kind.strip().lower()
    if kind == "command":
        try:
            argv = shlex.split(rest)
        except ValueError as e:
            raise HafizaError(f"model provider command does not parse: {e}") from None
        if argv:
            return CommandProvider(argv, timeout)
    elif kind in ("openai", "anthropic"):
        model, _, url = rest.rpartition("@")  # the last @: a model name may hold one, a base URL rarely does
        if model.strip() and url.strip().startswith(("http://", "https://")):
            made = OpenAIProvider if kind == "openai" else AnthropicProvider
            return made(url.strip(), model.strip(), api_key, timeout)
    # The spec is not quoted back: it may carry credentials (a URL's user:password, a key pasted by mistake).
    known = kind if kind in ("command", "openai", "anthropic") else "unknown"
    raise HafizaError(f"the model provider spec is not understood ({known}): use one of " + ", ".join(FORMS),
                      field="model")
