"""One person, many machines: the vault's git remote is the sync engine.

`sync` makes the whole round trip: fold pending usage, commit hand edits (the
write transaction does both), fetch the remote's main, merge it, push. Merges
go through hafiza's merge driver (vault/driver.py, rules in vault/sync/merge.py),
registered per machine in .git/config and chosen by the committed
.gitattributes; what git still leaves conflicted (a file deleted on one side
and changed on the other, a merge started by a plain `git pull`) is settled
from the index's stages with the same rules. Files a merge without the driver
left with conflict markers (a web merge, a clone that never ran hafiza) are
merged again from the merge commit's parents. The merge into the work tree
happens under the writer lock, so an agent writing meanwhile waits and loses
nothing; fetch and push run outside it. Local commits are never rewritten:
when the remote cannot be reached they stay, and go out with the next sync.
"""

from __future__ import annotations

import secrets
import shlex
import shutil
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path

from hafiza.vault.format import conflicts, model
from hafiza.vault.errors import FrontmatterError, GitError, HafizaError
from hafiza.vault.files import DIR_MODE, atomic_write, read_regular
from hafiza.vault.git import message
from hafiza.vault.format.ids import unique_id
from hafiza.vault.format.text import plural
from hafiza.vault.facts import is_fact_path
from . import incoming
from .merge import is_memory, reconcile, twice
from hafiza.vault.format.paths import FACT_DOC, FACTS, MEMORIES, PROFILE

ATTRIBUTES = ".gitattributes"
# What the driver merges; memories/*/*.md: a large vault's subfolders (vault/format/layout.py).
RULES = ("memories/*.md merge=hafiza", "memories/*/*.md merge=hafiza", "*.jsonl merge=hafiza",
         "facts/*.md merge=hafiza")
REMOTE, BRANCH = "origin", "main"
MERGED = (MEMORIES, "*.jsonl", "*.md")  # where a merge without the driver may leave conflict markers
PUSH_TRIES = 3  # another machine pushed between our fetch and our push: fetch and merge again
MACHINE = ("hafiza", "machine")  # this clone's name in the vault's git config: per machine, never synced


@dataclass
class Report:
    """What a sync brought in and sent out, by memory id; `notes` say what a person may want to look at."""

    remote: str
    url: str
    came_in: dict[str, list[str]] = field(default_factory=lambda: {"added": [], "changed": [], "superseded": []})
    went_out: dict[str, list[str]] = field(default_factory=lambda: {"added": [], "changed": [], "superseded": []})
    notes: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)  # memories holding both texts until a person picks
    quarantined: dict[str, list[str]] = field(default_factory=dict)  # path -> kinds of secret that came in
    pushed: int = 0          # commits the remote did not have
    first_push: bool = False

    def to_json(self) -> dict:
        return {"remote": self.remote, "url": self.url, "in": self.came_in, "out": self.went_out,
                "pushed_commits": self.pushed, "first_push": self.first_push, "notes": self.notes,
                "conflicts": self.conflicts, "quarantined": self.quarantined}


def driver_command() -> str:
    """How git runs the driver on this machine: this interpreter, so it finds this hafiza."""
    return f"{shlex.quote(sys.executable)} -m hafiza.vault.driver %O %A %B %P"


def this_machine(git) -> str:
    """This clone's name, which a merge that keeps two texts records as the one it made (vault/format/conflicts.py):
    made once, the host's name and four random hex digits (two clones on one host are two machines), and kept in
    the vault's git config."""
    name = git.config(*MACHINE)
    if not name:
        host = "".join(c if c.isalnum() or c == "-" else "-" for c in socket.gethostname().split(".")[0])
        name = f"{host[:40] or 'machine'}-{secrets.token_hex(2)}"
        git.set_config(".".join(MACHINE), name)
    return name


