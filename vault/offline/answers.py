"""What a model answered: the JSON in its text, checked against the schema the caller asked for.

Hand-written: the `jsonschema` package pulls in attrs, referencing and rpds-py (a Rust extension) for
the few keywords hafiza's prompts use.
"""

from __future__ import annotations

import json
import re
from typing import Mapping

from hafiza.vault.errors import HafizaError

RAW_KEPT = 500  # characters of a discarded answer kept for the log


class InvalidAnswer(HafizaError):
    """The model answered, but not JSON matching the schema. `raw` is its text, truncated, for the log."""

    def __init__(self, message: str, raw: str = "", *, tokens_in: int = 0, tokens_out: int = 0):
        super().__init__(message)
        self.raw = raw[:RAW_KEPT]
        self.tokens_in, self.tokens_out = tokens_in, tokens_out  # spent all the same: a Budget counts them


# -- the schema subset -------------------------------------------------------------------------------
# Hand-written: the `jsonschema` package pulls in attrs, referencing and rpds-py (a Rust extension) for
# what is about fifty lines over the few keywords our prompts use.

_KINDS = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None),
          "number": (int, float), "integer": int}


def _is(value, kind: str) -> bool:
    if isinstance(value, bool) and kind in ("number", "integer"):
        return False  # True is an int in Python, not a number in JSON
    if kind == "integer" and isinstance(value, float):
        return value.is_integer()  # JSON has one number type: 3.0 is an integer
    return isinstance(value, _KINDS.get(kind, ()))


def _kind(value) -> str:
    return next((k for k in ("null", "boolean", "integer", "number", "string", "array", "object") if _is(value, k)),
                type(value).__name__)


def validate(value, schema: Mapping, where: str = "$") -> list[str]:
    """Problems with `value` against `schema` (empty: it is valid), each naming where it is."""
    kinds = schema.get("type")
    if kinds is not None:
        kinds = [kinds] if isinstance(kinds, str) else list(kinds)
        if not any(_is(value, k) for k in kinds):
            return [f"{where}: expected {' or '.join(kinds)}, got {_kind(value)}"]
    problems = []
    if "enum" in schema and not any(_is(value, _kind(e)) and value == e for e in schema["enum"]):
        problems.append(f"{where}: {value!r} is not one of {schema['enum']!r}")
    if isinstance(value, dict):
        problems += _object_problems(value, schema, where)
    elif isinstance(value, list):
        problems += _array_problems(value, schema, where)
    elif isinstance(value, str) and len(value) > schema.get("maxLength", len(value)):
        problems.append(f"{where}: longer than {schema['maxLength']} characters")
    elif _is(value, "number"):
        if value < schema.get("minimum", value):
            problems.append(f"{where}: {value} is below the minimum {schema['minimum']}")
        if value > schema.get("maximum", value):
            problems.append(f"{where}: {value} is above the maximum {schema['maximum']}")
    return problems


def _object_problems(value: dict, schema: Mapping, where: str) -> list[str]:
    properties = schema.get("properties", {})
    problems = [f"{where}: missing {key!r}" for key in schema.get("required", ()) if key not in value]
    for key, item in value.items():
        if key in properties:
            problems += validate(item, properties[key], f"{where}.{key}")
        elif schema.get("additionalProperties") is False:
            problems.append(f"{where}: unexpected key {key!r}")
    return problems


def _array_problems(value: list, schema: Mapping, where: str) -> list[str]:
    problems = []
    if len(value) < schema.get("minItems", 0):
        problems.append(f"{where}: fewer than {schema['minItems']} items")
    if len(value) > schema.get("maxItems", len(value)):
        problems.append(f"{where}: more than {schema['maxItems']} items")
    if "items" in schema:
        for i, item in enumerate(value):
            problems += validate(item, schema["items"], f"{where}[{i}]")
    return problems


# -- reading a model's text --------------------------------------------------------------------------

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\r?\n(.*?)```", re.S)
_DECODER = json.JSONDecoder()
MAX_STARTS = 200  # `{` positions tried in prose; each failed try rereads the rest, so keep it bounded


def extract_json(text: str):
    """The JSON object or array in a model's answer: the whole text, a ```json fence, or the first {...}."""
    found = next((value for value in _candidates(text) if value is not None), None)
    if found is None:
        raise InvalidAnswer("the model's answer holds no JSON object", text)
    return found


def _candidates(text: str):
    """Readings of `text`, cheapest first; a generator, so the costly ones run only when needed."""
    yield loads(text.strip())
    for fence in _FENCE.finditer(text):
        yield loads(fence.group(1).strip())
    yield _first_balanced(text, "{")
    yield _first_balanced(text, "[")


def loads(text: str):
    """The JSON object or array `text` is, or None."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, (dict, list)) else None


def _first_balanced(text: str, opener: str):
    """The first `opener` in `text` where a whole JSON value starts (raw_decode balances the brackets)."""
    start = text.find(opener)
    for _ in range(MAX_STARTS):
        if start < 0:
            return None
        try:
            return _DECODER.raw_decode(text, start)[0]
        except ValueError:
            start = text.find(opener, start + 1)
    return None
