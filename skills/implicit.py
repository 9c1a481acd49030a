"""Implicit statements: what a user said a memory should hold without saying "remember", found by a model.

"We deploy from the release branch now", "the staging DB is the one on 5433", "that broke because the
cache was warm; clear it first next time": no pattern catches these, a model can. The model only
nominates; code decides, so a confidently wrong model cannot put words in the user's mouth. An item is
kept only when:

- its quote appears verbatim (spacing aside) in one of the user's own turns of the window it was shown;
- most of its text's informative words come from that turn (a memory about the quote, not a story the
  model made up beside a real quote);
- its type is one a memory may have (facts have their own notes) and its confidence is at least 0.7;
- neither the text nor the quote holds a secret;
- the quote is not one the patterns already proposed (skills/statements.py: those are explicit).

What is kept is proposed in the inbox like the explicit statements, marked as a model's, and `--auto`
never accepts it. Never on the prompt path: `hafiza inbox file` asks the model, the warm process's
background filing does not (a model call costs money and is only made when a person runs the command).
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

from hafiza.vault.errors import HafizaError
from hafiza.vault.guard.secrets import held_secret

from .statements import MAX_CHARS, MIN_WORDS, Statement, overlap

TYPES = ("rule", "preference", "lesson", "knowledge", "identity")
MIN_CONFIDENCE = 0.7
FROM_QUOTE = 0.5          # share of the text's informative words its quote's turn must hold
WINDOW_CHARS = 12_000     # transcript text per model call
USER_CHARS, OTHER_CHARS = 2_000, 400  # a turn's text as shown to the model: the user's in full, replies cut
PER_WINDOW = 8
SCHEMA = {
    "type": "object",
    "required": ["memories"],
    "properties": {"memories": {"type": "array", "maxItems": PER_WINDOW, "items": {
        "type": "object",
        "required": ["text", "type", "quote", "confidence"],
        "properties": {"text": {"type": "string", "maxLength": MAX_CHARS},
                       "type": {"type": "string", "maxLength": 40},
                       "quote": {"type": "string", "maxLength": 1000},
                       "confidence": {"type": "number", "minimum": 0, "maximum": 1}}}}},
}
SYSTEM = ("You read a conversation between a developer and an AI coding agent and pick out what the developer "
          "said that a long-term memory should keep. Answer only with JSON.")


class Found(NamedTuple):
    statement: Statement
    turn: object              # the user's turn that holds the quote
    confidence: float


class Dropped(NamedTuple):
    quote: str
    why: str


def nominator(provider):
    """`find` asking `provider`, as skills/capture.file takes it (`nominate`); None where no model is there to ask."""
    if provider is None or not provider.available:
        return None
    return partial(find, provider)


def find(provider, turns, explicit=()) -> tuple[list[Found], list[Dropped]]:
    """The implicit statements a model nominates in `turns` (one or more sessions) and code keeps, and what
    it dropped and why. `explicit` are the quotes the patterns found already. A window whose answer does
    not validate is skipped (the provider's budget counts and logs it); running out of budget ends the
    search, keeping what was found."""
    from hafiza.vault.offline.provider import BudgetSpent, InvalidAnswer, ProviderError

    found, dropped = [], []
    seen = {_plain(q) for q in explicit}
    for window in windows(turns):
        try:
            answer = provider.ask(_prompt(window), SCHEMA, system=SYSTEM)
        except InvalidAnswer:
            continue
        except BudgetSpent:
            break
        except ProviderError as exc:
            raise HafizaError(f"the model could not be asked: {exc.message}") from None
        for item in answer.data["memories"]:
            kept = check(item, window, seen)
            if isinstance(kept, Dropped):
                dropped.append(kept)
            else:
                seen.add(_plain(kept.statement.quote))
                found.append(kept)
    return found, dropped


def check(item: dict, window, seen: set[str]) -> Found | Dropped:
    """`item` as code lets it through, or why not."""
    quote, text = " ".join(item["quote"].split()), " ".join(item["text"].split())
    kind, plain = item["type"].strip().lower(), _plain(quote)
    holding = [t for t in window if plain in _plain(t.text)] if plain else []
    turn = next((t for t in holding if t.role == "user"), None)
    why = None
    if turn is None:
        why = "quoted from the agent, not the user" if holding else "quote not in the transcript"
    elif any(plain in s or s in plain for s in seen):
        why = "already found as an explicit statement"
    elif kind not in TYPES:
        why = f"type {kind!r} is not one a memory may have"
    elif item["confidence"] < MIN_CONFIDENCE:
        why = f"confidence {item['confidence']:.2f}"
    elif len(text.split()) < MIN_WORDS:
        why = "too short"
    elif held_secret(text) or held_secret(quote):
        why = "holds a secret"
    elif overlap(text, turn.text) < FROM_QUOTE:
        why = "its words are not the user's"
    if why:
        return Dropped(quote[:120], why)
    return Found(Statement(text, kind, quote), turn, float(item["confidence"]))


def windows(turns) -> list[list]:
    """The turns in slices of about WINDOW_CHARS of shown text, one session each, each with a user turn."""
    out, current, size, session = [], [], 0, None
    for turn in turns:
        shown = len(_shown(turn))
        if current and (turn.session != session or size + shown > WINDOW_CHARS):
            out.append(current)
            current, size = [], 0
        current.append(turn)
        size, session = size + shown, turn.session
    if current:
        out.append(current)
    return [w for w in out if any(t.role == "user" for t in w)]


def _prompt(window) -> str:
    lines = "\n".join(f"[{i}] {_shown(t)}" for i, t in enumerate(window, 1))
    return (f"Conversation (the developer is 'user'):\n{lines}\n\n"
            "List what the user said that should be remembered in later sessions: standing rules and "
            "preferences they stated in passing, lessons from what went wrong, facts about their projects "
            "and tools. Only what the user said, not what the agent said or did. Skip small talk, questions, "
            "one-off requests and anything already said as 'remember…', 'from now on…', 'always/never…'. "
            f"For each: text (the memory, one or two sentences, in the user's language and words), type "
            f"(one of {', '.join(TYPES)}), quote (the user's exact words it comes from, copied verbatim), "
            f"confidence (0-1). At most {PER_WINDOW}; none is a fine answer. "
            'Answer as JSON: {"memories": [{"text": str, "type": str, "quote": str, "confidence": number}]}')


def _shown(turn) -> str:
    text = " ".join(turn.text.split())
    limit = USER_CHARS if turn.role == "user" else OTHER_CHARS
    return f"{turn.role}: {text[:limit]}" + ("…" if len(text) > limit else "")


def _plain(text: str) -> str:
    """Text compared as a quote: spacing and case aside, diacritics kept (a quote is the user's letters)."""
    return " ".join(text.split()).casefold()
