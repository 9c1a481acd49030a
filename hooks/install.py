"""`hafiza install <client>` / `uninstall`: hooks and the MCP server in each client's own config files.

A library with no click: `plan_install` and `plan_uninstall` compute the new
text of every file without touching the disk, `apply` writes them. The first
install that changes an existing file keeps a copy (`<file>.hafiza-backup`);
every write is atomic. Install is idempotent (a second run changes nothing);
uninstall removes exactly what install added, which it finds by a marker:
hook commands run hooks/hafiza_hook.py (`python -m hafiza.hooks` in installs
before 0.2: clients.MARKS), the server is named `hafiza`, whole files hafiza
owns carry a line naming the installer. The folders install made are recorded
(folders.py), and uninstall removes those it leaves empty.
"""

from __future__ import annotations

import difflib
import os
import re
import shutil
import stat
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

from hafiza.vault.files import atomic_write
from hafiza.vault.format.text import plural

from . import clients, folders
from .configs import ConfigError, parse_json
from .payload import client_name

BACKUP_SUFFIX = ".hafiza-backup"


@dataclass(frozen=True)
class Options:
    """What to install where. Unset paths default to the user's home, the cwd's project, this interpreter."""

    client: str
    scope: str = "user"                    # user | project
    hooks: bool = True
    mcp: bool = True
    vault: Path | None = None              # written into the commands' env only when given
    python: str | None = None
    home: Path | None = None
    config_home: Path | None = None        # $XDG_CONFIG_HOME (goose, opencode)
    project: Path | None = None
    plugin_dir: Path | None = None         # claude-code: also write a plugin folder here
    record: Path | None = None             # the folders install made ($XDG_DATA_HOME/hafiza/installed.json)


@dataclass
class Change:
    """One file's text before and after (None: absent / to be deleted)."""

    path: Path
    before: str | None
    after: str | None
    mode: int | None = None
    prune: tuple[Path, ...] = ()           # hafiza's own folders, removed if deleting this file empties them
    backup: bool = True                    # whole files hafiza owns need no backup
    verb: str = ""                         # created | updated | removed | restored (default: from before/after)
    why: str = ""                          # said after the path

    def __post_init__(self) -> None:
        if not self.verb:
            self.verb = "created" if self.before is None else "removed" if self.after is None else "updated"

    def diff(self) -> str:
        old = (self.before or "").splitlines(keepends=True)
        new = (self.after or "").splitlines(keepends=True)
        lines = difflib.unified_diff(old, new, "/dev/null" if self.before is None else f"a{self.path}",
                                     "/dev/null" if self.after is None else f"b{self.path}")
        return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
                       for line in lines)


# What a dry run says for each verb: nothing is done, so nothing is said in the past tense.
WOULD = {"created": "would create", "updated": "would update", "removed": "would remove",
         "restored": "would restore", "unchanged": "unchanged"}


@dataclass
class Plan:
    client: str
    action: str                            # install | uninstall
    changes: list[Change] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    drop_backups: list[Path] = field(default_factory=list)
    unchanged: list[Path] = field(default_factory=list)   # install: files already as they should be
    folders: list[Path] = field(default_factory=list)     # uninstall: folders to remove, deepest first
    record: Path | None = None

    def diff(self) -> str:
        return "".join(change.diff() for change in self.changes)

    @property
    def empty(self) -> bool:
        """Nothing to write or remove."""
        return not (self.changes or self.drop_backups or self.folders)

    def steps(self, dry_run: bool) -> list[tuple[str, str, str]]:
        """(what `apply` did, or with `dry_run` would do, path, why) for each file and folder (a folder's
        path ends in a separator)."""
        steps = [(c.verb, str(c.path), c.why) for c in self.changes]
        steps += [("removed", str(b), "the pre-install copy") for b in self.drop_backups]
        steps += [("removed", f"{folder}{os.sep}", "install created it, and nothing else is in it")
                  for folder in self.folders]
        steps += [("unchanged", str(p), "") for p in self.unchanged]
        return [(WOULD[verb] if dry_run else verb, path, why) for verb, path, why in steps]

    def lines(self, dry_run: bool) -> list[str]:
        """A line per file and folder: what `apply` did to it, or with `dry_run` what it would do."""
        return [f"{done} {path}" + (f" ({why})" if why else "") for done, path, why in self.steps(dry_run)]

    def to_json(self, dry_run: bool) -> dict:
        """What the text report says, for a script: each file's `result` in the words of its line, the diff
        a dry run prints, and the notes (uninstall's only when it changed something)."""
        notes = self.notes if not self.empty or self.action == "install" else []
        return {"client": self.client, "action": self.action, "dry_run": dry_run, "changed": not self.empty,
                "files": [{"path": path, "result": done, "why": why or None} for done, path, why in self.steps(dry_run)],
                "diff": self.diff() if dry_run else None, "notes": notes}


