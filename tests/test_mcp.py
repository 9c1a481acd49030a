"""The MCP server: real clients (stdio processes, in-process, HTTP) calling every tool."""

import datetime as dt
import json
import os
import shutil
import socket
import subprocess
import sys
import time

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.server.mcpserver.tools import Tool
from mcp_types import Implementation
from pydantic import BaseModel, ValidationError

from conftest import git_subjects, run_cli
from hafiza.hooks.arguments import faults
from hafiza.hooks.mcp import Server, create_server
from hafiza.indexer.recall import Recall
from hafiza.indexer.refresh import refresh_all
from hafiza.vault import episodes
from hafiza.vault.store import usage

TOOLS = {"recall", "remember", "supersede", "forget", "mark_used", "get", "list", "profile", "record_episode",
         "add_aliases", "update", "search_sessions", "set_fact", "remove_fact", "get_fact"}


def stdio(root, name="test-agent"):
    """A client that starts `hafiza mcp` as a real process, as an agent would."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "hafiza.cli.main", "--vault", str(root), "mcp"],
                                   env=dict(os.environ))  # the SDK passes only a few variables by default
    return Client(params, client_info=Implementation(name=name, version="1.0"))


def inproc(root, name="test-agent", project=None):
    return Client(create_server(root, project), client_info=Implementation(name=name, version="1.0"))


async def ok(client, tool, **args) -> dict:
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content[0].text
    return result.structured_content


async def error(client, tool, **args) -> str:
    result = await client.call_tool(tool, args)
    assert result.is_error, result.structured_content
    return result.content[0].text


def memory_files(root) -> list[str]:
    return sorted(p.name for p in (root / "memories").glob("*.md"))


def fake_github_token() -> str:
    return "gh" + "p_" + "Zq7Lm2Xc9Vb4Nk1Rt6Yw3Ps8Dh5Gf0Ja2Ue7"  # assembled at run time; not a real token


# ---- over stdio, the way agents connect

def test_every_tool_over_stdio(vault):
    async def main():
        async with stdio(vault.root) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools) == TOOLS
            assert all(t.output_schema and len(t.description) > 80 for t in tools.values())
            assert "supersedes" in tools["remember"].description and "secret" in tools["remember"].description

            rule = await ok(client, "remember", text="Deploy billing only from main, after CI is green.",
                            title="Deploy billing only from main", type="rule", tags=["deploy"],
                            aliases=["canlıya çıkış kuralı"])
            note = await ok(client, "remember", text="The billing service talks to Postgres through pgbouncer.")
            assert not rule["warnings"] and "add_aliases" in note["warnings"][-1]  # asked for phrases, both languages
            assert "Turkish and in English" in note["warnings"][-1]
            bare = await ok(client, "list", without_aliases=True)
            assert [m["id"] for m in bare["memories"]] == [note["id"]]
            added = await ok(client, "add_aliases", id=note["id"], aliases=["bağlantı havuzu", "connection pool"])
            assert added["added"] == added["aliases"] == ["bağlantı havuzu", "connection pool"]
            again = await ok(client, "add_aliases", id=note["id"], aliases=["Connection  Pool"])
            assert again["added"] == [] and len(again["aliases"]) == 2  # no second commit
            assert (await ok(client, "list", without_aliases=True))["total"] == 0
            assert "at most 100" in await error(client, "add_aliases", id=note["id"], aliases=["x" * 101])
            assert "no memory" in (await error(client, "add_aliases", id="nope", aliases=["x"])).lower()
            assert (await ok(client, "recall", query="bağlantı havuzu ayarı"))["hits"][0]["id"] == note["id"]
            assert (await ok(client, "recall", query="canlıya çıkış kuralı"))["hits"][0]["id"] == rule["id"]
            hits = (await ok(client, "recall", query="deploy billing main"))["hits"]
            assert hits[0]["id"] == rule["id"]
            assert set(hits[0]) >= {"id", "title", "type", "status", "labels", "snippet", "score"}
            assert hits[0]["labels"] == ["rule"] and hits[0]["tags"] == ["deploy"]

            full = await ok(client, "get", id=rule["id"])
            assert full["text"].startswith("Deploy billing") and full["shown"] == 2  # recalls are impressions
            assert full["aliases"] == ["canlıya çıkış kuralı"]
            listed = await ok(client, "list", type="rule")
            assert [m["id"] for m in listed["memories"]] == [rule["id"]] and listed["total"] == 1
            profile = await ok(client, "profile")
            assert "Deploy billing only from main" in profile["text"]
            assert (await ok(client, "mark_used", ids=[rule["id"]]))["recorded"] == [rule["id"]]

            newer = await ok(client, "remember", text="Billing reaches Postgres directly since the 2026 move.")
            old = await ok(client, "supersede", old_id=note["id"], new_id=newer["id"], reason="pgbouncer removed")
            assert old["status"] == "superseded" and old["superseded_by"] == newer["id"]
            gone = await ok(client, "forget", id=newer["id"], reason="not true either")
            assert gone["status"] == "archived"
            assert (await ok(client, "list", status="archived"))["memories"][0]["id"] == newer["id"]
            episode = await ok(client, "record_episode", task="Fix the billing deploy", outcome="success",
                               what_happened="Pinned the runner image; CI went green.")
            assert episode["lesson"] is None and episode["file"].startswith("episodes/")

    anyio.run(main)
    log = vault.git.log(20)
    assert {c.trailers.get("Hafiza-Actor") for c in log if c.action != "init"} == {"test-agent"}
    assert [c.action for c in log][:6] == ["episode", "forget", "supersede", "remember", "alias", "remember"]


def test_a_tool_takes_whole_ids_only_and_names_the_ids_near_one_it_does_not_know(vault):
    """The command line takes the start of an id; a tool does not (an agent copies ids from recall, and a
    start that is one id's today may be two tomorrow), but its error names the ids meant, to call again."""
    async def main():
        async with inproc(vault.root) as client:
            deploy = await ok(client, "remember", text="Production deploys use blue-green on Fridays")
            await ok(client, "remember", text="Production deploys need a change ticket")
            hint = ("did you mean: production-deploys-need-a-change-ticket, "
                    "production-deploys-use-blue-green-on-fridays?")
            assert (await error(client, "get", id="production-deploys")).endswith(hint)
            assert (await error(client, "forget", id="production-deploys", reason="x")).endswith(hint)
            assert (await error(client, "mark_used", ids=["production-deploys"])).endswith(hint)
            one = await error(client, "get", id="production-deploys-use")  # the start of only one: still refused
            assert f"did you mean: {deploy['id']}" in one  # the one it starts first
            superseding = await error(client, "remember", text="Deploys are blue-green every day",
                                      supersedes=["production-deploys-use-blue-green-on-friday"])
            assert f"did you mean: {deploy['id']}" in superseding

    before = git_subjects(vault.root)
    anyio.run(main)
    assert git_subjects(vault.root)[0] == "hafiza: remember production-deploys-need-a-change-ticket"
    assert len(git_subjects(vault.root)) == len(before) + 2


def test_a_new_vault_served_over_stdio_says_nothing_of_vectors(vault, tmp_path):
    """The server's stderr is the agent's log: a vault with no memories has no vectors, and nothing to warn of."""
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable, env=dict(os.environ),
                                   args=["-m", "hafiza.cli.main", "--vault", str(vault.root), "mcp"])

    async def main(log):
        async with Client(stdio_client(params, errlog=log), client_info=Implementation(name="t", version="1")) as client:
            assert (await ok(client, "recall", query="deploy to production"))["hits"] == []

    with open(tmp_path / "stderr", "w") as log:
        anyio.run(main, log)
    assert (tmp_path / "stderr").read_text() == ""


