"""vault/format/properties.py: how references, verification, claims and tags are written so Obsidian's Properties
view shows and edits them (issue 32), and read back in that form and in the one written before."""

from __future__ import annotations

import pytest
import yaml

from hafiza.vault.format import model, properties
from hafiza.vault.format.frontmatter import emit, read
from hafiza.verifier.probes import REGISTRY


def test_every_probe_has_a_line():
    assert set(properties.CLAIM_ARGS) == set(REGISTRY)


@pytest.mark.parametrize("claim, line", [
    ({"probe": "path", "args": {"path": "scripts/seed.py"}}, "path scripts/seed.py"),
    ({"probe": "contains", "args": {"path": "README.md", "text": "make deploy | now"}}, "contains README.md | make deploy | now"),
    ({"probe": "symbol", "args": {"path": "src/api.py", "name": "Orders"}}, "symbol src/api.py | Orders"),
    ({"probe": "url", "args": {"url": "https://example.com/a?b=1"}}, "url https://example.com/a?b=1"),
    ({"probe": "path", "args": {"path": "my docs/a.md"}}, "path my docs/a.md"),
    # no line holds these as they are: their JSON, read back the same
    ({"probe": "path", "args": {"path": " spaced "}}, '{"probe": "path", "args": {"path": " spaced "}}'),
    ({"probe": ["path"], "args": {"path": "x"}}, '{"probe": ["path"], "args": {"path": "x"}}'),
    ({"probe": "path", "args": {"path": "a | b"}}, '{"probe": "path", "args": {"path": "a | b"}}'),
    ({"probe": "nosuch", "args": {"x": "y"}}, '{"probe": "nosuch", "args": {"x": "y"}}'),
    ({"probe": "path", "args": {"path": "a\nb"}}, '{"probe": "path", "args": {"path": "a\\nb"}}'),
])
def test_a_claim_is_one_line_and_reads_back(claim, line):
    assert properties.claim_line(claim) == line
    assert properties.claim_of(line) == claim


def test_a_claim_written_before_loses_only_its_own_result():
    old = {"probe": "path", "args": {"path": "a.py"}, "verified": {"status": "ok", "at": "2026-10-01"}}
    assert properties.claim_of(old) == {"probe": "path", "args": {"path": "a.py"}}
    assert properties.claim_of("contains README.md") == "contains README.md"  # no second argument: text, invalid


@pytest.mark.parametrize("value, tag", [
    ("deploy", "deploy"), ("#deploy", "deploy"), ("iki kelime", "iki-kelime"), ("2026", "_2026"),
    ("node.js", "node-js"), ("a - b", "a-b"), ("Şube/İzmir", "Şube/İzmir"), ("çalışma_saati", "çalışma_saati"),
    ("//infra//db/", "infra/db"), ("proje/2026", "proje/2026"), ("#", None), ("...", None),
])
def test_tags_are_what_obsidian_takes(value, tag):
    assert properties.tag(value) == tag


def test_tags_keep_one_of_each_as_obsidian_compares_them():
    assert properties.tags(["Deploy", "deploy", "#deploy", "iki kelime", "iki-kelime", ""]) == ["Deploy", "iki-kelime"]


@pytest.mark.parametrize("ref, written", [
    ("deploy-from-main", "[[deploy-from-main]]"), ("fact:acme-a-s/based-in", "[[facts/acme-a-s#based-in]]"),
])
def test_references_are_links_and_read_back(ref, written):
    assert properties.link(ref) == written and properties.unlink(written) == ref


@pytest.mark.parametrize("written, ref", [
    ("deploy", "deploy"), ("[[deploy|the deploy rule]]", "deploy"), ("[[memories/3f/deploy]]", "deploy"),
    ("[[deploy.md]]", "deploy"), ("[[facts/acme-a-s#based in]]", "fact:acme-a-s/based-in"), (" [[deploy]] ", "deploy"),
])
def test_a_reference_is_read_in_any_form_a_person_or_obsidian_writes(written, ref):
    assert properties.unlink(written) == ref


