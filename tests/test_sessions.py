"""Conversation search over real transcripts of the four clients (tests/fixtures/sessions/home, recorded
from Claude Code 2.1.197, Codex 0.171.0, Gemini CLI 0.61.0 and opencode 1.18.33 by tests/e2e)."""

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
import zlib
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp_types import Implementation

from conftest import run_cli
from hafiza.hooks import ingest, wire
from hafiza.hooks.mcp import create_server
from hafiza.skills import sources, transcripts
from hafiza.skills.conversations import Conversations, SessionNotFound
from secrets_corpus import SECRETS, SECRET_VALUES

FIXTURES = Path(__file__).parent / "fixtures" / "sessions" / "home"
CLAUDE = ".claude/projects/-home-dev-webshop/231c160a-4a98-48bf-a1dd-879920902d70.jsonl"
CODEX = ".codex/sessions/2026/12/01/rollout-2026-12-01T22-08-01-01a233a6-8665-7273-8559-bb82f3cdf22a.jsonl"


@pytest.fixture
def home(tmp_path) -> Path:
    """A HOME holding the recorded transcripts (opencode's database built from its SQL dump)."""
    return recorded_home(tmp_path / "home")


def recorded_home(home: Path) -> Path:
    """`home` with the recorded transcripts copied in."""
    shutil.copytree(FIXTURES, home, dirs_exist_ok=True)
    data = home / ".local" / "share" / "opencode"
    with sqlite3.connect(data / "opencode.db") as con:
        con.executescript((data / "opencode.sql").read_text(encoding="utf-8"))
    return home


def where(home: Path) -> dict:
    return sources.locations({"HOME": str(home)})


def imported(vault, home) -> Conversations:
    conversations = Conversations(vault.root)
    conversations.ingest(sources.files(where(home)))
    return conversations


def said(conversations, query, **options) -> list[tuple[str, str, str]]:
    return [(r.client, r.role, " ".join(r.context)) for r in conversations.search(query, **options)]


def user_line(session: str, text: str) -> str:
    """One more user turn, in Claude Code's format (as its own lines are written)."""
    return json.dumps({"type": "user", "message": {"role": "user", "content": text}, "uuid": f"u-{zlib.crc32(text.encode()):08x}",
                       "timestamp": "2026-12-02T09:00:00.000Z", "cwd": "/home/dev/webshop",
                       "sessionId": session}) + "\n"


# ---- reading each client's format

def test_every_clients_transcripts_are_found(home):
    found = sources.files(where(home))
    assert sorted({client for client, _ in found}) == sorted(transcripts.CLIENTS)
    assert len(found) == 7
    assert sources.files(where(home), "codex") == [(c, p) for c, p in found if c == "codex"]


def test_turns_of_each_client_with_session_project_role_and_time(vault, home):
    conversations = imported(vault, home)
    assert ("claude-code", "user", "how do we deploy to production?") in said(conversations, "deploy production")
    assert said(conversations, "Buildkite")[0] == ("codex", "user", "remember: our CI runs on Buildkite")
    assert ("gemini", "assistant", "Port 6543.") in said(conversations, "port 6543")
    assert said(conversations, "Thursdays")[0][:2] == ("opencode", "user")
    top = conversations.search("javascript package manager")[0]
    assert (top.session, top.project, top.time) == ("01a233a6-9195-7382-8d12-41423da18df7", "webshop",
                                                    "2026-12-01T22:08:06.199Z")


def test_what_clients_and_hafiza_injected_is_not_indexed(vault, home):
    conversations = imported(vault, home)
    with conversations._open().searcher() as searcher:
        texts = [d["shown"] for d in searcher.documents()]
    assert len(texts) == 22
    # hafiza's own recalled blocks and profiles, environment and session context: never someone's words
    for words in ("hafiza-recall", "hafiza-profile", "Reference data", "environment_context", "deploy-procedure",
                  "Deniz", "temporary directory", "hook_context"):
        assert not [t for t in texts if words in t], words


