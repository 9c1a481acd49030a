"""What a new memory's fields may be: normalised from any source (CLI, JSONL, markdown, MCP) and held to
limits far past any real memory, each error naming its field."""

from __future__ import annotations

from . import model
from hafiza.vault.errors import HafizaError
from .model import Memory
from .text import fold_text

# Aliases are searched and embedded with the memory, and weighed on every prompt: a few short phrases.
MAX_ALIASES = 16
MAX_ALIAS_CHARS = 100
# Limits where input enters (CLI, import, MCP), far past any real memory: without them a 10 MB text
# held the MCP server for 9.5 s, a 1 MB title for 58 s, 100,000 tags for 22 s.
MAX_TEXT_CHARS = 50_000      # Claude Code's own MEMORY.md is cut at 25,000 bytes
MAX_TITLE_CHARS = 300
MAX_TAGS = 32
MAX_TAG_CHARS = 64
MAX_SUPERSEDES = 32
MAX_FIELD_CHARS = 200        # scope, source
MAX_REASON_CHARS = 2_000
MAX_CLAIMS = 16              # typed claims a memory makes (hafiza.verifier probes them)
MAX_CLAIM_ARG_CHARS = 500


def _text(value, what: str, numbers: bool = True) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if numbers and isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    raise HafizaError(f"{what}: expected a string, got {value!r}", field=what)


