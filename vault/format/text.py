"""Text folding and cleaning. Stdlib only.

`fold_text` is the Turkish-aware folding shared by search (indexer.text), the
embedder and the vault's duplicate checks (not to be confused with folding the
usage log into files, vault.usage). `sifre`, `şifre`, `ŞİFRE` and `Şifre` all
become `sifre`; `IĞDIR` and `ığdır` become `igdir`. Python's `str.lower()`
turns `İ` into `i` + U+0307 and `I` into `i`, so capitals are mapped before
lowering and the combining dot is dropped.
"""

from __future__ import annotations

import unicodedata

# Letters NFKD does not reduce to ASCII, Turkish ones first: also used for ids (vault.ids.transliterate).
SPECIAL_LETTERS = {"ı": "i", "İ": "i", "ß": "ss", "æ": "ae", "ø": "o", "ł": "l", "đ": "d", "œ": "oe"}


def _fold_table() -> dict[int, str]:
    table = {ord(letter): plain for letter, plain in SPECIAL_LETTERS.items()}
    table.update({ord("I"): "i", 0x307: ""})
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


_FOLD_TABLE = _fold_table()


def fold_text(text: str) -> str:
    """NFC, Turkish-aware lower case, ASCII-folded Latin letters."""
    text = unicodedata.normalize("NFC", text).translate(_FOLD_TABLE).lower()
    return text.translate(_FOLD_TABLE) if not text.isascii() else text


# Recalled text goes into fenced blocks (`<hafiza-recall>`, `<hafiza-profile>`) inside an agent's context and
# onto terminals. It is written by people and agents, so it may carry a closing tag, a fake `SYSTEM:` line,
# terminal escapes or bidi overrides (the hardening issue's "broken fences").

# Invisible characters whose Unicode category is a letter or a mark, used to hide text or space words apart.
_FILLERS = frozenset((0x34F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x2800, 0x3164, 0xFFA0))


def _hidden(cp: int) -> bool:
    """Controls, format characters (bidi, zero-width, tags), separators, surrogates and invisible fillers."""
    return unicodedata.category(chr(cp)) in ("Cc", "Cf", "Cs", "Zl", "Zp") or cp in _FILLERS


class _Inline(dict):
    """str.translate table, filled as characters are met: hidden ones go, line breaks and fillers become
    spaces, and the full-width and small forms of `<` and `>` become the brackets they are read as."""

    def __missing__(self, cp: int):
        value = cp
        if _hidden(cp):
            value = " " if chr(cp).isspace() or cp in _FILLERS else None
        elif cp > 0x7F and unicodedata.normalize("NFKC", chr(cp)) in ("<", ">"):
            value = unicodedata.normalize("NFKC", chr(cp))
        self[cp] = value
        return value


class _Escapes(dict):
    """str.translate table: hidden characters become `\\x1b`, `\\u202e` (or JSON's `\\u001b`); newline and tab stay."""

    def __init__(self, as_json: bool):
        super().__init__({ord("\n"): ord("\n"), ord("\t"): ord("\t")})
        self.as_json = as_json

    def __missing__(self, cp: int):
        value = cp
        if _hidden(cp):
            if self.as_json:  # astral characters as a surrogate pair, which JSON parsers join again
                value = "".join(f"\\u{u:04x}" for u in ((0xD7C0 + (cp >> 10), 0xDC00 + (cp & 0x3FF))
                                                         if cp > 0xFFFF else (cp,)))
            else:
                value = f"\\x{cp:02x}" if cp < 0x100 else f"\\u{cp:04x}" if cp <= 0xFFFF else f"\\U{cp:08x}"
        self[cp] = value
        return value


_INLINE = _Inline()
_ESCAPES = {False: _Escapes(False), True: _Escapes(True)}


def _opens_tag(rest: str, closed: bool) -> bool:
    """Whether `<` + `rest` starts a tag: `<x`, `</`, `< / x`, `<!`, `<?`, `<\\/`, and `< x ...>` when a `>`
    closes it (so `a < b` stays). Spaces, backslashes and combining marks before the name do not hide it, nor
    do full-width forms (`<／`, `<！`): each character is read as NFKC reads it."""
    spaced = False
    for ch in rest:
        if not ch.isascii():
            if unicodedata.category(ch)[0] == "M":
                continue
            ch = unicodedata.normalize("NFKC", ch)[0]
        if ch in " \\":
            spaced = True
        else:
            return ch in "/!?" or (ch.isalpha() and (closed or not spaced))
    return False


def _untag(text: str) -> str:
    """Every `<` that starts a tag as `&lt;`, and the `>` that ends it as `&gt;`."""
    # str methods, not a regular expression: compiling one with Unicode classes cost the cold hook 1-5 ms.
    parts = text.split("<")
    out = [parts[0]]
    for part in parts[1:]:
        end = part.find(">")
        if not _opens_tag(part, end >= 0):
            out.append("<" + part)
        elif end >= 0:
            out.append(f"&lt;{part[:end]}&gt;{part[end + 1:]}")
        else:
            out.append("&lt;" + part)
    return "".join(out)


