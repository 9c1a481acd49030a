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
