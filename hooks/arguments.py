"""A tool call's bad arguments in a line per argument, for the MCP server's tool errors.

The SDK answers a call that fails a tool's schema with pydantic's own report: ~250 characters an error,
a model named like `rememberArguments`, a link to pydantic's docs each. Agents acted poorly on it and
users read it in transcripts; this says which argument, what was given and what is expected. An argument the
tool does not have at all is refused the same way (pydantic would drop it without a word).
"""

import difflib
import json
from collections.abc import Iterable

from hafiza.vault.format.text import inline

SHOWN = 40  # characters of a given value quoted back: enough to recognise it, never a pasted document

# What each of pydantic's error types expects, in the words of the JSON a client sends; `{...}` comes
# from the error's context.
EXPECTED = {
    "string_type": "a string",
    "int_type": "an integer", "int_parsing": "an integer", "int_from_float": "a whole number",
    "float_type": "a number", "float_parsing": "a number",
    "bool_type": "true or false", "bool_parsing": "true or false",
    "list_type": "a list",
    "dict_type": "an object", "model_type": "an object",
    "literal_error": "one of {expected}", "enum": "one of {expected}",
    "string_too_short": "at least {min_length} characters", "string_too_long": "at most {max_length} characters",
    "too_short": "at least {min_length} items", "too_long": "at most {max_length} items",
    "greater_than_equal": "at least {ge}", "less_than_equal": "at most {le}",
    "greater_than": "more than {gt}", "less_than": "less than {lt}",
}


def faults(errors: list[dict]) -> list[tuple[str, str]]:
    """(where, what is wrong) for each bad argument, from pydantic's `ValidationError.errors()`: the first
    error in each, and how many more it holds (a list of 50 bad ids is one line, not 50)."""
    by_argument: dict[object, list[dict]] = {}
    for error in errors:
        by_argument.setdefault(error["loc"][0] if error["loc"] else "", []).append(error)
    found = []
    for name, (first, *rest) in by_argument.items():
        more = f" (and {len(rest)} more in '{name}')" if rest else ""
        found.append((where(first["loc"]), problem(first) + more))
    return found


def where(loc: tuple) -> str:
    """`('claims', 0, 'probe')` as `claims[0].probe`."""
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc).lstrip(".")


def problem(error: dict) -> str:
    """What is expected and what was given, e.g. `expected at most 20, got 500`."""
    if error["type"] == "missing":
        return "required, not given"
    try:
        expected = "expected " + EXPECTED[error["type"]].format(**error.get("ctx", {}))
    except KeyError:  # a type not listed (or its context renamed): pydantic's own line, "should be a valid date"
        expected = error["msg"].removeprefix("Input ")
    return f"{expected}, got {shown(error.get('input'))}"


def shown(value) -> str:
    """A given value as JSON, cut to SHOWN characters (a long text or list says how long it was)."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) <= SHOWN:
        return text
    unit = "characters" if isinstance(value, str) else "items"
    return text[:SHOWN] + "…" + (f" ({len(value):,} {unit})" if isinstance(value, (str, list, dict)) else "")


def strangers(tool: str, given: Iterable[str], accepted: list[str]) -> list[tuple[str, str]]:
    """(name, what is wrong) for each argument `given` that `tool` does not have, `accepted` being the names it
    has: the nearest of them when one is close (`tag` for `tags`), and all of them, so the agent can retry."""
    names = f"(arguments: {', '.join(accepted)})" if accepted else "(it takes none)"
    found = []
    for name in given:
        if name in accepted:
            continue
        near = difflib.get_close_matches(name, accepted, n=1)
        guess = f"; did you mean '{near[0]}'?" if near else ""
        found.append((inline(name, SHOWN), f"not an argument of {tool}{guess} {names}"))
    return found