def interpreter() -> str:
    """This interpreter's absolute path, never a pyenv/asdf shim (a shim costs ~90 ms on every prompt).

    Symlinks are kept: a venv's `python` is a symlink to the base interpreter,
    and resolving it would lose the venv's packages.
    """
    exe = Path(sys.executable)
    if not exe.is_absolute():
        exe = Path(shutil.which(str(exe)) or exe).absolute()
    if _is_script(exe):
        for name in ("python3", "python"):
            candidate = Path(sys.prefix) / "bin" / name
            if candidate.exists() and not _is_script(candidate):
                return str(candidate)
    return str(exe)


def _is_script(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(2) == b"#!"  # a real interpreter is a binary; shims are shell scripts
    except OSError:
        return False


def resolve(options: Options) -> Options:
    """Options with every default filled in."""
    client = client_name(options.client)
    if options.scope not in ("user", "project"):
        raise ConfigError(f"unknown scope {options.scope!r}; use user or project")
    home = Path(options.home or Path.home())
    config_home = options.config_home or Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    data_home = os.environ.get("XDG_DATA_HOME") or ""
    if not os.path.isabs(data_home):  # relative: ignored, as the XDG spec says (vault/format/paths.py)
        data_home = str(home / ".local" / "share")
    return replace(options, client=client, home=home, config_home=Path(config_home),
                   python=options.python or interpreter(), project=Path(options.project or project_root()),
                   vault=Path(options.vault).resolve() if options.vault else None,
                   record=Path(options.record or Path(data_home) / "hafiza" / folders.RECORD))


def project_root(cwd: Path | None = None) -> Path:
    """The git work tree holding the cwd, else the cwd."""
    here = (cwd or Path.cwd()).resolve()
    return next((d for d in (here, *here.parents) if (d / ".git").exists()), here)


def plan_install(options: Options) -> Plan:
    """Every change `hafiza install` would make, computed without writing."""
    o = resolve(options)
    targets, notes = clients.targets(o, install=True)
    checkout = source_checkout(o.python, clients.HOOK_SCRIPT)
    if checkout is not None:
        notes.insert(0, f"hafiza runs from the source checkout {checkout}: the hooks and the server written here "
                        f"point into it, so moving or deleting it turns recall off in {o.client} (hooks fail "
                        "open, silently). For everyday use install hafiza as a tool (`pipx install "
                        f"{checkout}`, or from PyPI) and run `hafiza install {o.client}` from there.")
    plan = Plan(o.client, "install", notes=notes, record=o.record)
    for target in targets:
        before = _read(target.path)
        after = target.apply(before)
        if after != before:
            plan.changes.append(Change(target.path, before, after, target.mode, target.prune, target.kind != "owned"))
        elif before is not None:
            plan.unchanged.append(target.path)
    return plan


def plan_uninstall(options: Options) -> Plan:
    """Every change `hafiza uninstall` would make: hafiza's entries out, everything else as it was."""
    o = replace(resolve(options), hooks=True, mcp=True)
    targets, _ = clients.targets(o, install=False)
    plan = Plan(o.client, "uninstall", notes=clients.farewell(o), record=o.record)
    for target in targets:
        before = _read(target.path)
        after = target.apply(before)
        backup = _backup_path(target.path)
        saved = _read(backup) if target.kind != "owned" else None
        verb = why = ""
        if saved is not None and _same(target, saved, after):
            after = saved  # nothing else changed since install: the file comes back byte for byte
            plan.drop_backups.append(backup)
            verb, why = "restored", "as it was before the install, from its backup"
        elif saved is not None:
            # Changed since install (`claude mcp add`, Codex's trust step): hafiza's entries go, the later
            # changes stay, and the pre-install copy would only mislead.
            plan.drop_backups.append(backup)
            why = "only hafiza's entries out: it changed since the install, so the rest stays as it is now"
        elif saved is None and after is not None and target.empty(after):
            after = None  # install created it and only hafiza's entries were in it
        if after != before:
            plan.changes.append(Change(target.path, before, after, target.mode, target.prune, False, verb, why))
    plan.folders = _emptied(plan, targets, o.record)
    return plan


def _emptied(plan: Plan, targets: list, record: Path) -> list[Path]:
    """The folders the uninstall leaves empty that install created (or that are hafiza's own by name: a
    plugin's), deepest first. A folder that was there before install, or holds anything else, stays."""
    made = folders.recorded(record)
    candidates = {folder for target in targets for folder in target.path.parents if folder in made}
    candidates |= {folder for change in plan.changes if change.after is None for folder in change.prune}
    gone = {change.path for change in plan.changes if change.after is None} | set(plan.drop_backups)
    return folders.emptied(candidates, gone)


def source_checkout(*paths: str | Path) -> Path | None:
    """The hafiza source checkout (a folder holding hafiza's own pyproject.toml) that one of `paths` lies in:
    an editable install's hook script, or an interpreter in a checkout's .venv. A wheel's files lie in an
    environment of their own, never in one."""
    for path in paths:
        for folder in Path(os.path.abspath(path)).parents:
            try:
                text = (folder / "pyproject.toml").read_text(encoding="utf-8")
            except OSError:
                continue
            if re.search(r'^name\s*=\s*"hafiza"', text, re.M):
                return folder
    return None


# An absolute path to an interpreter, hafiza's hook script or its console script, as the installed entries
# name them (inside JSON, TOML, YAML or the opencode plugin's TypeScript).
_PROGRAM = re.compile(r"(/[^\s\"'\\,\[\]]+?(?:/hafiza_hook\.py|/python[0-9.]*|/bin/hafiza))(?=[\s\"'\\,\]]|$)")


def missing_programs(plan: Plan) -> list[str]:
    """The interpreters and scripts hafiza's entries in a client's files name that no longer exist: the
    environment hafiza was installed in is gone, or the checkout it ran from moved. `plan` is the client's
    uninstall plan, whose changes take exactly hafiza's entries out."""
    named: list[str] = []
    for change in plan.changes:
        gone = set(_PROGRAM.findall(change.after or ""))
        named += [p for p in dict.fromkeys(_PROGRAM.findall(change.before or "")) if p not in gone]
    return [path for path in dict.fromkeys(named) if not os.path.exists(path)]


def _same(target: "clients.Target", saved: str, after: str | None) -> bool:
    """True if `after` is the backup plus nothing but hafiza's own entries, now removed."""
    try:
        stripped = target.apply(saved)
        if target.kind == "json":
            # Uninstall drops a container it emptied ("mcpServers": {} the user had): compare without them.
            return _solid(parse_json(stripped, target.path)) == _solid(parse_json(saved, target.path)) \
                == _solid(parse_json(after, target.path))
    except ConfigError:
        return False
    return stripped == saved == (after or "")


def _solid(value):
    """`value` without empty objects and lists, at any depth."""
    if isinstance(value, dict):
        value = {k: _solid(v) for k, v in value.items()}
        return {k: v for k, v in value.items() if v not in ({}, [])}
    if isinstance(value, list):
        return [v for v in map(_solid, value) if v not in ({}, [])]
    return value


def apply(plan: Plan) -> list[Path]:
    """Write the plan: back up each existing file once, then replace it atomically; record the folders an
    install makes, remove those an uninstall empties. Returns the paths written."""
    written: list[Path] = []
    made: list[Path] = []
    record = plan.record
    if record and plan.action == "install" and any(
            folders.missing(_real(c.path).parent) for c in plan.changes if c.after is not None):
        folders.prepare(record)  # first, so that no folder made for the record is taken for a client's
    try:
        for change in plan.changes:
            path = _real(change.path)
            if plan.action == "install" and change.backup and change.before is not None:
                backup = _backup_path(change.path)
                if not backup.exists():
                    shutil.copy2(path, backup)
            if change.after is None:
                path.unlink(missing_ok=True)
            else:
                made += folders.missing(path.parent)  # recorded even if the write fails: mkdir made them
                _write(path, change.after, change.mode)
            written.append(change.path)
    finally:
        if made and record:
            folders.add(record, made)
    for backup in plan.drop_backups:
        backup.unlink(missing_ok=True)
    removed = []
    for folder in plan.folders:
        try:
            folder.rmdir()  # refuses a folder that is not empty: something came into it since the plan
            removed.append(folder)
        except OSError:
            pass
    plan.folders = removed  # what `lines` reports: the folders that went, not those planned
    if record and plan.action == "uninstall":
        folders.forget(record, removed)
    return written


def _read(path: Path) -> str | None:
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            return fh.read()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}; nothing was changed.") from None