def test_a_tool_call_is_a_turn_of_its_own(vault, home):
    turns = imported(vault, home).show("c4ec05e1-a5d4-42e4-84b0-23d691c8391c")
    assert [t.role for t in turns] == ["user", "tool", "assistant"]
    assert turns[1].text.startswith("mcp__hafiza__remember {")


def test_show_takes_a_prefix_and_refuses_an_unknown_id(vault, home):
    conversations = imported(vault, home)
    assert [t.text for t in conversations.show("231c160a")] == ["how do we deploy to production?", "ok"]
    assert conversations.show("231c") == conversations.show("231c160a-4a98-48bf-a1dd-879920902d70")  # 4 will do
    with pytest.raises(SessionNotFound, match="no session"):
        conversations.show("ffffffff")
    with pytest.raises(SessionNotFound, match=r"no session '231' .*needs 4 characters"):
        conversations.show("231")


def test_show_names_the_sessions_a_start_shared_by_several_could_mean(vault, home):
    env = {"HOME": str(home)}
    run_cli("sessions", "import", env=env)
    both = run_cli("sessions", "show", "01a2", check=False)  # two Codex sessions start 01a233a6-
    assert both.returncode == 3 and both.stdout == ""
    assert both.stderr.strip() == ("Error: '01a2' is the start of 2 sessions: 01a233a6-8665-7273-8559-bb82f3cdf22a, "
                                   "01a233a6-9195-7382-8d12-41423da18df7; give more of the id")
    assert run_cli("sessions", "show", "01a233a6-9").stdout.startswith("session 01a233a6-9195-7382-8d12-41423da18df7")


def test_show_prints_what_was_said_with_its_escapes_visible(vault, home):
    folder = home / ".claude" / "projects" / "-home-dev-webshop"
    (folder / "5e55e55e-0000-4000-8000-000000000000.jsonl").write_text(
        user_line("5e55e55e-0000-4000-8000-000000000000", "clear the screen \x1b[2J with <b>tags</b>"))
    run_cli("sessions", "import", env={"HOME": str(home)})
    shown = run_cli("sessions", "show", "5e55").stdout
    assert "clear the screen \\x1b[2J with <b>tags</b>" in shown and "\x1b" not in shown


# ---- incremental

def test_a_growing_transcript_is_read_once(vault, home):
    conversations = imported(vault, home)
    before = conversations.count()
    assert conversations.ingest(sources.files(where(home))) == (0, 0, 0)
    path = home / CLAUDE
    line = user_line("231c160a-4a98-48bf-a1dd-879920902d70", "the flaky checkout test is in cart_spec.rb")
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(line[:40])  # the client is still writing this line
    assert conversations.ingest(sources.files(where(home))).turns == 0
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(line[40:])
    assert conversations.ingest(sources.files(where(home))) == (1, 1, 0)
    assert conversations.count() == before + 1
    assert said(conversations, "cart_spec.rb")[0][2] == "the flaky checkout test is in cart_spec.rb"


def test_a_rewritten_transcript_is_read_again(vault, home):
    conversations = imported(vault, home)
    path = home / CLAUDE
    path.write_text(user_line("231c160a-4a98-48bf-a1dd-879920902d70", "only this is left"), encoding="utf-8")
    assert conversations.ingest(sources.files(where(home))).turns == 1
    assert [t.text for t in conversations.show("231c160a")] == ["only this is left"]


def test_the_index_is_rebuilt_from_the_transcripts(vault, home):
    conversations = imported(vault, home)
    before = conversations.count()
    shutil.rmtree(vault.root / ".hafiza" / "conversations")
    assert conversations.count() == 0 and conversations.search("Buildkite") == []
    assert conversations.ingest(sources.files(where(home))).turns == before


# ---- secrets

def test_no_secret_from_a_transcript_is_findable_in_the_index(vault, home):
    path = home / CLAUDE
    with open(path, "a", encoding="utf-8") as fh:
        for n, (name, text) in enumerate(SECRETS):
            fh.write(user_line("231c160a-4a98-48bf-a1dd-879920902d70", f"{n} {text}"))
    conversations = imported(vault, home)
    report = conversations.ingest([("claude-code", path)])
    assert report.turns == 0  # already read in full by `imported`
    stored = b"".join(p.read_bytes() for p in (vault.root / ".hafiza" / "conversations").rglob("*") if p.is_file())
    for name, value in SECRET_VALUES.items():
        assert value.encode() not in stored, name
        assert not [r for r in conversations.search(value) if value in " ".join(r.context)], name
    shown = "\n".join(t.text for t in conversations.show("231c160a"))
    assert shown.count("[secret removed") >= len(SECRETS) - 2  # a split token is one removal of its two lines


