"""vault/format/frontmatter.py writes exactly what PyYAML writes, and reads what PyYAML reads, or declines: on
generated vaults, hostile text and random strings built from the characters PyYAML treats specially."""

from __future__ import annotations

import datetime as dt
import random

import pytest
import yaml

from fence_corpus import BENIGN, HOSTILE
from hafiza.vault.format import model
from hafiza.vault.format.frontmatter import emit, read
from hafiza.vault.format.ids import slugify

import gen

# What PyYAML reads or writes specially, and ordinary letters around it.
TRICKY = [*" :#,?[]{}&*!|>'\"%@`-~.<=+_/\\\t\n\r\x85\xa0\u2028\u2029\ufeff\u200b\x00\x7f",
          *"0123456789", *"aeıİşğüöçTRUEYesnoNULLx", "é", "日", "😀", "\ue000", "\ufffd"]
WORDS = ["yes", "No", "TRUE", "off", "On", "null", "Null", "~", "y", "n", "0x1f", "0b101", "1_000", "190:20:30",
         "2026-12-01", "2026-12-01 10:00:00", ".inf", ".NaN", "<<", "=", "1e5", "1.5", "-", "- x", "---", "...",
         "a: b", "a:b", "a #b", "a#b", "a:", "#a", ":a", "?a", "a ", " a", "", "a\nb", "İzmir: merkez", "x: "]


def metadata(memory: model.Memory) -> dict:
    return model.to_metadata(memory)


def pure_python_dump(meta: dict) -> str:
    """As model.yaml_dump, with PyYAML's Python emitter (an install without libyaml)."""
    class Dumper(yaml.SafeDumper):
        def ignore_aliases(self, data):
            return True

    return yaml.dump(meta, Dumper=Dumper, sort_keys=False, allow_unicode=True, width=1000, default_flow_style=None)


def same(meta: dict) -> bool:
    fast = emit(meta)
    return fast is None or fast == model.yaml_dump(meta) == pure_python_dump(meta)


def read_as_yaml(header: str) -> bool:
    """Whether `read` declines the header or reads what PyYAML reads (values and their types)."""
    fast = read(header)
    if fast is None:
        return True
    want = yaml.safe_load(header)
    return fast == want and _types(fast) == _types(want)


