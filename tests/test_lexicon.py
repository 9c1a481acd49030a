"""The developer lexicon: another wording of the same thing, in either language, meets a memory (issue 34)."""

import hashlib

import pytest

from conftest import recall_among_fillers
from hafiza.indexer import lexicon, schema
from hafiza.indexer.recall import FLOOR, Floor, Recall, relevant
from hafiza.indexer.text import terms


def test_the_indexed_lexicon_is_the_one_the_schema_version_names():
    # Editing the lexicon changes what every memory is indexed with: the schema version must change with it.
    digest = hashlib.sha256(lexicon.DATA.read_bytes()).hexdigest()[:16]
    assert digest == schema.LEXICON_DIGEST, "data/lexicon.tsv changed: bump SCHEMA_VERSION and LEXICON_DIGEST"


@pytest.mark.parametrize("text, concept", [
    ("staging veritabanını kim yönetiyor", "database"),   # a Turkish ending on a long word
    ("yetkisi yok", "access"),
    ("canlıya çıkış ne zaman", "deploy"),                 # a phrase
    ("CANLIYA ÇIKIŞ", "deploy"),                          # folded
    ("hatalar nerede", "bug"),                            # an ending on a short word
])
def test_words_name_their_concepts_whatever_their_ending(text, concept):
    assert concept in lexicon.lexicon().concepts(terms(text))


def test_a_short_word_meets_only_its_endings_and_a_lone_stop_word_no_concept():
    found = lexicon.lexicon().concepts
    assert "log" in found(terms("loglarda")) and "log" not in found(terms("login"))
    assert "new" not in found(terms("new"))  # "new" is a stop word: a group of it alone names nothing


def test_a_tab_separated_group_is_one_concept_named_by_its_first_word():
    small = lexicon.Lexicon("# comment\nrollout\tyayına alma\tcanlıya çıkmak\n")
    assert small.concepts(terms("yayına almadan önce")) == {"rollout": ("yayina", "almadan")}
    assert small.concepts(terms("canlıya çıkmak")) == {"rollout": ("canliya", "cikmak")}
    assert small.concepts(terms("alma yayına")) == {}


@pytest.fixture
def lexical(vault):
    return recall_among_fillers(vault, [
        {"id": "window", "title": "Yayın penceresi", "type": "rule",
         "text": "Canlıya çıkış yalnızca salı ve perşembe 10:00-16:00 arası yapılır."},
        {"id": "pg", "title": "Veritabanı sürümü", "text": "Ana veritabanı PostgreSQL 16 üzerinde çalışır."},
    ])


def test_an_english_prompt_meets_a_turkish_memory_through_the_lexicon(lexical):
    hits = lexical.search("when can we deploy to production", mode="keyword", all_scopes=True)
    assert [h.id for h in hits][:1] == ["window"] and hits[0].parts["concept"] > 0
    assert [h.id for h in lexical.search("which database version", mode="keyword", all_scopes=True)][:1] == ["pg"]


def test_the_floor_counts_concept_evidence_in_full_only_with_the_meaning_channels_support():
    parts = {"keyword_rank": 1, "idf": 2.0, "concept": 2.0, "background": 0.0}
    assert not relevant({**parts, "margin": FLOOR.concept_near - 0.05}, "hybrid", FLOOR)
    assert relevant({**parts, "margin": FLOOR.concept_near + 0.01}, "hybrid", FLOOR)
    assert relevant({**parts, "margin": -1.0}, "hybrid", Floor(concept=1.0))


def test_remember_suggests_the_vaults_other_words_for_what_a_memory_names_and_writes_none(vault):
    from conftest import run_cli

    vault.import_many([
        {"id": "tags", "title": "Deploy from tags", "text": "Every deploy to production is made from a git tag."},
        {"id": "db", "title": "Database host", "text": "The database runs on pg-main-01."},
    ], source="test")
    out = run_cli("remember", "Canlıya çıkış yalnızca salı günleri yapılır.", "--title", "Yayın günü",
                  "--id", "window", "--suggest-aliases").stdout
    lines = out.splitlines()
    assert lines[0] == "remembered window"
    assert "deploy" in lines[1] and "production" in lines[1] and "database" not in out
    assert lines[2].strip().startswith("add the ones someone would type: hafiza alias window ")
    assert vault.get("window").aliases == []  # shown, never written
    # Not on a terminal and not asked for: the one line a script reads.
    assert run_cli("remember", "Veritabanı yedeği her gece alınır.", "--id", "backup").stdout == "remembered backup\n"


