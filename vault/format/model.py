"""The memory file format: types, defaults, and the one parse/dump boundary."""

from __future__ import annotations

import datetime as dt
import re
import sys
from pathlib import Path
from typing import Any

from hafiza.vault.errors import FrontmatterError
from hafiza.vault.files import NotRegularFile, read_regular, read_text
from .ids import declared_id, is_valid_id  # noqa: F401  (declared_id re-exported)
from .text import first_line  # noqa: F401  (re-exported: where titles come from)
from .kinds import HALF_LIFE, SCOPE_PATTERN, STATUSES, TYPES  # noqa: F401  (re-exported: the format's vocabulary)
from . import properties

try:  # hashlib's blake2b itself, without hashlib importing OpenSSL's bindings (~5 ms of every write and search)
    from _blake2 import blake2b
except ImportError:  # an interpreter without the module
    from hashlib import blake2b

SCOPE = re.compile(SCOPE_PATTERN)

# Keys hafiza owns, in the order they are written. Anything else is the user's and is kept.
KNOWN_KEYS = (
    "id", "type", "title", "scope", "created", "updated", "tags", "aliases",
    "supersedes", "superseded_by", "status", "half_life_days", "shown", "used",
    "last_used", "claims", *properties.VERIFIED, "source", "archived_reason",
)


class Memory:
    """One memory file: hafiza's frontmatter keys, normalised (from_metadata), and the body.

    A plain class, not a dataclass: importing dataclasses (with inspect and ast) cost a search that indexes
    a write ~12 ms of the ~40 its reading the written files took (indexer/pending.py)."""

    FIELDS = ("id", "title", "body", "type", "scope", "created", "updated", "tags", "aliases", "supersedes",
              "superseded_by", "status", "half_life_days", "shown", "used", "last_used", "claims", "verified",
              "source", "archived_reason", "extra", "path")

    def __init__(self, id: str, title: str, body: str, type: str = "knowledge", scope: str = "global",
                 created: dt.date | None = None, updated: dt.date | None = None, tags: list[str] | None = None,
                 aliases: list[str] | None = None, supersedes: list[str] | None = None,
                 superseded_by: str | None = None, status: str = "active", half_life_days: float | None = None,
                 shown: int = 0, used: int = 0, last_used: dt.date | None = None, claims: list[Any] | None = None,
                 verified: dict | None = None, source: str = "manual", archived_reason: str | None = None,
                 extra: dict[str, Any] | None = None, path: Path | None = None):
        self.id, self.title, self.body, self.type, self.scope = id, title, body, type, scope
        self.created = created if created is not None else dt.date.today()
        self.updated = updated
        self.tags, self.aliases = tags if tags is not None else [], aliases if aliases is not None else []
        self.supersedes = supersedes if supersedes is not None else []
        self.superseded_by, self.status, self.half_life_days = superseded_by, status, half_life_days
        self.shown, self.used, self.last_used = shown, used, last_used
        self.claims, self.verified = claims if claims is not None else [], verified
        self.source, self.archived_reason = source, archived_reason
        self.extra = extra if extra is not None else {}  # the user's own keys, kept in order
        self.path = path

    def _values(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.FIELDS}

    def __eq__(self, other) -> bool:
        return other.__class__ is self.__class__ and self._values() == other._values()

    __hash__ = None  # mutable, compared by value

    def __repr__(self) -> str:
        return f"Memory({', '.join(f'{k}={v!r}' for k, v in self._values().items())})"

    @property
    def half_life(self) -> float | None:
        """Days for strength to halve; an explicit override wins over the type default."""
        return self.half_life_days if self.half_life_days else HALF_LIFE[self.type]

    @property
    def active(self) -> bool:
        return self.status == "active"

    def evolve(self, **changes) -> "Memory":
        """A copy with `changes` (field names, as the constructor takes them)."""
        return Memory(**{**self._values(), **changes})


class FieldError(ValueError):
    """A frontmatter value that does not validate; `field` names its key. Reads as `key: problem`."""

    def __init__(self, field: str, problem: str):
        super().__init__(f"{field}: {problem}")
        self.field = field


def content_hash(text: str) -> str:
    return blake2b(text.encode("utf-8"), digest_size=12).hexdigest()


# ---- normalising YAML values (PyYAML turns 2025-10-24 into a date and `yes` into True)

def as_date(value, key: str) -> dt.date | None:
    if value in (None, ""):
        return None
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value.strip()[:10])
        except ValueError:
            pass
    raise FieldError(key, f"expected a date like 2026-11-30, got {value!r}")


def _str_list(value, key: str) -> list[str]:
    if value in (None, ""):
        return []
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, list):
        raise FieldError(key, f"expected a list of strings, got {type(value).__name__}")
    return [str(v).strip() for v in value if v is not None and str(v).strip()]


