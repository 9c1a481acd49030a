"""Turkish-aware folding, shared by search (indexer.text) and the vault's duplicate checks. Stdlib only.

`sifre`, `şifre`, `ŞİFRE` and `Şifre` all become `sifre`; `IĞDIR` and `ığdır`
become `igdir`. Python's `str.lower()` turns `İ` into `i` + U+0307 and `I`
into `i`, so capitals are mapped before lowering and the combining dot is
dropped.
"""

from __future__ import annotations

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


def fold(text: str) -> str:
    """NFC, Turkish-aware lower case, ASCII-folded Latin letters."""
    text = unicodedata.normalize("NFC", text).translate(_FOLD).lower()
    return text.translate(_FOLD) if not text.isascii() else text