def prepare(root: Path, git) -> bool:
    """Register the driver and name this machine in the vault's git config (per machine), and write the attribute
    lines that choose the driver (committed with the vault); True when .gitattributes changed."""
    this_machine(git)
    if git.config("merge.hafiza", "driver") != driver_command():
        git.set_config("merge.hafiza.name", "hafiza: memories field by field, logs as a union")
        git.set_config("merge.hafiza.driver", driver_command())
    path = Path(root) / ATTRIBUTES
    existing = read_regular(path).decode("utf-8", "replace") if path.exists() else ""
    missing = [rule for rule in RULES if rule not in existing.splitlines()]
    if not missing:
        return False
    sep = "" if not existing or existing.endswith("\n") else "\n"
    atomic_write(path, existing + sep + "".join(rule + "\n" for rule in missing))
    return True


def check_remote(remote: str) -> str:
    if not remote or remote.startswith("-") or any(c.isspace() or c == "\0" for c in remote):
        raise HafizaError(f"{remote!r} is not a remote's name", field="remote")  # never an option to git
    return remote


def set_remote(vault, url: str, remote: str = REMOTE) -> None:
    """Point the vault's remote at `url` (git config: per machine, never committed)."""
    if not url or url.startswith("-") or any(c in url for c in "\0\n\r"):
        raise HafizaError(f"{url!r} is not a remote URL", field="url")
    vault.require().git.set_remote(check_remote(remote), url)


def clone(url: str, root: Path) -> Path:
    """Start this machine's vault from `url`: clone, register the driver; the caller builds the index."""
    from hafiza.vault.git import GitStore

    root = Path(root)
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise HafizaError(f"{root} exists and is not empty; `--from` starts a new vault: choose another "
                          "folder with --vault, or sync the one there with `hafiza remote set URL` and `hafiza sync`")
    if not url or url.startswith("-"):
        raise HafizaError(f"{url!r} is not a remote URL", field="url")
    made = not root.exists()
    root.parent.mkdir(parents=True, exist_ok=True)
    store = GitStore.clone(url, root)  # nothing checked out yet: what came is looked at first
    root.chmod(0o700)
    track = None
    tip = store.head()
    if tip is None:
        try:  # the remote's HEAD names another branch (a bare repository made by `git init --bare` says master)
            tip = store.resolve(f"refs/remotes/{REMOTE}/{BRANCH}")
        except GitError:
            tip = None  # an empty remote: the vault's first commit goes out with the first sync
        store.set_head(BRANCH)
        track = f"{REMOTE}/{BRANCH}"
    if tip is not None:
        try:
            incoming.check(store, tip, [], url)
        except HafizaError:
            shutil.rmtree(root if made else store.git_dir)  # only the clone just made: nothing was checked out
            raise
        store.check_out(tip, track=track)
    return root


def sync(vault, remote: str = REMOTE, branch: str = BRANCH) -> Report:
    """The round trip; a Report. HafizaError (one line) when the remote cannot be reached: local commits stay."""
    git = vault.require().git
    url = git.remote_url(check_remote(remote))
    if url is None:
        raise HafizaError(f"the vault has no remote {remote!r}; `hafiza remote set URL` names one (a bare "
                          "repository, GitHub, GitLab...)", field="remote")
    if git.current_branch() != branch:
        raise HafizaError(f"the vault has {git.current_branch() or 'a detached HEAD'} checked out; sync merges and "
                          f"pushes {branch}: `git -C {vault.root} checkout {branch}` first")
    report = Report(remote, url)
    with vault.transaction(merging=True):
        if git.merging():
            theirs, head = git.resolve("MERGE_HEAD"), git.head()
            _twice(vault, git.merge_bases(head, theirs), head, theirs)
            _finish(vault, report, "finish the merge a `git pull` left open")
        if prepare(vault.root, git):
            vault.commit([vault.root / ATTRIBUTES], "set up sync (merge driver)", "sync-setup")
        vault._fold_locked()
        _repair(vault, report)
    for attempt in range(PUSH_TRIES):
        tip = _reach(lambda: git.fetch(remote, branch), remote, url)
        with vault.transaction():
            before = git.head()
            if tip is not None:
                incoming.check(git, tip, [before] if before else [], f"{remote} ({url})")
            _merge(vault, tip, remote, branch, report)
            _repair(vault, report)  # what came in may hold the markers of a merge made elsewhere without the driver
            head = git.head()
        if tip is not None and tip != before:  # what the remote changed, as it now stands here
            base = git.merge_base(before, tip) if before else None
            theirs = {p for _, p in git.diff_names(base, tip, MEMORIES, FACTS, PROFILE)}
            if before is not None:
                _tally(git, before, head, report.came_in, only=theirs - {PROFILE})
            report.quarantined.update(_quarantined(vault.root, theirs))
        if head is None or head == tip:
            break
        out = {"added": [], "changed": [], "superseded": []}
        _tally(git, tip, head, out)
        try:
            _reach(lambda: git.push(remote, f"HEAD:refs/heads/{branch}", upstream=True), remote, url)
        except HafizaError:
            if attempt + 1 < PUSH_TRIES and _moved(git, remote, branch, tip):
                continue  # another machine pushed meanwhile: take it in, then push again
            raise
        report.went_out = out
        report.pushed = len(git.log(None, rev=f"{tip}..{head}" if tip else head))
        report.first_push = tip is None
        break
    report.conflicts = sorted(Path(p).stem for p in git.grep([conflicts.START], MEMORIES))
    return report