def _count(value, key: str) -> int:
    if value in (None, ""):
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise FieldError(key, f"expected a non-negative number, got {value!r}")
    return int(value)


def _choice(value, key: str, choices, default: str) -> str:
    if value in (None, ""):
        return default
    value = str(value).strip().lower()
    if value not in choices:
        raise FieldError(key, f"{value!r} is not one of {', '.join(choices)}")
    return value


def _optional_str(value) -> str | None:
    return None if value in (None, "") else str(value)


def _reference(value) -> str | None:
    text = _optional_str(value)
    return properties.unlink(text) if text else None


def from_metadata(meta: dict, body: str, *, path: Path | None = None) -> Memory:
    """Build a Memory from raw frontmatter, normalising and validating hafiza's keys."""
    default_id = path.stem if path else None
    mem_id = str(meta.get("id") or default_id or "")
    if not is_valid_id(mem_id):
        raise FieldError("id", f"{mem_id!r} is not a valid id (lowercase letters, digits and -)")
    title = _optional_str(meta.get("title")) or first_line(body) or mem_id
    scope = str(meta.get("scope") or "global").strip()
    if not SCOPE.match(scope):
        raise FieldError("scope", f"{scope!r} must be 'global' or 'project:<name>'")
    half_life = meta.get("half_life_days")
    if half_life not in (None, "") and (isinstance(half_life, bool) or not isinstance(half_life, (int, float)) or half_life <= 0):
        raise FieldError("half_life_days", f"expected a positive number, got {half_life!r}")
    claims = meta.get("claims") or []
    if not isinstance(claims, list):
        raise FieldError("claims", "expected a list")
    verified = meta.get("verified")
    if isinstance(verified, list):
        raise FieldError("verified", "expected a status like failed (with verified_at, verified_note)")
    return Memory(
        id=mem_id,
        title=title.strip(),
        body=body.strip("\n"),
        type=_choice(meta.get("type"), "type", TYPES, "knowledge"),
        scope=scope,
        created=as_date(meta.get("created"), "created") or dt.date.today(),
        updated=as_date(meta.get("updated"), "updated"),
        tags=properties.tags(_str_list(meta.get("tags"), "tags")),
        aliases=_str_list(meta.get("aliases"), "aliases"),
        supersedes=list(dict.fromkeys(
            properties.unlink(v) for v in _str_list(properties.quoted(meta.get("supersedes")), "supersedes"))),
        superseded_by=_reference(properties.quoted(meta.get("superseded_by"))),
        status=_choice(meta.get("status"), "status", STATUSES, "active"),
        half_life_days=float(half_life) if half_life not in (None, "") else None,
        shown=_count(meta.get("shown"), "shown"),
        used=_count(meta.get("used"), "used"),
        last_used=as_date(meta.get("last_used"), "last_used"),
        claims=[properties.claim_of(c) for c in claims],
        verified=properties.verified_of(meta),
        source=_optional_str(meta.get("source")) or "manual",
        archived_reason=_optional_str(meta.get("archived_reason")),
        extra={k: v for k, v in meta.items() if k not in KNOWN_KEYS},
        path=path,
    )


# A memory's frontmatter has tens of nodes; YAML anchors and aliases can make a few hundred bytes expand
# to billions ("billion laughs"), which exhausted memory once the file was committed.
MAX_YAML_NODES = 10_000


