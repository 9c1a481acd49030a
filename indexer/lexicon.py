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


def lexicon(cache: Path | None = None) -> Lexicon:
    """The package's lexicon, read once per process. `cache` is a vault's `.hafiza/` folder: a process that read
    the lexicon before left it there parsed, which reads in ~1 ms against ~70 ms for its 1,500 groups (folding the
    file alone takes ~18 ms), so a cold hook's prompt and a `remember` do not pay for it each time (issue 34,
    round three). Parsed again, and left there, when the file is missing or damaged."""
    global _LOADED
    if _LOADED is None:
        found = _cached(cache) if cache is not None else None
        _LOADED = found or Lexicon(DATA.read_text(encoding="utf-8"))
        if cache is not None and found is None:
            _keep(_LOADED, cache)
    return _LOADED


def _cache_file(cache: Path) -> Path:
    import marshal

    from .schema import LEXICON_DIGEST

    return cache / f"lexicon-{LEXICON_DIGEST}-{marshal.version}.marshal"


class _Packed(dict):
    """An entry list per first word, each kept marshalled until a prompt looks that word up: reading all of
    them took a cold hook ~7 ms, the words alone ~0.7 ms."""

    def get(self, word, default=None):
        packed = dict.get(self, word)
        if packed is None:
            return default
        if isinstance(packed, bytes):
            import marshal

            try:
                packed = marshal.loads(packed)
            except (ValueError, EOFError, TypeError):
                return default  # a damaged entry names nothing (removing the file makes the next read write it anew)
            self[word] = packed
        return packed


def _cached(cache: Path) -> Lexicon | None:
    import marshal

    try:
        entries = marshal.loads(_cache_file(cache).read_bytes())
    except (OSError, ValueError, EOFError, TypeError):
        return None
    if not isinstance(entries, dict):
        return None
    found = Lexicon("")
    found.entries = _Packed(entries)
    return found


def _keep(found: Lexicon, cache: Path) -> None:
    """Leave the parsed lexicon in `cache`, if it is there to write into (a hook never makes `.hafiza/`)."""
    import marshal

    from hafiza.vault.files import atomic_write

    if cache.is_dir():
        target = _cache_file(cache)
        try:
            atomic_write(target, marshal.dumps({word: marshal.dumps(list(found.entries.get(word)))
                                                for word in found.entries}), fsync=False)
            for old in cache.glob("lexicon-*.marshal"):  # an earlier release's
                if old != target:
                    old.unlink(missing_ok=True)
        except OSError:
            pass  # a read-only vault: parsed again next time


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


def concepts_text(text: str, cache: Path | None = None) -> str:
    """The concepts `text` names, as the text indexed in the concepts field (`cache`: see lexicon)."""
    return " ".join(lexicon(cache).concepts(terms(text)))
