"""Hand edits: what the user changed in the vault's files since hafiza's last commit is committed as their own
change before a write of hafiza's (never a symlink, a pipe, or a file holding a secret)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from hafiza.vault.errors import FrontmatterError, HafizaError, SecretRefused
from hafiza.vault.files import NotRegularFile, kind, read_regular, temp_owner
from hafiza.vault.format import model
from hafiza.vault.format.paths import MEMORIES

# A hand edit past this is not committed by hafiza (git can, by hand): every committed byte is scanned.
MAX_COMMIT_FILE_BYTES = 16 << 20
# Looking at every file for hand edits (`git status`) takes milliseconds while git's index is this small
# (~2,500 files) and is done before every write; past it (0.5 s at 100,000 memories), at most every
# HAND_CHECK_SECONDS, and each write in between checks the files it changes (`_spot_check`).
SMALL_INDEX_BYTES = 256 << 10
HAND_CHECK_SECONDS = 600
HAND_CHECK = "hand-check"  # in the sidecar: its mtime is when every file was last looked at


class HandEdits:
    """The Vault's look for hand edits on the way into a write (`transaction`), and the secret scan of each
    file a commit takes."""

    def _record_hand_edits(self, thorough: bool, besides=()) -> None:
        """Commit what the user changed by hand since hafiza's last commit, as their own commit: every
        file, or in a large vault between full looks, only the files this write goes on to change."""
        from hafiza.vault.git import message

        stamp = self.sidecar / HAND_CHECK
        try:
            small = (self.git.git_dir / "index").stat().st_size < SMALL_INDEX_BYTES
        except OSError:
            small = True
        if not (thorough or small):
            try:
                if time.time() - stamp.stat().st_mtime < HAND_CHECK_SECONDS:
                    self._looked = set()  # _spot_check from here on
                    return
            except FileNotFoundError:
                pass
        mine = set(map(str, besides))  # this write's own files, not yet committed
        changed = self._hand_edits([rel for rel in self.git.changed() if rel not in mine])
        if changed:
            broken = self._unparsable(changed)
            body = ("These files do not parse and are left out of recall until fixed:\n"
                    + "\n".join(f"- {line}" for line in broken)) if broken else ""
            self._recorded(self.git.commit(changed, message("record manual edits", "manual-edits", "user", body=body)),
                           changed)
        if not small:
            stamp.touch()

    def _spot_check(self, paths) -> None:
        """Between full looks at a large vault: a file this write is about to change that was edited by hand
        since its last commit gets that edit committed first, as the user's, as a full look would have.
        One `git cat-file` for all of `paths`; each file is looked at once per write."""
        from hafiza.vault.git import blob_id, message

        kept = {}
        for path in map(Path, paths):
            if path in self._looked:
                continue
            self._looked.add(path)
            try:
                kept[str(path.relative_to(self.root))] = read_regular(path, limit=MAX_COMMIT_FILE_BYTES)
            except OSError:  # missing (a new file), or not a regular file, which _hand_edits never commits
                continue
        if not kept:
            return
        held = self.git.blob_ids(kept)
        edited = {rel: data for rel, data in kept.items() if held[rel] is None or held[rel] != blob_id(data, held[rel])}
        if not edited:
            return
        from hafiza.vault.guard import secrets

        for rel, data in edited.items():
            found = secrets.scan_bytes(data).secrets
            if found:
                raise SecretRefused(f"{rel} (a hand edit, not yet committed) contains what looks like a secret "
                                    f"({', '.join(found)}); remove it, then try again. Nothing was committed.",
                                    field="path")
        sha = self.git.commit_contents(edited, message("record manual edits", "manual-edits", "user"))
        self._recorded(sha, list(edited))
        if self._journal.active:  # an earlier file of this write is written, not committed: it starts from here
            self._journal.rebase(sha)

    def _recorded(self, sha: str, paths: list[str]) -> None:
        """A commit of the user's hand edits landed on the way into a write (undo passes it by)."""
        self._implicit.add(sha)
        self._log(paths)
        self._commits += 1

    def _hand_edits(self, changed: list[str]) -> list[str]:
        """Of the uncommitted paths, those to record as the user's edits: regular files (and deletions)
        only, each scanned for secrets whatever its encoding. A symlink or a hard link is never committed (it
        could be ~/.aws/credentials), nor a pipe, nor an atomic_write temp file."""
        chosen = []
        for rel in changed:
            path = self.root / rel
            try:
                info = os.lstat(path)
            except FileNotFoundError:
                chosen.append(rel)  # deleted by hand
                continue
            what = kind(info)
            if what or temp_owner(path.name) is not None:
                if what:
                    self.warnings.append(f"{rel} is {what}: not read, not committed")
                continue
            self._scan_file(path, rel, "a hand edit, not yet committed")
            chosen.append(rel)
        return chosen

    def _unparsable(self, changed: list[str]) -> list[str]:
        """Of hand-edited memory files, those that do not parse, with why; each also becomes a warning."""
        broken = []
        for rel in changed:
            path = self.root / rel
            if not (rel.startswith(f"{MEMORIES}/") and rel.endswith(".md") and path.is_file()):
                continue
            try:
                model.read(path)
            except FrontmatterError as exc:
                broken.append(f"{rel}: {exc.reason}" + (f" (line {exc.line})" if exc.line else ""))
        self.warnings += [f"recorded a hand edit that does not parse: {line}" for line in broken]
        return broken

    def _scan_file(self, path: Path, rel: str, what: str) -> None:
        """Refuse to commit a file that holds a secret, in any encoding."""
        from hafiza.vault.guard import secrets

        try:
            data = read_regular(path, limit=MAX_COMMIT_FILE_BYTES)
        except NotRegularFile as exc:
            raise HafizaError(f"{rel} ({what}): {exc.reason}; hafiza does not commit it. Commit or move it "
                              "yourself, then try again. Nothing was committed.", field="path") from None
        found = secrets.scan_bytes(data).secrets
        if found:
            raise SecretRefused(f"{rel} ({what}) contains what looks like a secret ({', '.join(found)}); "
                                "remove it, then try again. Nothing was committed.", field="path")

    def _commit_unlooked(self, rel: list[Path], text: str) -> str:
        """`git.commit` between full looks (the files written were looked at by `track`): should git's index
        hold changes staged by hand, the full look after all, first (their files may hold anything)."""
        from hafiza.vault.git import StagedElsewhere

        try:
            return self.git.commit(rel, text, only=True)
        except StagedElsewhere:
            self.git.unstage(rel)
            self._looked = None
            self._record_hand_edits(thorough=True, besides=rel)
            return self.git.commit(rel, text)