def test_supersede_at_write_round_trip_over_stdio(vault):
    async def main():
        async with stdio(vault.root) as client:
            old = await ok(client, "remember", text="Ege Lojistik is based in İzmir.", type="fact", tags=["client"])
            assert [h["id"] for h in (await ok(client, "recall", query="Ege Lojistik city"))["hits"]] == [old["id"]]
            new = await ok(client, "remember", text="Ege Lojistik moved to Ankara in 2026.", type="fact",
                           tags=["client"], supersedes=[old["id"]])
            assert new["supersedes"] == [old["id"]]
            ids = [h["id"] for h in (await ok(client, "recall", query="Ege Lojistik city"))["hits"]]
            assert ids == [new["id"]]  # the old value is history, not recall
            kept = await ok(client, "get", id=old["id"])
            assert kept["status"] == "superseded" and kept["superseded_by"] == new["id"]
            return old["id"], new["id"]

    old_id, new_id = anyio.run(main)
    subjects = git_subjects(vault.root)
    assert subjects[0] == f"hafiza: remember {new_id} (supersedes {old_id})"
    assert sum(old_id in s for s in subjects) == 2  # written once, superseded once: no separate step
    changed = vault.git.changed_paths(vault.git.head())
    assert sorted(changed) == sorted([f"memories/{old_id}.md", f"memories/{new_id}.md"])


