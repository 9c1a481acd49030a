"""A vault file that holds a secret is quarantined: kept as it is, never read into the index, recall, the
profile, `show` or the UI (issue 29, item 4).

Local writes never hold one (the guard refuses them, vault/guard/secrets.py), but a sync merges what other
machines and teammates committed, and a file can be edited by hand. Deleting such a file would lose a memory
and rewrite nothing of history, where the secret stays; so the file stays as it came, every reader of note
text asks `check` first, and `sync` and `doctor` name it with `advice`: take it out of the file and out of
history, then rotate the secret, which the remote has had.
"""

from __future__ import annotations

from hafiza.vault.errors import Quarantined


def kinds(text: str) -> list[str]:
    """The kinds of secret `text` holds (empty when none)."""
    from .secrets import find_secrets  # ~60 ms to import: only once a file has changed

    return find_secrets(text)


def check(text: str, path) -> str:
    """`text`, or Quarantined (naming `path` and what was found) when it holds a secret."""
    found = kinds(text)
    if found:
        raise Quarantined(path, found)
    return text


def advice(rel: str) -> str:
    """How to remove a secret that reached the vault's history, for the file `rel`."""
    return (f"edit {rel} to take the secret out (hafiza refuses to commit it until then), then remove it from "
            f"history: `git filter-repo --replace-text FILE` (or `--invert-paths --path {rel}`) in a fresh clone, "
            "`git push --force` to the remote, and re-clone every other machine; rotate the secret, which the "
            "remote has had")
