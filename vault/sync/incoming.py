"""What a remote sends is looked at before it lands (issue 29, item 3).

A merge writes into the work tree whatever the remote's commits hold. One that added `.hafiza` as a symlink
made git delete the real sidecar; every command then refused to run, and the hooks wrote the index (memory
text), the usage log and the socket into the folder the remote chose. So before `sync` merges, and before
`init --from` or `vault add` checks a clone out, every commit that would come in is read with git plumbing
(`rev-list`, `diff-tree`: the object store, not the work tree), and all of it is refused if one adds:

- anything but a regular file: a symbolic link, a gitlink (a submodule);
- a path with a part named `.hafiza` (hafiza's sidecar) or `.git…` (git's own files, `.gitmodules`), except
  the `.gitignore` and `.gitkeep` files and the top `.gitattributes` that hafiza writes;
- a `.gitattributes` line that makes git run or rewrite something on checkout: `filter` (git-lfs would fetch
  text no check saw), `working-tree-encoding`, a merge driver other than hafiza's.

Any other regular file may come in: people keep notes, images and Obsidian's shared settings in a vault, and
"record manual edits" commits them, so the rule is by kind and name, not by folder.
"""

from __future__ import annotations

import unicodedata
from typing import NamedTuple

from hafiza.vault.errors import HafizaError
from hafiza.vault.format.paths import SIDECAR

REGULAR = ("100644", "100755")
_KINDS = {"120000": "a symbolic link", "160000": "a gitlink (a submodule)", "040000": "a folder"}
ATTRIBUTES = ".gitattributes"
PLACEHOLDERS = (".gitignore", ".gitkeep")  # hafiza writes memories/.gitkeep; neither makes git run anything
MERGE_DRIVERS = ("hafiza", "text", "binary", "union")  # git's own, and the one hafiza registers
_REWRITES = ("filter", "working-tree-encoding")


class Refused(NamedTuple):
    commit: str
    path: str
    why: str


def check(git, tip: str, have: list[str], source: str) -> None:
    """Raise HafizaError, one line naming the commit and the path, when a commit reachable from `tip` and from
    none of `have` brings what a vault must not hold; nothing is changed either way."""
    found = refused(git, tip, have)
    if found:
        raise HafizaError(f"refused what {source} sent: commit {found.commit[:12]} {found.why} ({found.path!r}). "
                          "Nothing was merged and the vault is as it was; remove that commit from the remote, "
                          "then sync again.")


def refused(git, tip: str, have: list[str]) -> Refused | None:
    """The first entry, oldest commit first, that a vault must not take in; None when all may land."""
    commit, attributes = None, []
    fields = git.incoming(tip, have).split(b"\0")
    at = 0
    while at < len(fields):
        field = fields[at].decode("utf-8", "surrogateescape")
        at += 1
        if not field.startswith(":"):
            commit = field.strip() or commit  # the next commit's id
            continue
        path = fields[at].decode("utf-8", "surrogateescape")
        at += 1
        parents = len(field) - len(field.lstrip(":"))
        meta = field.lstrip(":").split()
        mode, blob = meta[parents], meta[2 * parents + 1]
        if mode == "000000":
            continue  # taken away: nothing lands
        why = _why(path, mode)
        if why:
            return Refused(commit, path, why)
        if path == ATTRIBUTES:
            attributes.append((commit, blob))
    for (commit, _), data in zip(attributes, git.blobs([blob for _, blob in attributes])):
        line = _rewriting(data or b"")
        if line:
            return Refused(commit, ATTRIBUTES, f"sets `{line}`, which makes git run or rewrite files on checkout")
    return None


def _why(path: str, mode: str) -> str | None:
    if mode not in REGULAR:
        return f"adds {_KINDS.get(mode, f'an entry of mode {mode}')}; a vault holds only regular files"
    parts = path.split("/")
    for n, part in enumerate(parts):
        bare = _bare(part)
        if bare == SIDECAR or bare in (".", "..", ""):
            return f"adds a path through {part!r}, which is hafiza's own folder and never comes from a remote"
        if bare.startswith(".git") and not (bare in PLACEHOLDERS or (bare == ATTRIBUTES and n == 0 == len(parts) - 1)):
            return f"adds {part!r}, one of git's own files, which a vault takes only from hafiza"
    return None


def _bare(part: str) -> str:
    """A path part as a case-insensitive file system may see it: no format characters (HFS+ ignores them),
    no case, no trailing dots or spaces (Windows drops them)."""
    kept = "".join(c for c in part if unicodedata.category(c) != "Cf")
    return kept.casefold().rstrip(". ") if kept.strip(". ") else kept


def _rewriting(data: bytes) -> str | None:
    """The first `.gitattributes` line that sets a filter, an encoding, or a merge driver not hafiza's."""
    for raw in data.decode("utf-8", "replace").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        for token in line.split()[1:]:
            name, _, value = token.lstrip("-!").partition("=")
            if name in _REWRITES and not token.startswith(("-", "!")):
                return line
            if name == "merge" and value and value not in MERGE_DRIVERS:
                return line
    return None
