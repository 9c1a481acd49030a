"""What a model answered: the JSON in its text, checked against the schema the caller asked for.

Hand-written: the `jsonschema` package pulls in attrs, referencing and rpds-py (a Rust extension) for
the few keywords hafiza's prompts use; a schema using any other keyword is refused (`check_schema`).
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


# What this checker implements, and the keywords that only annotate. A schema with any other keyword is refused
# before a model is asked: `pattern`, `oneOf` or `format` accepted unchecked would let through what the caller
# meant to refuse (issue 29, item 8).
CHECKED = frozenset({"type", "enum", "const", "properties", "required", "additionalProperties", "items", "minItems",
                     "maxItems", "minLength", "maxLength", "minimum", "maximum"})
ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$schema", "$comment"})


class UnsupportedSchema(HafizaError):
    """A schema asks for what this checker does not implement: a caller's mistake, found before any model call."""


def check_schema(schema: Mapping, where: str = "$") -> None:
    """Raise UnsupportedSchema naming the first keyword (or form) of `schema` this checker cannot check."""
    if not isinstance(schema, Mapping):
        raise UnsupportedSchema(f"schema {where}: expected an object, got {type(schema).__name__}")
    unknown = sorted(set(schema) - CHECKED - ANNOTATIONS)
    if unknown:
        raise UnsupportedSchema(f"schema {where}: {', '.join(map(repr, unknown))} cannot be checked here; "
                                f"use only {', '.join(sorted(CHECKED))}")
    if not isinstance(schema.get("additionalProperties", False), bool):
        raise UnsupportedSchema(f"schema {where}: additionalProperties must be true or false here")
    for key, sub in (schema.get("properties") or {}).items():
        check_schema(sub, f"{where}.{key}")
    if "items" in schema:
        check_schema(schema["items"], f"{where}[]")


def validate(value, schema: Mapping, where: str = "$") -> list[str]:
    """Problems with `value` against `schema` (empty: it is valid), each naming where it is. A schema this
    checker cannot check in full raises UnsupportedSchema."""
    check_schema(schema, where)
    return _problems(value, schema, where)


def _problems(value, schema: Mapping, where: str) -> list[str]:
    kinds = schema.get("type")
    if kinds is not None:
        kinds = [kinds] if isinstance(kinds, str) else list(kinds)
        if not any(_is(value, k) for k in kinds):
            return [f"{where}: expected {' or '.join(kinds)}, got {_kind(value)}"]
    problems = []
    if "enum" in schema and not any(_same(value, e) for e in schema["enum"]):
        problems.append(f"{where}: {value!r} is not one of {schema['enum']!r}")
    if "const" in schema and not _same(value, schema["const"]):
        problems.append(f"{where}: {value!r} is not {schema['const']!r}")
    if isinstance(value, dict):
        problems += _object_problems(value, schema, where)
    elif isinstance(value, list):
        problems += _array_problems(value, schema, where)
    elif isinstance(value, str):
        if len(value) > schema.get("maxLength", len(value)):
            problems.append(f"{where}: longer than {schema['maxLength']} characters")
        if len(value) < schema.get("minLength", 0):
            problems.append(f"{where}: shorter than {schema['minLength']} characters")
    elif _is(value, "number"):
        if value < schema.get("minimum", value):
            problems.append(f"{where}: {value} is below the minimum {schema['minimum']}")
        if value > schema.get("maximum", value):
            problems.append(f"{where}: {value} is above the maximum {schema['maximum']}")
    return problems


def _same(value, expected) -> bool:
    """JSON equality: of the same kind (True is not 1) and equal."""
    return _is(value, _kind(expected)) and value == expected


def _object_problems(value: dict, schema: Mapping, where: str) -> list[str]:
    properties = schema.get("properties", {})
    problems = [f"{where}: missing {key!r}" for key in schema.get("required", ()) if key not in value]
    for key, item in value.items():
        if key in properties:
            problems += _problems(item, properties[key], f"{where}.{key}")
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
            problems += _problems(item, schema["items"], f"{where}[{i}]")
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
    except (ValueError, RecursionError):  # RecursionError: nested thousands deep
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
        except (ValueError, RecursionError):
            start = text.find(opener, start + 1)
    return None
