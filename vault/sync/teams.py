"""Team vaults: more git repositories, read in the same ranking as the personal vault.

The list lives in the user's config folder (`vaults.json` under paths.config_dir), never in a
project: a cloned repository must not be able to redirect where a user's memory goes, nor choose
what is injected into their prompts (issue 15). Each team vault is a vault of its own, with its own
git repository, remote, index and vectors; hafiza reads them together and writes to one at a time.
Stdlib only: the prompt path reads the list.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import NamedTuple

from hafiza.vault.errors import HafizaError, MemoryNotFound
from hafiza.vault.format.layout import existing
from hafiza.vault.format.paths import MEMORIES, is_vault

FILE = "vaults.json"
PERSONAL = "personal"  # the label of the user's own vault in a ranking of several; no team may take it
_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")


class Team(NamedTuple):
    name: str
    path: Path
    url: str | None = None  # what it was cloned from, when `vault add` was given a URL

    def to_json(self) -> dict:
        return {"name": self.name, "path": str(self.path), "url": self.url}


def check_name(name: str) -> str:
    """A team vault's name: it labels hits and is typed after --to, so short, lowercase, no spaces."""
    if not _NAME.fullmatch(name or ""):
        raise HafizaError(f"{name!r} is not a vault name: use 1-40 lowercase letters, digits, '-' or '_', "
                          "starting with a letter or digit", field="name")
    if name == PERSONAL:
        raise HafizaError(f"{PERSONAL!r} names your own vault; give the team vault another name", field="name")
    return name


def load(config: Path, strict: bool = True) -> dict[str, Team]:
    """The team vaults listed in `config`/vaults.json, by name ({} when there is no list).

    `strict=False` (the prompt path) skips what it cannot read instead of raising: a hook must
    still recall from the personal vault when the list is damaged."""
    path = Path(config) / FILE
    try:
        data = json.loads(path.read_bytes())
        entries = data["vaults"]
        if not isinstance(entries, dict):
            raise TypeError("'vaults' is not an object")
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        if strict:
            raise HafizaError(f"{path} is not a list of vaults ({type(exc).__name__}: {exc}); fix it or "
                              "remove it and add the vaults again with `hafiza vault add`") from None
        return {}
    teams = {}
    for name, entry in entries.items():
        try:
            teams[check_name(name)] = Team(name, Path(entry["path"]), entry.get("url"))
        except (HafizaError, KeyError, TypeError) as exc:
            if strict:
                raise HafizaError(f"{path}: the entry {name!r} is not a vault ({exc}); fix it or remove it "
                                  f"with `hafiza vault remove {name}`") from None
    return teams


def readable(config: Path | None) -> dict[str, Path]:
    """Name -> folder of each listed team vault that is there to read (the prompt path: never raises)."""
    if config is None:
        return {}
    return {t.name: t.path for t in load(config, strict=False).values() if is_vault(t.path)}


def stamp(config: Path | None) -> tuple | None:
    """What changes when the list does (one stat, None when there is none): a process that runs for long
    reads the list again only when this differs, so a `hafiza vault add` is seen on its next call (issue 30)."""
    if config is None:
        return None
    try:
        st = os.stat(Path(config) / FILE)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino  # `save` replaces the file: a new inode even within one tick


def owner(personal: Path, teams: dict[str, Path], mem_id: str) -> str:
    """The vault holding the memory `mem_id`: the personal one first, then the team vaults by name;
    PERSONAL when none has a file of that name (the personal vault then says what is wrong with the id)."""
    from hafiza.vault.format.ids import is_valid_id

    if is_valid_id(mem_id):
        for name, root in [(PERSONAL, personal), *sorted(teams.items())]:
            if os.path.isfile(existing(Path(root) / MEMORIES, mem_id) or ""):
                return name
    return PERSONAL


def by_owner(personal: Path, teams: dict[str, Path], ids) -> dict[str, list[str]]:
    """`ids` (each once, in order) grouped by the vault holding them (`owner`)."""
    grouped: dict[str, list[str]] = {}
    for mem_id in dict.fromkeys(ids):
        grouped.setdefault(owner(personal, teams, mem_id), []).append(mem_id)
    return grouped


