"""Ranking: BM25F x strength (decay) x usefulness x type x status, within scope."""

import datetime as dt
import json
import subprocess

import pytest

from conftest import run_cli
from hafiza.indexer import rank
from hafiza.indexer.index import Index
from hafiza.indexer.recall import Recall
from hafiza.vault.store import usage

TODAY = dt.date.today()  # at collection: every search below is made as of it, so a run across midnight holds
TEXT = "The staging server listens on port 8080 behind nginx."


def decayed(days: float, half_life: float) -> float:
    return max(rank.STRENGTH_FLOOR, 0.5 ** (days / half_life))


def days_ago(n: int) -> str:
    return (TODAY - dt.timedelta(days=n)).isoformat()


def search(vault, query, **options):
    options.setdefault("all_scopes", True)
    options.setdefault("today", TODAY)
    return Recall(vault.root).search(query, mode="keyword", **options)


def by_id(hits):
    return {h.id: h for h in hits}


# ---- the factors themselves

def test_strength_halves_per_half_life_down_to_a_floor():
    assert 0 < rank.STRENGTH_FLOOR < 1
    assert rank.strength(150, TODAY, None, TODAY) == 1.0
    assert rank.strength(150, TODAY - dt.timedelta(days=30), None, TODAY) == pytest.approx(decayed(30, 150))
    assert rank.strength(150, TODAY - dt.timedelta(days=30), None, TODAY) > rank.strength(
        150, TODAY - dt.timedelta(days=60), None, TODAY)
    assert rank.strength(150, TODAY - dt.timedelta(days=3000), None, TODAY) == rank.STRENGTH_FLOOR
    assert rank.strength(None, TODAY - dt.timedelta(days=3000), None, TODAY) == 1.0
    # a use resets the clock
    assert rank.strength(150, TODAY - dt.timedelta(days=900), TODAY, TODAY) == 1.0


def test_usefulness_only_pulls_down_and_only_after_five_impressions():
    assert rank.usefulness(0, 0) == 1.0
    assert rank.usefulness(4, 0) == 1.0
    assert rank.usefulness(5, 0) == rank.USEFULNESS_FLOOR
    assert rank.usefulness(100, 0) == rank.USEFULNESS_FLOOR
    assert rank.usefulness(10, 1) == pytest.approx(0.75)
    assert rank.usefulness(10, 10) == 1.0 and rank.usefulness(3, 30) == 1.0  # never above 1


# ---- decay

def test_a_newer_memory_outranks_an_older_twin(vault):
    vault.import_many([{"id": "staging-2024", "text": TEXT, "created": "2024-01-15"},
                       {"id": "staging-now", "text": TEXT, "created": TODAY.isoformat()}], source="import:test")
    hits = search(vault, "staging port")
    assert [h.id for h in hits] == ["staging-now", "staging-2024"]
    old, new = by_id(hits)["staging-2024"], by_id(hits)["staging-now"]
    assert new.parts["strength"] == 1.0 and old.parts["strength"] == pytest.approx(
        decayed((TODAY - dt.date(2024, 1, 15)).days, 150))
    assert old.parts["strength"] < 1.0
    assert old.parts["bm25"] == new.parts["bm25"]  # the text scores the same; only decay differs


def test_lessons_and_preferences_decay_slower_than_knowledge(vault):
    created = days_ago(60)
    vault.import_many([{"id": kind, "text": TEXT, "type": kind, "created": created}
                       for kind in ("knowledge", "preference", "lesson")], source="import:test")
    parts = {h.id: h.parts["strength"] for h in search(vault, "staging")}
    assert parts["preference"] == parts["lesson"] == pytest.approx(decayed(60, 365))
    assert parts["knowledge"] == pytest.approx(decayed(60, 150))
    assert parts["preference"] > parts["knowledge"]


@pytest.mark.parametrize("kind", ["rule", "identity", "fact"])
def test_rules_identity_and_facts_never_decay(vault, kind):
    vault.import_many([{"id": "old", "text": TEXT, "type": kind, "created": "2019-05-01"},
                       {"id": "new", "text": TEXT, "type": kind, "created": TODAY.isoformat()}], source="import:test")
    hits = by_id(search(vault, "staging port"))
    assert hits["old"].parts["strength"] == hits["new"].parts["strength"] == 1.0
    assert hits["old"].score == hits["new"].score


