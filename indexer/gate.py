"""The recall gate: which prompts get silence before any search runs.

Machine-generated turns (task notifications, command output, system
reminders, interrupted-request markers, batch "return only JSON" prompts),
very short prompts and prompts without one informative term get nothing.
Stdlib only: it runs first on the prompt path.
"""

from __future__ import annotations

import re

from .text import terms
from .stopwords import informative

MIN_CHARS = 6
# Markers of turns that a program wrote, not a person.
_MACHINE = re.compile(
    r"^\s*(?:<(?:task-notification|command-name|command-message|command-args|local-command-stdout|"
    r"local-command-stderr|system-reminder|bash-stdout|bash-stderr|user-prompt-submit-hook|tool_result)\b"
    r"|\[Request interrupted by user|Caveat: The messages below were generated"
    r"|This session is being continued from a previous conversation)",
    re.IGNORECASE,
)
_BATCH_JSON = re.compile(
    r"(?:return|respond|reply|output|answer)\s+(?:with\s+)?(?:only|just|strictly)\s+(?:valid\s+|a\s+|the\s+)?json"
    r"|(?:sadece|yalnızca|yalnizca)\s+json",
    re.IGNORECASE,
)


def silence_reason(prompt: str | None) -> str | None:
    """Why this prompt gets no recall, or None when it may."""
    if not prompt or len(prompt.strip()) < MIN_CHARS:
        return "too short"
    if _MACHINE.search(prompt):
        return "machine-generated turn"
    if _BATCH_JSON.search(prompt[:2000]) or _BATCH_JSON.search(prompt[-500:]):
        return "batch prompt asking for JSON only"
    if not informative(terms(prompt)):
        return "no informative term"
    return None


# A question that says it is about the technology in general, not about this team's use of it ("what is
# TimescaleDB compression, conceptually?", "git rebase ile merge arasındaki fark ne?") unless it says "our",
# "bizde" and the like. In the sets written blind, 92 chit-chat prompts and one answerable prompt (with "bizde")
# say so; a memory about the team's Grafana or Go version matched their words (issue 34, round four). Round six
# added the forms of the chit-chat the twelve spent sets still answered ("when to use which", "actually do",
# "hangisini tercih edersin", "türleri nelerdir", "genel öneriler"): 7 of their 720 chit-chat prompts silent, no
# answerable prompt changed (bench/tune.py). Round seven added "in simple terms", "compared to", "what does ... mean",
# "ne demek": 5 of the seventeen spent sets' 991 chit-chat prompts silent (3 of them r50's), none answerable changed;
# "vs", "versus" and "karşılaştır" too lost 3 answerable prompts ("GunceImage vs next/image — which should I use").
# After r51 and r52 were spent: "how does" a longer subject "work", "is there a ... difference", "arasında ... fark":
# 3 of the nineteen spent sets' chit-chat prompts silent, none answerable changed; "what happens if" lost 3 ("what
# happens if the same reading shows up twice from a device?").
_GENERAL = re.compile(
    r"\b(?:in general|generally|generally speaking|conceptually|in theory|general question"
    r"|genel olarak|genel anlamda|genel bir soru|kavramsal(?: olarak)?|teoride|teorik olarak"
    r"|difference between|differ(?:s)? from|aras[ıi]ndaki fark\w*|fark[ıi]n?[ıi]? (?:ne(?:dir)?|anlat\w*|a[çc][ıi]kla\w*)"
    r"|genel bir kar[şs][ıi]la[şs]t[ıi]rma\w*|how does .{1,60}? work|(?:is|are) there (?:a |any )?(?:\w+ )?difference"
    r"|aras[ıi]nda .{0,30}?fark\w*"
    r"|nas[ıi]l [çc]al[ıi][şs][ıi]r|when to use which|actually do(?:es)?|as a standard|time complexity"
    r"|hangisini tercih eder\w*|ne zaman kullan[ıi]l[ıi]r|t[üu]rleri (?:nelerdir|neler)|genel [öo]neri\w*"
    r"|in simple terms|in plain (?:english|words)|basit[çc]e|basit bir dille|compared? (?:to|with)|compares (?:to|with)"
    r"|what does .{1,40}? mean|ne (?:demek|anlama gelir)\w*)\b",
    re.IGNORECASE)
# "we" in a Turkish verb too: "kullanıyoruz", "koyuyor muyuz", "yapmalıyız".
_OURS = re.compile(r"\b(?:our|ours|we|us|here|burada|biz|bizim|bizde|bizdeki|bize|ekibimiz\w*"
                   r"|\w+yor(?:uz| muyuz)|\w+(?:mal[ıi]y[ıi]z|meliyiz))\b", re.IGNORECASE)


# A reaction to the last answer: thanks, an apology, "it worked", delight; or a request to say it again otherwise
# ("explain that again more simply", "bunu tablo olarak göster"). Its other words are about that answer ("ok that
# fixed it", "sorry, I meant the other file"), so the recent turns never make it a question about their subject
# (recall.Recall._implicit). Written from the general forms of both languages, not from any prompt set; issue 34,
# round seven, on the sixteen spent sets (bench/tune.py): chit-chat silent 0.948 -> 0.956 (7 of 880 prompts, each
# loud through the turns), no answerable prompt changed; the requests to say it again, on seventeen: 0.957 -> 0.959.
_REACTION = re.compile(
    r"\b(?:thanks?|thank you|thx|ty|cheers|sorry|my bad|oops|never ?mind|awesome|perfect|nice|great|cool|wow|lol"
    r"|haha\w*|worked|works now|fixed it|te[şs]ekk[üu]r\w*|sa[ğg] ?ol\w*|eyvallah|kusura bakma\w*|pardon"
    r"|[öo]z[üu]r dile\w*|s[üu]per\w*|harika|m[üu]kemmel|tamamd[ıi]r|[çc]al[ıi][şs]t[ıi]|d[üu]zeldi|oldu bu"
    r"|explain (?:that|it|this) again|more simply|rephrase\w*|say (?:that|it) again|(?:as|in) bullet points|as a table"
    r"|tablo olarak|madde madde|daha (?:basit|k[ıi]sa|sade)\w*|tekrar anlat\w*|yeniden anlat\w*)\b"
    r"|[\U0001F389\U0001F64F\U0001F44D\U0001F44F\U0001F60A\U0001F604\U0001F605]|(?<!\w)[:;]-?[)D](?!\w)",
    re.IGNORECASE)


KEYWORD_QUERY_WORDS = 4  # more words than this are a sentence, whatever they are


def keyword_query(query: str) -> bool:
    """Whether `query` is a few words naming a subject ("deploy", "redis cache ttl", "paket yöneticisi") rather
    than a sentence: no word of it is a stop word. An agent's query of that form (MCP `recall`) is a search, as
    `hafiza search` is; held to the hook's floor, one word found in many memories ("deploy") found nothing."""
    words = [terms(word)[:1] for word in query.split()]  # each word whole: "on-call", not "on" and "call"
    return 0 < len(words) <= KEYWORD_QUERY_WORDS and all(word and informative(word) for word in words)


def reaction(prompt: str) -> bool:
    """Whether `prompt` reacts to the last answer (thanks, sorry, "that worked", 🎉) or asks for it again otherwise
    ("more simply", "as a table") rather than asking anew."""
    return bool(_REACTION.search(prompt))


def general_question(prompt: str) -> bool:
    """Whether `prompt` asks about something in general rather than about the team's own setup: recall then
    asks more evidence of it (recall.Floor.general_idf), as a person asking "in general" wants no memory."""
    return bool(_GENERAL.search(prompt)) and not _OURS.search(prompt)