def find(personal: Path, teams: dict[str, Path], mem_id: str, open_vault):
    """The memory `mem_id` and the name of the vault holding it (`owner`: yours first, then the team vaults by name),
    as (name, memory), for `hafiza show` and MCP `get` alike; `open_vault(name)` opens PERSONAL or a team vault by
    name. An id no vault has raises MemoryNotFound naming the ids of every vault it may mean (`not_found`)."""
    name = owner(personal, teams, mem_id)
    vault = open_vault(name)
    if name == PERSONAL and teams and vault.unknown([mem_id]):  # asked before `get`, whose miss reads all yours
        raise not_found([mem_id], teams, open_vault, {PERSONAL: vault}, field="id")[mem_id]
    return name, vault.get(mem_id)


def not_found(ids, teams: dict[str, Path], open_vault, opened: dict, field: str) -> dict[str, MemoryNotFound]:
    """For each of `ids`, which no vault has, its MemoryNotFound, naming the ids it may mean of yours and of every
    team vault (a typo of a team's id is named as one of yours is); `opened`: vaults open already, by name."""
    from hafiza.vault.format.ids import near

    every = [m.id for name in [PERSONAL, *sorted(teams)]
             for m in (opened[name] if name in opened else open_vault(name)).load_all()[0]]
    return {i: MemoryNotFound(f"no memory with id {i!r}", field=field, near=near(i, every)) for i in ids}


class Uses(NamedTuple):
    """What `record_uses` did: the ids whose use it logged, by vault, and the error of each id no vault has."""

    vaults: dict[str, list[str]]
    unknown: dict[str, MemoryNotFound]  # id -> its error, which names the ids it may mean

    @property
    def recorded(self) -> list[str]:
        return [mem_id for ids in self.vaults.values() for mem_id in ids]

    def to_json(self) -> dict:
        return {"recorded": self.recorded, "vaults": self.vaults,
                "unknown": [{"id": mem_id, "error": exc.message, "near": exc.near} for mem_id, exc in self.unknown.items()]}


def record_uses(personal: Path, teams: dict[str, Path], ids, open_vault, session: str | None = None) -> Uses:
    """Log a use of each of `ids` (each once) in the vault holding it (`owner`: a team's memory counts in its
    team vault); `open_vault(name)` opens PERSONAL or a team vault by name. An id no vault has is left out and
    named in `unknown`, with the ids of every vault it may mean, so one typo does not lose the others' uses;
    when no id is known, nothing is logged and the first one's MemoryNotFound is raised."""
    grouped = by_owner(personal, teams, ids)
    vaults = {name: open_vault(name) for name in grouped}
    unknown = {}
    if missing := (vaults[PERSONAL].unknown(grouped[PERSONAL]) if PERSONAL in grouped else []):  # none has it: yours
        unknown = not_found(missing, teams, open_vault, vaults, field="ids")
        grouped[PERSONAL] = [i for i in grouped[PERSONAL] if i not in unknown]
        if not any(grouped.values()):
            raise unknown[missing[0]]
    return Uses({name: vaults[name].record_use(found, session) for name, found in grouped.items() if found}, unknown)


def save(config: Path, teams: dict[str, Team]) -> None:
    from hafiza.vault.files import atomic_write

    Path(config).mkdir(mode=0o700, parents=True, exist_ok=True)
    data = {"vaults": {t.name: {"path": str(t.path), **({"url": t.url} if t.url else {})}
                       for t in sorted(teams.values())}}
    atomic_write(Path(config) / FILE, json.dumps(data, indent=2, ensure_ascii=False) + "\n", mode=0o600)