def _strings(value, what: str) -> list[str]:
    """A list of strings from None, one string, or a list/tuple of strings (and numbers)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)):
        return [_text(v, what) for v in value if v is not None]
    raise HafizaError(f"{what}: expected a string or a list of strings, got {value!r}", field=what)


def _limit(value: str, most: int, what: str) -> str:
    if len(value) > most:
        raise HafizaError(f"{what} has {len(value):,} characters; at most {most:,}", field=what)
    return value


def _limit_list(values: list[str], most: int, chars: int, what: str) -> list[str]:
    if len(values) > most:
        raise HafizaError(f"{len(values):,} {what}; at most {most}", field=what)
    for value in values:
        if len(value) > chars:
            raise HafizaError(f"{what}: {value[:40]!r}... has {len(value):,} characters; at most {chars}", field=what)
    return values


def _input(**raw) -> dict:
    """A new memory's fields as they come from the CLI, JSONL, markdown headers or MCP, normalised (a number
    is text, a lone string a list, spacing trimmed) and held to the limits; HafizaError names the field."""
    text = _limit((_text(raw["text"], "text") or "").strip(), MAX_TEXT_CHARS, "text")
    if not text:
        raise HafizaError("the memory text is empty", field="text")
    if "\0" in text:  # git would take the file for binary and show no diff of it again
        raise HafizaError("the memory text contains NUL bytes; a memory is text", field="text")
    kind = (_text(raw["type"], "type", numbers=False) or "knowledge").strip().lower()
    if kind not in model.TYPES:
        raise HafizaError(f"unknown type {kind!r}; use one of {', '.join(model.TYPES)}", field="type")
    title = _limit((_text(raw["title"], "title") or model.first_line(text)).strip(), MAX_TITLE_CHARS, "title")
    tags = _limit_list([t.strip() for t in _strings(raw["tags"], "tags")], MAX_TAGS, MAX_TAG_CHARS, "tags")
    aliases = _merge_aliases((), _strings(raw["aliases"], "aliases"))[0]
    scope, source = _text(raw["scope"], "scope", numbers=False), _text(raw["source"], "source")
    for what, value in (("scope", scope), ("source", source)):
        _limit(value or "", MAX_FIELD_CHARS, what)
    claims = _claims(raw.get("claims"))
    return {"text": text, "type": kind, "title": title, "tag_list": tags, "tags": as_read(tags), "claims": claims,
            "claim_text": " ".join(v for c in claims for v in c["args"].values()),
            "alias_list": aliases, "aliases": as_read(aliases), "scope": scope, "source": source,
            "id": _text(raw["id"], "id", numbers=False),
            "supersedes": _limit_list(_strings(raw["supersedes"], "supersedes"), MAX_SUPERSEDES, 80, "supersedes")}


def as_read(phrases: list[str]) -> str:
    """Phrases (aliases, tags) as the secret guard reads them: one a line, as the web page's alias box sends
    them (a key the terminal wrapped, pasted there, is two phrases: its halves reached git as two aliases), and
    on one line (`password:` and its value given as two phrases)."""
    return "\n".join(phrases) + "\n" + " ".join(phrases) if phrases else ""


def _claims(value) -> list[dict]:
    """Claims as an agent or a file gives them: [{probe: NAME, args: {key: text}}], structure and size only
    (what each probe accepts is the verifier's to judge, and a claim it refuses is labelled invalid)."""
    if value in (None, [], ()):
        return []
    if not isinstance(value, (list, tuple)) or len(value) > MAX_CLAIMS:
        raise HafizaError(f"claims: a list of at most {MAX_CLAIMS} {{probe, args}} mappings", field="claims")
    out = []
    for claim in value:
        probe = claim.get("probe") if isinstance(claim, dict) else None
        args = claim.get("args") if isinstance(claim, dict) else None
        if not isinstance(probe, str) or not probe.isidentifier() or len(probe) > 40 or not isinstance(args, dict) \
                or not all(isinstance(k, str) and isinstance(v, str) and len(v) <= MAX_CLAIM_ARG_CHARS
                           and len(k) <= 40 for k, v in args.items()):
            raise HafizaError(f"claims: {str(claim)[:80]!r} is not {{probe: NAME, args: {{key: text}}}}",
                              field="claims")
        out.append({"probe": probe, "args": dict(args)})
    return out


def _content_key(memory: Memory) -> tuple[str, str]:
    """A memory's scope and text as search compares words: equal for a re-import of the same item."""
    return memory.scope, " ".join(fold_text(memory.body).split())


def inherit_aliases(heir: Memory, olds) -> Memory:
    """`heir` with the aliases of the memories it supersedes after its own: the phrases people type
    for the old memory must find the new one (issue 30, item 7: the README's own query found nothing
    after a supersede). Past MAX_ALIASES, or a hand-written phrase past MAX_ALIAS_CHARS, stays on
    the old memory only."""
    wanted = [a for old in olds for a in old.aliases if len(" ".join(a.split())) <= MAX_ALIAS_CHARS]
    merged = _merge_aliases(heir.aliases, [])[0]
    for phrase in wanted:
        if len(merged) >= MAX_ALIASES:
            break
        merged, _ = _merge_aliases(merged, [phrase])
    return heir if merged == list(heir.aliases) else heir.evolve(aliases=merged)


def _merge_aliases(existing, new) -> tuple[list[str], list[str]]:
    """(all aliases, the new ones among them): spacing collapsed, empty ones dropped, and a phrase
    already there skipped, compared as search compares words ("İzmir" = "izmir", "şifre" = "sifre").
    Raises HafizaError past MAX_ALIASES or MAX_ALIAS_CHARS."""
    kept: list[str] = []
    seen: set[str] = set()

    def take(phrases) -> list[str]:
        taken = []
        for phrase in phrases:
            phrase = " ".join(phrase.split())
            key = fold_text(phrase)
            if not phrase or key in seen:
                continue
            if len(phrase) > MAX_ALIAS_CHARS:
                raise HafizaError(f"alias {phrase[:40]!r}... has {len(phrase)} characters; at most "
                                  f"{MAX_ALIAS_CHARS} (an alias is a short phrase someone would type)",
                                  field="aliases")
            seen.add(key)
            taken.append(phrase)
        kept.extend(taken)
        return taken

    take(existing)
    added = take(new)
    if len(kept) > MAX_ALIASES:
        raise HafizaError(f"that makes {len(kept)} aliases; at most {MAX_ALIASES} per memory", field="aliases")
    return kept, added
