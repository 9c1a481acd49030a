"""Explicit statements in what a user typed: rules, preferences, lessons and facts they asked to keep.

No model: patterns over the folded text (hafiza.vault.format.text.fold_text, so "bundan sonra" and
"bundan sonra" without diacritics match alike), in English and Turkish. Only what the user said in so
many words counts: "remember that…", "from now on…", "always/never <do>…", "unutma…", "bundan
sonra…", "her zaman/asla … <imperative or 'we do'>", "I prefer…", corrections ("no, we use X, not Y").
Look-alikes that describe rather than instruct ("always the same error", "I never saw this", "her
zaman aynı hata çıkıyor") are left out by what follows the cue: an English verb that is not past
tense or a determiner, a Turkish sentence that ends in an imperative, a "must" or a "we do" form
(bench/capture measures both sides).
"""

from __future__ import annotations

import re
from typing import NamedTuple

from hafiza.vault.format.text import fold_text

MIN_WORDS, MAX_CHARS = 3, 400   # "never mind" is not a rule; a pasted paragraph is not one statement

_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")
# An English word after always/never that shows a description, not an instruction.
_NOT_A_VERB = (r"(?:the|a|an|this|that|these|those|it|its|mind|again|before|once|seen|saw|been|had|got|did|was|"
               r"were|went|found|heard|knew|thought|made|worked|works|happens|happened|fails|failed|same|sure|"
               r"really|ever|\w+ed)\b")
_EN = [
    ("knowledge", re.compile(r"^(?:please\s+)?(?:remember|keep in mind|don'?t forget|do not forget)"
                             r"(?:\s+(?:that|this))?\s*[:,-]?\s+(?P<rest>.+)")),
    ("rule", re.compile(r"\b(?:from now on|going forward|from here on)\b")),
    ("rule", re.compile(rf"^(?:please\s+|and\s+|also\s+|so\s+)?(?:always|never|don'?t ever|do not ever)\s+(?!{_NOT_A_VERB})\w+")),
    ("rule", re.compile(rf"^(?:we|you)\s+(?:should\s+|must\s+)?(?:always|never)\s+(?!{_NOT_A_VERB})\w+")),
    ("rule", re.compile(r"^(?:please\s+)?(?:make sure (?:to|you)|use\s+\S+(?:\s+\S+)?\s+instead of)\b")),
    ("preference", re.compile(r"^(?:i|we)(?:\s+|')(?:prefer|d rather|would rather|like to)\b")),
    ("preference", re.compile(r"^(?:no[,.!]?\s+)?(?:we|i)\s+use\s+\S.{0,60}?,?\s+not\s+\S+")),
    ("lesson", re.compile(r"^(?:lesson(?: learned)?|note to self|til)\s*[:,-]\s*(?P<rest>.+)")),
]
# Turkish: a cue, and an ending that instructs: imperative (-ma/-me, -in/-un, a bare stem people use),
# necessitative (-meli/-malı), or "we do" (-iyoruz, -iriz/-eriz/-arız).
_TR_END = re.compile(r"(?:m[ae]|[iu]n|y[iu]n|m[ae]li(?:yiz|sin|siniz|dir)?|[iu]yoruz|[aeiu]r[iu]z|m[ae]y[iu]z|"
                     r"kullan|calistir|yap|yaz|ekle|sil|at|gonder|koy|al|ver|et|tut|ac|kapat|bekle|sor|guncelle|"
                     r"[iu]yorum)$")
_TR = [
    ("knowledge", re.compile(r"^(?:lutfen\s+)?(?:sunu\s+|bunu\s+)?(?:unutma|aklinda tut|aklinda olsun|not al|hatirla)\b"
                             r"\s*[:,-]?\s*(?P<rest>.+)")),
    ("knowledge", re.compile(r"(?P<rest>.+?)[,;]?\s+(?:bunu\s+)?(?:unutma|aklinda tut|not al)\s*[.!]*$")),
    ("rule", re.compile(r"\b(?:bundan (?:sonra|boyle)|artik|her zaman|hep|asla|hicbir zaman|hic bir zaman|daima|"
                        r"sakin)\b"), "ending"),
    ("preference", re.compile(r"\b(?:tercih ederim|tercih ediyorum|tercihim|tercih ediyoruz)\b")),
    ("preference", re.compile(r"^hayir[,.!]?\s+.*\bkullan\w*\b|\bkullan\w*\b.*\bdegil\b|\bdegil\b.*\bkullan\w*\b")),
    ("lesson", re.compile(r"^(?:ders|ogrendigimiz ders|not)\s*:\s*(?P<rest>.+)")),
]
_MUST = re.compile(r"m[ae]li(?:yiz|sin|siniz|dir)?\W*$|\b(?:must|should)\b")
_RULE_WORDS = re.compile(r"\b(?:always|never|don'?t|do not|her zaman|asla|hicbir zaman|sakin)\b")


class Statement(NamedTuple):
    """An explicit statement: the memory text to propose, its type, and the sentence as the user typed it."""

    text: str
    type: str
    quote: str


def overlap(a: str, b: str) -> float:
    """Share of the informative words of `a` that `b` also has (folded, no stemming)."""
    from hafiza.indexer.search import query_terms

    wa, wb = set(query_terms(a)), set(query_terms(b))
    return len(wa & wb) / len(wa) if wa else 0.0


def sentences(text: str) -> list[str]:
    """The sentences of a turn, without the quotes a prompt may come wrapped in."""
    return [s.strip().strip("\"'“”‘’«»`").strip() for s in _SENTENCES.split(text) if s.strip()]


def find(text: str) -> list[Statement]:
    """The explicit statements in one user turn, in order."""
    out = []
    for sentence in sentences(text):
        if len(sentence) > MAX_CHARS or len(sentence.split()) < MIN_WORDS or sentence.endswith("?"):
            continue
        found = match(sentence)
        if found:
            out.append(found)
    return out


def match(sentence: str) -> Statement | None:
    folded = fold_text(sentence)
    for kind, pattern, *check in _EN + _TR:
        m = pattern.search(folded)
        if not m or (check and not _TR_END.search(_last_word(folded))):
            continue
        text = sentence
        if "rest" in m.groupdict():
            text = _cut(sentence, folded, m)
            if len(text.split()) < MIN_WORDS:
                continue
            if kind == "knowledge" and (_RULE_WORDS.search(fold_text(text)) or _MUST.search(fold_text(text))):
                kind = "rule"
        return Statement(_tidy(text), kind, sentence)
    return None


def _last_word(folded: str) -> str:
    words = re.findall(r"[\w']+", folded)
    return words[-1] if words else ""


def _cut(sentence: str, folded: str, m: re.Match) -> str:
    """The part of `sentence` the pattern's `rest` group matched in its folded form (by words: folding
    may change a word's length, never the number of words)."""
    start, end = m.span("rest")
    return " ".join(sentence.split()[len(folded[:start].split()):len(folded[:end].split())])


def _tidy(text: str) -> str:
    text = text.strip().strip("\"'“”‘’,;:-").strip()
    if text and text[-1] not in ".!":
        text += "."
    return text[:1].upper() + text[1:]
