"""The secret guard at the write boundary: text with credentials is refused, never written.

`scan` reads text three ways: as written; without invisible format characters
(a zero-width space inside a token must not hide it); and, for the prefixed
token formats, with a line break inside a token joined (a key wrapped at the
line end). Documented example keys and obvious placeholders are not secrets:
they pass, with a warning.

Time matters: `check` runs on every write and on every committed file. A typical
2 KB memory scans in about 0.3 ms: a token pattern runs only when its prefix is
in the text. Each pattern starts where its alphabet starts (a lookbehind) and
bounds its repeats, so a failed attempt never rescans the run it failed on and
a scan stays linear: tests/test_secrets.py checks that on the patterns
themselves, bench/secret_guard.py times 1 MB adversarial inputs.

`key = value` forms are read in assigned.py, passwords typed on a command line in typed.py, the
published token formats are in tokens.py.
"""

import base64
import binascii
import codecs
import math
import re
from bisect import bisect_right
from collections import Counter
from functools import lru_cache
from itertools import accumulate
from typing import NamedTuple

from hafiza.vault.errors import SecretRefused
from . import assigned, typed
from .tokens import CLASS_PATTERNS, HEX32, NEEDLES, PATTERNS, PREFIXED, PREFIXES, TWILIO_SID, Lazy, is_example


class Scan(NamedTuple):
    """What `scan` found: kinds of real secret, and example keys or placeholders (kept, with a warning)."""

    secrets: list[str]
    examples: list[str]


_PEM_BEGIN = Lazy(r"-----BEGIN ([A-Z0-9 ]{1,60})-----")
_PEM_END = Lazy(r"-----END [A-Z0-9 ]{1,60}-----")
# Lines after a BEGIN line with no END: base64 and the old encrypted-key headers. Each repeat eats a line break.
_PEM_BODY = Lazy(r"(?:\r?\n[ \t]*(?:[A-Za-z0-9+/]{16,}={0,2}|Proc-Type:[^\n]*|DEK-Info:[^\n]*)[ \t]*)*")
PEM_MAX_BYTES = 100_000  # an END further away than this belongs to some other block

# Long runs of token characters; checked for entropy below.
_CANDIDATE = Lazy(r"[A-Za-z0-9+/=_\-~]{32,}")  # `~`: Azure AD secrets and some session tokens hold it
_SEGMENT = Lazy(r"[^/]{32,}")
ENTROPY_BITS = 4.3  # per character; hex (git shas, hashes) tops out at 4.0, English words far lower
# camelCase identifiers (getUserProfileById2Fa...) have three character classes and high entropy too,
# but nearly all of their characters sit in word-like runs; in 6,000 random base62 strings of 32-64
# characters at most 78% did, in long identifiers 85% and more.
_WORDLIKE = Lazy(r"[A-Z]?[a-z]{3,}")
WORDLIKE_SHARE = 0.8
GENERIC = "long high-entropy string"
# Words joined by separators (paths, URLs, CSS-module names like ProductCard_container__3kXyZ9aB,
# Cryptography_HAS_TLSv1_3): most of their parts are words, acronyms, short, or hex (a sha in a URL). Of
# ~128,000 random base64 and as many base64url strings of 32-64 characters that pass the rules above and have
# two or more separator runs, 3 and 2 reached a share of 0.6.
_SEPARATORS = Lazy(r"[/_\-+~]+")
_WORD_PART = Lazy(r"[A-Z]?[a-z]+(?:[A-Z][a-z]+)*|[A-Z]+|[0-9]{1,4}|[0-9a-f]{7,}")
SEPARATED_WORD_SHARE = 0.6
# Content addresses and embedded media: sha512-… (npm, SRI), h1:… (go.sum), the start of a PNG or SSH public key.
_DIGEST_PREFIX = Lazy(r"(?i)(?:sha(?:1|224|256|384|512)|md5)-")
_DIGEST_BEFORE = Lazy(r"(?i)(?:sha(?:1|224|256|384|512)|md5|h1|blake2[bs]?)[:=]$")
_MEDIA = ("iVBORw0KGgo", "/9j/", "R0lGOD", "UklGR", "PHN2Zy", "PD94bWwg", "JVBERi0", "AAAAB3NzaC1", "AAAAC3NzaC1",
          "AAAAE2VjZHNh")
_DATA_URI = Lazy(r"data:[\w.+\-]{1,60}/[\w.+\-]{1,60}(?:;[\w.+\-]{1,40}=[\w.+\-]{1,100}){0,5};base64,"
                       r"[A-Za-z0-9+/=%]*")