def test_a_half_life_override_in_the_file_wins(vault):
    vault.import_many([{"id": "a", "text": TEXT, "created": days_ago(100)},
                       {"id": "b", "text": TEXT, "created": days_ago(100)}], source="import:test")
    path = vault.memories_dir / "b.md"
    path.write_text(path.read_text().replace("status: active", "status: active\nhalf_life_days: 1000"))
    hits = search(vault, "staging")
    assert [h.id for h in hits] == ["b", "a"]
    assert by_id(hits)["b"].parts["strength"] == pytest.approx(decayed(100, 1000))
    assert by_id(hits)["a"].parts["strength"] == pytest.approx(decayed(100, 150))


def test_a_use_resets_the_clock(vault):
    vault.import_many([{"id": "old", "text": TEXT, "created": "2024-01-15"},
                       {"id": "new", "text": TEXT, "created": days_ago(10)}], source="import:test")
    assert [h.id for h in search(vault, "staging")] == ["new", "old"]
    run_cli("used", "old")
    hits = search(vault, "staging")
    assert [h.id for h in hits] == ["old", "new"]
    assert hits[0].parts["strength"] == 1.0
    vault.fold()  # the same once the use is in the file
    assert [h.id for h in search(vault, "staging")] == ["old", "new"]
    assert TODAY <= vault.get("old").last_used <= dt.date.today()  # the day of the use (the run may cross midnight)


def test_decay_ordering_through_the_command_line(vault):
    vault.import_many([{"id": "staging-2024", "text": TEXT, "created": "2024-01-15"},
                       {"id": "staging-now", "text": TEXT}], source="import:test")
    hits = json.loads(run_cli("search", "--json", "--explain", "staging port").stdout)
    assert [h["id"] for h in hits] == ["staging-now", "staging-2024"]
    assert hits[1]["parts"]["strength"] < hits[0]["parts"]["strength"]


# ---- usefulness

def twins(vault):
    vault.import_many([{"id": "a", "text": TEXT}, {"id": "b", "text": TEXT}], source="import:test")


def test_four_impressions_without_use_change_nothing(vault):
    twins(vault)
    usage.append(vault.sidecar, "shown", ["a"] * 4)
    hits = by_id(search(vault, "staging"))
    assert hits["a"].parts["usefulness"] == 1.0 and hits["a"].score == hits["b"].score


def test_five_impressions_without_use_pull_a_memory_down(vault):
    twins(vault)
    usage.append(vault.sidecar, "shown", ["a"] * 5)
    hits = search(vault, "staging")
    assert [h.id for h in hits] == ["b", "a"]
    assert hits[1].parts["usefulness"] == rank.USEFULNESS_FLOOR


def test_uses_bring_it_back_but_never_above_an_unshown_twin(vault):
    twins(vault)
    usage.append(vault.sidecar, "shown", ["a"] * 5)
    run_cli("used", "a")
    hits = by_id(search(vault, "staging"))
    assert hits["a"].parts["usefulness"] == 1.0
    usage.append(vault.sidecar, "shown", ["a"] * 5)  # 10 shown, 1 used
    assert by_id(search(vault, "staging"))["a"].parts["usefulness"] == pytest.approx(0.75)
    run_cli("used", "a", "a")  # being used a lot gives no bonus
    assert by_id(search(vault, "staging"))["a"].parts["usefulness"] == 1.0


def test_being_shown_alone_never_raises_a_memory(vault):
    twins(vault)
    usage.append(vault.sidecar, "shown", ["a"] * 3)
    usage.append(vault.sidecar, "used", ["b"])
    hits = by_id(search(vault, "staging"))
    assert hits["a"].score == hits["b"].score


def test_folded_counts_rank_the_same_as_pending_ones(vault):
    twins(vault)
    usage.append(vault.sidecar, "shown", ["a"] * 6)
    before = [(h.id, h.parts["usefulness"]) for h in search(vault, "staging")]
    assert before == [("b", 1.0), ("a", rank.USEFULNESS_FLOOR)]
    vault.fold()
    assert vault.get("a").shown == 6
    assert [(h.id, h.parts["usefulness"]) for h in search(vault, "staging")] == before


# ---- type and field weights

def test_a_lesson_ranks_above_a_knowledge_twin(vault):
    vault.import_many([{"id": "k", "text": TEXT}, {"id": "l", "text": TEXT, "type": "lesson"}], source="import:test")
    assert [h.id for h in search(vault, "staging")] == ["l", "k"]


def test_a_word_in_the_title_outranks_the_same_word_in_the_body(vault):
    vault.import_many([{"id": "in-body", "title": "Server notes", "text": "Notes: the redis cache is on box three."},
                       {"id": "in-title", "title": "Redis notes", "text": "Notes: the server cache is on box three."}],
                      source="import:test")
    assert [h.id for h in search(vault, "redis")] == ["in-title", "in-body"]


