"""Text to terms: Turkish-aware folding, no stemming, CJK bigrams. Stdlib only (prompt path).

`sifre`, `şifre`, `ŞİFRE` and `Şifre` all become `sifre`; `IĞDIR` and `ığdır`
become `igdir`. Python's `str.lower()` turns `İ` into `i` + U+0307 and `I`
into `i`, so capitals are mapped before lowering and the combining dot is
dropped. Stemmers break Turkish, so words are kept whole.
"""

from __future__ import annotations

import re
import unicodedata



def _fold_table() -> dict[int, str]:
    table = {ord("İ"): "i", ord("I"): "i", ord("ı"): "i", 0x307: "",
             ord("ß"): "ss", ord("æ"): "ae", ord("ø"): "o", ord("ł"): "l", ord("đ"): "d", ord("œ"): "oe"}
    # Latin-1 supplement and Latin Extended-A/B: ş→s ğ→g ç→c ö→o ü→u â→a é→e ...
    for cp in range(0xC0, 0x250):
        ch = chr(cp)
        if cp in table or not ch.isalpha():
            continue
        base = "".join(c for c in unicodedata.normalize("NFKD", ch) if not unicodedata.combining(c))
        if base.isascii() and base:
            table[cp] = base.lower()
    for ch in ("Ş", "Ğ", "Ç", "Ö", "Ü"):
        table[ord(ch)] = table[ord(ch)].lower()
    return table


_FOLD = _fold_table()
# A word: letters/digits, joined by . _ - / so `file.py`, `v2.3`, `ERR_PNPM_OUTDATED` stay whole.
_WORD = re.compile(r"[^\W_]+(?:[._\-][^\W_]+)*|_+[^\W_]+(?:[._\-][^\W_]+)*", re.UNICODE)
_SPLIT = re.compile(r"[._\-]")
# Kana, CJK ideographs, Hangul. Ranges, not a regex class: compiling that class costs ~2.4 ms per hook.
_CJK_RANGES = ((0x3040, 0x30FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xAC00, 0xD7AF), (0xF900, 0xFAFF))


def _is_cjk(ch: str) -> bool:
    cp = ord(ch)
    return cp >= 0x3040 and any(lo <= cp <= hi for lo, hi in _CJK_RANGES)


def fold(text: str) -> str:
    """NFC, Turkish-aware lower case, ASCII-folded Latin letters."""
    text = unicodedata.normalize("NFC", text).translate(_FOLD).lower()
    return text.translate(_FOLD) if not text.isascii() else text


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
    for match in _WORD.finditer(fold(text)):
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