def test_a_secret_is_refused_and_nothing_is_written_over_stdio(vault):
    token = fake_github_token()
    aws = "AKIA" + "QX7RTV2MNB4LKP9Z"

    async def main():
        async with stdio(vault.root) as client:
            text = await error(client, "remember", text=f"The deploy bot uses {token} for pushes.")
            assert "'text'" in text and "GitHub token" in text
            text = await error(client, "record_episode", task="Rotate keys", outcome="partial",
                               what_happened=f"Found {aws} in the old config.")
            assert "'what_happened'" in text and "AWS" in text
            text = await error(client, "record_episode", task="Rotate keys", outcome="partial",
                               what_happened="Rotated the deploy key.", lesson=f"Never paste {token} in chat.")
            assert "'lesson'" in text

    before = git_subjects(vault.root)
    anyio.run(main)
    assert git_subjects(vault.root) == before
    assert memory_files(vault.root) == [] and not (vault.root / "episodes").exists()
    assert subprocess.run(["git", "-C", str(vault.root), "status", "--porcelain"], capture_output=True,
                          text=True).stdout == ""


# Arguments a tool's schema refuses: (tool, arguments, where the error points, what it says there).
REFUSED = [
    ("remember", {}, "text", "required, not given"),
    ("remember", {"text": "A note.", "tags": "deploy, ci"}, "tags", 'expected a list, got "deploy, ci"'),
    ("remember", {"text": "A note.", "type": "opinion"}, "type", "expected one of 'identity', 'rule'"),
    ("remember", {"text": "A note.", "title": "T" * 5000}, "title",
     'expected at most 300 characters, got "' + "T" * 39 + "… (5,000 characters)"),  # cut short
    ("remember", {"text": "A note.", "claims": [{"probe": "disk", "args": {}}]}, "claims[0].probe",
     "expected one of 'path', 'contains'"),
    ("recall", {"query": "deploy", "limit": 500}, "limit", "expected at most 20, got 500"),
    ("list", {"limit": "many"}, "limit", 'expected an integer, got "many"'),
    ("mark_used", {"ids": list(range(50))}, "ids[0]", "expected a string, got 0 (and 49 more in 'ids')"),
    ("record_episode", {"task": "t", "outcome": "meh", "what_happened": "w"}, "outcome", 'got "meh"'),
    ("set_fact", {"entity": "Acme", "attribute": "city", "value": None}, "value", "expected a string, got null"),
]


def told_like_hafiza(text: str, tool: str, field: str, said: str) -> None:
    """`text` is a refused argument told as hafiza tells its own errors: one short line naming it."""
    assert text.startswith(f"Error executing tool {tool}: error in field '{field}': "), text
    assert said in text and len(text) < 200 and "\n" not in text, text
    assert not any(word in text for word in ("pydantic", "errors.pydantic.dev", "Arguments")), text


def test_bad_arguments_read_like_hafizas_own_errors(vault):
    """The SDK's report of arguments that fail a tool's schema (pydantic's, ~250 characters an error, with
    `rememberArguments` and links to pydantic's docs) reaches the agent as one line per argument, in the form
    of hafiza's own errors; nothing is written, and a good call still works."""
    vault.remember("A memory that stays.", id="kept")
    before = git_subjects(vault.root)

    async def main():
        async with stdio(vault.root) as client:
            own = await error(client, "remember", text="A note.", to="nowhere")  # a HafizaError, for the form
            assert own.startswith("Error executing tool remember: error in field 'to': no vault named 'nowhere'")
            for tool, args, field, said in REFUSED:
                told_like_hafiza(await error(client, tool, **args), tool, field, said)
            both = await error(client, "set_fact", entity="Acme")
            assert both.splitlines() == [
                "Error executing tool set_fact: error in field 'attribute': required, not given",
                "error in field 'value': required, not given"]
            assert "Unknown tool" in await error(client, "no_such_tool")  # other tool errors are the SDK's
            return await ok(client, "remember", text="A good call after the bad ones.", tags=["deploy"])

    made = anyio.run(main)
    assert git_subjects(vault.root) == [f"hafiza: remember {made['id']}", *before]


