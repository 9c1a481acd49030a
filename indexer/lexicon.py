"""Developer vocabulary in Turkish and English: groups of words used for the same thing (data/lexicon.tsv).

A paraphrase shares no word with its memory ("canlıya çıkış" against "deploy to production"), and the
meaning channel finds few of them (issue 34: paraphrase recall@2 0.061 on a blind set). Each group is a
concept; a memory's text is indexed with the concepts its words name (the `concepts` field, weighed below
every exact field, schema.FIELD_BOOSTS), and a prompt's concepts are searched there, so two wordings of one
thing meet without a model. Stdlib only: the prompt path loads it.
"""

from __future__ import annotations

import re
from pathlib import Path

from .stopwords import STOPWORDS
from .text import _SPLIT, _WORD, fold_text, terms

DATA = Path(__file__).parent / "data" / "lexicon.tsv"
# A word meets a lexicon word of at least this many letters that it starts with ("veritabanını", "deployment"):
# Turkish endings, as the prefixes field (text.PREFIX). A shorter lexicon word ("hata", "kod", "test") only with
# one of the endings below, so "log" never meets "login" nor "port" "portal".
LONG = 5
ENDINGS = frozenset("""s es ed ing er ers i u a e de da te ta den dan ten tan ler lar leri lari si su yi yu ya ye
la le yla yle ni nu na ne nda nde ndan nden nin nun lik luk li lu ci cu ini unu ina une ine inda inde indan
inden lerin larin lere lara lerde larda""".split())
_TOKEN = re.compile(r"[a-z0-9]+")


class Lexicon:
    """Word groups, each a concept named by a token of the `concepts` field."""

    def __init__(self, text: str):
        """Read `text`: a group a line, its words and phrases tab-separated, `#` comment lines."""
        self.entries: dict[str, list[tuple[tuple[str, ...], str]]] = {}  # an entry's first word -> (words, concept)
        for line in fold_text(text).splitlines():  # folded once: ~16 ms less than a fold per phrase
            if not line.strip() or line.startswith("#"):
                continue
            phrases = [p for p in line.split("\t") if p.strip()]
            concept = "".join(_TOKEN.findall(phrases[0]))
            if not concept:
                continue
            for phrase in phrases:
                words = tuple(w for w in (_words(phrase) if phrase.isascii() else terms(phrase)) if len(w) > 1)
                # A stop word alone ("down", "son", "new") names no subject: the prompt path drops it too. Nor does
                # a phrase that its short or punctuated parts leave as one general word ("a/b test" as "test",
                # "n+1 query" as "query", ".net" as "net", "--fix" as "fix"): it would name every test, query, fix.
                if not words or (len(words) == 1 and (words[0] in STOPWORDS or len(phrase.split()) > 1
                                                      or not phrase.strip()[0].isalnum())):
                    continue
                found = self.entries.setdefault(words[0], [])
                if (words, concept) not in found:
                    found.append((words, concept))

    def concepts(self, words: list[str]) -> dict[str, tuple[str, ...]]:
        """The concepts that `words` (index terms, in order) name, each with the words that named it."""
        out: dict[str, tuple[str, ...]] = {}
        for i, word in enumerate(words):
            for form in _forms(word):
                for entry, concept in self.entries.get(form, ()):
                    n = len(entry)
                    if i + n <= len(words) and all(map(_meets, words[i + 1:i + n], entry[1:])):
                        out[concept] = tuple(dict.fromkeys(out.get(concept, ()) + tuple(words[i:i + n])))
        return out


def _words(phrase: str) -> list[str]:
    """text.terms of a folded ASCII phrase, without its checks for other scripts (the cold hook reads the
    whole lexicon on every prompt)."""
    out = []
    for word in _WORD.findall(phrase):
        out.append(word)
        if _SPLIT.search(word):
            out += [part for part in _SPLIT.split(word) if len(part) > 1 or part.isdigit()]
    return out


def _forms(word: str):
    """The lexicon words `word` may be a form of: itself, its longer beginnings, and itself less an ending."""
    yield word
    if len(word) > LONG and word.isalpha():
        for k in range(len(word) - 1, LONG - 1, -1):
            yield word[:k]
    for k in range(1, 6):
        if len(word) - k >= 3 and word[-k:] in ENDINGS:
            stem = word[:-k]
            if len(stem) < LONG or not word.isalpha():
                yield stem


def _meets(word: str, entry_word: str) -> bool:
    return word == entry_word or entry_word in set(_forms(word))


_LOADED: Lexicon | None = None
_FOLDED: str | None = None


def lexicon() -> Lexicon:
    """The package's lexicon, read once per process."""
    global _LOADED
    if _LOADED is None:
        _LOADED = Lexicon(DATA.read_text(encoding="utf-8"))
    return _LOADED


def for_words(words: list[str]) -> Lexicon:
    """The lexicon as far as `words` can meet it. A process's first prompt (a cold hook has only one) reads only
    the lines that hold a form of one of them, ~1.4 ms against ~2.9 ms for all; the lines an entry can be found on
    are those where its first word starts a phrase, and that word is one of the forms looked up. From its second
    on, the whole lexicon, read once: reading lines on every prompt cost the warm process ~7 ms a prompt at 1,000
    memories (bench/results/hook-latency-round2-2026-12-07.md)."""
    global _FOLDED
    if _LOADED is not None or _FOLDED is not None:
        return lexicon()
    if _FOLDED is None:
        _FOLDED = "\n" + fold_text(DATA.read_text(encoding="utf-8"))
    forms = {form for word in words for form in _forms(word)}
    if not forms:
        return Lexicon("")
    text, lines = _FOLDED, {}
    for form in forms:
        for key in ("\n" + form, "\t" + form):  # an entry's first word starts its phrase (the file has no spaces there)
            at = text.find(key)
            while at >= 0:
                start = text.rfind("\n", 0, at + 1) + 1
                if start not in lines:
                    end = text.find("\n", start)
                    lines[start] = text[start:end if end >= 0 else len(text)]
                at = text.find(key, at + 1)
    return Lexicon("\n".join(lines.values()))


def groups() -> dict[str, list[str]]:
    """Each concept's words and phrases as the lexicon writes them (not folded), for showing to a person."""
    out: dict[str, list[str]] = {}
    for line in DATA.read_text(encoding="utf-8").splitlines():
        phrases = [p.strip() for p in line.split("\t") if p.strip()]
        if phrases and not line.startswith("#"):
            concept = "".join(_TOKEN.findall(fold_text(phrases[0])))
            if concept:
                out.setdefault(concept, []).extend(p for p in phrases if p not in out[concept])
    return out


def concepts_text(text: str) -> str:
    """The concepts `text` names, as the text indexed in the concepts field."""
    return " ".join(lexicon().concepts(terms(text)))