# Zero-width and other invisible format characters (U+200B-U+200F, U+2060-U+206F, U+FEFF, soft hyphen...).
_INVISIBLE = Lazy("[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
                        "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb\U0001bca0-\U0001bca3"
                        "\U0001d173-\U0001d17a\U000e0000-\U000e007f]+")
# A line break inside a token: trailing spaces and backslash, the next line's indentation, then a token character.
_RUN = r"A-Za-z0-9_\-+/=.:"
_BREAK = r"[ \t]*(?:\\[ \t]*)?\r?\n[ \t]*(?=[A-Za-z0-9_\-+/=])"
_WRAP_CONTINUED = Lazy(rf"[{_RUN}]{{1,256}}(?P<wrap>{_BREAK})")
# ASCII in UTF-16: each character then a NUL (little-endian); big-endian read one byte late lacks the last NUL.
_UTF16_RUN = Lazy(rb"(?:[\t\n\r\x20-\x7e]\x00){4,}[\t\n\r\x20-\x7e]?")


def _merge(spans) -> list[tuple[int, int]]:
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(s, e) for s, e in merged]


class _Spans:
    """Merged spans; `overlaps` is a binary search, so checking every candidate stays n log n."""

    def __init__(self, spans):
        merged = _merge(spans)
        self.starts, self.ends = [s for s, _ in merged], [e for _, e in merged]

    def overlaps(self, start: int, end: int) -> bool:
        i = bisect_right(self.starts, end - 1) - 1
        return i >= 0 and self.ends[i] > start


class _View:
    """`source` with the spans `cuts()` returns cut out; `span` maps a span of `text` back to `source`.

    `text` is given, built in one C call, and the position map is only built when a span is mapped: a
    text with thousands of zero-width characters and no secret never pays for it.
    """

    def __init__(self, text: str, cuts):
        self.text, self._cuts, self._at = text, cuts, None

    def cuts(self) -> list[tuple[int, int]]:
        if not isinstance(self._cuts, list):
            self._cuts = self._cuts()
        return self._cuts

    def span(self, start: int, end: int) -> tuple[int, int]:
        if self._at is None:
            cuts = self.cuts()
            removed = list(accumulate(e - s for s, e in cuts))
            self._at = [0] + [s - (r - (e - s)) for (s, e), r in zip(cuts, removed)]
            self._shift = [0] + removed

        def origin(pos):
            return pos + self._shift[bisect_right(self._at, pos) - 1]
        return origin(start), origin(end - 1) + 1


def _cut(source: str, cuts: list[tuple[int, int]]) -> str:
    return "".join(source[a:b] for a, b in zip([0] + [e for _, e in cuts], [s for s, _ in cuts] + [None]))


@lru_cache(maxsize=256)
def _wrap_after(needles: frozenset[str]) -> re.Pattern:
    """A run of token characters holding one of `needles` (a known prefix), then a line break."""
    prefixes = "|".join(map(re.escape, sorted(needles)))
    # The lookahead is bounded and starts only where a run starts, so each run is read a fixed number of times.
    return re.compile(rf"(?<![{_RUN}])(?=[{_RUN}]{{0,256}}?(?:{prefixes}))[{_RUN}]{{1,256}}(?P<wrap>{_BREAK})")


def _wraps(text: str, present: set[str]) -> list[tuple[int, int]]:
    """Line breaks (with a trailing backslash, spaces around) inside what may be a split prefixed token.

    The run before the break must hold a known prefix, or continue a run already joined: ordinary prose
    lines are left alone, so most texts need no joined view at all.
    """
    wraps, pos, pattern = [], 0, _wrap_after(frozenset(present))
    while m := pattern.search(text, pos):
        wraps.append(m.span("wrap"))
        pos = m.end()
        while m := _WRAP_CONTINUED.match(text, pos):
            wraps.append(m.span("wrap"))
            pos = m.end()
    return wraps


def _pattern_hits(text: str, present: set[str]):
    """(name, start, end, verdict) for each prefixed-format match; `present` are the needles in `text`."""
    for name, needles, pattern, verdict in PATTERNS:
        if present.isdisjoint(needles):
            continue
        for m in pattern.finditer(text):
            found = verdict(m)
            if found:
                yield (name, *m.span("secret" if "secret" in pattern.groupindex else 0), found)


def _pem_blocks(text: str):
    """(is private, start, end) of each PEM block; a BEGIN line without its END runs over its base64 lines."""
    if "-----BEGIN " not in text:
        return
    ends = [(m.start(), m.end()) for m in _PEM_END.finditer(text)]
    pos = 0
    while m := _PEM_BEGIN.search(text, pos):
        i = bisect_right(ends, (m.end(), 0))
        following = _PEM_BEGIN.search(text, m.end())
        closed = i < len(ends) and ends[i][0] - m.end() < PEM_MAX_BYTES
        if closed and (not following or ends[i][0] < following.start()):
            end = ends[i][1]
        else:
            end = _PEM_BODY.match(text, m.end()).end()
        yield "PRIVATE KEY" in m[1], m.start(), end
        pos = end