def _types(value):
    if isinstance(value, dict):
        return [(type(k), _types(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [_types(v) for v in value]
    return type(value)


def file_header(meta: dict) -> str:
    """The header of the file model.dump writes for `meta`, as split() hands it over."""
    return "\n" + (emit(meta) or model.yaml_dump(meta))


def from_generated(item: dict) -> model.Memory:
    return model.Memory(id=slugify(item["title"]) or "x", title=item["title"], body=item["text"],
                        type=item.get("type", "knowledge"), scope=item.get("scope", "global"),
                        created=dt.date.fromisoformat(item["created"]), tags=item.get("tags", []),
                        aliases=item.get("aliases", []),
                        last_used=dt.date.fromisoformat(item["last_used"]) if item.get("last_used") else None,
                        source="import:memories.jsonl")


def test_generated_memories_are_written_as_pyyaml_writes_them_and_mostly_without_it():
    metas = [metadata(from_generated(item)) for item in gen.memories(2000)]
    assert all(same(m) for m in metas)
    assert sum(emit(m) is not None for m in metas) / len(metas) >= 0.99  # the point of it: most skip PyYAML
    assert any(": " in m["title"] for m in metas if emit(m) is not None)  # a title with a colon among them


def test_a_title_with_a_colon_is_single_quoted_as_pyyaml_quotes_it():
    for title, written in [("Deploy: always from main", "'Deploy: always from main'"),
                           ("Don't: use #tags here", "'Don''t: use #tags here'"),
                           ("Ağustos nöbetçisi: Serkan (1.27) [web]", "'Ağustos nöbetçisi: Serkan (1.27) [web]'")]:
        meta = {"id": "m", "title": title, "tags": []}
        assert emit(meta) == f"id: m\ntitle: {written}\ntags: []\n" and same(meta)
        assert read(emit(meta)) == meta
    assert emit({"id": "m", "title": "Deploy: from main ", "tags": []}) is None  # a trailing space: PyYAML's way


def test_generated_memories_are_read_as_pyyaml_reads_them_and_mostly_without_it():
    headers = [file_header(metadata(from_generated(item))) for item in gen.memories(2000)]
    assert all(read_as_yaml(h) for h in headers)
    assert all(read(h) == metadata(from_generated(item)) for h, item in zip(headers, gen.memories(2000))
               if read(h) is not None)
    assert sum(read(h) is not None for h in headers) / len(headers) >= 0.8


@pytest.mark.parametrize("text", [*WORDS, *(t for t, _ in HOSTILE), *BENIGN])
def test_hostile_and_look_alike_values_are_written_as_pyyaml_writes_them(text):
    base = model.Memory(id="m", title="t", body="b", created=dt.date(2026, 12, 1))
    for memory in (base.evolve(title=text), base.evolve(tags=[text, "deploy"]), base.evolve(aliases=[text]),
                   base.evolve(source=text), base.evolve(extra={"note": text}),
                   base.evolve(verified={"status": "ok", "at": dt.date(2026, 12, 1), "detail": text}),
                   base.evolve(extra={text or "k": 1})):
        meta = metadata(memory)
        assert same(meta), repr(text)
        if emit(meta) is not None:
            assert yaml.safe_load(emit(meta)) == meta
        assert read_as_yaml(file_header(meta)), repr(text)
        for line in (f"title: {text}", f"tags: [{text}, x]", f"v: {{d: {text}}}", f"{text}: x", f"k: [{text}]"):
            assert read_as_yaml(f"\nid: m\n{line}\n"), repr(line)


def test_random_strings_of_the_characters_yaml_treats_specially():
    rng = random.Random(7)
    checked = plain = 0
    for _ in range(4000):
        text = "".join(rng.choice(TRICKY) for _ in range(rng.randint(1, 8)))
        for meta in ({"id": "m", "title": text, "tags": []}, {"id": "m", "tags": [text, "x"]},
                     {"id": "m", "v": {"d": text}}, {"id": "m", "title": text}):
            fast = emit(meta)
            assert same(meta), repr(text)
            checked, plain = checked + 1, plain + (fast is not None)
    assert plain > 1000  # the fast path was taken often enough for the comparison to mean something


def test_random_headers_are_read_as_pyyaml_reads_them_or_left_to_it():
    rng = random.Random(11)
    read_here = 0
    for _ in range(4000):
        text = "".join(rng.choice(TRICKY) for _ in range(rng.randint(1, 8)))
        for header in (f"\nid: m\ntitle: {text}\n", f"\ntags: [{text}, x]\n", f"\nv: {{d: {text}}}\n",
                       f"\n{text}: 1\n", f"\nid: {text}\ncreated: 2026-12-01\nshown: {rng.randint(-9, 99)}\n",
                       f"\n{text}\n", f"\nt: [{text}]\n", f"\ntitle: '{text}'\n", f"\ntitle: '{text}''s'\n"):
            try:
                want = yaml.safe_load(header)
            except (yaml.YAMLError, ValueError):
                assert read(header) is None, repr(header)
                continue
            fast = read(header)
            assert fast is None or (fast == want and _types(fast) == _types(want)), repr(header)
            read_here += fast is not None
    assert read_here > 4000


@pytest.mark.parametrize("text", ["---\nid: m\n---\nbody", "---\nid: m\n---", "---  \nid: m\n----\n\nbody\n---\nmore",
                                  "---\n---\nbody", "--\nid: m\n---\nbody", "---\nid: m", "text\n---\nid: m\n---",
                                  "---\ntitle: a: b\n---\nbody", "---\n- a\n---\nbody", "----\nid: m\n---\r\nbody"])
def test_files_split_as_python_frontmatter_splits_them(text):
    from frontmatter.default_handlers import YAMLHandler

    def python_frontmatter():
        handler = YAMLHandler()
        if not handler.detect(text):
            return None, text
        try:
            header, body = handler.split(text)
        except ValueError:
            return None, text
        return model.load_yaml(header), body

    assert outcome(lambda: model.split(text)) == outcome(python_frontmatter)


def outcome(split):
    try:
        meta, body = split()
    except (yaml.YAMLError, ValueError) as exc:
        return type(exc)
    return ValueError if meta is not None and not isinstance(meta, dict) else (meta, body)  # as split refuses it


def test_dates_and_numbers_yaml_1_1_reads_otherwise_are_left_to_pyyaml():
    assert read("\ncreated: 2026-12-01\nshown: 12\nused: 0\nx: -3\n") == \
        {"created": dt.date(2026, 12, 1), "shown": 12, "used": 0, "x": -3}
    for value in ("012", "0x1f", "1_000", "-0", "2026-1-5", "2026-02-30", "1.5", "+1", "190:20:30", "yes", "~", ""):
        assert read(f"\nv: {value}\n") is None, value


def test_values_pyyaml_must_write_are_left_to_it():
    assert emit({"id": "m", "half_life_days": 30.5}) is None              # floats: PyYAML's own repr
    assert emit({"id": "m", "claims": [{"probe": "path"}]}) is None       # nested: block style
    assert emit({"id": "m", "at": dt.datetime(2026, 12, 1, 10)}) is None  # a datetime, not a date
    assert emit({"id": "m", "aliases": ["a" * 950]}) is None              # PyYAML would fold the line
    assert emit({"id": "m", "title": "yes"}) is None                      # reads back as a boolean