# ---- status

def test_superseded_and_archived_are_left_out_unless_asked_for(vault):
    vault.import_many([{"id": "npm", "text": "Install packages with npm install."},
                       {"id": "pnpm", "text": "Install packages with pnpm install.", "supersedes": ["npm"]},
                       {"id": "yarn", "text": "Install packages with yarn install."}], source="import:test")
    vault.forget("yarn")
    assert [h.id for h in search(vault, "install packages")] == ["pnpm"]
    hits = search(vault, "install packages", include_inactive=True)
    assert {h.id: h.status for h in hits} == {"npm": "superseded", "pnpm": "active", "yarn": "archived"}
    assert hits[0].id == "pnpm"  # a stale memory never outranks its successor
    assert by_id(hits)["npm"].superseded_by == "pnpm"


def test_a_memory_superseded_after_it_was_indexed_leaves_search(vault):
    # The index is updated in place: the old version's postings linger (deleted) until a merge.
    vault.remember("Install packages with npm install.", id="npm")
    assert [h.id for h in search(vault, "install packages")] == ["npm"]
    vault.remember("Install packages with pnpm install.", id="pnpm", supersedes=["npm"])
    assert [h.id for h in search(vault, "install packages")] == ["pnpm"]
    assert [h.id for h in search(vault, "install packages", all_scopes=False)] == ["pnpm"]


def test_a_memory_moved_to_another_project_leaves_the_global_scope(vault):
    vault.remember("The linter is ruff.", id="linter")
    assert [h.id for h in search(vault, "linter", all_scopes=False)] == ["linter"]
    path = vault.memories_dir / "linter.md"
    path.write_text(path.read_text().replace("scope: global", "scope: project:shop"))
    Index(vault.root).sync()  # an edit in place is taken in by a full sync (the warm process, doctor, a write)
    assert [h.id for h in search(vault, "linter", all_scopes=False)] == []
    assert [h.id for h in search(vault, "linter", all_scopes=False, project="shop")] == ["linter"]


def test_include_inactive_on_the_command_line(vault):
    vault.import_many([{"id": "npm", "text": "Install packages with npm install."},
                       {"id": "pnpm", "text": "Install packages with pnpm install.", "supersedes": ["npm"]}],
                      source="import:test")
    plain = json.loads(run_cli("search", "--json", "--mode", "keyword", "install packages").stdout)
    assert [h["id"] for h in plain] == ["pnpm"]
    every = json.loads(run_cli("search", "--json", "--mode", "keyword", "--include-inactive", "install packages").stdout)
    assert [(h["id"], h["status"]) for h in every] == [("pnpm", "active"), ("npm", "superseded")]
    text = run_cli("search", "--mode", "keyword", "--include-inactive", "install packages").stdout
    assert "[superseded]" in text


# ---- scope

SCOPED = [{"id": "global-rule", "text": "Run the linter before every commit.", "type": "rule"},
          {"id": "shop-linter", "text": "The shop linter is ruff.", "scope": "project:shop"},
          {"id": "blog-linter", "text": "The blog linter is eslint.", "scope": "project:blog"}]


def test_scope_is_the_project_plus_global(vault):
    vault.import_many(SCOPED, source="import:test")
    assert {h.id for h in search(vault, "linter", all_scopes=False)} == {"global-rule"}
    assert {h.id for h in search(vault, "linter", all_scopes=False, project="shop")} == {"global-rule", "shop-linter"}
    assert {h.id for h in search(vault, "linter", all_scopes=True)} == {"global-rule", "shop-linter", "blog-linter"}


def cli_ids(*args, cwd=None):
    out = run_cli("search", "--json", "--mode", "keyword", *args, cwd=cwd).stdout
    return {h["id"] for h in json.loads(out)}


def test_scope_from_the_command_line(vault, tmp_path):
    vault.import_many(SCOPED, source="import:test")
    assert cli_ids("linter") == {"global-rule"}
    assert cli_ids("linter", "--project", "blog") == {"global-rule", "blog-linter"}
    assert cli_ids("linter", "--all-scopes") == {"global-rule", "shop-linter", "blog-linter"}
    shop = tmp_path / "code" / "shop"
    (shop / "src" / "deep").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(shop)], check=True)
    assert cli_ids("linter", cwd=str(shop / "src" / "deep")) == {"global-rule", "shop-linter"}
    assert cli_ids("linter", "--project", "blog", cwd=str(shop)) == {"global-rule", "blog-linter"}