def _real(path: Path) -> Path:
    # A dotfile manager's symlink stays a symlink: write through it, never over it.
    return path.resolve() if path.is_symlink() else path


def _backup_path(path: Path) -> Path:
    return path.with_name(path.name + BACKUP_SUFFIX)


def _write(path: Path, text: str, mode: int | None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if mode is None and path.exists():
        mode = stat.S_IMODE(path.stat().st_mode)  # ~/.claude.json is 0600 and must stay so
    atomic_write(path, text, mode=mode)  # a new file without a mode of its own: as open() makes it


def check_clients(vault) -> Check:
    """Each installed client: its hooks and MCP entry present, runnable with this interpreter, naming this vault."""
    from hafiza.indexer.doctor import Check
    from hafiza.vault.format.paths import is_default

    from .payload import CLIENTS

    here = None if is_default(vault.root) else vault.root
    installed, stale = [], []
    for client in CLIENTS:
        try:
            found = plan_uninstall(Options(client))
            if not found.changes:
                continue  # nothing of hafiza in its config
            wanted = plan_install(Options(client, vault=here))
        except (ConfigError, OSError) as exc:
            stale.append(f"{client}: {exc}")
            continue
        installed.append(client)
        gone = missing_programs(found)
        if gone:
            stale.append(f"{client}: its hooks or MCP server run {', '.join(gone)}, which no longer exists (the "
                         "environment was removed or the checkout moved), so recall is off there; run "
                         f"`hafiza install {client}` with the hafiza you use now")
        elif wanted.changes:
            stale.append(f"{client}: its hooks or MCP entry name another vault, interpreter or hafiza version "
                         f"({', '.join(str(c.path) for c in wanted.changes)}); run `hafiza install {client}`")
    if stale:
        return Check("clients", "warn", f"{plural(len(stale), 'installed client')} would not reach this vault", stale)
    if not installed:
        return Check("clients", "ok", "no client installed (`hafiza install CLIENT`)")
    return Check("clients", "ok", f"{', '.join(installed)}: hooks and MCP point at this vault")
