"""A memory's frontmatter written, and read, without PyYAML where PyYAML would write it plainly.

Importing PyYAML costs a write ~20 ms (its resolver compiles dozens of regular expressions), a large
share of `hafiza remember`. Most frontmatter is flat: words, dates, counts, lists of words and of links
(`['[[id]]']`), one level of `{key: value}`, a title holding `: ` in single quotes. For such a mapping `emit` writes exactly the bytes
`yaml.dump(..., Dumper=SafeDumper, sort_keys=False, allow_unicode=True, width=1000,
default_flow_style=None)` writes (model.dump); for anything else (a value PyYAML would quote otherwise, a
float, a nested list, a line near the width) it returns None and the caller asks PyYAML.
tests/test_frontmatter.py compares the two on generated vaults and hostile text, so the files stay byte
for byte what they were.

PyYAML's rules followed here (emitter.analyze_scalar, resolver.Resolver): a plain scalar has no leading
or trailing space, no line break, only characters PyYAML prints as they are, no `: ` or ` #` (nor a
trailing `:`), and in a flow collection none of `,?[]{}:`; it must not read back as another type, which
for a scalar starting with a letter means only the YAML 1.1 booleans and nulls below. Scalars starting
with anything else are left to PyYAML.

`read` is the way back: a header whose every line is `key: value` in the forms `emit` writes is read
here, to what PyYAML's safe loader makes of it, and anything else is left to PyYAML. Importing PyYAML cost a
search that indexes a write ~20 ms, and `hafiza forget` as much.
"""

from __future__ import annotations

import datetime as dt

WIDTH = 900  # PyYAML folds lines past its width (1000): well short of it, nothing is folded
_WORDS = frozenset("yes Yes YES no No NO true True TRUE false False FALSE on On ON off Off OFF "
                   "null Null NULL".split())
_FLOW = frozenset(",?[]{}:")


def emit(meta: dict) -> str | None:
    """The YAML of the flat mapping `meta` as PyYAML writes it, or None when it is not that simple."""
    if not any(isinstance(v, (list, dict)) for v in meta.values()):
        return None  # a mapping of scalars only is itself a leaf: PyYAML writes it as one `{...}` line
    lines = []
    for key, value in meta.items():
        if not (isinstance(key, str) and _plain(key, flow=False)):
            return None
        if isinstance(value, list):
            text = _collection([_scalar(v) for v in value], "[]")
        elif isinstance(value, dict):
            items = [(k, _scalar(v)) for k, v in value.items()]
            text = None if any(not (isinstance(k, str) and _plain(k, flow=True)) or v is None for k, v in items) \
                else _collection([f"{k}: {v}" for k, v in items], "{}")
        else:
            text = _scalar(value, flow=False)
            if text is None and isinstance(value, str):
                text = _single_quoted(value)
        if text is None:
            return None
        line = f"{key}: {text}"
        if len(line) > WIDTH:
            return None
        lines.append(line)
    return "\n".join(lines) + "\n" if lines else None


def read(header: str) -> dict | None:
    """The mapping a frontmatter header holds (the text between its `---` lines), as PyYAML's safe loader reads
    it, when every line is `key: value` in a form `emit` writes: plain words, whole numbers, dates, true,
    false, null, links (`'[[id]]'`), and flow lists and flat mappings of those; or a single-quoted string. None when it holds
    anything else."""
    lines = header.split("\n")
    if lines and not lines[0]:
        del lines[0]  # the newline after the opening ---
    if lines and not lines[-1]:
        del lines[-1]
    meta: dict = {}
    for line in lines:
        key, sep, text = line.partition(": ")
        if not sep or key in meta or not _plain(key, flow=False):
            return None
        meta[key] = value = _read_value(text)
        if value is _UNREAD:
            return None
    return meta or None


_UNREAD = object()  # a value `read` leaves to PyYAML


