"""A memory's frontmatter as Obsidian's Properties view holds it: flat values, links it resolves, valid tags.

Many people keep the vault open in Obsidian, whose Properties view shows and edits text, lists of text,
numbers, dates and checkboxes, and nothing nested (help.obsidian.md, Properties). hafiza wrote `verified`
and each claim as mappings, which the view showed as raw JSON, and the ids in `supersedes` and
`superseded_by` as plain words, so the graph view was unconnected dots (issue 32). Written now:

- a memory another one names is a link, `"[[id]]"` (Obsidian resolves a link by file name, and a memory's
  file is named by its id); a fact note's attribute is `"[[facts/acme#based-in]]"`;
- `verified` is its status, with `verified_at`, `verified_by`, `verified_note` and `verified_commit` beside it;
- a claim is one line: `path scripts/seed.py`, `contains README.md | hafiza demo`; one that has no such
  line (a hand-written oddity, a hostile argument) is its JSON on one line;
- a tag holds only letters, digits, `_`, `-` and `/`, and not only digits (help.obsidian.md, Tags).

Everything here reads the form written before as well, so a vault migrates one memory at a time, as each
is next written (model.from_metadata reads both, model.to_metadata writes the new one).
"""

from __future__ import annotations

import json
import re

from .ids import slugify
from .paths import FACT_DOC, FACTS, MEMORIES

# ---- links

_LINK = re.compile(r"^\[\[([^\[\]|]*)(?:\|[^\[\]]*)?\]\]$")


def link(ref: str) -> str:
    """How a memory names `ref` in its frontmatter: `[[id]]`, or `[[facts/acme#based-in]]` for a fact's
    attribute (recall's `fact:acme/based-in`)."""
    if ref.startswith(FACT_DOC):
        note, _, attribute = ref[len(FACT_DOC):].partition("/")
        return f"[[{FACTS}/{note}#{attribute}]]" if attribute else f"[[{FACTS}/{note}]]"
    return f"[[{ref}]]"


def unlink(value: str) -> str:
    """What a reference names, written as a link or, as before issue 32, plain: `[[a|shown]]`, `[[memories/a]]`,
    `[[a.md]]` and `a` name the memory `a`; `[[facts/acme#based in]]` the fact `fact:acme/based-in`."""
    text = value.strip()
    match = _LINK.match(text)
    if not match:
        return text
    target, _, heading = match.group(1).partition("#")
    folder, _, name = target.strip().removesuffix(".md").rpartition("/")
    if folder == FACTS:
        return f"{FACT_DOC}{name}/{slugify(heading)}" if heading.strip() else f"{FACT_DOC}{name}"
    if folder and folder.split("/")[0] != MEMORIES:
        return target.strip()  # a link to some other note: kept as written
    return name


def quoted(value):
    """`value` with each link written without its quotes read back as the link meant: YAML reads `[[x]]`
    unquoted as a list in a list (`[['x']]`). Obsidian asks for the quotes; a person typing in its source
    view, or in any editor, forgets them."""
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], list) and len(value[0]) == 1 \
            and isinstance(value[0][0], str):
        return f"[[{value[0][0]}]]"
    return [quoted(v) for v in value] if isinstance(value, list) else value


def is_link(value) -> bool:
    return isinstance(value, str) and bool(_LINK.match(value.strip()))


# ---- verified: one status and its details, side by side

# Each flat key and the part of the summary (verifier/run.py, curator/actions.py) it holds.
VERIFIED = {"verified": "status", "verified_at": "at", "verified_by": "by", "verified_note": "detail",
            "verified_commit": "commit"}


def verified_of(meta: dict) -> dict | None:
    """The verification summary in `meta`, flat or (before issue 32) a mapping under `verified`."""
    if "verified" not in meta and "verified_at" not in meta:
        return None  # never checked: most memories
    old = meta.get("verified")
    if isinstance(old, dict):
        return old or None
    found = {part: meta[key] for key, part in VERIFIED.items() if meta.get(key) not in (None, "")}
    if "status" in found:
        found["status"] = str(found["status"]).strip().lower()
    return found or None


def flat_verified(summary: dict | None) -> dict:
    """The summary's flat keys, in order, empty ones left out; a part that is not a scalar becomes its text."""
    if not isinstance(summary, dict):
        return {}
    out = {}
    for key, part in VERIFIED.items():
        value = summary.get(part)
        if value in (None, ""):
            continue
        out[key] = value if isinstance(value, (str, int, float)) or hasattr(value, "isoformat") else str(value)
    return out


# ---- claims: one line each

# Each probe's arguments in the order its line gives them (the verifier's probes, verifier/probes.py; a test
# holds the two to the same names). The second argument follows the first after SEPARATOR.
CLAIM_ARGS = {"path": ("path",), "contains": ("path", "text"), "symbol": ("path", "name"), "script": ("name",),
              "dependency": ("name",), "branch": ("name",), "commit": ("sha",), "url": ("url",), "pr": ("url",)}