def test_verified_is_flat_and_the_old_mapping_reads_the_same():
    summary = {"status": "failed", "at": model.as_date("2026-12-01", "at"), "by": "verify", "detail": "gone",
               "commit": "1234567890"}
    flat = properties.flat_verified(summary)
    assert flat == {"verified": "failed", "verified_at": summary["at"], "verified_by": "verify",
                    "verified_note": "gone", "verified_commit": "1234567890"}
    assert properties.verified_of(flat) == summary == properties.verified_of({"verified": summary})
    assert properties.verified_of({"verified": "FAILED"}) == {"status": "failed"}
    assert properties.verified_of({}) is None


def test_links_are_written_without_pyyaml_in_the_bytes_pyyaml_writes():
    memory = model.Memory(id="b", title="B", body="B", supersedes=["a", "c-2"], superseded_by="fact:acme/based-in",
                          status="superseded", tags=["deploy"], updated=model.as_date("2026-12-01", "u"))
    meta = model.to_metadata(memory)
    assert emit(meta) == model.yaml_dump(meta)
    assert "supersedes: ['[[a]]', '[[c-2]]']\nsuperseded_by: '[[facts/acme#based-in]]'\n" in emit(meta)
    header = "\n" + emit(meta)
    assert read(header) is not None and read(header) == yaml.safe_load(header) and model.parse(model.dump(memory)) == memory.evolve(path=None)
    for odd in ("[[a's]]", "[[ a]]", "[[a]] x", "[[a, b]]"):
        meta = {"id": "m", "supersedes": [odd]}
        fast = emit(meta)
        assert fast is None or fast == model.yaml_dump(meta)
        assert read("\n" + model.yaml_dump(meta)) in (None, yaml.safe_load(model.yaml_dump(meta)))


def test_tags_are_normalised_where_a_memory_comes_in(vault):
    memory = vault.remember("Deploys only from main.", tags=["#deploy", "iki kelime", "2026", "Deploy"])
    assert memory.tags == ["deploy", "iki-kelime", "_2026"] == vault.get(memory.id).tags


def test_a_link_typed_without_quotes_is_the_link_meant():
    """YAML reads an unquoted `[[x]]` as a list in a list; Obsidian asks for quotes, a person forgets them."""
    memory = model.parse("---\nid: b\nsupersedes:\n  - [[a]]\n  - '[[c]]'\nsuperseded_by: [[d]]\nstatus: superseded\n---\nB\n")
    assert memory.supersedes == ["a", "c"] and memory.superseded_by == "d"
    assert model.parse("---\nid: b\nsupersedes: [[a]]\n---\nB\n").supersedes == ["a"]
    assert properties.migrate({"supersedes": [[["a"]]], "superseded_by": [["d"]]}) == {
        "supersedes": ["[[a]]"], "superseded_by": "[[d]]"}


def test_a_memory_obsidian_saved_in_its_own_style_reads_as_hafiza_wrote_it():
    """Obsidian's Properties view saves block lists with double-quoted links (`- "[[a]]"`): the same memory."""
    memory = model.Memory(id="b", title="B: the rule", body="B", supersedes=["a"], superseded_by="c",
                          status="superseded", tags=["deploy", "iki-kelime"], aliases=["canlıya çıkmak"],
                          claims=[{"probe": "path", "args": {"path": "a.py"}}], updated=model.as_date("2026-12-01", "u"),
                          verified={"status": "failed", "at": model.as_date("2026-12-01", "u"), "by": "verify",
                                    "detail": "a.py is gone"})
    meta = model.to_metadata(memory)
    lines = []
    for key, value in meta.items():
        if isinstance(value, list):
            lines += [f"{key}:"] + [f'  - "{v}"' if "[[" in v else f"  - {v}" for v in value]
        else:
            lines.append(f'{key}: "{value}"' if "[[" in str(value) or ":" in str(value) else f"{key}: {value}")
    rewritten = "---\n" + "\n".join(lines) + "\n---\nB\n"
    assert 'supersedes:\n  - "[[a]]"' in rewritten
    assert model.parse(rewritten) == model.parse(model.dump(memory))