def _reach(call, remote: str, url: str):
    try:
        return call()
    except GitError as exc:
        if exc.disk_full:
            raise
        raise HafizaError(f"cannot reach {remote} ({url}): {exc.message.removeprefix('git ')}. Nothing was lost: "
                          "local commits stay and go out with the next `hafiza sync`.") from None


def _quarantined(root: Path, rels) -> dict[str, list[str]]:
    """Of the files a remote changed, those now holding what looks like a secret (path -> kinds): kept as the
    remote has them, and never indexed, recalled or shown (vault/guard/quarantine.py)."""
    from hafiza.vault.guard import quarantine

    found = {}
    for rel in sorted(rels):
        try:
            kinds = quarantine.kinds(read_regular(Path(root) / rel).decode("utf-8", "replace"))
        except OSError:
            continue  # gone since, or not a regular file (never read anyway)
        if kinds:
            found[rel] = kinds
    return found


def _moved(git, remote: str, branch: str, tip: str | None) -> bool:
    """The remote's branch is no longer at `tip` (asked again rather than read from git's wording)."""
    try:
        return git.fetch(remote, branch) != tip
    except GitError:
        return False


def _merge(vault, tip: str | None, remote: str, branch: str, report: Report) -> None:
    """Bring the remote's tip into main: nothing, a fast-forward, or a merge commit."""
    git = vault.git
    head = git.head()
    if tip is None or tip == head or (head is not None and git.is_ancestor(tip, head)):
        return
    if head is None or git.is_ancestor(head, tip):
        git.fast_forward(tip)
        _followed(vault, git.diff_names(head, tip, MEMORIES, FACTS))
        return
    bases = git.merge_bases(head, tip)
    try:
        # One ancestor: git's index stages hold exactly what the rules need, so conflicted files are left to
        # `_finish`, merged in this process (a driver process per file cost 0.1-0.3 s each). Several (criss-cross
        # histories): git builds a virtual ancestor by merging them, which needs the driver itself.
        git.merge_start(tip, driver="false" if len(bases) == 1 else None)
        _twice(vault, bases, head, tip)
        _finish(vault, report, f"sync: merge {remote}/{branch}", before=head)
    except BaseException:
        if git.merging():
            git.merge_abort()  # the work tree goes back to our last commit: nothing half-merged stays
        raise


def _twice(vault, bases: list[str], ours: str, theirs: str) -> None:
    """Memories both sides changed to the same bytes (both used one once, the same day): git took them as
    they are, which would count one side's uses only; they get both increments (staged). Only with one
    merge base: then whatever both sides changed since it, they changed independently."""
    if len(bases) != 1:
        return
    git, base = vault.git, bases[0]
    mine = {p for _, p in git.diff_names(base, ours, MEMORIES) if is_memory(p)}
    same = [p for _, p in git.diff_names(base, theirs, MEMORIES) if p in mine]
    fixed = []
    found = git.blobs([f"{rev}:{rel}" for rel in same for rev in (base, ours, theirs)])
    for n, rel in enumerate(same):
        old, data, other = found[3 * n:3 * n + 3]
        if data is not None and old is not None and data == other:
            merged = twice(old, data)
            if merged != data:
                atomic_write(vault.root / rel, merged)
                fixed.append(rel)
    git.stage(fixed)