def test_the_lexicon_is_kept_parsed_in_the_sidecar_and_read_back_the_same(tmp_path):
    # Parsing 1,500 groups costs a cold hook ~70 ms a prompt; a process leaves them parsed in .hafiza/ and the
    # next reads that (issue 34, round three). A damaged or missing file is parsed again; no folder, no file.
    whole = lexicon.Lexicon(lexicon.DATA.read_text(encoding="utf-8"))
    sidecar = tmp_path / ".hafiza"
    sidecar.mkdir()
    saved = lexicon._LOADED
    try:
        lexicon._LOADED = None  # a fresh process
        assert lexicon.lexicon(sidecar).entries == whole.entries
        kept = list(sidecar.glob("lexicon-*.marshal"))
        assert len(kept) == 1
        lexicon._LOADED = None
        read = lexicon.lexicon(sidecar)
        assert {word: read.entries.get(word) for word in read.entries} == whole.entries and read is not whole
        words = terms("canlıya çıkışlarda staging veritabanını kim yönetiyor")
        assert read.concepts(words) == whole.concepts(words) != {}
        import marshal

        packed = marshal.loads(kept[0].read_bytes())
        packed["staging"] = b"\x00damaged"  # one word's entries damaged: that word names nothing, no exception
        kept[0].write_bytes(marshal.dumps(packed))
        lexicon._LOADED = None
        assert lexicon.lexicon(sidecar).concepts(terms("staging ortamı")) == whole.concepts(["ortami"])
        kept[0].write_bytes(b"\x00damaged")
        lexicon._LOADED = None
        assert lexicon.lexicon(sidecar).entries == whole.entries  # parsed again, and kept again
        lexicon._LOADED = None
        assert lexicon.lexicon(sidecar).concepts(words) == whole.concepts(words)
        lexicon._LOADED = None
        assert lexicon.lexicon(tmp_path / "no-vault" / ".hafiza").entries == whole.entries
        assert not (tmp_path / "no-vault").exists()
    finally:
        lexicon._LOADED = saved


def test_only_the_rarest_concepts_of_a_prompt_are_searched(vault):
    from hafiza.indexer.recall import MAX_CONCEPTS

    rare = [("pg", "Veritabanı ana makinesi pg-main-01."), ("perm", "Yetki talepleri Murat'a gider."),
            ("logs", "Loglar Loki'de tutulur."), ("cache", "Önbellek olarak Redis kullanılır.")]
    common = [(f"release-{n}", f"Sürüm {n} yayına alma notu.") for n in range(3)]  # the concept "deploy", thrice
    vault.import_many([{"id": i, "title": i, "text": t} for i, t in rare + common], source="test")
    recall = Recall(vault.root)
    asked = "database permission log cache deployment"  # five concepts, in words no memory holds
    found = {h.id for h in recall.search(asked, mode="keyword", all_scopes=True)}
    assert MAX_CONCEPTS == 4 and found == {i for i, _ in rare}
    assert {h.id for h in recall.search("deployment", mode="keyword", all_scopes=True)} == {i for i, _ in common}


def test_a_phrase_left_as_one_general_word_names_nothing():
    # "a/b test" read as its words is "test", ".net" is "net", "--fix" is "fix": as entries they would make every
    # test, net price and fix an A/B test, a .NET and a linter's fix (issue 34, round three: the 1,224 groups added)
    found = lexicon.Lexicon("abtest\ta/b test\tsplit test\nc#\t.net\tdotnet\nautofix\t--fix\tlint fix")
    assert found.concepts(["unit", "test"]) == {} and found.concepts(["net", "price"]) == {}
    assert found.concepts(["fix"]) == {}
    assert found.concepts(["split", "test"]) == {"abtest": ("split", "test")}
    assert found.concepts(["dotnet"]) == {"c": ("dotnet",)} and found.concepts(["lint", "fix"]) == {"autofix": ("lint", "fix")}