def load_yaml(header: str):
    """YAML (safe types only) with alias expansion bounded: ValueError past MAX_YAML_NODES nodes."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(header)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _bounded(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _bounded(root) -> None:
    """Count the nodes `root` stands for once every alias is expanded, without expanding them."""
    import yaml

    sizes: dict[int, int] = {}
    stack = [(root, False)]
    while stack:
        node, counted = stack.pop()
        if id(node) in sizes:
            continue
        children = [part for pair in node.value for part in pair] if isinstance(node, yaml.MappingNode) else \
            node.value if isinstance(node, yaml.SequenceNode) else []
        if counted:
            sizes[id(node)] = 1 + sum(sizes.get(id(child), 0) for child in children)
            if sizes[id(node)] > MAX_YAML_NODES:
                raise ValueError(f"the frontmatter expands to more than {MAX_YAML_NODES:,} values "
                                 "(YAML anchors and aliases); write the values out")
            continue
        stack.append((node, True))
        stack.extend((child, False) for child in children if id(child) not in sizes)


# Where frontmatter begins and ends: python-frontmatter's boundary (YAMLHandler.FM_BOUNDARY), split as it
# splits, without importing it (it imports PyYAML).
_BOUNDARY = re.compile(r"^-{3,}\s*$", re.MULTILINE)


def split(text: str) -> tuple[dict | None, str]:
    """(frontmatter mapping or None, body) of a markdown file; raises yaml.YAMLError, ValueError.

    The one place frontmatter is read, for memories and for imported markdown alike.
    python-frontmatter's loads() silently drops frontmatter that is not a mapping (a list, a
    bare string) and expands YAML aliases without bound, so only its splitting is used. A header
    vault/format/frontmatter.py can read is read without PyYAML.
    """
    from .frontmatter import read

    if not _BOUNDARY.match(text):
        return None, text
    try:
        _, header, body = _BOUNDARY.split(text, 2)
    except ValueError:  # an opening --- without a closing one: all of it is body
        return None, text
    meta = read(header)
    if meta is None:
        meta = load_yaml(header)
    if meta is not None and not isinstance(meta, dict):
        raise ValueError("frontmatter must be a mapping of keys")
    return meta, body


def parse(text: str, path: Path | None = None) -> Memory:
    """Parse one memory file's text. Raises FrontmatterError naming the path and reason."""
    skipped_lines = text[:len(text) - len(text.lstrip())].count("\n")
    text = text.strip()
    try:
        meta, body = split(text)
    except (ValueError, RecursionError) as exc:
        reason = str(exc) if isinstance(exc, ValueError) else "frontmatter nested too deeply"
        raise FrontmatterError(path or "<text>", reason) from None
    except Exception as exc:
        yaml = sys.modules.get("yaml")  # imported only for a header that needed it (split)
        if yaml is None or not isinstance(exc, yaml.YAMLError):
            raise
        mark = getattr(exc, "problem_mark", None)
        # The header starts with the newline after the opening ---, so YAML's 0-based line is the file's 1-based one.
        line = mark.line + 1 + skipped_lines if mark else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise FrontmatterError(path or "<text>", f"invalid YAML frontmatter: {problem}", line) from None
    try:
        return from_metadata(dict(meta or {}), body.strip(), path=path)
    except ValueError as exc:
        raise FrontmatterError(path or "<text>", str(exc)) from None


def read(path: Path) -> Memory:
    """Read and parse one memory file: a regular file only (never a symlink out of the vault, a FIFO,
    a folder), and no larger than a memory can be."""
    return parse(read_note(path), path)


def read_note(path: Path) -> str:
    """The text of a vault note (a memory, a fact note); FrontmatterError when it is not a readable regular file."""
    try:
        return read_text(path)
    except NotRegularFile as exc:
        raise FrontmatterError(path, exc.reason) from None
    except UnicodeDecodeError:
        raise FrontmatterError(path, "not UTF-8 text") from None
    except OSError as exc:
        raise FrontmatterError(path, f"unreadable ({exc.strerror or exc})") from None


def to_metadata(memory: Memory) -> dict:
    """hafiza's keys in canonical order (empty optional ones left out), then the user's: in the form Obsidian's
    Properties view shows and edits (vault/format/properties.py)."""
    meta: dict[str, Any] = {
        "id": memory.id,
        "type": memory.type,
        "title": memory.title,
        "scope": memory.scope,
        "created": memory.created,
        "updated": memory.updated or memory.created,
        "tags": properties.tags(memory.tags),
    }
    optional = {
        "aliases": list(memory.aliases),
        "supersedes": [properties.link(ref) for ref in memory.supersedes],
        "superseded_by": properties.link(memory.superseded_by) if memory.superseded_by else None,
        "status": memory.status,
        "half_life_days": memory.half_life_days,
        "shown": memory.shown,
        "used": memory.used,
        "last_used": memory.last_used,
        "claims": [properties.claim_line(c) for c in memory.claims],
        **properties.flat_verified(memory.verified),
        "source": memory.source,
        "archived_reason": memory.archived_reason,
    }
    meta.update({k: v for k, v in optional.items() if v not in (None, [], 0, "")})
    meta["status"] = memory.status
    meta.update(memory.extra)
    return meta


def dump(memory: Memory) -> str:
    """The file text for `memory`: YAML frontmatter and the markdown body. Flat frontmatter is written
    without importing PyYAML, in the very bytes PyYAML writes (vault/format/frontmatter.py)."""
    from .frontmatter import emit

    meta = to_metadata(memory)
    header = emit(meta)
    if header is None:
        header = yaml_dump(meta)
    return f"---\n{header}---\n{memory.body.strip()}\n"


def yaml_dump(meta: dict) -> str:
    """`meta` as PyYAML writes a memory's frontmatter."""
    import yaml

    class Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # libyaml: 5x faster on import
        def ignore_aliases(self, data):  # equal dates must not become &id001 anchors
            return True

    return yaml.dump(meta, Dumper=Dumper, sort_keys=False, allow_unicode=True, width=1000, default_flow_style=None)