def test_an_error_type_not_listed_is_told_in_pydantic_s_own_line():
    class Arguments(BaseModel):
        since: dt.date

    with pytest.raises(ValidationError) as refused:
        Arguments(since="soon")
    assert faults(refused.value.errors()) == [("since", 'should be a valid date or datetime, input is too short, '
                                                        'got "soon"')]


# Arguments a tool does not have: (tool, arguments, the one named, what it says there).
UNKNOWN = [
    ("remember", {"text": "A note.", "tag": ["deploy"]}, "tag",
     "not an argument of remember; did you mean 'tags'? (arguments: text, title, type, tags, aliases, scope, "
     "supersedes, claims, to)"),
    ("remember", {"text": "A note.", "supersede": ["kept"]}, "supersede", "did you mean 'supersedes'?"),
    ("recall", {"query": "deploy", "max_results": 3}, "max_results",
     "not an argument of recall (arguments: query, limit, scope)"),  # nothing near: no guess
    ("mark_used", {"id": "kept"}, "id", "did you mean 'ids'?"),
    ("profile", {"project": "billing"}, "project", "not an argument of profile (it takes none)"),
    ("get", {"id": "kept", "ctx": {}}, "ctx", "(arguments: id)"),  # the SDK's own parameter is none of the agent's
    ("list", {"k" * 5000: 1}, "k" * 39 + "…", "not an argument of list"),  # a name is cut short too
]


def test_an_argument_the_tool_does_not_have_is_refused_and_nothing_is_written(vault):
    """The SDK drops an argument a tool does not have without a word, so `tag` for `tags` saved the memory
    without its tags. Every tool refuses it before anything runs, in the form of the other argument errors,
    with the nearest name it has (a call with a fault of the schema's too is refused for the unknown one)."""
    vault.remember("A memory that stays.", id="kept")
    before, files = git_subjects(vault.root), memory_files(vault.root)

    async def main():
        async with stdio(vault.root) as client:
            for tool, args, field, said in UNKNOWN:
                told_like_hafiza(await error(client, tool, **args), tool, field, said)
            two = await error(client, "recall", query="deploy", Limit=3, scop="all")
            names = "(arguments: query, limit, scope)"
            assert two.splitlines() == [
                f"Error executing tool recall: error in field 'Limit': not an argument of recall; did you mean "
                f"'limit'? {names}",
                f"error in field 'scop': not an argument of recall; did you mean 'scope'? {names}"]
            assert "'tga'" in await error(client, "remember", text="   ", tga=["x"])  # before hafiza's own check
            assert "'tga'" in await error(client, "remember", tga=["x"])  # and before the schema's

    anyio.run(main)
    assert git_subjects(vault.root) == before and memory_files(vault.root) == files
    assert usage.pending(vault.sidecar) == {}  # mark_used with `id` recorded nothing either


def test_a_tool_that_takes_any_keys_is_not_refused_and_a_tool_added_later_is_known():
    """The names come from each tool's published input schema; one that allows other keys
    (`additionalProperties`, none of hafiza's own) is not held to its listed names."""
    def echo(text: str) -> str:
        return text

    def shout(text: str) -> str:
        return text.upper()

    tool = Tool.from_function(echo, name="open")
    hand_built = tool.model_copy(update={"parameters": {**tool.parameters, "additionalProperties": True}})
    server = Server("test", tools=[hand_built])
    server.add_tool(echo)

    async def main():
        async with Client(server) as client:
            assert "'txt'" in await error(client, "echo", txt="hi")
            assert not (await client.call_tool("open", {"text": "hi", "txt": "hi"})).is_error
            server.add_tool(shout)  # read again: its arguments are known on its first call
            assert not (await client.call_tool("shout", {"text": "hi"})).is_error
            assert "did you mean 'text'?" in await error(client, "shout", texts="hi")

    anyio.run(main)