def _read_value(text: str):
    if text[:1] == "[" and text[-1:] == "]":
        items = [_read_scalar(item, flow=True) for item in text[1:-1].split(", ")] if len(text) > 2 else []
        return _UNREAD if any(item is _UNREAD for item in items) else items
    if text[:1] == "{" and text[-1:] == "}":
        mapping: dict = {}
        for pair in text[1:-1].split(", ") if len(text) > 2 else []:
            key, sep, value = pair.partition(": ")
            if not sep or key in mapping or not _plain(key, flow=True):
                return _UNREAD
            mapping[key] = value = _read_scalar(value, flow=True)
            if value is _UNREAD:
                return _UNREAD
        return mapping
    if len(text) >= 2 and text[0] == text[-1] == "'":  # how PyYAML writes a title holding `: ` or ` #`
        inner = text[1:-1]
        if "'" in inner.replace("''", "") or not all(" " <= ch <= "~" or _printable(ch) for ch in inner):
            return _UNREAD
        return inner.replace("''", "'")
    return _read_scalar(text, flow=False)


def _read_scalar(text: str, flow: bool):
    """What PyYAML reads `text` as, for what `_scalar` writes; _UNREAD for anything else."""
    if flow and len(text) > 4 and text[0] == text[-1] == "'":
        return text[1:-1] if _link(text[1:-1]) else _UNREAD
    if text in _CONSTANTS:
        return _CONSTANTS[text]
    digits = text[1:] if text[:1] == "-" else text
    if digits and all("0" <= ch <= "9" for ch in digits) and (digits[0] != "0" or text == "0"):
        return int(text)  # decimal, without the leading zeros that make YAML 1.1 read octal
    if len(text) == 10 and text[4] == text[7] == "-" and all("0" <= ch <= "9" for ch in text[:4] + text[5:7] + text[8:]):
        try:
            return dt.date.fromisoformat(text)
        except ValueError:
            return _UNREAD  # PyYAML's own error, with its line
    return text if _plain(text, flow) else _UNREAD


_CONSTANTS = {"null": None, "true": True, "false": False}


def _collection(items: list, brackets: str) -> str | None:
    if any(item is None for item in items):
        return None
    return brackets[0] + ", ".join(items) + brackets[1]


def _scalar(value, flow: bool = True) -> str | None:
    """A scalar as PyYAML writes it, or None."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, str) and _plain(value, flow):
        return value
    if isinstance(value, str) and _link(value):
        return f"'{value}'"
    return None


def _link(text: str) -> bool:
    """A link as a memory writes one to another (`[[deploy-from-main]]`, vault/format/properties.py), which
    PyYAML writes single-quoted for its leading `[`: nothing in it that would make PyYAML write it otherwise."""
    return len(text) > 4 and text[:2] == "[[" and text[-2:] == "]]" and "'" not in text and text[2] != " " \
        and text[-3] != " " and all(" " <= ch <= "~" or _printable(ch) for ch in text)


def _single_quoted(text: str) -> str | None:
    """`text` as PyYAML writes a string that only its `: ` or ` #` keeps from being plain (a title such as
    "Deploy: always from main", which made a write import PyYAML): in single quotes, a quote doubled.
    None for anything else."""
    if (": " in text or " #" in text) and _plain(text.replace(": ", "").replace(" #", ""), flow=False) and (
            text[0].isalpha() and text[-1] not in " :"):
        return "'" + text.replace("'", "''") + "'"
    return None


def _plain(text: str, flow: bool) -> bool:
    if not text or not text[0].isalpha() or text in _WORDS or text[-1] in " :":
        return False
    if ": " in text or " #" in text or (flow and not _FLOW.isdisjoint(text)):
        return False
    return all(" " <= ch <= "~" or _printable(ch) for ch in text)


def _printable(ch: str) -> bool:
    """A character past ASCII that PyYAML writes as it is (allow_unicode) and that breaks no line. Not past
    the BMP: libyaml (CSafeDumper) quotes those where PyYAML's Python emitter would not."""
    return ("\xa0" <= ch <= "\ud7ff" or "\ue000" <= ch <= "\ufffd") and ch not in "\ufeff\u2028\u2029"