def _twilio(text: str) -> list:
    if "AC" not in text or not TWILIO_SID.search(text):
        return []
    tokens = [m.span() for m in HEX32.finditer(text)]
    spans = [m.span() for m in TWILIO_SID.finditer(text)] + tokens if tokens else []
    return [("Twilio auth token", start, end, "secret") for start, end in spans]


def _entropy(s: str) -> float:
    counts = Counter(s)
    return -sum(n / len(s) * math.log2(n / len(s)) for n in counts.values())


def _decodes_to_text(s: str) -> bool:
    """Base64 of a sentence is not a key."""
    try:
        raw = base64.b64decode(s + "=" * (-len(s) % 4), altchars=b"-_" if "-" in s or "_" in s else None)
        decoded = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return False
    return decoded.isprintable() and decoded.count(" ") * 12 >= len(decoded)


def _looks_random(s: str) -> bool:
    classes = sum(bool(p.search(s)) for p in CLASS_PATTERNS)
    if classes < 3 or _entropy(s) < ENTROPY_BITS:
        return False
    if sum(map(len, _WORDLIKE.findall(s))) >= WORDLIKE_SHARE * len(s):
        return False
    parts = _SEPARATORS.split(s)
    words = sum(len(part) for part in parts if len(part) <= 3 or _WORD_PART.fullmatch(part))
    return not (len(parts) >= 3 and words >= SEPARATED_WORD_SHARE * len(s)) and not _decodes_to_text(s)


def _in_url(text: str, start: int) -> bool:
    """Whether the run at `start` continues a URL: `://` earlier in the same word."""
    before = text[max(0, start - 256):start]
    return "://" in before[max(map(before.rfind, " \t\n\"'<>()")) + 1:]


def _high_entropy(text: str, taken: _Spans):
    public = _Spans([m.span() for m in _DATA_URI.finditer(text)] + [(s, e) for private, s, e in _pem_blocks(text)
                                                                    if not private])
    for m in _CANDIDATE.finditer(text):
        pieces = [m.span()]
        if "/" in m[0] and _in_url(text, m.start()):
            # A URL path is names and ids joined by slashes (github.com/org/repo/blob/<sha>/...): judge each alone.
            pieces = [(m.start() + s.start(), m.start() + s.end()) for s in _SEGMENT.finditer(m[0])]
        for start, end in pieces:
            token = text[start:end]
            if (taken.overlaps(start, end) or public.overlaps(start, end) or _DIGEST_PREFIX.match(token)
                    or token.startswith(_MEDIA) or _DIGEST_BEFORE.search(text, max(0, start - 8), start)):
                continue
            if _looks_random(token):
                yield GENERIC, start, end, "example" if is_example(token) else "secret"


def _hits(text: str, present: set[str]) -> list[tuple[str, int, int, str]]:
    """Every finding in `text`: (name, start, end, 'secret' or 'example'). Later detectors skip earlier finds."""
    hits = list(_pattern_hits(text, present))
    hits += [("private key", s, e, "secret") for private, s, e in _pem_blocks(text) if private]
    hits += _twilio(text)
    hits += [tuple(hit) for hit in typed.find(text)]
    taken = _Spans(h[1:3] for h in hits)
    hits += [hit for hit in assigned.find(text) if not taken.overlaps(hit[1], hit[2])]
    hits += _high_entropy(text, _Spans(h[1:3] for h in hits))
    taken = _Spans(h[1:3] for h in hits)
    if not present.isdisjoint(PREFIXES):
        hits += [("placeholder token", *m.span(), "example") for m in PREFIXED.finditer(text)
                 if not taken.overlaps(*m.span()) and is_example(m[0])]
    return hits