def _finish(vault, report: Report, subject: str, before: str | None = None) -> None:
    """Settle every conflicted path from its stages, give same-id twins their own ids, commit the merge."""
    git = vault.git
    notes = []
    settled = []
    unmerged = git.unmerged()
    stages = git.blobs([f":{n}:{rel}" for rel in unmerged for n in (1, 2, 3)])
    here = this_machine(git)
    for n, rel in enumerate(unmerged):
        found = reconcile(rel, *stages[3 * n:3 * n + 3], machine=here)
        atomic_write(vault.root / rel, found.data or b"")
        settled.append(rel)
        if found.note:
            notes.append(f"{rel}: {found.note}")
    twins, written = _split(vault, git.grep(['"kind": "same-id"'], MEMORIES))
    git.stage(settled + [str(p.relative_to(vault.root)) for p in written])
    notes += twins
    report.notes += notes
    git.commit_merge(message(subject, "sync", vault.actor, body="\n".join(f"- {n}" for n in notes)))
    _followed(vault, git.diff_names(before or f"{git.head()}^1", git.head(), MEMORIES, FACTS))


def _split(vault, paths: list[str]) -> tuple[list[str], list[Path]]:
    """Each memory fenced as created on two machines with different texts gets an id of its own:
    (what was done, the files written)."""
    notes, written = [], []
    for rel in paths:
        path = vault.root / rel
        try:
            memory = model.read(path)
        except FrontmatterError:
            continue
        body = memory.body
        for twin in reversed([f for f in conflicts.fences(body) if f.kind == "same-id"]):
            new_id = unique_id(memory.id, vault.taken_ids() | {p.stem for p in written})
            try:
                other = model.from_metadata({**dict(twin.info.get("meta") or {}), "id": new_id}, twin.text)
            except ValueError:
                continue  # its header does not validate: the fence stays, doctor lists it
            written.append(vault.path_of(new_id))
            written[-1].parent.mkdir(mode=DIR_MODE, exist_ok=True)
            atomic_write(written[-1], model.dump(other))
            body = body[:twin.span[0]] + "\n" + body[twin.span[1]:]
            notes.append(f"{memory.id} was created on two machines with different texts: both kept, the one "
                         f"from this side is now {new_id}")
        if body != memory.body:
            atomic_write(path, model.dump(memory.evolve(body=body.strip("\n"))))
            written.append(path)
    return notes, written


def _repair(vault, report: Report) -> None:
    """Files a merge without the driver committed with conflict markers: merged again from that merge's
    parents, where the file has not changed since; one commit. Others are named for a person."""
    git = vault.git
    fixed = []
    for rel in git.grep(list(conflicts.MARKERS), *MERGED):
        path = vault.root / rel
        current = read_regular(path)
        if not conflicts.has_markers(current.decode("utf-8", "replace")):
            continue
        sha, *parents = git.last_change(rel) or [""]
        if len(parents) != 2 or git.blob(sha, rel) != current:
            report.notes.append(f"{rel} holds conflict markers that no merge left as they are; edit it by hand")
            continue
        base = git.merge_base(*parents)
        found = reconcile(rel, git.blob(base, rel) if base else None, git.blob(parents[0], rel),
                          git.blob(parents[1], rel), machine=this_machine(git))
        vault.write_bytes(path, found.data or b"")
        fixed.append(path)
        report.notes.append(f"{rel}: merged again by hafiza's rules (a merge without its driver left conflict "
                            "markers)" + (f"; {found.note}" if found.note else ""))
    if fixed:
        notes, written = _split(vault, [rel for p in fixed if is_memory(rel := str(p.relative_to(vault.root)))])
        report.notes += notes
        vault.commit(list(dict.fromkeys(fixed + written)),
                     f"repair {plural(len(fixed), 'file')} merged without the driver",
                     "sync-repair")


