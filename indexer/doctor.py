"""What `hafiza doctor` (and the health screen of `hafiza ui`) checks. Each check returns a level, a one-line
summary and details. The check of the installed clients lives with the installers (hooks/install.py): the
adapters pass it in, since this layer never imports them."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from hafiza.vault.errors import Quarantined
from hafiza.vault.format.text import agree, plural


@dataclass
class Check:
    name: str
    level: str  # ok | warn | fail
    summary: str
    details: list[str] = field(default_factory=list)


def run_checks(vault, settings, adapters=()) -> list[Check]:
    """Every check; `settings` (hafiza.indexer.config) names the embedder whose vectors are checked, and
    `adapters` are the agent adapters' checks (hooks/: Claude Code's MEMORY.md cliff, the installed clients'
    hooks), each a function of the vault that returns a Check."""
    checks = [check(vault) for check in (check_files, check_secrets, check_index)]
    checks.append(check_vectors(vault, settings))
    return checks + [check(vault) for check in (check_lock, check_git, check_interrupted, check_links, check_private,
                                                check_usage, check_aliases, *adapters,
                                                check_labels, check_review, check_sync)]


def check_labels(vault) -> Check:
    """Memories whose claims stopped being true (the verifier's `failed`, the curator's `stale`): still
    recalled, labelled and ranked lower, until a person fixes or supersedes them."""
    memories, _ = vault.load_all()
    labelled = [m for m in memories if m.active and isinstance(m.verified, dict)
                and m.verified.get("status") in ("failed", "stale")]
    if not labelled:
        return Check("labels", "ok", "no active memory is labelled unverified")
    details = [f"{m.id}: {str(m.verified.get('detail') or m.verified.get('status'))[:120]}" for m in labelled[:20]]
    return Check("labels", "warn", f"{plural(len(labelled), 'active memory')} {agree(len(labelled), 'is', 'are')} "
                 "labelled unverified (fix, update or supersede them; `hafiza verify` clears a label once the claim "
                 "holds again)", details)


def check_review(vault) -> Check:
    """Review branches with actions nobody has decided yet."""
    from hafiza.vault.review import Review

    try:
        branches = [b for b in Review(vault).branches() if b.open]
    except Exception as exc:  # a doctor reports; it does not fail on a branch it cannot read
        return Check("review", "warn", f"could not read the review branches: {exc}")
    if not branches:
        return Check("review", "ok", "no proposals waiting for review")
    waiting = sum(len(b.open) for b in branches)
    return Check("review", "warn", f"{plural(waiting, 'proposal')} {agree(waiting, 'waits', 'wait')} on "
                 f"{plural(len(branches), 'review branch')}; `hafiza review`", [b.name for b in branches])


def check_files(vault) -> Check:
    from hafiza.vault import facts
    from hafiza.vault.format.layout import vault_rel

    memories, errors = vault.load_all()
    notes, broken = facts.load_all(vault.root)
    errors = [e for e in errors + broken if not isinstance(e, Quarantined)]  # check_secrets names those
    renamed = [f"{vault_rel(m.path)} says `id: {m.id}`: it is found as {m.id} only; rename the file to "
               f"{m.id}.md" for m in memories if m.path is not None and m.path.stem != m.id]
    if errors:
        return Check("files", "fail", f"{plural(len(errors), 'file')} {agree(len(errors), 'does', 'do')} not parse "
                     "(skipped; the rest work)",
                     [e.message for e in errors] + renamed)
    if renamed:
        return Check("files", "warn", f"{plural(len(renamed), 'file name')} {agree(len(renamed), 'differs', 'differ')} "
                     "from the id inside", renamed)
    parsed = plural(len(memories), "memory") + (f" and {plural(len(notes), 'fact note')}" if notes else "")
    return Check("files", "ok", f"{parsed} {'parses' if len(memories) == 1 and not notes else 'parse'}")


def check_secrets(vault) -> Check:
    """Files holding what looks like a secret (a sync brought them, or a hand edit): quarantined, kept as they
    are, and how to take the secret out of history (issue 29, item 4)."""
    from hafiza.vault import facts
    from hafiza.vault.files import read_text
    from hafiza.vault.guard import quarantine
    from hafiza.indexer.profile import PROFILE_FILE

    found = [e for e in vault.load_all()[1] + facts.load_all(vault.root)[1] if isinstance(e, Quarantined)]
    held = [(Path(e.path).relative_to(vault.root).as_posix(), e.kinds) for e in found]
    try:
        profile = quarantine.kinds(read_text(vault.root / PROFILE_FILE))
    except (OSError, UnicodeDecodeError):
        profile = []
    if profile:
        held.append((PROFILE_FILE, profile))
    if not held:
        return Check("secrets", "ok", "no file holds what looks like a secret")
    return Check("secrets", "fail", f"{plural(len(held), 'file')} {agree(len(held), 'holds', 'hold')} what looks "
                 "like a secret: quarantined (kept, never indexed, recalled, shown or put in the profile)",
                 [f"{rel}: {', '.join(kinds)}; {quarantine.advice(rel)}" for rel, kinds in held])


def check_index(vault) -> Check:
    from hafiza.indexer.index import Index

    index = Index(vault.root, notice=lambda _: None)
    report = index.sync()
    from hafiza.vault import facts

    parsed = len(vault.load_all()[0])
    attributes = sum(1 for n in facts.load_all(vault.root)[0] for a in n.attributes if a.current)
    count = index.doc_count() - attributes  # each current attribute of a fact note is a document of its own
    note = (" (rebuilt)" if report.rebuilt else
            f" (built {plural(report.impact_built, 'keyword pruning file')})" if report.impact_built else "")
    also = f" (and {plural(attributes, 'fact attribute')})" if attributes else ""
    if count != parsed:
        return Check("index", "fail", f"index holds {plural(count, 'memory')}{also} but "
                     f"{plural(parsed, 'file')} {agree(parsed, 'parses', 'parse')}{note}; "
                     "run `hafiza reindex`")
    return Check("index", "ok", f"{plural(count, 'memory')}{also} indexed, in step with the files{note}")


def check_vectors(vault, settings) -> Check:
    """Whether the meaning channel has what it needs: vectors by the embedder in use, for every memory."""
    from hafiza.indexer.config import embedder as choose
    from hafiza.indexer.index import Index
    from hafiza.indexer.vectors import META, NONE_YET, VectorStore

    embedder = choose(settings)  # the model itself loads lazily: not here
    if embedder is None:
        return Check("vectors", "ok", "meaning channel off (HAFIZA_EMBEDDER=none): keyword recall only")
    from hafiza.indexer.refresh import embedding_items

    items = [(id_, hash_) for id_, hash_, *_ in embedding_items(Index(vault.root, notice=lambda _: None))]
    if not items:  # a new vault: no vectors because nothing to embed, which is no fault
        return Check("vectors", "ok", "no memories to embed yet")
    store = VectorStore(vault.sidecar)
    if not store.load(embedder.name, embedder.version, embedder.dim):
        name = f"{embedder.name} {embedder.version}"
        what = (f"no {name} vectors for the {plural(len(items), 'memory')} yet ({NONE_YET})"
                if not (vault.sidecar / META).exists() else
                f"the stored vectors are not usable {name} ones (another embedder's, an earlier hafiza's, or damaged)")
        return Check("vectors", "warn", f"{what}; recall is keyword-only until the next write or `hafiza reindex`")
    stale = store.stale(items)
    if stale:
        return Check("vectors", "warn", f"{len(stale)} of {len(items)} memories are new or changed since they were "
                     "embedded (edited by hand?); their meaning search is off or out of date until the next "
                     "write, the warm process's next pass (up to 50), or `hafiza reindex`")
    if store.upgraded_from is not None:
        whose = "1 memory's" if len(items) == 1 else f"{len(items)} memories'"
        return Check("vectors", "warn", f"{whose} vectors are in the float32 format of an earlier "
                     f"hafiza (format {store.upgraded_from}): they work, converted each time they are loaded; the "
                     "next write (or the warm process's first pass) stores them as 16-bit rows without embedding "
                     "again, or `hafiza reindex` rebuilds them now")
    return Check("vectors", "ok", f"{plural(len(items), 'memory')} embedded by {embedder.name} "
                 f"{embedder.version}")


def check_aliases(vault) -> Check:
    """How many active memories have aliases: without them a prompt worded differently finds less."""
    from hafiza.indexer.index import Index

    index = Index(vault.root, notice=lambda _: None)
    docs = index.documents(status="active")
    bare = len(index.documents(status="active", without_aliases=True))
    if not docs:
        return Check("aliases", "ok", "no active memories")
    if not bare:
        return Check("aliases", "ok", f"all {len(docs)} active memories have aliases" if len(docs) > 1
                     else "the one active memory has aliases")
    return Check("aliases", "ok", f"{bare} of {len(docs)} active memories ({bare / len(docs):.0%}) have no aliases: "
                 "prompts worded otherwise or in the other language find them less often (`hafiza list "
                 "--without-aliases`; an agent can add them with the MCP tool `add_aliases`, and `hafiza curate` "
                 "writes them with a model provider)")


def check_lock(vault) -> Check:
    from hafiza.vault.store.lock import holder, is_held

    if is_held(vault.lock_path):
        return Check("lock", "warn", f"a writer holds the vault lock now (pid {holder(vault.lock_path)})")
    return Check("lock", "ok", "no writer holds the lock")


def check_git(vault) -> Check:
    lock = vault.git.stale_lock()
    if lock is not None:
        return Check("git", "fail", f"{lock.relative_to(vault.root)} is left by a git process that died: every "
                     "git write fails until it goes. The next hafiza write removes it (or delete it yourself).")
    if vault.git.dirty():
        return Check("git", "warn", "uncommitted hand edits; the next hafiza change records them first")
    return Check("git", "ok", f"clean, {plural(len(vault.git.log(None)), 'commit')}")


def check_interrupted(vault) -> Check:
    """A write that died (kill -9, a full disk) before its commit, and the temp files it left."""
    from hafiza.vault.store.journal import Journal, orphan_temp_files

    found = Journal(vault.root, vault.sidecar).read()
    temps = orphan_temp_files(vault.root)
    if found is None and not temps:
        return Check("interrupted writes", "ok", "none")
    details = [f"{plural(len(found[1]), 'path')} in the interrupted write's journal "
               f"(pid {found[0].get('pid', '?')})"] \
        if found else []
    details += [f"temp file of a dead writer: {p.relative_to(vault.root)}" for p in temps]
    return Check("interrupted writes", "warn", "a write was interrupted before its commit; the next hafiza write "
                 "rolls it back (whole or absent) and removes its temp files", details)


def check_links(vault) -> Check:
    """Symlinks, hard links, pipes and other non-regular files in the vault: never read, indexed or committed."""
    from hafiza.vault.files import kind

    found = []
    for folder, dirs, files in os.walk(vault.root):
        dirs[:] = [d for d in dirs if d not in (".git", ".hafiza")]
        for name in files + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            path = os.path.join(folder, name)
            try:
                what = kind(os.lstat(path))
            except OSError:
                continue
            if what and what != "a folder":
                target = f" -> {os.readlink(path)}" if os.path.islink(path) else ""
                found.append(f"{os.path.relpath(path, vault.root)}: {what}{target}")
    if not found:
        return Check("links", "ok", "only regular files")
    return Check("links", "warn", f"{plural(len(found), 'link')} or special {agree(len(found), 'file', 'files')}: "
                 "hafiza never reads, indexes or commits them; remove them or replace them with the file itself", found)


def check_private(vault) -> Check:
    """The vault holds what people told their agents: only its owner should read it."""
    mode = os.stat(vault.root).st_mode & 0o777
    if mode & 0o077:
        return Check("permissions", "warn", f"the vault folder is {mode:o}: other users of this machine can read "
                     f"it; `chmod 700 {vault.root}` keeps it yours")
    return Check("permissions", "ok", f"the vault folder is {mode:o} (yours alone)")


def check_usage(vault) -> Check:
    from hafiza.vault.store import usage

    waiting = usage.unfolded(vault.sidecar)
    return Check("usage", "ok", f"{plural(waiting.shown, 'impression')} and {plural(waiting.used, 'use')} waiting "
                 "to be folded")



def check_sync(vault) -> Check:
    """What merges from other machines left: an unfinished merge, raw conflict markers (a merge without
    hafiza's driver), memories holding two texts until a person picks, a driver this machine lacks."""
    from hafiza.vault.format import conflicts
    from hafiza.vault.sync.machines import MERGED, conflicted, driver_command

    git = vault.git
    if git.merging():
        return Check("sync", "fail", "a git merge is under way (a `git pull` stopped on a conflict); `hafiza sync` "
                     "finishes it by hafiza's merge rules, `git merge --abort` drops it")
    marked = [rel for rel in git.grep(list(conflicts.MARKERS), *MERGED)
              if conflicts.has_markers((vault.root / rel).read_text(encoding="utf-8", errors="replace"))]
    if marked:
        return Check("sync", "fail", f"{plural(len(marked), 'file')} {agree(len(marked), 'holds', 'hold')} raw "
                     "conflict markers from a merge without hafiza's driver; `hafiza sync` merges them again by its "
                     "rules", marked)
    twins = conflicted(vault)
    if twins:
        return Check("sync", "warn", f"{plural(len(twins), 'memory')} {agree(len(twins), 'holds', 'hold')} two texts "
                     "from a merge; `hafiza resolve ID --keep ours|theirs|both` picks",
                     [f"{i}: {', '.join(k)}" for i, k in sorted(twins.items())])
    url = git.remote_url("origin")
    if url and git.config("merge.hafiza", "driver") != driver_command():
        return Check("sync", "warn", "this machine has not registered hafiza's merge driver (or it names another "
                     "interpreter); `hafiza sync` registers it")
    return Check("sync", "ok", f"remote origin: {url}" if url else "no remote (`hafiza remote set URL`)")