def _find(text: str) -> list[tuple[str, int, int, str]]:
    """`_hits` over the cleaned and joined views, with spans in `text`."""
    cleaned = text if text.isascii() else _INVISIBLE.sub("", text)
    clean = _View(cleaned, lambda: [m.span() for m in _INVISIBLE.finditer(text)] if cleaned != text else [])
    present = {needle for needle in NEEDLES if needle in clean.text}
    hits = [(name, *clean.span(s, e), verdict) for name, s, e, verdict in _hits(clean.text, present)]
    wraps = [clean.span(s, e) for s, e in _wraps(clean.text, present)] if present else []
    if not wraps:
        return hits
    cuts = _merge(wraps + clean.cuts())
    joined = _View(_cut(text, cuts), lambda: cuts)
    taken = _Spans(h[1:3] for h in hits if h[0] != GENERIC)
    split = []
    for name, s, e, verdict in _pattern_hits(joined.text, {n for n in NEEDLES if n in joined.text}):
        start, end = joined.span(s, e)
        # Only what a line break split; a token ending a line would otherwise grow into the next word.
        if verdict == "secret" and "\n" in text[start:end] and not taken.overlaps(start, end):
            split.append((name, start, end, verdict))
    # A split key's long half may already count as a high-entropy string: name it by its format instead.
    joined_spans = _Spans(h[1:3] for h in split)
    return [h for h in hits if h[0] != GENERIC or not joined_spans.overlaps(h[1], h[2])] + split


def _shown(token: str) -> str:
    token = _INVISIBLE.sub("", token).replace("\n", " ")
    return token if len(token) <= 24 else token[:20] + "…"


def scan(text: str) -> Scan:
    """Kinds of real secret in `text`, and the example keys and placeholders it holds (those pass)."""
    hits = _find(text)
    secrets = [name for name, _, _, verdict in hits if verdict == "secret"]
    examples = [f"{name} ({_shown(text[s:e])})" for name, s, e, verdict in hits if verdict == "example"]
    return Scan(list(dict.fromkeys(secrets)), list(dict.fromkeys(examples)))


def find_secrets(text: str) -> list[str]:
    """Names of the kinds of secret found in `text` (empty when clean)."""
    return scan(text).secrets


def held_secret(text: str) -> bool:
    """Whether `text` holds a secret, or held one that `mask` removed: what the conversation index gives
    capture is masked, and "my token is [secret removed: ...]" is no memory to propose (issue 30, item 8)."""
    return MASKED in text or bool(find_secrets(text))


def _utf16(data: bytes) -> str | None:
    """The codec when `data` is UTF-16 text: a BOM, or NULs at nearly every other byte (ASCII in UTF-16)."""
    if data[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
        return "utf-16"
    even, odd = data[0::2].count(0), data[1::2].count(0)
    if odd > len(data) // 4 and even * 10 < odd:
        return "utf-16-le"
    if even > len(data) // 4 and odd * 10 < even:
        return "utf-16-be"
    return None


def text_for_scan(data: bytes) -> str:
    """Text to scan from bytes in any encoding: UTF-8, Latin-1 or cp1254, UTF-16 with or without BOM, binary.

    A file that is not UTF-8 gets every reading that could hold a token, joined by blank lines.
    """
    if codec := _utf16(data):
        return data.decode(codec, "replace")
    try:
        views = [data.decode("utf-8")]
    except UnicodeDecodeError:
        # cp1254 is Latin-1 with the Turkish letters: a hand-edited `şifre:` file from Windows reads right.
        views = [data.decode("utf-8", "replace"), data.decode("cp1254", "replace")]
    if b"\0" in data:
        # A binary file: the UTF-16 strings inside it, at either byte alignment (what `strings -el` finds).
        views += [run.replace(b"\0", b"").decode("ascii") for run in _UTF16_RUN.findall(data)]
    return "\n\n".join(views)


def scan_bytes(data: bytes) -> Scan:
    """`scan` for bytes that may not be UTF-8 (hand-edited files, UTF-16, binaries)."""
    return scan(text_for_scan(data))


MASKED = "[secret removed: "  # what `mask` puts where a secret was


def mask(text: str) -> str:
    """`text` with each real secret replaced by `[secret removed: KIND]`, for keeping a refused edit as a draft."""
    hits = sorted((s, e, name) for name, s, e, verdict in _find(text) if verdict == "secret")
    out, pos = [], 0
    for start, end, name in hits:
        if start >= pos:
            out += [text[pos:start], f"{MASKED}{name}]"]
        pos = max(pos, end)  # an overlapping find widens the span already removed
    return "".join(out) + text[pos:]


def check(text: str, where: str = "text", field: str | None = None) -> list[str]:
    """Raise SecretRefused naming what was found and the input field (the caller writes nothing).

    Otherwise return one warning per example key or placeholder kept (empty when clean).
    """
    found = scan(text)
    if found.secrets:
        raise SecretRefused(
            f"refused to write {where}: it contains what looks like a secret "
            f"({', '.join(found.secrets)}). Remove it and store a pointer to where the secret lives instead.",
            field=field or where,
        )
    return [f"{where}: kept {example}, which looks like a documented example or a placeholder, not a real secret"
            for example in found.examples]
