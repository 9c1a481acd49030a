"""A shared server (`hafiza mcp --http --users`): two users and a team vault, over real HTTP with the real MCP
client. Every tool x own / other user's / team memory x good / wrong / no token: zero cross-user reads or
writes."""

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import Implementation

from conftest import git_subjects, run_cli
from test_mcp import TOOLS, free_port, listening

MARK = {"alice": "aardvark", "bob": "bobolink", "team": "tapir"}  # a word only that vault's memory holds
# Text only each vault holds and no request ever sends (a query or an error message may echo MARK).
TEXT = {"alice": "Alice deploy habit", "bob": "Bob deploy habit", "team": "Team deploy rule"}
FACT = {"alice": "Aydın", "bob": "Bodrum"}  # where each user's fact note says their client is
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "1"}}}


def snapshot(root: Path) -> dict:
    """Every file of a vault but its sidecar, and its history: what 'nothing written' compares."""
    files = {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
             if p.is_file() and ".git" not in p.parts and ".hafiza" not in p.parts}
    return {"files": files, "log": git_subjects(root)}


@pytest.fixture
def shared(tmp_path):
    """alice (granted `team`) and bob (no team), each with a memory; the server on a free loopback port."""
    team = tmp_path / "team-vault"
    run_cli("--vault", str(team), "init")
    run_cli("--vault", str(team), "remember", f"Team deploy rule, {MARK['team']} pipeline", "--id", "team-rule")
    run_cli("vault", "add", "team", str(team))
    tokens = {"alice": run_cli("token", "add", "alice", "--team", "team").stdout.strip(),
              "bob": run_cli("token", "add", "bob").stdout.strip()}
    users = {u["user"]: Path(u["vault"]) for u in json.loads(run_cli("token", "list", "--json").stdout)}
    for name in ("alice", "bob"):
        run_cli("--vault", str(users[name]), "remember", f"{name.title()} deploy habit, {MARK[name]} pipeline",
                "--id", f"{name}-rule")
        run_cli("--vault", str(users[name]), "fact", "set", f"{MARK[name]} corp", "based in", FACT[name])
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "hafiza" / "users.json"
    assert config.stat().st_mode & 0o777 == 0o600
    assert not any(t in config.read_text() for t in tokens.values())  # only hashes are kept
    port = free_port()
    log = open(tmp_path / "server.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "hafiza.cli.main", "mcp", "--http", f"127.0.0.1:{port}", "--users"],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        listening(proc, port, tmp_path / "server.log", seconds=30)
        yield {"url": f"http://127.0.0.1:{port}/mcp", "tokens": tokens, "vaults": {**users, "team": team}}
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()


def actors(root: Path, last: int) -> set[str]:
    """Who made the vault's `last` commits (their Hafiza-Actor trailers)."""
    out = subprocess.run(["git", "-C", str(root), "log", f"-{last}", "--format=%(trailers:key=Hafiza-Actor,valueonly)"],
                         capture_output=True, text=True, check=True)
    return {line.strip() for line in out.stdout.splitlines() if line.strip()}


def calls(target: str, caller: str = "") -> list[tuple[str, dict]]:
    """One call of every tool by `caller`, aimed at `target`'s memory (its id, its word, its vault's name)."""
    mem_id = f"{target}-rule" if target != "team" else "team-rule"
    word = MARK[target]
    return [("recall", {"query": f"{word} pipeline deploy"}),
            ("get", {"id": mem_id}),
            ("list", {"status": "all"}),
            ("profile", {}),
            ("search_sessions", {"query": word}),
            ("remember", {"text": f"A note about the {word} pipeline from a test",
                          **({} if target == caller else {"to": target})}),
            ("update", {"id": mem_id, "text": f"Rewritten {word} pipeline rule"}),
            ("add_aliases", {"id": mem_id, "aliases": [f"{word} alias"]}),
            ("supersede", {"old_id": mem_id, "new_id": mem_id, "reason": "test"}),
            ("forget", {"id": mem_id, "reason": "test"}),
            ("mark_used", {"ids": [mem_id]}),
            ("record_episode", {"task": f"the {word} task", "outcome": "success", "what_happened": "done"}),
            ("get_fact", {"entity": f"{word} corp"}),
            ("set_fact", {"entity": f"{word} corp", "attribute": "contact", "value": f"{caller or target} desk"}),
            ("remove_fact", {"entity": f"{word} corp", "attribute": "contact"})]


def test_calls_cover_every_tool():
    assert {name for name, _ in calls("alice")} == TOOLS


async def call_all(url: str, token: str, user: str, target: str) -> list[tuple[str, bool, str]]:
    """(tool, is_error, everything the response said) for every call aimed at `target`."""
    out = []
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
    async with http, Client(streamable_http_client(url, http_client=http),
                            client_info=Implementation(name="agent", version="1")) as client:
        for tool, args in calls(target, user):
            result = await client.call_tool(tool, args)
            out.append((tool, result.is_error, json.dumps(result.structured_content) + " ".join(
                getattr(c, "text", "") for c in result.content)))
    return out


def test_isolation_matrix(shared):
    url, tokens, vaults = shared["url"], shared["tokens"], shared["vaults"]
    before = {name: snapshot(root) for name, root in vaults.items()}

    # No token, or a wrong one: refused at the gate for every tool, nothing read or written.
    alice = tokens["alice"]
    for token in (None, "hzu_" + "x" * 43, alice[:-1] + ("B" if alice.endswith("A") else "A"), alice + "x",
                  "Basic " + alice, ""):
        for tool, args in calls("alice"):
            headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
            if token:
                headers["Authorization"] = token if token.startswith("Basic") else f"Bearer {token}"
            body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": tool, "arguments": args}}
            for payload in (INIT, body):
                reply = httpx2.post(url, json=payload, headers=headers)
                assert reply.status_code == 401, (token, tool, reply.text)
                assert not any(text in reply.text for text in TEXT.values())
    assert {name: snapshot(root) for name, root in vaults.items()} == before

    # A good token: each user, every tool, aimed at their own, the other user's and the team's memory.
    seen = {}
    for user, other in (("alice", "bob"), ("bob", "alice")):
        for target in (user, other, "team"):
            results = anyio.run(call_all, url, tokens[user], user, target)
            seen[(user, target)] = results
            for tool, is_error, text in results:
                assert TEXT[other] not in text, (user, target, tool, text)  # never a word of the other's vault
                if user == "bob":
                    assert TEXT["team"] not in text, (target, tool, text)  # nor of a team vault not granted
    # The other user's memory: every call that names it failed or found nothing.
    for user, other in (("alice", "bob"), ("bob", "alice")):
        for tool, is_error, text in seen[(user, other)]:
            if tool in ("get", "update", "add_aliases", "supersede", "forget", "mark_used", "remember", "get_fact"):
                assert is_error, (user, tool, text)
            assert FACT[other] not in text, (user, tool, text)
    # A fact set about the other's entity lands in the caller's own vault, as a note of their own.
    assert not {tool: err for tool, err, _ in seen[("alice", "bob")]}["set_fact"]
    assert "alice desk" in str(snapshot(vaults["alice"])["files"])
    assert "alice desk" not in str(snapshot(vaults["bob"])) and "bob desk" not in str(snapshot(vaults["alice"]))
    # Own memories work; the team's are read by alice (granted) and by nobody else.
    own = {tool: err for tool, err, _ in seen[("alice", "alice")]}
    assert not own["get"] and not own["recall"] and not own["mark_used"] and not own["add_aliases"]
    assert not own["get_fact"] and not own["set_fact"] and not own["remove_fact"]
    alice_team = {tool: (err, text) for tool, err, text in seen[("alice", "team")]}
    assert not alice_team["get"][0] and "team-rule" in alice_team["recall"][1]
    assert not alice_team["remember"][0]  # granted: a write to the team vault with `to`
    assert alice_team["update"][0] and alice_team["forget"][0]  # a team's memory changes through the team
    bob_team = {tool: (err, text) for tool, err, text in seen[("bob", "team")]}
    assert bob_team["get"][0] and bob_team["remember"][0] and "team-rule" not in bob_team["recall"][1]

    # What was written, and where: each user's own vault; the team vault only by alice's granted remember.
    for user, other in (("alice", "bob"), ("bob", "alice")):
        for path, data in snapshot(vaults[user])["files"].items():
            assert TEXT[other].encode() not in data, (user, path)
        new = len(git_subjects(vaults[user])) - len(before[user]["log"])
        assert new > 0 and actors(vaults[user], new) == {f"{user} via agent"}  # every write there was theirs
    team_new = git_subjects(vaults["team"])[:len(git_subjects(vaults["team"])) - len(before["team"]["log"])]
    assert team_new == ["hafiza: remember a-note-about-the-tapir-pipeline-from-a-test"]
    assert (vaults["team"] / "memories" / "team-rule.md").read_bytes() == before["team"]["files"]["memories/team-rule.md"]
    assert actors(vaults["team"], 1) == {"alice via agent"}


def test_a_session_or_a_name_of_another_user_is_refused(shared):
    url, tokens = shared["url"], shared["tokens"]
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    opened = httpx2.post(url, json=INIT, headers={**headers, "Authorization": f"Bearer {tokens['alice']}"})
    assert opened.status_code == 200
    session = opened.headers["mcp-session-id"]
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "recall", "arguments": {"query": "aardvark pipeline"}}}
    stolen = httpx2.post(url, json=call, headers={**headers, "Authorization": f"Bearer {tokens['bob']}",
                                                  "mcp-session-id": session})
    assert stolen.status_code == 403 and TEXT["alice"] not in stolen.text
    named = httpx2.post(url, json=INIT, headers={**headers, "Authorization": f"Bearer {tokens['bob']}",
                                                 "X-Hafiza-User": "alice"})
    assert named.status_code == 403
    # Revoked: refused from the next request on, by the server already running.
    run_cli("token", "revoke", "alice")
    again = httpx2.post(url, json=INIT, headers={**headers, "Authorization": f"Bearer {tokens['alice']}"})
    assert again.status_code == 401
    assert httpx2.post(url, json=INIT, headers={**headers, "Authorization": f"Bearer {tokens['bob']}"}).status_code == 200


def test_token_commands_say_what_is_wrong(tmp_path):
    for args, message in ((["add", "Bad Name"], "is not a user name"),
                          (["add", "carol", "--team", "nope"], "no team vault named 'nope'"),
                          (["revoke", "nobody"], "no user 'nobody'")):
        out = run_cli("token", *args, check=False)
        assert out.returncode != 0 and message in out.stderr and "Traceback" not in out.stderr, out.stderr
    run_cli("token", "add", "carol")
    out = run_cli("token", "add", "carol", check=False)
    assert out.returncode != 0 and "exists" in out.stderr
    out = run_cli("mcp", "--users", check=False)
    assert out.returncode != 0 and "--http" in out.stderr
