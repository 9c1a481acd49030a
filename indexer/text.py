"""Text to terms: Turkish-aware folding (hafiza.vault.format.text.fold_text), no stemming, CJK bigrams.
Stdlib only (prompt path). Stemmers break Turkish, so words are kept whole.
"""

from __future__ import annotations

import re

from hafiza.vault.format.text import fold_text

# A word: letters/digits, joined by . _ - / so `file.py`, `v2.3`, `ERR_PNPM_OUTDATED` stay whole.
_WORD = re.compile(r"[^\W_]+(?:[._\-][^\W_]+)*|_+[^\W_]+(?:[._\-][^\W_]+)*", re.UNICODE)
_SPLIT = re.compile(r"[._\-]")
# Kana, CJK ideographs, Hangul. Ranges, not a regex class: compiling that class costs ~2.4 ms per hook.
_CJK_RANGES = ((0x3040, 0x30FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xAC00, 0xD7AF), (0xF900, 0xFAFF))


def _is_cjk(ch: str) -> bool:
    cp = ord(ch)
    return cp >= 0x3040 and any(lo <= cp <= hi for lo, hi in _CJK_RANGES)


def _cjk_terms(word: str):
    """Character bigrams for CJK runs (no spaces to split on), words for the rest."""
    run, out = [], []
    for ch in word + " ":
        if _is_cjk(ch):
            run.append(ch)
            continue
        if run:
            out += ["".join(run[i:i + 2]) for i in range(max(1, len(run) - 1))]
            run = []
    rest = "".join(" " if _is_cjk(ch) else ch for ch in word).split()
    return out + rest


def terms(text: str) -> list[str]:
    """The index terms of `text`, in order. Compounds also yield their parts."""
    out: list[str] = []
    for match in _WORD.finditer(fold_text(text)):
        word = match.group().strip("_")
        if not word:
            continue
        if any(_is_cjk(ch) for ch in word):
            out += _cjk_terms(word)
            continue
        out.append(word)
        if _SPLIT.search(word):
            out += [part for part in _SPLIT.split(word) if len(part) > 1 or part.isdigit()]
    return out


# Turkish adds its endings to a word ("veritabanı", "veritabanını", "veritabanından"); stemming is off, since a
# wrong root is worse than none (docs/architecture.md), but retrieval studies on Turkish found the first 5
# letters of a word about as good as a lemmatizer. Words of letters only and longer than this are also
# indexed cut to it, in a field weighed below the exact ones (schema.FIELD_BOOSTS).
PREFIX = 5  # 6: tuning recall@2 0.827 against 0.833; Turkish prompts 0.797 against 0.812


def prefix(word: str) -> str | None:
    """The first PREFIX letters of a longer word of letters only; None for any other word."""
    return word[:PREFIX] if len(word) > PREFIX and word.isalpha() else None


def prefixes(text: str) -> str:
    """The prefixes of `text`'s words, as the text indexed in the prefixes field."""
    return " ".join(p for p in map(prefix, terms(text)) if p)
