"""Review branches: what hafiza proposes without a person typing it, as commits a person takes or leaves.

The curator (and next the verifier's extraction, capture from sessions and
skill drafts) writes each proposed action as one commit on a branch of the
vault, `<kind>/<YYYY-MM-DD-HHMM>`, on top of main. The branch is written
through a private git index, so main, the work tree and any agent writing
meanwhile are untouched. A person reads it like a colleague's pull request
(`hafiza review show`, or on the server after `--push`), then:

- accept: each chosen action is brought onto main as its own commit, merged
  field by field with whatever main did since (vault.merge), so `hafiza undo`
  reverts one action;
- reject: a ruling is appended to `rulings.jsonl`, committed, so no machine
  that syncs the vault proposes the same thing again.

An action is decided when main holds it (accepted here, or the branch was
merged on the server) or a ruling names it; a branch with nothing left open
is removed.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from dataclasses import dataclass, field
from typing import NamedTuple

from hafiza.vault.guard import secrets
from hafiza.vault.errors import GitError, HafizaError, SecretRefused
from hafiza.vault.files import NotRegularFile, read_regular
from hafiza.vault.format.text import plural
from hafiza.vault.git import Commit, message
from hafiza.vault.sync.merge import Conflict, merge

# Who may open a review branch: its name's first part. `promote` opens one on a team vault (vault/sync/teams.py).
KINDS = ("curate", "verify", "capture", "skills", "promote")
RULINGS = "rulings.jsonl"
VERDICTS = ("duplicate", "conflict", "fine")  # a person's judgement of a related pair (Review.judge)
MAIN = "main"
MAX_PROPOSALS = 1000  # a run proposes at most --max-actions (25 by default); this only bounds a walk
# Trailers a proposal carries besides Hafiza-Action/-Actor/-Reason; values are one line each.
EVIDENCE, CONFIDENCE, GUARDS, KEY, MEMORIES, PROPOSED_IN = (
    "Hafiza-Evidence", "Hafiza-Confidence", "Hafiza-Guards", "Hafiza-Proposal", "Hafiza-Memories",
    "Hafiza-Proposed-In")
JUDGED = "Hafiza-Judged"
DECISIONS = ("reject", "judge")  # the actions of main's ruling commits (accept's carry Hafiza-Proposed-In)


@dataclass
class Action:
    """One proposed change: the files it writes (vault-relative path -> content) and why."""

    action: str                  # Hafiza-Action: merge-duplicate, mark-stale, archive, add-aliases...
    subject: str                 # the commit subject after `hafiza: `
    key: str                     # what the proposal is about; rulings and later runs compare it
    files: dict[str, bytes]
    reason: str
    evidence: str = ""
    confidence: float = 1.0
    guards: tuple[str, ...] = ()
    ids: tuple[str, ...] = ()    # the memories it touches
    body: str = ""               # a paragraph for `git log`

    def trailers(self) -> dict[str, str]:
        out = {EVIDENCE: self.evidence, CONFIDENCE: f"{self.confidence:.2f}",
               GUARDS: ", ".join(self.guards) or "none", KEY: self.key, MEMORIES: " ".join(self.ids)}
        return {k: v for k, v in out.items() if v}

    def to_json(self) -> dict:
        return {"action": self.action, "subject": self.subject, "key": self.key, "memories": list(self.ids),
                "reason": self.reason, "evidence": self.evidence, "confidence": round(self.confidence, 2),
                "guards": list(self.guards), "files": sorted(self.files)}


@dataclass
class Proposal:
    """An action as it stands on a branch."""

    number: int                  # 1-based, in branch order: what --only takes
    commit: Commit
    state: str = "open"          # open | accepted | rejected

    @property
    def key(self) -> str:
        return self.commit.trailers.get(KEY, self.commit.sha)

    @property
    def action(self) -> str:
        return self.commit.trailers.get("Hafiza-Action", "?")

    @property
    def ids(self) -> list[str]:
        return self.commit.trailers.get(MEMORIES, "").split()

    def to_json(self) -> dict:
        t = self.commit.trailers
        return {"number": self.number, "state": self.state, "commit": self.commit.sha, "action": self.action,
                "subject": self.commit.subject.removeprefix("hafiza: "), "memories": self.ids,
                "reason": t.get("Hafiza-Reason", ""), "evidence": t.get(EVIDENCE, ""),
                "confidence": float(t.get(CONFIDENCE) or 0), "guards": t.get(GUARDS, ""), "key": self.key}


@dataclass
class Branch:
    name: str
    base: str
    tip: str
    proposals: list[Proposal] = field(default_factory=list)

    @property
    def open(self) -> list[Proposal]:
        return [p for p in self.proposals if p.state == "open"]

    def chosen(self, only) -> list[Proposal]:
        """The open proposals numbered in `only` (all open ones when empty); unknown numbers are an error."""
        if not only:
            return self.open
        numbers = {p.number: p for p in self.proposals}
        missing = [n for n in only if n not in numbers]
        if missing:
            raise HafizaError(f"{self.name} has no action {missing[0]}; it has 1-{len(self.proposals)}", field="only")
        done = [n for n in only if numbers[n].state != "open"]
        if done:
            raise HafizaError(f"action {done[0]} of {self.name} is already {numbers[done[0]].state}", field="only")
        return [numbers[n] for n in sorted(set(only))]

    def to_json(self) -> dict:
        return {"branch": self.name, "base": self.base, "tip": self.tip,
                "open": len(self.open), "proposals": [p.to_json() for p in self.proposals]}


class Review:
    """The review branches of one vault (a `Vault`, whose write path accept and reject go through)."""

    def __init__(self, vault, actor: str | None = None):
        self.vault = vault
        self.git = vault.git
        self.actor = actor or vault.actor  # who proposes (the curator); a ruling names the vault's actor

    # ---- writing a branch

    def start(self, kind: str, now: dt.datetime | None = None) -> str:
        """A fresh branch name for a run of `kind`; the branch exists once its first action is proposed."""
        if kind not in KINDS:
            raise HafizaError(f"unknown review kind {kind!r}")
        stamp = f"{kind}/{(now or dt.datetime.now()):%Y-%m-%d-%H%M}"
        name, n = stamp, 2
        while self.git.branch_tip(name) is not None:
            name, n = f"{stamp}-{n}", n + 1
        return name

    def propose(self, name: str, action: Action) -> str:
        """Commit `action` on branch `name` (created from main's head on first use); returns the sha."""
        text = self._message(action)
        parent = self.git.branch_tip(name) or self.git.head()
        return self.git.commit_to_branch(name, parent, action.files, text)

    def propose_all(self, name: str, actions: list[Action]) -> list[str]:
        """`propose` for several actions, one commit each, written at once (git fast-import)."""
        texts = [self._message(action) for action in actions]  # every guard first: all or none
        parent = self.git.branch_tip(name) or self.git.head()
        return self.git.commit_chain(name, parent, [(a.files, t) for a, t in zip(actions, texts)]) if actions else []

    def _message(self, action: Action) -> str:
        """The commit message of `action`, once its files and words passed the secret guard."""
        for path, data in action.files.items():
            found = secrets.scan_bytes(data).secrets
            if found:  # the same guard as every commit to main: a proposal is committed too
                raise SecretRefused(f"{path} of the proposal {action.key!r} contains what looks like a secret "
                                    f"({', '.join(found)}); not proposed")
        text = message(action.subject, action.action, self.actor, action.reason, body=action.body,
                       trailers=action.trailers())
        secrets.check(text, "the proposal's message", field="reason")
        return text

    # ---- reading

    def branches(self) -> list[Branch]:
        """Every review branch with its proposals and their state, oldest first."""
        names = [n for kind in KINDS for n in self.git.branches(f"{kind}/*")]
        rulings = self._ruled()
        found = []
        for name in names:
            branch = self._branch(name, rulings)
            if self.git.is_ancestor(branch.tip, MAIN):
                self._tidy(branch)  # merged on the server and pulled: all of it is in main
            else:
                found.append(branch)
        return found

    def branch(self, name: str | None = None) -> Branch:
        """The branch `name`, or the newest one with open proposals."""
        found = self.branches()
        if name is None:
            live = [b for b in found if b.open]
            if not live:
                raise HafizaError("no review branch has open proposals; run `hafiza curate`")
            return live[-1]
        for branch in found:
            if branch.name == name:
                return branch
        raise HafizaError(f"no review branch {name!r}; `hafiza review` lists them", field="branch")

    def open_keys(self) -> set[str]:
        """Keys of proposals waiting on any branch: a later run does not propose them twice."""
        return {p.key for b in self.branches() for p in b.open}

    def rulings(self) -> dict[str, dict]:
        """Rejected proposals by key, from the committed rulings file."""
        out = {}
        for ruling in self._read_rulings():
            if ruling.get("key"):
                out[ruling["key"]] = ruling
        return out

    def diff(self, branch: Branch, only=()) -> str:
        """The patch of each chosen proposal, with its message, as `git show` prints it."""
        shas = [p.commit.sha for p in branch.chosen(only)] if only else [p.commit.sha for p in branch.proposals]
        return "\n".join(self.git.show(sha) for sha in shas)

    # ---- deciding

    def accept(self, branch: Branch, only=()) -> list[tuple[Proposal, str]]:
        """Bring the chosen proposals onto main, one commit each; (proposal, new sha or why not)."""
        if branch.name.startswith("skills/"):  # a draft accepted as it is would be an inert file on main
            raise HafizaError(f"{branch.name} holds skill drafts: `hafiza skills promote NAME` makes one a skill, "
                              "`hafiza skills reject NAME` drops it", field="branch")
        results = []
        with self.vault.transaction():
            for proposal in branch.chosen(only):
                try:
                    sha = self._land(proposal)
                except Conflict as exc:
                    results.append((proposal, f"not applied: main changed it since ({exc.what}); run again"))
                    continue
                proposal.state = "accepted"
                results.append((proposal, sha))
        self._tidy(branch)
        return results

    def accept_as(self, branch: Branch, proposal: Proposal, files: dict[str, bytes], subject: str,
                  action: str) -> str:
        """Settle an open proposal by writing `files` to main in place of its own (a skill draft becomes the
        skill it drafted), one commit naming the proposal, so the branch counts it accepted; the new sha."""
        if proposal.state != "open":
            raise HafizaError(f"action {proposal.number} of {branch.name} is already {proposal.state}")
        commit = proposal.commit
        with self.vault.transaction():
            sha = self._write(files, subject, action, commit.trailers.get("Hafiza-Reason"), commit.body,
                              _landing(commit), self.vault.actor)
        proposal.state = "accepted"
        self._tidy(branch)
        return sha

    def reject(self, branch: Branch, only=(), why: str | None = None) -> list[Proposal]:
        """Record a ruling per chosen proposal, in one commit; the proposals are never made again."""
        chosen = branch.chosen(only)
        if not chosen:
            return []
        self._rule([{"key": p.key, "action": p.action, "memories": p.ids, "commit": p.commit.sha,
                     "branch": branch.name} for p in chosen],
                   f"reject {plural(len(chosen), 'proposal')} of {branch.name}",
                   "reject", why)
        for p in chosen:
            p.state = "rejected"
        self._tidy(branch)
        return chosen

    def judge(self, key: str, memories, verdict: str, why: str | None = None) -> str:
        """Record a person's judgement of something a run only listed for reading (a related pair: duplicate,
        conflict or fine) as a ruling, one commit, so no run lists or proposes it again; the commit's sha."""
        if verdict not in VERDICTS:
            raise HafizaError(f"a judgement is one of {', '.join(VERDICTS)}, not {verdict!r}", field="verdict")
        # Named in a trailer of its own: a commit carrying Hafiza-Proposal is taken for a proposal by a branch walk.
        return self._rule([{"key": key, "action": "judge", "memories": list(memories), "verdict": verdict}],
                          f"judge {key} {verdict}", "judge", why, trailer=JUDGED)

    def _rule(self, rulings: list[dict], subject: str, action: str, why: str | None, trailer: str = KEY) -> str:
        """Append `rulings` to rulings.jsonl (each dated and signed with the vault's actor), in one commit."""
        extra = {"why": " ".join((why or "").split()) or None, "at": dt.date.today().isoformat(),
                 "by": self.vault.actor}
        lines = [json.dumps({**ruling, **extra}, ensure_ascii=False) for ruling in rulings]
        path = self.vault.root / RULINGS
        with self.vault.transaction():
            current = path.read_bytes() if path.exists() else b""
            if current and not current.endswith(b"\n"):
                current += b"\n"
            self.vault.write_bytes(path, current + "".join(line + "\n" for line in lines).encode("utf-8"))
            return self.vault.commit([path], subject, action, why, trailers={trailer: " ".join(r["key"] for r in rulings)})

    def apply(self, action: Action) -> str:
        """Write an action straight to main: only for classes of change that need no judgement."""
        with self.vault.transaction():
            return self._write(action.files, action.subject, action.action, action.reason, action.body,
                               action.trailers(), self.actor)

    def push(self, branch: Branch, remote: str = "origin") -> str:
        """Push the branch to the vault's remote; returns the remote's URL."""
        if not remote or remote.startswith("-") or any(c.isspace() or c == "\0" for c in remote):
            raise HafizaError(f"{remote!r} is not a remote's name", field="remote")  # never an option to git
        url = self.git.remote_url(remote)
        if url is None:
            raise HafizaError(f"the vault has no git remote {remote!r}; add one with `git -C {self.vault.root} "
                              f"remote add {remote} URL`", field="remote")
        self.git.push(remote, f"refs/heads/{branch.name}:refs/heads/{branch.name}")
        return url

    # ---- inside

    def _land(self, proposal: Proposal) -> str:
        commit = proposal.commit
        parent = f"{commit.sha}^"
        files = {}
        for rel in self.git.changed_paths(commit.sha):
            ours = self._current(rel)
            result = merge(rel, self.git.blob(parent, rel), ours, self.git.blob(commit.sha, rel))
            if result is not None and result != ours:
                files[rel] = result
        return self._write(files, commit.subject.removeprefix("hafiza: "), proposal.action,
                           commit.trailers.get("Hafiza-Reason"), commit.body, _landing(commit),
                           commit.trailers.get("Hafiza-Actor"))

    def _current(self, rel: str) -> bytes | None:
        """Main's file as it is now (hand edits were just committed); a link or a pipe is not merged into."""
        path = self.vault.root / rel
        if not os.path.lexists(path):
            return None
        try:
            return read_regular(path)
        except NotRegularFile as exc:
            raise Conflict(f"{rel} is {exc.reason}") from None

    def _write(self, files: dict[str, bytes], subject, action, reason, body, trailers, actor) -> str:
        for rel in files:  # a proposal may add a folder (skills/<name>/)
            (self.vault.root / rel).parent.mkdir(parents=True, exist_ok=True)
        paths = [self.vault.write_bytes(self.vault.root / rel, data) for rel, data in files.items()]
        return self.vault.commit(paths, subject, action, reason, body=body, trailers=trailers, actor=actor)

    def _branch(self, name: str, rulings: Rulings) -> Branch:
        tip = self.git.branch_tip(name)
        merged = self.git.is_ancestor(tip, MAIN)  # a pull request merged on the server
        # The proposals are the run of proposal commits at the branch's tip that main does not hold: main's
        # accept and reject commits carry the same trailer, and a branch begun after them must not take
        # them for its own (issue 30, item 3). Once a server merged the branch, main holds all of it.
        commits = []
        for commit in self.git.log(MAX_PROPOSALS + 1, rev=tip if merged else f"{MAIN}..{tip}", first_parent=True):
            if KEY not in commit.trailers or PROPOSED_IN in commit.trailers or commit.action in DECISIONS:
                break
            commits.append(commit)
        commits.reverse()
        base = self.git.resolve(f"{commits[0].sha}^") if commits else tip
        # What main took since the branch began: the Hafiza-Proposed-In of its commits, and their keys (the
        # same proposal, made on another branch or machine, accepted there).
        landed = [c.trailers for c in self.git.log(None, rev=f"{base}..{MAIN}") if PROPOSED_IN in c.trailers]
        accepted = {t[PROPOSED_IN] for t in landed} | {t[KEY] for t in landed if KEY in t}
        proposals = []
        for n, commit in enumerate(commits, 1):
            key = commit.trailers[KEY]
            state = "open"
            if merged or commit.sha in accepted or key in accepted:
                state = "accepted"
            elif commit.sha in rulings.commits or key in rulings.keys:
                state = "rejected"
            proposals.append(Proposal(n, commit, state))
        return Branch(name, base, tip, proposals)

    def _tidy(self, branch: Branch) -> None:
        """Remove a branch that has nothing left to decide; its commits stay reachable from main or rulings."""
        if not branch.open:
            try:
                self.git.delete_branch(branch.name)
            except GitError:
                pass

    def _read_rulings(self) -> list[dict]:
        path = self.vault.root / RULINGS
        if not path.is_file():
            return []
        out = []
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                item = json.loads(line)
            except ValueError:
                continue  # a hand-mangled line: the others still rule
            if isinstance(item, dict):
                out.append(item)
        return out

    def _ruled(self) -> Rulings:
        rulings = [r for r in self._read_rulings() if r.get("action") != "judge"]  # a judged pair proposed nothing
        return Rulings({r["commit"] for r in rulings if isinstance(r.get("commit"), str)},
                       {r["key"] for r in rulings if isinstance(r.get("key"), str)})


class Rulings(NamedTuple):
    """What rulings.jsonl rejected: the proposals' commits, and their keys (the same proposal, made again on
    another branch or machine before the ruling reached it, is rejected too)."""

    commits: set[str]
    keys: set[str]


def _landing(commit: Commit) -> dict[str, str]:
    """The trailers of the commit that brings a proposal onto main: its own, and where it was proposed."""
    trailers = {k: v for k, v in commit.trailers.items() if k not in ("Hafiza-Action", "Hafiza-Actor", "Hafiza-Reason")}
    return {**trailers, PROPOSED_IN: commit.sha}


def pr_body(branch: Branch) -> str:
    """A pull request's description: what the branch proposes, one row per action."""
    def cell(text) -> str:
        return " ".join(str(text).split()).replace("|", "\\|")[:300]

    rows = [f"| {p.number} | {p.action} | {cell(', '.join(p.ids))} | {cell(p.to_json()['reason'])} | "
            f"{cell(p.to_json()['evidence'])} | {p.to_json()['confidence']:.2f} |" for p in branch.open]
    return "\n".join([
        f"hafiza proposes {plural(len(rows), 'change')} to the memory vault, one commit each. Merge all, or accept "
        f"some with `hafiza review accept {branch.name} --only N`; reject with `hafiza review reject {branch.name} "
        "--only N --why TEXT` so they are not proposed again.", "",
        "| # | action | memories | reason | evidence | confidence |",
        "|---|---|---|---|---|---|", *rows, ""])
