"""One analyzer for text and queries: Turkish folding, code-ish words whole and in parts, CJK bigrams."""

import unicodedata

import pytest

from hafiza.indexer.analyzer import analyzer, fold_text, terms
from hafiza.indexer.recall import Recall


@pytest.mark.parametrize("forms", [
    ("sifre", "şifre", "ŞİFRE", "Şifre", "SIFRE", "şİfRe"),
    ("IĞDIR", "ığdır", "Iğdır", "igdir", "IGDIR"),
    ("İstanbul", "istanbul", "ISTANBUL", "İSTANBUL"),
    ("çöğüş", "ÇÖĞÜŞ", "cogus"),
    ("kullanıcı", "KULLANICI", "kullanici"),
])
def test_turkish_forms_fold_to_one_term(forms):
    assert {tuple(terms(f)) for f in forms} == {(fold_text(forms[-1]),)}


def test_python_lower_quirks_are_undone():
    assert "İ".lower() == "i\u0307"  # the reason for the fold table
    assert fold_text("İ") == "i" and fold_text("i\u0307stanbul") == "istanbul"


def test_decomposed_input_is_normalised():
    decomposed = unicodedata.normalize("NFD", "şifre değişti")
    assert decomposed != "şifre değişti"
    assert terms(decomposed) == ["sifre", "degisti"]


def test_suffix_after_an_apostrophe_is_its_own_term():
    assert terms("İstanbul'da") == ["istanbul", "da"]
    assert terms("Ankara’dan") == ["ankara", "dan"]


@pytest.mark.parametrize("text, expected", [
    ("file.py", ["file.py", "file", "py"]),
    ("v2.3", ["v2.3", "v2", "3"]),
    ("ERR_PNPM_OUTDATED", ["err_pnpm_outdated", "err", "pnpm", "outdated"]),
    ("pre-commit", ["pre-commit", "pre", "commit"]),
    ("package.json'daki", ["package.json", "package", "json", "daki"]),
    ("__init__", ["init"]),
])
def test_compound_words_are_kept_whole_and_in_parts(text, expected):
    assert terms(text) == expected


def test_sentence_punctuation_is_not_part_of_a_word():
    assert terms("Run tests. Then deploy!") == ["run", "tests", "then", "deploy"]


@pytest.mark.parametrize("text, expected", [
    ("本番環境", ["本番", "番環", "環境"]),
    ("デプロイ", ["デプ", "プロ", "ロイ"]),
    ("本", ["本"]),
    ("pnpm设置", ["设置", "pnpm"]),
    ("배포 규칙", ["배포", "규칙"]),
])
def test_cjk_is_indexed_as_bigrams(text, expected):
    assert terms(text) == expected


def test_no_stemming():
    assert terms("deploy deploys deployed deploying") == ["deploy", "deploys", "deployed", "deploying"]
    assert terms("şifre şifreler şifreleri") == ["sifre", "sifreler", "sifreleri"]


def test_the_whoosh_tokenizer_yields_the_same_terms_with_positions():
    tokens = [(t.text, t.pos) for t in analyzer()("Şifre file.py", positions=True)]
    assert tokens == [("sifre", 0), ("file.py", 1), ("file", 2), ("py", 3)]


# ---- through a real index

MEMORIES = {
    "sifre": ("Şifre sıfırlama", "Şifre sıfırlama linki 24 saat geçerli."),
    "igdir": ("IĞDIR şubesi", "Iğdır şubesinin müşterileri cuma günü aranır."),
    "istanbul": ("Ofis", "Müşteri İstanbul'da, Kadıköy ofisinde."),
    "file-py": ("Settings", "Settings live in config/settings.py, never in .env files."),
    "pnpm-error": ("pnpm lockfile", "ERR_PNPM_OUTDATED_LOCKFILE means run pnpm install without --frozen-lockfile."),
    "v23": ("Release", "The API moved to v2.3 in March."),
    "v24": ("Release next", "v2.4 adds webhooks."),
    "japanese": ("デプロイ", "本番環境へのデプロイは金曜日に禁止。"),
    "chinese": ("部署", "生产环境部署需要两人审核。"),
    "stem": ("Deployment", "Deployment checklist for the shop."),
}


@pytest.fixture
def recall(vault):
    vault.import_many([{"id": k, "title": t, "text": b} for k, (t, b) in MEMORIES.items()], source="import:test")
    return Recall(vault.root)


def ids(recall, query):
    return [h.id for h in recall.search(query, mode="keyword", all_scopes=True)]


@pytest.mark.parametrize("query, expected", [
    ("sifre", "sifre"), ("ŞİFRE", "sifre"), ("sıfırlama", "sifre"), ("SIFIRLAMA", "sifre"),
    ("igdir", "igdir"), ("ığdır", "igdir"), ("Iğdır", "igdir"), ("IĞDIR", "igdir"),
    ("istanbul", "istanbul"), ("İSTANBUL", "istanbul"), ("kadikoy", "istanbul"),
    ("settings.py", "file-py"), ("config/settings.py", "file-py"),
    ("ERR_PNPM_OUTDATED_LOCKFILE", "pnpm-error"), ("outdated lockfile", "pnpm-error"),
    ("本番環境", "japanese"), ("デプロイ", "japanese"), ("生产环境", "chinese"), ("部署", "chinese"),
])
def test_queries_find_their_memory(recall, query, expected):
    assert ids(recall, query)[0] == expected


def test_a_whole_version_outranks_a_shared_part(recall):
    assert ids(recall, "v2.3")[0] == "v23"
    assert ids(recall, "v2.4")[0] == "v24"


def test_no_stemming_through_the_index(recall):
    # The releases follow only as the lexicon's concept "deploy" (indexer/lexicon.py), not as a word.
    exact = recall.search("deployment", mode="keyword", all_scopes=True)
    assert [h.id for h in exact][:1] == ["stem"] and exact[0].parts["idf"] == pytest.approx(1.0)
    assert all(h.parts.get("concept") == h.parts["idf"] for h in exact[1:])
    # Another form meets the word only through its first letters (the prefixes field), as half the evidence.
    other = recall.search("deploy", mode="keyword", all_scopes=True)
    assert [h.id for h in other][:1] == ["stem"] and other[0].parts["idf"] == pytest.approx(0.5)
    assert other[0].score < exact[0].score
    assert ids(recall, "depo") == []  # a word of 5 letters or fewer is never cut
