"""The offline model provider against real transports: a local HTTP model server and real programs."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from hafiza.indexer.config import settings
from hafiza.vault.errors import HafizaError
from hafiza.vault.offline.provider import (AnthropicProvider, Budget, BudgetSpent, CommandProvider, InvalidAnswer,
                                   NoProvider, OpenAIProvider, ProviderError, extract_json, make_provider,
                                   validate)

sys.path.insert(0, str(Path(__file__).parent))
from model_server import Delay, ModelServer, Status  # noqa: E402

from hafiza.vault.offline.answers import UnsupportedSchema, check_schema  # noqa: E402
from hafiza.vault.offline.provider import MAX_REPLY, MAX_WAIT, retry_after  # noqa: E402

SCHEMA = {"type": "object", "additionalProperties": False, "required": ["verdict", "confidence"],
          "properties": {"verdict": {"enum": ["keep", "stale", "merge"]},
                         "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                         "reasons": {"type": "array", "items": {"type": "string", "maxLength": 40}, "maxItems": 2}}}
GOOD = {"verdict": "stale", "confidence": 0.9}
KEY = "sk-test-4f9a1c"


# -- the schema subset --------------------------------------------------------------------------------

def test_a_value_that_fits_the_schema_has_no_problems():
    assert validate({"verdict": "keep", "confidence": 1, "reasons": ["old", "moved"]}, SCHEMA) == []


@pytest.mark.parametrize("value, problem", [
    ([], "$: expected object, got array"),
    ({"verdict": "keep"}, "$: missing 'confidence'"),
    ({**GOOD, "extra": 1}, "$: unexpected key 'extra'"),
    ({**GOOD, "verdict": "delete"}, "$.verdict: 'delete' is not one of ['keep', 'stale', 'merge']"),
    ({**GOOD, "confidence": 1.5}, "$.confidence: 1.5 is above the maximum 1"),
    ({**GOOD, "confidence": -1}, "$.confidence: -1 is below the minimum 0"),
    ({**GOOD, "confidence": True}, "$.confidence: expected number, got boolean"),
    ({**GOOD, "reasons": ["a", "b", "c"]}, "$.reasons: more than 2 items"),
    ({**GOOD, "reasons": ["x" * 41]}, "$.reasons[0]: longer than 40 characters"),
    ({**GOOD, "reasons": [3]}, "$.reasons[0]: expected string, got integer"),
])
def test_each_problem_names_where_it_is(value, problem):
    assert validate(value, SCHEMA) == [problem]


@pytest.mark.parametrize("schema, keyword", [
    ({"type": "string", "pattern": "^[a-z]+$"}, "'pattern'"),
    ({"type": "object", "properties": {"name": {"type": "string", "format": "email"}}}, "'format'"),
    ({"oneOf": [{"type": "string"}, {"type": "null"}]}, "'oneOf'"),
    ({"type": "array", "items": {"anyOf": [{"type": "string"}]}}, "'anyOf'"),
    ({"type": "object", "additionalProperties": {"type": "string"}}, "additionalProperties must be true or false"),
])
def test_a_schema_the_checker_cannot_check_is_refused_not_half_checked(schema, keyword):
    """Issue 29, item 8: `pattern`, `oneOf`... were accepted and not checked, so anything passed them."""
    with pytest.raises(UnsupportedSchema, match=keyword):
        validate("anything", schema)


def test_an_unsupported_schema_is_refused_before_the_model_is_asked():
    with ModelServer([GOOD]) as server:
        with pytest.raises(UnsupportedSchema, match="'pattern'"):
            openai(server).ask("q", {"type": "object", "properties": {"verdict": {"type": "string", "pattern": "x"}}})
    assert server.requests == []


def test_const_and_min_length_are_checked():
    schema = {"type": "object", "properties": {"kind": {"const": "verdict"}, "why": {"type": "string", "minLength": 3},
                                               "title": {"description": "an annotation only", "type": "string"}}}
    assert validate({"kind": "verdict", "why": "old", "title": "x"}, schema) == []
    assert validate({"kind": "other", "why": "no"}, schema) == ["$.kind: 'other' is not 'verdict'",
                                                                "$.why: shorter than 3 characters"]
    assert validate({"kind": 1}, {"properties": {"kind": {"const": True}}}) != []  # 1 == True in Python only


def test_every_schema_the_code_sends_a_model_can_be_checked():
    from hafiza.curator import aliases, conflicts
    from hafiza.skills import drafts, implicit
    from hafiza.verifier import extract

    for schema in (aliases.SCHEMA, conflicts.VERDICT, drafts.PROSE, implicit.SCHEMA, extract.SCHEMA):
        check_schema(schema)


def test_types_lists_integers_and_min_items():
    assert validate(None, {"type": ["string", "null"]}) == []
    assert validate(3.0, {"type": "integer"}) == []  # JSON has one number type
    assert validate(3.5, {"type": "integer"}) == ["$: expected integer, got number"]
    assert validate(True, {"type": "integer"}) == ["$: expected integer, got boolean"]
    assert validate([], {"type": "array", "minItems": 1}) == ["$: fewer than 1 items"]
    assert validate(1, {"enum": [True]}) != []  # 1 == True in Python, not in JSON


# -- reading a model's text ---------------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    '{"verdict": "keep"}',
    'Sure! Here it is:\n```json\n{"verdict": "keep"}\n```\nAnything else?',
    'I looked at the {memory} and decided: {"verdict": "keep"} - that is all.',
    'The answer {"verdict": "keep"} has braces } in prose after it',
])
def test_the_json_is_found_in_the_answer(text):
    assert extract_json(text) == {"verdict": "keep"}


def test_strings_with_braces_and_arrays_are_read_whole():
    assert extract_json('Result: {"note": "use {x} and }", "n": [1, 2]} done') == {"note": "use {x} and }", "n": [1, 2]}
    assert extract_json("ids: [1, 2, 3].") == [1, 2, 3]


@pytest.mark.parametrize("text", ["I cannot decide.", "42", '"just a string"', "{not json}", ""])
def test_an_answer_without_json_is_invalid(text):
    with pytest.raises(InvalidAnswer) as caught:
        extract_json(text)
    assert caught.value.raw == text


# -- OpenAI-compatible servers ------------------------------------------------------------------------

def openai(server, **kw):
    return OpenAIProvider(server.url + "/v1", "qwen2.5:7b", kw.pop("api_key", KEY), kw.pop("timeout", 5),
                          backoff=kw.pop("backoff", 0), **kw)


def test_openai_sends_the_prompt_system_and_model_and_reads_the_answer():
    with ModelServer([GOOD], usage=(30, 7)) as server:
        answer = openai(server).ask("Is this memory stale?", SCHEMA, system="You curate memories.")
    assert (answer.data, answer.tokens_in, answer.tokens_out) == (GOOD, 30, 7)
    assert json.loads(answer.raw) == GOOD
    [request] = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    body = request.body
    assert (body["model"], body["temperature"], body["response_format"]) == ("qwen2.5:7b", 0, {"type": "json_object"})
    assert body["messages"][0] == {"role": "system", "content": "You curate memories."}
    assert body["messages"][1]["role"] == "user"
    assert body["messages"][1]["content"].startswith("Is this memory stale?")
    assert json.dumps(SCHEMA) in body["messages"][1]["content"]  # the schema travels with the prompt


def test_no_key_no_authorization_header():
    with ModelServer([GOOD]) as server:
        openai(server, api_key=None).ask("q", SCHEMA)
    assert "authorization" not in server.requests[0].headers


def test_a_server_error_is_retried_then_answered():
    with ModelServer([Status(500), Status(429), GOOD]) as server:
        assert openai(server).ask("q", SCHEMA).data == GOOD
    assert len(server.requests) == 3


def test_a_server_that_keeps_failing_gives_up_after_the_retries():
    with ModelServer([Status(503)] * 5) as server:
        with pytest.raises(ProviderError, match=r"HTTP 503.*tried 3 times"):
            openai(server).ask("q", SCHEMA)
    assert len(server.requests) == 3


def test_retry_after_is_honoured_with_jitter_and_a_long_one_is_not_waited_for():
    """Issue 29, item 8: the client ignored Retry-After. The waits are noted, not slept: no timed test."""
    waits = []
    with ModelServer([Status(429, headers={"Retry-After": "7"}), Status(503), GOOD]) as server:
        assert openai(server, sleep=waits.append, backoff=0.5).ask("q", SCHEMA).data == GOOD
    assert len(waits) == 2 and 7 <= waits[0] <= 7 * 1.2 and 0.5 <= waits[1] <= 1.5  # the second try: 2 x 0.5 s
    waits.clear()
    with ModelServer([Status(429, headers={"Retry-After": str(int(MAX_WAIT) * 10)}), GOOD]) as server:
        with pytest.raises(ProviderError, match=f"asks to wait {int(MAX_WAIT) * 10} s"):
            openai(server, sleep=waits.append).ask("q", SCHEMA)
    assert waits == [] and len(server.requests) == 1


def test_the_backoff_is_spread_so_passes_started_together_do_not_retry_in_step():
    waits = []
    for _ in range(8):
        with ModelServer([Status(500), GOOD]) as server:
            openai(server, sleep=waits.append, backoff=1.0).ask("q", SCHEMA)
    assert all(0.5 <= w <= 1.5 for w in waits) and len(set(waits)) > 1


def test_retry_after_reads_seconds_and_http_dates():
    assert retry_after("120") == 120.0
    assert retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412480.0 - 30) == 30.0
    assert retry_after("soon") is None and retry_after(None) is None and retry_after("-3") is None


def test_a_reply_larger_than_the_cap_is_refused_without_reading_it_all():
    """Issue 29, item 8: the client read a reply of any size into memory."""
    with ModelServer(["x" * (MAX_REPLY + 10)]) as server:
        with pytest.raises(ProviderError, match="answered more than"):
            openai(server).ask("q", SCHEMA)


def test_a_model_answer_nested_thousands_deep_is_invalid_not_a_crash():
    with ModelServer(["[" * 100_000 + "]" * 100_000]) as server:
        with pytest.raises(InvalidAnswer):
            openai(server).ask("q", SCHEMA)


def test_a_client_error_is_not_retried_and_never_shows_the_key():
    # OpenAI quotes the refused key in its message; the error must not.
    with ModelServer([Status(401, f"Incorrect API key provided: {KEY}"), GOOD]) as server:
        with pytest.raises(ProviderError) as caught:
            openai(server).ask("q", SCHEMA)
    assert len(server.requests) == 1
    assert "HTTP 401" in caught.value.message and "Incorrect API key provided: ***" in caught.value.message
    assert KEY not in str(caught.value)


def test_a_400_is_not_retried():
    with ModelServer([Status(400, "bad request"), GOOD]) as server:
        with pytest.raises(ProviderError, match="HTTP 400: bad request"):
            openai(server).ask("q", SCHEMA)
    assert len(server.requests) == 1


def test_a_slow_server_times_out():
    with ModelServer([Delay(2, GOOD)] * 3) as server:
        started = time.monotonic()
        with pytest.raises(ProviderError, match="timed out"):
            openai(server, timeout=0.2, retries=1).ask("q", SCHEMA)
    assert time.monotonic() - started < 1.5
    assert len(server.requests) == 2


def test_an_unreachable_server_is_a_provider_error():
    with ModelServer([]) as server:
        url = server.url
    with pytest.raises(ProviderError, match="cannot reach"):
        OpenAIProvider(url, "m", timeout=1, backoff=0).ask("q", SCHEMA)


def test_a_redirect_is_not_followed_with_the_key():
    with ModelServer([GOOD]) as elsewhere, ModelServer([]) as server:
        server.script.append(Status(307, "moved", {"Location": elsewhere.url + "/v1/chat/completions"}))
        with pytest.raises(ProviderError, match="HTTP 307"):
            openai(server).ask("q", SCHEMA)
    assert elsewhere.requests == []


@pytest.mark.parametrize("answer", [{"verdict": "delete", "confidence": 0.5}, "I think it is stale.", {"verdict": 1}])
def test_an_answer_that_does_not_validate_is_discarded(answer):
    with ModelServer([answer]) as server:
        with pytest.raises(InvalidAnswer) as caught:
            openai(server).ask("q", SCHEMA)
    assert caught.value.raw == (answer if isinstance(answer, str) else json.dumps(answer))
    assert (caught.value.tokens_in, caught.value.tokens_out) == (12, 5)
    assert len(server.requests) == 1


def test_the_answer_may_come_in_prose_or_a_fence():
    with ModelServer([f"Here you go:\n```json\n{json.dumps(GOOD)}\n```"]) as server:
        assert openai(server).ask("q", SCHEMA).data == GOOD


# -- the Anthropic Messages API -----------------------------------------------------------------------

def anthropic(server, base=None, **kw):
    return AnthropicProvider(base or server.url, "claude-haiku", KEY, 5, backoff=0, **kw)


def test_anthropic_sends_the_prompt_system_model_and_key():
    with ModelServer([GOOD], usage=(40, 9)) as server:
        answer = anthropic(server, max_tokens=256).ask("Is this memory stale?", SCHEMA, system="You curate.")
    assert (answer.data, answer.tokens_in, answer.tokens_out) == (GOOD, 40, 9)
    [request] = server.requests
    assert request.path == "/v1/messages"
    assert (request.headers["x-api-key"], request.headers["anthropic-version"]) == (KEY, "2023-06-01")
    assert "authorization" not in request.headers
    body = request.body
    assert (body["model"], body["system"], body["max_tokens"]) == ("claude-haiku", "You curate.", 256)
    assert request.prompt.startswith("Is this memory stale?") and json.dumps(SCHEMA) in request.prompt


def test_anthropic_base_url_may_end_in_v1_and_a_429_is_retried():
    with ModelServer([Status(429, "slow down"), GOOD]) as server:
        assert anthropic(server, base=server.url + "/v1/").ask("q", SCHEMA).data == GOOD
    assert [r.path for r in server.requests] == ["/v1/messages", "/v1/messages"]


def test_anthropic_errors_never_show_the_key():
    with ModelServer([Status(403, f"key {KEY} may not use this model")]) as server:
        with pytest.raises(ProviderError) as caught:
            anthropic(server).ask("q", SCHEMA)
    assert KEY not in str(caught.value) and "HTTP 403" in str(caught.value)


def test_anthropic_invalid_answer_is_discarded():
    with ModelServer([{"verdict": "keep"}]) as server:
        with pytest.raises(InvalidAnswer, match="missing 'confidence'"):
            anthropic(server).ask("q", SCHEMA)


# -- a command --------------------------------------------------------------------------------------

def program(tmp_path, name: str, body: str) -> list[str]:
    """argv for a real Python program that reads the prompt on stdin and keeps a copy in prompt.txt."""
    path = tmp_path / f"{name}.py"
    path.write_text("import json, os, sys, time\nprompt = sys.stdin.read()\n"
                    f"open({str(tmp_path / 'prompt.txt')!r}, 'w').write(prompt)\n{body}\n")
    return [sys.executable, str(path)]


def test_a_claude_like_envelope_is_unwrapped(tmp_path):
    argv = program(tmp_path, "claude", """print(json.dumps({"type": "result", "subtype": "success", "is_error": False,
    "result": "```json\\n" + json.dumps({"verdict": "merge", "confidence": 0.6}) + "\\n```",
    "usage": {"input_tokens": 3, "cache_read_input_tokens": 100, "output_tokens": 8}}))""")
    answer = CommandProvider(argv, 10).ask("Merge these?", SCHEMA, system="You curate.")
    assert answer.data == {"verdict": "merge", "confidence": 0.6}
    assert (answer.tokens_in, answer.tokens_out) == (103, 8)
    prompt = (tmp_path / "prompt.txt").read_text()
    assert prompt.startswith("You curate.\n\nMerge these?") and json.dumps(SCHEMA) in prompt


def test_plain_text_with_a_fence_and_the_given_environment(tmp_path):
    argv = program(tmp_path, "llm", """print("Thinking...\\n```json\\n" + json.dumps(
    {"verdict": os.environ["VERDICT"], "confidence": 1}) + "\\n```")""")
    answer = CommandProvider(argv, 10, env={"VERDICT": "keep", "PATH": os.defpath}).ask("q", SCHEMA)
    assert (answer.data, answer.tokens_in, answer.tokens_out) == ({"verdict": "keep", "confidence": 1}, 0, 0)


def test_a_failing_command_reports_its_last_stderr_line(tmp_path):
    argv = program(tmp_path, "fail", "print('partial', flush=True)\n"
                   "sys.stderr.write('starting\\nError: model not found\\n')\nsys.exit(1)")
    with pytest.raises(ProviderError, match="exited with 1: Error: model not found$"):
        CommandProvider(argv, 10).ask("q", SCHEMA)


def test_claudes_own_failure_envelope_is_the_message(tmp_path):
    argv = program(tmp_path, "refused", """print(json.dumps({"type": "result", "is_error": True,
    "result": "Invalid API key · Fix external API key", "usage": {}}))\nsys.exit(1)""")
    with pytest.raises(ProviderError, match="exited with 1: Invalid API key"):
        CommandProvider(argv, 10).ask("q", SCHEMA)


def test_a_command_that_hangs_times_out(tmp_path):
    argv = program(tmp_path, "hang", "time.sleep(30)")
    started = time.monotonic()
    with pytest.raises(ProviderError, match="no answer within 0.5 s"):
        CommandProvider(argv, 0.5).ask("q", SCHEMA)
    assert time.monotonic() - started < 10


def test_a_missing_program_and_a_wrong_answer(tmp_path):
    with pytest.raises(ProviderError, match="cannot run"):
        CommandProvider([str(tmp_path / "no-such-model")], 5).ask("q", SCHEMA)
    with pytest.raises(InvalidAnswer):
        CommandProvider(program(tmp_path, "prose", "print('It is stale, I think.')"), 10).ask("q", SCHEMA)


# -- the budget and the spec --------------------------------------------------------------------------

def test_a_budget_stops_at_its_calls_and_counts_tokens():
    with ModelServer(lambda prompt: GOOD, usage=(10, 4)) as server:
        budget = Budget(openai(server), 2)
        budget.ask("one", SCHEMA)
        budget.ask("two", SCHEMA)
        with pytest.raises(BudgetSpent, match="2 calls"):
            budget.ask("three", SCHEMA)
    assert [r.prompt.split("\n")[0] for r in server.requests] == ["one", "two"]
    assert (budget.calls, budget.tokens_in, budget.tokens_out, budget.invalid) == (2, 20, 8, 0)


def test_a_budget_logs_discarded_answers():
    with ModelServer(["no idea", GOOD]) as server:
        budget = Budget(openai(server), None)
        with pytest.raises(InvalidAnswer):
            budget.ask("one", SCHEMA)
        assert budget.ask("two", SCHEMA).data == GOOD
    assert (budget.calls, budget.invalid, budget.tokens_in) == (2, 1, 24)
    [line] = budget.log
    assert "\n" not in line and "holds no JSON" in line and "no idea" in line


def test_no_provider_says_so():
    none = make_provider(None)
    assert isinstance(none, NoProvider) and none.name == "none" and not none.available
    assert not Budget(none, 5).available
    with pytest.raises(HafizaError, match="no model provider configured"):
        none.ask("q", SCHEMA)


@pytest.mark.parametrize("spec", [None, "", "none", " NONE "])
def test_make_provider_none(spec):
    assert isinstance(make_provider(spec), NoProvider)


def test_make_provider_reads_every_form():
    command = make_provider("command:claude -p --output-format json --model 'claude haiku'", timeout=30)
    assert isinstance(command, CommandProvider)
    assert command.argv == ["claude", "-p", "--output-format", "json", "--model", "claude haiku"]
    assert command.timeout == 30
    ollama = make_provider("openai:qwen2.5:7b@http://127.0.0.1:11434/v1")
    assert isinstance(ollama, OpenAIProvider) and ollama.name == "openai:qwen2.5:7b"
    assert ollama.url == "http://127.0.0.1:11434/v1/chat/completions"
    scoped = make_provider("openai:team@model@https://example.test/v1")  # split on the last @
    assert (scoped.model, scoped.url) == ("team@model", "https://example.test/v1/chat/completions")
    claude = make_provider("anthropic:claude-haiku-4-5@https://api.anthropic.com")
    assert isinstance(claude, AnthropicProvider) and claude.url == "https://api.anthropic.com/v1/messages"


def test_make_provider_passes_the_key_to_the_server():
    with ModelServer([GOOD, GOOD]) as server:
        make_provider(f"openai:m@{server.url}/v1", api_key=KEY).ask("q", SCHEMA)
        make_provider(f"anthropic:m@{server.url}", api_key=KEY).ask("q", SCHEMA)
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert server.requests[1].headers["x-api-key"] == KEY


@pytest.mark.parametrize("spec", ["ollama:qwen", "openai:qwen2.5", "openai:@http://h", "openai:m@ftp://h",
                                  "anthropic:m@", "command:", "openai:m@user:pw@host", "sk-pw-pasted-here"])
def test_make_provider_refuses_junk_and_lists_the_forms(spec):
    with pytest.raises(HafizaError) as caught:
        make_provider(spec)
    assert "openai:<model>@<base url>" in caught.value.message
    assert "pw" not in caught.value.message  # a spec may carry credentials: it is not quoted back
    with pytest.raises(HafizaError, match="does not parse: No closing quotation"):
        make_provider("command:claude 'unclosed")


def test_settings_read_the_model_and_hide_the_key():
    found = settings({"HAFIZA_MODEL": " openai:m@http://h/v1 ", "HAFIZA_MODEL_KEY": KEY})
    assert (found.model, found.model_key) == ("openai:m@http://h/v1", KEY)
    assert KEY not in repr(found)
    assert (settings({}).model, settings({}).model_key) == (None, None)


# -- the real Claude Code, when it is installed ---------------------------------------------------------

def claude_binary() -> str | None:
    """HAFIZA_TEST_CLAUDE, `claude` on PATH, or the npm cache beside the checkout (`npm install --prefix
    ../.cache/npm-claude @anthropic-ai/claude-code`)."""
    cached = Path(__file__).resolve().parents[2] / ".cache" / "npm-claude" / "node_modules" / ".bin" / "claude"
    found = os.environ.get("HAFIZA_TEST_CLAUDE") or shutil.which("claude") or (str(cached) if cached.exists() else None)
    return found if found and os.access(found, os.X_OK) else None


def real_claude(server, tmp_path) -> CommandProvider:
    """`claude -p --output-format json` talking to `server`, in a home of its own, or skip."""
    binary = claude_binary()
    if binary is None:
        pytest.skip("Claude Code is not installed (set HAFIZA_TEST_CLAUDE or put `claude` on PATH)")
    env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(tmp_path / "home"),
           "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "dummy", "DISABLE_TELEMETRY": "1",
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}
    return CommandProvider([binary, "-p", "--output-format", "json"], 120, env=env)


def test_the_real_claude_code_through_a_local_server(tmp_path):
    with ModelServer(lambda prompt: GOOD, usage=(21, 6)) as server:
        provider = real_claude(server, tmp_path)
        answer = provider.ask("Is the memory about Python 3.8 stale?", SCHEMA, system="You curate memories.")
    assert (answer.data, answer.tokens_in, answer.tokens_out) == (GOOD, 21, 6)
    asked = [r for r in server.requests if r.path == "/v1/messages"]
    assert asked and asked[-1].headers["x-api-key"] == "dummy" and asked[-1].body["stream"] is True
    assert "You curate memories.\n\nIs the memory about Python 3.8 stale?" in asked[-1].prompt
    assert json.dumps(SCHEMA) in asked[-1].prompt


def test_the_real_claude_code_reports_a_refusal(tmp_path):
    with ModelServer([Status(400, "model: claude-nope not found")] * 3) as server:
        with pytest.raises(ProviderError, match="exited with 1: .*not found"):
            real_claude(server, tmp_path).ask("q", SCHEMA)