def test_two_agents_writing_at_the_same_time_both_land(vault):
    async def remember(client, text):
        await ok(client, "remember", text=text)

    async def main():
        async with stdio(vault.root, "claude-code") as a, stdio(vault.root, "codex") as b:
            async with anyio.create_task_group() as tg:
                for i in range(3):
                    tg.start_soon(remember, a, f"Claude learned fact number {i} about the gateway.")
                    tg.start_soon(remember, b, f"Codex learned fact number {i} about the gateway.")
            # What one agent learned, the other recalls.
            hits = (await ok(b, "recall", query="Claude learned fact gateway", limit=10))["hits"]
            assert sum(h["title"].startswith("Claude learned") for h in hits) == 3

    anyio.run(main)
    assert len(memory_files(vault.root)) == 6
    actors = [c.trailers["Hafiza-Actor"] for c in vault.git.log(20) if c.action == "remember"]
    assert sorted(actors) == ["claude-code"] * 3 + ["codex"] * 3
    assert subprocess.run(["git", "-C", str(vault.root), "status", "--porcelain"], capture_output=True,
                          text=True).stdout == ""


def test_episode_and_its_lesson_land_in_one_commit_over_stdio(vault):
    async def main():
        async with stdio(vault.root) as client:
            first = await ok(client, "record_episode", task="Upgrade the scheduler", outcome="failure",
                             what_happened="The new cron parser rejected our 6-field expressions.",
                             lesson="Check cron expressions with the new parser before upgrading the scheduler.")
            second = await ok(client, "record_episode", task="Retry the upgrade", outcome="success",
                              what_happened="Converted the expressions first; the upgrade went through.")
            hits = (await ok(client, "recall", query="cron parser scheduler upgrade"))["hits"]
            return first, second, hits

    first, second, hits = anyio.run(main)
    lesson = first["lesson"]
    assert lesson["type"] == "lesson" and hits[0]["id"] == lesson["id"]
    lines = episodes.read(vault.root)
    assert [e["id"] for e in lines] == [first["id"], second["id"]]
    assert lines[0]["lesson_id"] == lesson["id"] and "lesson_id" not in lines[1]
    assert lines[0]["actor"] == "test-agent" and lines[0]["outcome"] == "failure"
    assert vault.get(lesson["id"]).source == f"episode:{first['id']}"
    episode_commit = vault.git.log(3)[1]
    assert sorted(vault.git.changed_paths(episode_commit.sha)) == sorted([first["file"], lesson["path"]])