# Printable characters the table above changes: the invisible fillers, and the forms of `<` and `>` that NFKC
# reads as them (tests/test_fences.py checks every code point). A printable text without them, and without
# spaces to squeeze, is already inline: `hafiza list` then skips the table, ~9 µs a title.
_PRINTABLE_CHANGED = frozenset(map(chr, _FILLERS | {0xFE64, 0xFE65, 0xFF1C, 0xFF1E}))


def inline(text, limit: int | None = None) -> str:
    """`text` made safe to stand on one line inside a fenced block, cut to `limit` characters at a word.

    Controls, bidi and zero-width characters go; every run of whitespace (newlines included) becomes one
    space, so nothing starts a line of its own; and any `<` that starts a tag, in any case or width (as read
    after NFKC folding), is written `&lt;` (and its `>` `&gt;`), so no text can close or open a fence or a
    client's own wrapper. `a < b`, `x<5`, `->`, `O(n²)` and Turkish letters stay as they are.
    """
    if not text:
        return ""
    # Removal first, so `<\u200b/` is `</`. The text itself is not NFKC-folded: that would turn `O(n²)` into
    # `O(n2)`; only what decides whether a `<` starts a tag is read that way.
    text = str(text)
    if not (text.isprintable() and "  " not in text and text[0] != " " != text[-1]
            and _PRINTABLE_CHANGED.isdisjoint(text)):
        text = " ".join(text.translate(_INLINE).split())
    if "<" in text:
        text = _untag(text)
    return _cut(text, limit)


def _cut(text: str, limit: int | None) -> str:
    if limit is not None and len(text) > limit:
        text = text[:max(limit - 1, 0)].rsplit(" ", 1)[0] + "…" if limit > 0 else ""
    return text


_FILLER_CHARS = frozenset(map(chr, _FILLERS))


def one_line(text, limit: int | None = None) -> str:
    """`text` on one line of a terminal, cut to `limit` characters at a word: every run of whitespace (newlines
    included) is one space, and every other control, bidi or invisible character is shown as an escape, as
    `visible` shows it. Tags stay as written: a terminal is not a fence, and `<never>` printed as
    `&lt;never&gt;` only garbles it (`inline` is for text going into a fenced block)."""
    if not text:
        return ""
    text = str(text)
    if not (text.isprintable() and "  " not in text and text[0] != " " != text[-1]
            and _FILLER_CHARS.isdisjoint(text)):  # as in `inline`: most titles are already one clean line
        text = visible(" ".join(text.split()))
    return _cut(text, limit)


def visible(text: str, as_json: bool = False) -> str:
    """Multi-line text for a terminal: newlines and tabs stay, every other control, bidi or invisible character
    is shown as an escape (`\\x1b`, `\\u202e`) that the terminal prints instead of acting on.

    `as_json=True` is for the output of json.dumps(ensure_ascii=False), where such characters can only stand
    inside strings: they become `\\u` escapes, so the JSON parses back to the same text.
    """
    table = _ESCAPES[as_json]
    if "\r\n" in text and not as_json:  # Windows line ends are harmless; a lone CR rewrites the line
        return "\r\n".join(part.translate(table) for part in text.split("\r\n"))
    return text.translate(table)


def plural(n: int, noun: str) -> str:
    """`n` and its noun in the form the number asks for: `1 memory`, `2 memories`, `0 fact notes`, `3 aliases`
    (English's regular plurals: what hafiza counts has no other kind)."""
    if n == 1:
        return f"1 {noun}"
    if noun.endswith("y") and noun[-2:-1] not in ("a", "e", "i", "o", "u"):
        return f"{n} {noun[:-1]}ies"
    return f"{n} {noun}{'es' if noun.endswith(('s', 'x', 'ch', 'sh')) else 's'}"


def agree(n: int, one: str, many: str) -> str:
    """The word of a sentence that follows the number `n`, often its verb: `one` for 1, `many` otherwise, as
    in `f"{plural(n, 'file')} {agree(n, 'does', 'do')} not parse"` (`1 file does`, `2 files do`)."""
    return one if n == 1 else many


def first_line(text: str, limit: int = 80) -> str:
    """A title from text: its first non-empty line, cut at a word near `limit`."""
    for line in text.splitlines():
        line = line.strip().lstrip("#").strip()
        if line:
            if len(line) <= limit:
                return line
            cut = line[:limit].rsplit(" ", 1)[0]
            return cut.rstrip(",;:") + "…"
    return ""


def heading(text: str) -> str | None:
    """The markdown heading a text opens with (`# Build` gives `Build`), or None when its first line is none."""
    for line in text.splitlines():
        if line.startswith("#"):
            return line.lstrip("#").strip() or None
        if line.strip():
            return None
    return None
