"""The memory file format: one parse boundary that normalises YAML, validates ours, keeps the user's."""

import datetime as dt
from pathlib import Path

import pytest

from hafiza.vault.format import model
from hafiza.vault.errors import FrontmatterError, HafizaError
from hafiza.vault.format.ids import is_valid_id, slugify, transliterate, unique_id


def doc(header: str, body: str = "Body text.") -> str:
    return f"---\n{header.strip()}\n---\n{body}\n"


# ---- YAML types normalised

def test_dates_become_dates_whatever_yaml_made_of_them():
    memory = model.parse(doc("""
id: a
created: 2025-10-24
updated: "2025-11-02"
last_used: 2025-11-03 14:05:00
"""))
    assert memory.created == dt.date(2025, 10, 24)
    assert memory.updated == dt.date(2025, 11, 2)
    assert memory.last_used == dt.date(2025, 11, 3)


def test_yes_is_refused_where_a_number_is_expected():
    with pytest.raises(FrontmatterError) as err:
        model.parse(doc("id: a\nshown: yes"), path=Path("memories/a.md"))
    assert "shown" in err.value.reason and "True" in err.value.reason
    assert str(err.value).startswith("memories/a.md: ")


def test_boolean_half_life_is_refused():
    with pytest.raises(FrontmatterError, match="half_life_days"):
        model.parse(doc("id: a\nhalf_life_days: no"))


def test_a_single_tag_string_becomes_a_list():
    memory = model.parse(doc("id: a\ntags: deploy\naliases: canlıya çıkmak"))
    assert memory.tags == ["deploy"]
    assert memory.aliases == ["canlıya çıkmak"]


def test_numbers_in_tag_lists_become_strings_obsidian_takes_as_tags():
    """Obsidian takes no tag that is only digits (help.obsidian.md, Tags): `2026` is `_2026` (issue 32)."""
    assert model.parse(doc("id: a\ntags: [2026, ci]")).tags == ["_2026", "ci"]


def test_defaults_and_type_half_lives():
    memory = model.parse(doc("id: a", "First line is the title.\nMore."))
    assert (memory.type, memory.scope, memory.status, memory.title) == ("knowledge", "global", "active",
                                                                        "First line is the title.")
    assert memory.half_life == 150.0
    assert model.parse(doc("id: a\ntype: rule")).half_life is None
    assert model.parse(doc("id: a\ntype: identity")).half_life is None
    assert model.parse(doc("id: a\ntype: lesson")).half_life == 365.0
    assert model.parse(doc("id: a\ntype: knowledge\nhalf_life_days: 30")).half_life == 30.0


def test_the_id_defaults_to_the_file_name(tmp_path):
    path = tmp_path / "hand-made.md"
    path.write_text(doc("title: Hand made"))
    assert model.read(path).id == "hand-made"


@pytest.mark.parametrize("header, reason", [
    ("id: a\ntype: memo", "type: 'memo' is not one of"),
    ("id: a\nstatus: deleted", "status: 'deleted' is not one of"),
    ("id: a\nscope: team", "scope: 'team' must be 'global' or 'project:<name>'"),
    ("id: Not Valid", "id: 'Not Valid' is not a valid id"),
    ("id: a\ncreated: last tuesday", "created: expected a date"),
    ("id: a\nused: -3", "used: expected a non-negative number"),
    ("id: a\nclaims: {probe: path}", "claims: expected a list"),
])
def test_validation_errors_name_the_path_and_the_reason(tmp_path, header, reason):
    path = tmp_path / "a.md"
    path.write_text(doc(header))
    with pytest.raises(FrontmatterError) as err:
        model.read(path)
    assert str(err.value).startswith(f"{path}: ")
    assert reason in err.value.reason


def test_yaml_syntax_errors_name_the_line(tmp_path):
    path = tmp_path / "broken.md"
    path.write_text("---\nid: broken\ntype: rule\ntitle: Deploy: only from main\ntags: [deploy]\n---\nBody\n")
    with pytest.raises(FrontmatterError) as err:
        model.read(path)
    assert err.value.line == 4  # the file's own line: the title with a bare colon
    assert str(err.value).startswith(f"{path}:4: invalid YAML frontmatter: mapping values are not allowed")


def test_an_unclosed_list_is_reported_with_a_line(tmp_path):
    path = tmp_path / "broken.md"
    path.write_text("---\nid: broken\ntags: [deploy, prod\ntype: rule\n---\nBody\n")
    with pytest.raises(FrontmatterError) as err:
        model.read(path)
    assert err.value.line in (3, 4, 5)  # where the list opens, or where YAML gave up
    assert "invalid YAML frontmatter" in err.value.reason


@pytest.mark.parametrize("header", ["- just\n- a list", "just a string", "42"])
def test_frontmatter_that_is_not_a_mapping_is_refused(tmp_path, header):
    # Not silently dropped: the file's id would come from its name and the list be lost on rewrite.
    path = tmp_path / "listy.md"
    path.write_text(f"---\n{header}\n---\nBody\n")
    with pytest.raises(FrontmatterError, match="frontmatter must be a mapping"):
        model.read(path)