def _followed(vault, changes: list[tuple[str, str]]) -> None:
    """Tell readers which memory files and fact notes changed, so the index re-reads only those; counts as a
    commit."""
    vault._landed([path for _, path in changes if is_memory(path) or is_fact_path(path)], vault.git.head())


def _tally(git, old: str | None, new: str | None, into: dict[str, list[str]], only: set | None = None) -> None:
    """Memories added, changed and superseded from `old` to `new` (of the paths `only`), by id, into `into`;
    fact notes added and changed as `fact:<note>`."""
    if new is None or old == new:
        return
    changed = [(status, rel) for status, rel in git.diff_names(old, new, MEMORIES, FACTS)
               if (is_memory(rel) or is_fact_path(rel)) and (only is None or rel in only) and status in "AM"]
    modified = [rel for status, rel in changed if status == "M"]
    data = git.blobs([f"{rev}:{rel}" for rel in modified for rev in (old, new)])
    found = {rel: (data[2 * n], data[2 * n + 1]) for n, rel in enumerate(modified)}
    for status, rel in changed:
        memory_id = Path(rel).stem if is_memory(rel) else f"{FACT_DOC}{Path(rel).stem}"
        if status == "A":
            into["added"].append(memory_id)
        else:
            was, now = (_status(data) for data in found[rel])
            key = "superseded" if now == "superseded" and was != "superseded" else "changed"
            into[key].append(memory_id)
    for key in into:
        into[key] = sorted(set(into[key]))


def _status(data: bytes | None) -> str | None:
    try:
        meta, _ = model.split((data or b"").decode("utf-8"))
    except Exception:
        return None
    return (meta or {}).get("status")


def conflicted(vault) -> dict[str, list[str]]:
    """Memories holding a merge's second text, by id: the kinds of fence each holds (body, same-id)."""
    found = {}
    for rel in vault.git.grep([conflicts.START], MEMORIES):
        try:
            memory = model.read(vault.root / rel)
        except FrontmatterError:
            continue
        kinds = sorted({f.kind for f in conflicts.fences(memory.body)})
        if kinds:
            found[memory.id] = kinds
    return found


def resolve(vault, memory_id: str, keep: str | None = None) -> list[str]:
    """Settle a memory's merge conflicts as one commit: a twin made with the same id on another machine gets
    its own id; of two texts, this machine's (ours), the other's (theirs) or both are kept (`keep`), whichever
    machine made the merge. What was done."""
    import datetime as dt

    with vault.transaction():
        memory = vault.get(memory_id)
        kinds = {f.kind for f in conflicts.fences(memory.body)}
        if not kinds:
            raise HafizaError(f"{memory.id} holds no merge conflict", field="id")
        if "body" in kinds and keep not in conflicts.KEEP:
            raise HafizaError(f"{memory.id} holds two texts of its body: say which to keep with --keep "
                              "ours|theirs|both", field="keep")
        done, written = _split(vault, [vault.rel(memory)])
        if "body" in kinds:
            memory = vault.get(memory.id)
            here = this_machine(vault.git)
            titles = [f.info["title"] for f in conflicts.fences(memory.body) if f.kind == "body" and f.info.get("title")]
            fenced = "ours" if conflicts.elsewhere(memory.body, here) else "theirs"
            if keep == fenced and titles:  # the fenced text's title goes with it (an earlier merge made it an alias)
                memory = memory.evolve(title=titles[-1], aliases=[a for a in memory.aliases if a != titles[-1]])
            memory = memory.evolve(body=conflicts.pick(memory.body, keep, here), updated=dt.date.today())
            written.append(vault.write_file(memory))
            done.append(f"{memory.id}: kept " + {"ours": "this machine's text", "theirs": "the other machine's text",
                                                   "both": "both texts, this machine's first"}[keep])
        vault.commit(list(dict.fromkeys(written)), f"resolve {memory.id}" + (f" (keep {keep})" if keep else ""),
                     "resolve")
    return done