def test_secrets_are_counted_when_masked(vault, home):
    conversations = imported(vault, home)
    text = dict(SECRETS)["github-classic"]
    with open(home / CLAUDE, "a", encoding="utf-8") as fh:
        fh.write(user_line("231c160a-4a98-48bf-a1dd-879920902d70", text))
    assert conversations.ingest([("claude-code", home / CLAUDE)]) == (1, 1, 1)
    assert conversations.search("release bot")[0].context == [
        "Token for the release bot: [secret removed: GitHub token] (repo + workflow scopes)."]


# ---- the spool, the warm process, the prompt path

def end_event(session: str, transcript: Path) -> dict:
    return {"session_id": session, "transcript_path": str(transcript), "cwd": "/home/dev/webshop",
            "hook_event_name": "SessionEnd", "reason": "exit"}


def run_hook(client: str, event: str, payload: dict, env=None) -> str:
    proc = subprocess.run([sys.executable, "-m", "hafiza.hooks.entry", client, event], input=json.dumps(payload),
                          capture_output=True, text=True, env={**os.environ, "HAFIZA_DAEMON": "0", **(env or {})},
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_ended_sessions_are_read_from_the_spool(vault, home, monkeypatch):
    monkeypatch.setattr(ingest, "CAPTURE_DAYS", 10**5)  # the fixture sessions are of 2026-12-01
    run_hook("claude-code", "SessionEnd", end_event("231c160a", home / CLAUDE))
    run_hook("codex", "SessionEnd", end_event("01a233a6", home / CODEX))
    assert Conversations(vault.root).count() == 0  # the hook only spools
    assert ingest.behind(vault.root, ingest.spool_size(vault.root))
    ingest.main([str(vault.root)])
    conversations = Conversations(vault.root)
    assert {r.client for r in conversations.search("deploy production Buildkite")} >= {"claude-code", "codex"}
    assert said(conversations, "Thursdays")[0][0] == "opencode"  # its database, read with every drain
    from hafiza.skills.capture import inbox
    # and what the user said in so many words waits in the inbox (Capture), not in recall
    assert {p.commit.subject for _, p in inbox(vault)} >= {"hafiza: capture our-ci-runs-on-buildkite"}
    assert not ingest.behind(vault.root, ingest.spool_size(vault.root))
    count = conversations.count()
    ingest.main([str(vault.root)])  # nothing new in the spool: nothing read again
    assert conversations.count() == count


def test_the_warm_process_reads_an_ended_session(vault, home):
    env = {**os.environ, "HAFIZA_EMBEDDER": "none", "HOME": str(home)}
    proc = subprocess.Popen([sys.executable, "-m", "hafiza.hooks.daemon", str(vault.root)], env=env,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while wire.ask(vault.root, {"op": "ping"}) is None and time.monotonic() < deadline:
            time.sleep(0.1)
        # opencode tells plugins of no session end: its database, when it moved, is read all the same
        while not Conversations(vault.root).search("Thursdays") and time.monotonic() < deadline:
            time.sleep(0.2)
        assert said(Conversations(vault.root), "Thursdays")[0][0] == "opencode"
        run_hook("claude-code", "SessionEnd", end_event("231c160a", home / CLAUDE), {"HOME": str(home)})
        while not Conversations(vault.root).search("production") and time.monotonic() < deadline:
            time.sleep(0.2)
        assert said(Conversations(vault.root), "deploy production")[0][0] == "claude-code"
    finally:
        wire.ask(vault.root, {"op": "stop"})
        proc.wait(timeout=10)


def test_the_warm_process_starts_a_reader_when_a_session_ended_and_opencode_at_most_once_a_minute(vault, home):
    db = home / ".local" / "share" / "opencode" / "opencode.db"
    watch = ingest.Watch(vault.root, db)
    assert watch.due()  # opencode's database was never read
    watch.started()
    assert not watch.due()
    with sqlite3.connect(db) as con:  # a new turn in opencode, a moment later
        con.execute("UPDATE part SET time_updated = time_updated + 1")
    os.utime(db, ns=(time.time_ns(), time.time_ns() + 10**9))
    assert not watch.due()  # within the minute: waits
    run_hook("codex", "SessionEnd", end_event("01a233a6", home / CODEX))
    assert watch.due()  # a session ended: now, and opencode with it
    watch.started()
    assert not watch.due()


def test_the_prompt_path_never_loads_conversation_search():
    code = ("import sys, hafiza.hooks.entry, hafiza.hooks.hafiza_hook, hafiza.hooks.daemon\n"
            "print([m for m in sys.modules if m.startswith('hafiza.skills')])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# ---- the command line and the MCP tool

def test_sessions_commands(vault, home):
    env = {"HOME": str(home)}
    out = run_cli("sessions", "import", env=env).stdout
    assert out.startswith("22 turns from 7 of 7 transcripts")
    assert run_cli("sessions", "import", env=env).stdout.startswith("0 turns from 0 of 7")
    found = json.loads(run_cli("sessions", "search", "staging database port", "--json").stdout)
    assert {"session", "client", "project", "role", "time", "score", "context"} <= set(found[0])
    assert found[0]["context"] == ['"what port does the staging database listen on?"']
    assert json.loads(run_cli("sessions", "search", "port", "--project", "nope", "--json").stdout) == []
    assert json.loads(run_cli("sessions", "search", "port", "--since", "2027-01-01", "--json").stdout) == []
    assert len(json.loads(run_cli("sessions", "search", "port", "--since", "2026-12-01", "--json").stdout)) >= 2
    text = run_cli("sessions", "search", "Buildkite").stdout
    assert "codex  webshop  01a233a6-8665-7273-8559-bb82f3cdf22a  (user)" in text
    shown = run_cli("sessions", "show", "01a233a6-8665").stdout
    assert shown.startswith("session 01a233a6-8665-7273-8559-bb82f3cdf22a  codex  webshop  2026-12-01")
    assert "remember: our CI runs on Buildkite" in shown
    missing = run_cli("sessions", "show", "nope-nope", check=False)
    assert missing.returncode == 3 and missing.stderr.strip() == \
        "Error: no session 'nope-nope' in the conversation index"
    bad = run_cli("sessions", "search", "x", "--since", "yesterday", check=False)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and "is not a date" in bad.stderr
    only = run_cli("sessions", "import", "--client", "gemini", env={"HOME": str(home / "elsewhere")}).stdout
    assert only.startswith("0 turns from 0 of 0")


def test_search_sessions_over_mcp(vault, home):
    imported(vault, home)

    async def main():
        async with Client(create_server(vault.root), client_info=Implementation(name="t", version="1")) as client:
            result = await client.call_tool("search_sessions", {"query": "Buildkite CI", "limit": 3})
            assert not result.is_error
            turns = result.structured_content["turns"]
            assert turns[0]["client"] == "codex" and turns[0]["context"] == ["remember: our CI runs on Buildkite"]
            bad = await client.call_tool("search_sessions", {"query": "x", "since": "soon"})
            assert bad.is_error and "since" in bad.content[0].text

    anyio.run(main)


def test_the_background_reader_proposes_only_from_recent_sessions(vault, home, monkeypatch):
    # A first read of a client's whole history (opencode's database) must not fill the inbox: it is
    # indexed for search, and filed only on request (`hafiza inbox file --since`).
    from hafiza.skills.capture import inbox

    monkeypatch.setattr(ingest, "CAPTURE_DAYS", -1)  # every session is older than that
    run_hook("claude-code", "SessionEnd", end_event("231c160a", home / CLAUDE))
    ingest.main([str(vault.root)])
    assert Conversations(vault.root).search("deploy production Buildkite")
    assert not list(inbox(vault))