SEPARATOR = " | "


def claim_line(claim) -> str:
    """A claim as one line of text: `path scripts/seed.py`; the JSON of one that has no such line."""
    if isinstance(claim, str):
        return claim
    if not isinstance(claim, dict):
        return json.dumps(claim, ensure_ascii=False, default=str)
    probe, args = claim.get("probe"), claim.get("args")
    names = CLAIM_ARGS.get(probe) if isinstance(probe, str) else None
    if names and isinstance(args, dict) and list(args) == list(names) and all(_fits(args[n]) for n in names) \
            and SEPARATOR not in args[names[0]]:
        return f"{probe} {SEPARATOR.join(args[n] for n in names)}"
    return json.dumps({k: claim[k] for k in ("probe", "args") if k in claim}, ensure_ascii=False, default=str)


def _fits(value) -> bool:
    """An argument a line holds as it is: text without line breaks or spaces at its ends."""
    return isinstance(value, str) and value != "" and value == value.strip() and not any(
        ch in value for ch in "\n\r\x85\u2028\u2029")


def claim_of(item):
    """A claim as the verifier takes it, `{probe, args}`, from a line or from the mapping written before issue
    32 (whose own result, kept beside it then, is dropped: the summary and .hafiza/verify.json hold it). A
    line that names no probe stays text, which the verifier reports as invalid."""
    if isinstance(item, dict):
        return {k: item[k] for k in ("probe", "args") if k in item}
    if not isinstance(item, str):
        return item
    text = item.strip()
    if text.startswith("{"):
        try:
            found = json.loads(text)
        except ValueError:
            return text
        return {k: found[k] for k in ("probe", "args") if k in found} if isinstance(found, dict) else text
    probe, _, rest = text.partition(" ")
    names = CLAIM_ARGS.get(probe)
    values = rest.strip().split(SEPARATOR, len(names) - 1) if names and rest.strip() else []
    if not names or len(values) != len(names):
        return text
    return {"probe": probe, "args": dict(zip(names, (v.strip() for v in values)))}


# ---- tags

# A run of characters a tag may not hold (with the hyphens around it): \w is letters of any script, Turkish
# included, digits and _.
_NOT_TAG = re.compile(r"\W*[^\w-]\W*")
_TAG = re.compile(r"\w(?:[\w-]*\w)?(?:/\w(?:[\w-]*\w)?)*")  # what `tag` leaves as it is


def tag(value: str) -> str | None:
    """`value` as a tag Obsidian accepts, or None when nothing of it is left: `#deploy` is `deploy`,
    `iki kelime` is `iki-kelime`, `node.js` is `node-js`, `2026` is `_2026` (a tag may not be only digits);
    `/` nests, as in Obsidian."""
    value = str(value)
    if _TAG.fullmatch(value) and not value.isdigit():
        return value  # already one: most are, and every memory's tags are read on each load (~2 µs saved a tag)
    parts = []
    for part in value.strip().lstrip("#").split("/"):
        part = _NOT_TAG.sub("-", part).strip("-")
        if part:
            parts.append(part)
    text = "/".join(parts)
    if not text:
        return None
    return f"_{text}" if text.isdigit() else text


def tags(values) -> list[str]:
    """Each of `values` as a tag, empty ones dropped, one of each (Obsidian compares tags ignoring case)."""
    out, seen = [], set()
    for value in values:
        found = tag(value)
        if found and found.casefold() not in seen:
            seen.add(found.casefold())
            out.append(found)
    return out


# ---- a whole header

def migrate(meta: dict) -> dict:
    """A memory's raw frontmatter with hafiza's keys in the form written now, in their order, every other key
    as it is. What a merge compares (vault/sync/merge.py): a side written before issue 32 and a side written
    after agree on what neither changed, instead of `deploy` and `[[deploy]]` both being kept."""
    out: dict = {}
    for key, value in meta.items():
        if key == "verified" and isinstance(value, dict):
            out.update(flat_verified(value))
            continue
        if key in ("supersedes", "superseded_by"):
            value = quoted(value)
        if key == "supersedes" and isinstance(value, (list, str)):
            value = [link(unlink(str(v))) for v in (value if isinstance(value, list) else [value])
                     if v is not None and str(v).strip()]
        elif key == "superseded_by" and isinstance(value, str) and value.strip():
            value = link(unlink(value))
        elif key == "claims" and isinstance(value, list):
            value = [claim_line(claim_of(c)) for c in value]
        elif key == "tags" and isinstance(value, (list, str)):
            value = tags(str(v) for v in (value if isinstance(value, list) else [value]) if v is not None)
        out[key] = value
    return out