def test_stdout_carries_nothing_but_protocol(vault):
    vault.remember("Use WAL mode for the SQLite cache.", title="SQLite WAL")
    refresh_all(vault.root)
    shutil.rmtree(vault.sidecar / "index")  # rebuilding it prints a notice, which must go to stderr
    proc = subprocess.Popen([sys.executable, "-m", "hafiza.cli.main", "--vault", str(vault.root), "mcp"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def ask(message: dict) -> dict | None:
        proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()
        return json.loads(proc.stdout.readline()) if "id" in message else None

    try:
        ask({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
        ask({"jsonrpc": "2.0", "method": "notifications/initialized"})
        reply = ask({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                     "params": {"name": "recall", "arguments": {"query": "sqlite wal"}}})
        assert reply["result"]["structuredContent"]["hits"][0]["id"] == "sqlite-wal"
    finally:
        proc.stdin.close()
        rest, err = proc.stdout.read(), proc.stderr.read()
        proc.wait(timeout=10)
    assert rest == "" and "rebuilding" in err


# ---- in-process

BAD_INPUT = [
    ("remember", {"text": "   "}, "text"),
    ("remember", {"text": "A note.", "type": "opinion"}, "type"),
    ("remember", {"text": "A note.", "scope": "project:no spaces"}, "scope"),
    ("remember", {"text": "A note.", "scope": "all"}, "scope"),
    ("remember", {"text": "A note.", "supersedes": ["no-such-memory"]}, "supersedes"),
    ("supersede", {"old_id": "no-such-memory", "new_id": "kept", "reason": "r"}, "old_id"),
    ("supersede", {"old_id": "kept", "new_id": "no-such-memory", "reason": "r"}, "new_id"),
    ("forget", {"id": "no-such-memory", "reason": "r"}, "id"),
    ("get", {"id": "no-such-memory"}, "id"),
    ("mark_used", {"ids": ["no-such-memory", "nor-this-one"]}, "ids"),
    ("mark_used", {"ids": []}, "ids"),
    ("recall", {"query": " "}, "query"),
    ("recall", {"query": "x", "limit": 0}, "limit"),
    ("list", {"type": "opinion"}, "type"),
    ("record_episode", {"task": "t", "outcome": "meh", "what_happened": "w"}, "outcome"),
    ("record_episode", {"task": "", "outcome": "success", "what_happened": "w"}, "task"),
]


def test_bad_input_is_a_tool_error_naming_the_field_and_nothing_is_written(vault):
    vault.remember("A memory that stays.", id="kept")
    before, files = git_subjects(vault.root), memory_files(vault.root)

    async def main():
        async with inproc(vault.root) as client:
            for tool, args, field in BAD_INPUT:
                text = await error(client, tool, **args)
                assert field in text, (tool, args, text)

    anyio.run(main)
    assert git_subjects(vault.root) == before and memory_files(vault.root) == files
    assert usage.pending(vault.sidecar) == {}  # not even a use was logged


def test_a_query_of_a_few_words_is_a_search_and_a_sentence_is_held_to_the_hooks_floor(vault):
    # "deploy" is in every one of these memories: one word found in many is less evidence than the hooks' floor
    # asks of a prompt, and the agent that asked for the subject got nothing (a new user's trial, issue 34).
    for n, where in enumerate(("billing", "search", "gateway", "reports", "mobile")):
        vault.remember(f"Deploy {where} from main only; the {where} pipeline runs the smoke tests first.",
                       id=f"deploy-{where}", title=f"Deploy {where}")
    vault.remember("Flaky e2e tests are usually the seed data; re-run `make seed` and they are fixed.", id="flaky")

    async def main():
        async with inproc(vault.root) as client:
            found = [h["id"] for h in (await ok(client, "recall", query="deploy"))["hits"]]
            assert len(found) == 5 and all(i.startswith("deploy-") for i in found)
            assert (await ok(client, "recall", query="deploy billing"))["hits"][0]["id"] == "deploy-billing"
            assert (await ok(client, "recall", query="thanks, that fixed it"))["hits"] == []
            assert (await ok(client, "recall", query="ok, I will deploy it later"))["hits"] == []

    anyio.run(main)


def test_mark_used_records_the_known_ids_and_names_an_unknown_one_as_hafiza_used_does(vault):
    """One misspelt id of three failed the whole call, and the agent's two real uses were lost."""
    vault.remember("Deploy billing only from main.", id="deploy-billing-from-main")
    vault.remember("Run the gateway load test with k6.", id="gateway-k6")
    before = git_subjects(vault.root)
    asked = ["gateway-k6", "deploy-biling-from-main", "deploy-billing-from-main"]
    told = "no memory with id 'deploy-biling-from-main'; did you mean: deploy-billing-from-main?"

    async def main():
        async with inproc(vault.root) as client:
            return await ok(client, "mark_used", ids=asked)

    done = anyio.run(main)
    assert done == {"recorded": ["gateway-k6", "deploy-billing-from-main"], "unknown": [
        {"id": "deploy-biling-from-main", "error": told, "near": ["deploy-billing-from-main"]}]}
    assert {i: c.used for i, c in usage.pending(vault.sidecar).items()} == {"gateway-k6": 1, "deploy-billing-from-main": 1}
    cli = run_cli("used", *asked, "--json", check=False)  # the command line: the same answer, and exit 3
    assert cli.returncode == 3 and cli.stderr == f"Error: {told}\n"
    assert {k: v for k, v in json.loads(cli.stdout).items() if k != "vaults"} == done
    text = run_cli("used", *asked, check=False)
    assert (text.returncode, text.stdout, text.stderr) == (3, "recorded use of 2 memories\n", f"Error: {told}\n")
    assert {i: c.used for i, c in usage.pending(vault.sidecar).items()} == {"gateway-k6": 3, "deploy-billing-from-main": 3}
    assert git_subjects(vault.root) == before  # logged, as every use is; the next fold commits the counts


def test_mark_used_raises_usefulness(vault):
    memory = vault.remember("Run the gateway load test with k6 before each release.", title="Gateway k6 load test")
    usage.append(vault.sidecar, "shown", [memory.id] * 5)  # enough impressions for usefulness to count
    recall = Recall(vault.root)

    def top():
        return recall.search("gateway k6 load test", all_scopes=True)[0]

    before = top()
    assert before.parts["usefulness"] == 0.5  # shown five times, never used

    async def main():
        async with inproc(vault.root) as client:
            await ok(client, "mark_used", ids=[memory.id])

    anyio.run(main)
    after = top()
    assert after.parts["usefulness"] == 1.0
    assert after.score == pytest.approx(2 * before.score)


def test_recall_is_silent_when_nothing_is_relevant_and_respects_scope(vault):
    vault.remember("Deploy billing only from main.", title="Billing deploys from main", type="rule")
    vault.remember("Mobile releases go out on Thursdays.", title="Mobile release day", scope="project:mobil-app")

    async def main():
        async with inproc(vault.root, project="billing-api") as client:
            assert (await ok(client, "recall", query="ok, go ahead and do it"))["hits"] == []
            assert (await ok(client, "recall", query="favourite pizza topping"))["hits"] == []
            # another project's memory stays out; the billing deploy rule may come (a release is a deploy: the lexicon)
            hits = (await ok(client, "recall", query="mobile release day"))["hits"]
            assert "mobile-release-day" not in [h["id"] for h in hits]
            for scope in ("mobil-app", "project:mobil-app", "all"):
                hits = (await ok(client, "recall", query="mobile release day", scope=scope))["hits"]
                assert [h["id"] for h in hits] == ["mobile-release-day"], scope
            scoped = await ok(client, "remember", text="Billing uses pnpm.", scope="project")
            assert scoped["scope"] == "project:billing-api"
            assert (await ok(client, "list", scope="mobil-app"))["total"] == 1
            assert (await ok(client, "list", scope="all"))["total"] == 3

    anyio.run(main)


def test_actor_falls_back_to_mcp(vault):
    async def main():
        async with Client(create_server(vault.root)) as client:  # the SDK's default clientInfo is "mcp"
            await ok(client, "remember", text="A note from an anonymous client.")
        async with inproc(vault.root, name="evil\nHafiza-Action: undo") as client:
            await ok(client, "remember", text="A note from a client with a forged name.")

    anyio.run(main)
    assert [c.trailers["Hafiza-Actor"] for c in vault.git.log(2)] == ["evil", "mcp"]


# ---- streamable HTTP on loopback

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(proc, port: int, log_path, seconds: float = 20) -> None:
    """Wait until the server process `proc` accepts connections on `port` (its log says why if it died)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            assert proc.poll() is None and time.monotonic() < deadline, log_path.read_text()
            time.sleep(0.1)


def test_http_on_loopback(vault, tmp_path):
    port = free_port()
    log = open(tmp_path / "http.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "hafiza.cli.main", "--vault", str(vault.root), "mcp",
                             "--http", f"127.0.0.1:{port}"], stdout=log, stderr=subprocess.STDOUT)
    try:
        listening(proc, port, tmp_path / "http.log")

        async def main():
            async with Client(f"http://127.0.0.1:{port}/mcp", client_info=Implementation(name="http-agent",
                                                                                          version="1")) as client:
                made = await ok(client, "remember", text="HTTP clients share the same vault.", type="knowledge")
                hits = (await ok(client, "recall", query="HTTP clients vault"))["hits"]
                assert hits[0]["id"] == made["id"]

        anyio.run(main)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()
    assert vault.git.log(1)[0].trailers["Hafiza-Actor"] == "http-agent"


@pytest.mark.parametrize("address", ["0.0.0.0:8765", "192.168.1.10:8765", "example.com:80", "127.0.0.1:http"])
def test_http_refuses_anything_but_loopback(vault, address):
    proc = run_cli("--vault", str(vault.root), "mcp", "--http", address, check=False)
    assert proc.returncode != 0 and proc.stdout == ""
    assert ("loopback" in proc.stderr and "TLS proxy" in proc.stderr) or "HOST:PORT" in proc.stderr