def test_a_file_without_frontmatter_is_a_memory_named_after_the_file(tmp_path):
    path = tmp_path / "plain-note.md"
    path.write_text("# Plain note\n\nNo header at all.\n")
    memory = model.read(path)
    assert (memory.id, memory.title, memory.type) == ("plain-note", "Plain note", "knowledge")


def test_non_utf8_file_is_reported(tmp_path):
    path = tmp_path / "latin1.md"
    path.write_bytes(doc("id: latin1", "Şifre").encode("iso-8859-9"))
    with pytest.raises(FrontmatterError, match="not UTF-8"):
        model.read(path)


# ---- round trip

def test_dump_and_parse_round_trip_keeps_everything():
    text = doc("""
id: deploy-prod-from-main-only
type: rule
title: Production deploys only from main
scope: project:shop
created: 2026-11-30
updated: 2026-12-01
tags: [deploy, production]
aliases: [canlıya çıkmak, push to prod]
supersedes: [deploy-from-any-branch]
shown: 12
used: 3
last_used: 2026-11-29
claims:
  - {probe: path, args: {path: infra/deploy.sh}, expect: exists}
verified: {at: 2026-11-30, status: ok}
owner: ali
review:
  due: 2027-01-01
  by: [ayşe, mehmet]
""", "Deploy to production only from `main`.")
    memory = model.parse(text)
    assert memory.extra == {"owner": "ali", "review": {"due": dt.date(2027, 1, 1), "by": ["ayşe", "mehmet"]}}
    again = model.parse(model.dump(memory))
    assert again == memory
    assert "canlıya çıkmak" in model.dump(memory)  # unicode kept readable, not escaped
    assert "&id" not in model.dump(memory)  # equal dates are not YAML anchors


# ---- ids

@pytest.mark.parametrize("title, slug", [
    ("Şifre sıfırlama İstanbul'da", "sifre-sifirlama-istanbul-da"),
    ("IĞDIR şubesi ÇALIŞIYOR", "igdir-subesi-calisiyor"),
    ("Öğle yemeği: Ümraniye", "ogle-yemegi-umraniye"),
    ("Deploy from main only!", "deploy-from-main-only"),
    ("データベース", "memory"),
    ("", "memory"),
])
def test_slugs_from_turkish_titles(title, slug):
    assert slugify(title) == slug
    assert is_valid_id(slug)


def test_transliteration_of_dotted_and_dotless_i():
    assert transliterate("İı Ii") == "ii Ii"


def test_slugs_are_cut_at_a_word_and_stay_valid():
    slug = slugify("word " * 40)
    assert len(slug) <= 60 and is_valid_id(slug) and not slug.endswith("-")


def test_unique_ids_count_up():
    assert unique_id("x", set()) == "x"
    assert unique_id("x", {"x"}) == "x-2"
    assert unique_id("x", {"x", "x-2"}) == "x-3"


@pytest.mark.parametrize("value, ok", [
    ("deploy-rule", True), ("a", True), ("v2-3", True),
    ("Deploy", False), ("-a", False), ("a-", False), ("a--b", False), ("a b", False), ("ş", False),
    ("../etc", False), ("a.md", False), ("", False),
])
def test_valid_ids(value, ok):
    assert is_valid_id(value) is ok


def test_remember_derives_unique_ids(vault):
    # the same title, three texts (the same text twice is a duplicate, refused: test_cli)
    ids = [vault.remember(f"Şifreler 1Password'da tutulur, kasa {n}.", title="Şifre yönetimi").id for n in range(3)]
    assert ids == ["sifre-yonetimi", "sifre-yonetimi-2", "sifre-yonetimi-3"]
    assert {p.name for p in vault.paths()} == {f"{i}.md" for i in ids}


def test_supplied_ids_are_honoured_when_valid(vault):
    memory = vault.remember("pnpm, not npm.", id="package-manager")
    assert memory.id == "package-manager"
    assert (vault.memories_dir / "package-manager.md").exists()


@pytest.mark.parametrize("bad", ["Package Manager", "../escape", "a--b", "ünlü"])
def test_invalid_supplied_ids_are_refused(vault, bad):
    with pytest.raises(HafizaError, match="not valid") as err:
        vault.remember("pnpm, not npm.", id=bad)
    assert err.value.field == "id"
    assert vault.paths() == []


def test_taken_supplied_ids_are_refused(vault):
    vault.remember("pnpm, not npm.", id="package-manager")
    head = vault.git.head()
    with pytest.raises(HafizaError, match="already taken"):
        vault.remember("yarn now.", id="package-manager")
    assert vault.get("package-manager").body == "pnpm, not npm."
    assert vault.git.head() == head