def add(config: Path, data: Path, personal: Path, name: str, source: str) -> Team:
    """List a team vault: an existing vault folder as it is, else a git URL (or bare repository)
    cloned into `data`/teams/NAME. The caller builds its index."""
    from hafiza.vault.store.vault import Vault
    from .machines import clone

    teams = load(config)
    if check_name(name) in teams:
        raise HafizaError(f"a vault named {name!r} is listed already ({teams[name].path}); "
                          f"`hafiza vault remove {name}` first", field="name")
    local = Path(source).expanduser()
    target = Path(data) / "teams" / name
    if local.is_dir() and is_vault(local):
        team = Team(name, local.resolve())
    elif is_vault(target):  # cloned before, then removed from the list (`remove` leaves the folder): take it back
        from hafiza.vault.git import GitStore

        was = GitStore(target).remote_url("origin")
        if was != source:
            raise HafizaError(f"{target} holds a vault cloned from {was}; move it away or give another name",
                              field="name")
        team = Team(name, target.resolve(), source)
    else:
        team = Team(name, clone(source, target).resolve(), source)
    if team.path == Path(personal).resolve():
        raise HafizaError(f"{team.path} is your personal vault; a team vault is another repository", field="source")
    taken = [t.name for t in teams.values() if t.path == team.path]
    if taken:
        raise HafizaError(f"{team.path} is listed already as {taken[0]!r}", field="source")
    Vault.init(team.path)  # the merge driver and .gitignore, as on any vault this machine syncs
    teams[name] = team
    save(config, teams)
    return team


def remove(config: Path, name: str) -> Team:
    """Take a team vault off the list; its folder stays where it is (the tool never deletes a memory)."""
    teams = load(config)
    if name not in teams:
        raise HafizaError(f"no vault named {name!r}; `hafiza vault list` shows them", field="name")
    team = teams.pop(name)
    save(config, teams)
    return team


def resolve(config: Path, name: str) -> Team:
    """The listed team vault `name`, or a clear error."""
    teams = load(config)
    if name not in teams:
        listed = ", ".join(sorted(teams)) or "none yet: `hafiza vault add NAME URL`"
        raise HafizaError(f"no vault named {name!r} (listed: {listed})", field="to")
    if not is_vault(teams[name].path):
        raise HafizaError(f"the vault {name!r} is listed at {teams[name].path}, but no vault is there", field="to")
    return teams[name]


class Promotion(NamedTuple):
    branch: str
    memory_id: str
    pushed_to: str | None  # the team remote's URL, when the branch was pushed (a pull request to open there)


def promote(personal, team, memory_id: str, push: bool | None = None, remote: str = "origin") -> Promotion:
    """Propose the personal memory `memory_id` to the team vault `team` (both `Vault`s) as a review
    branch on the team vault: a team member accepts it with `hafiza review accept`, or, pushed, the team
    merges it as a pull request. Its usage counts and history links stay personal. `push` None: push
    when the team vault has the remote."""
    from hafiza.vault.format import model
    from hafiza.vault.review import Action, Review

    memory = personal.get(memory_id)
    if not memory.active:
        raise HafizaError(f"{memory_id} is {memory.status}; promote the memory that holds now", field="id")
    if memory_id in team.require().taken():
        raise HafizaError(f"the team vault has a memory {memory_id!r} already; `hafiza search` shows both",
                          field="id")
    review = Review(team, actor=personal.actor)
    key = f"promote:{memory_id}"
    if key in review.rulings():
        raise HafizaError(f"the team rejected promoting {memory_id} before (rulings.jsonl); edit it and "
                          "remember it under a new id to propose it again", field="id")
    if key in review.open_keys():
        raise HafizaError(f"{memory_id} waits for review on the team vault already (`hafiza review`)", field="id")
    shared = memory.evolve(shown=0, used=0, last_used=None, supersedes=[], superseded_by=None, path=None)
    action = Action(action="promote", subject=f"promote {memory_id}", key=key,
                    files={team.rel(shared): model.dump(shared).encode("utf-8")},
                    reason="proposed for the team from a personal vault", ids=(memory_id,),
                    evidence=f"personal memory {memory_id} at {(personal.git.head() or '')[:12]}")
    name = review.start("promote")
    review.propose(name, action)
    url = None
    if push or (push is None and team.git.remote_url(remote)):
        url = review.push(review.branch(name), remote)
    return Promotion(name, memory_id, url)
