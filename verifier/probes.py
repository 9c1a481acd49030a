"""Probes: each claim type is one small class that validates its arguments and checks one thing.

Adding a probe is adding a class to REGISTRY. Outcomes: `ok`; `failed`, only
on evidence inside the project's own files or git repository; `unknown` when
this machine cannot tell (the project is elsewhere, the network is off, a
tool is missing, a server did not answer); `invalid` when the arguments do
not validate (see safety.py). Nothing here runs a shell: the only programs
are git (and gh for `pr`), given argument lists with `--` before names.
"""

from __future__ import annotations

import ast
import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from hafiza.vault.files import NotRegularFile, read_regular
from hafiza.vault.git import renamed

from . import safety
from .tools import git, gh, http_status

MAX_READ = 4 << 20   # a manifest or source file read for a probe


class Outcome(NamedTuple):
    status: str      # ok | failed | unknown | invalid
    detail: str


@dataclass
class Context:
    """Where and how far a probe may look."""

    project: Path | None = None     # the project's folder on this machine, None when it is not here
    network: bool = False           # url and pr probes run only when asked
    allow_private: bool = False     # let url probes reach loopback and private addresses (tests, intranets)
    timeout: float = 5.0
    cache: dict = field(default_factory=dict)  # what one run reads once per project: manifests, branches

    def once(self, key: str, make):
        if key not in self.cache:
            self.cache[key] = make()
        return self.cache[key]


class Probe:
    name = ""
    network = False

    def check(self, args: dict, ctx: Context) -> Outcome:
        """Validate `args`, then probe; never raises for what a claim says."""
        try:
            checked = self.validate(args, ctx)
        except safety.Refused as exc:
            return Outcome("invalid", str(exc))
        if self.network and not ctx.network:
            return Outcome("unknown", "network probes are off (hafiza verify --network)")
        if not self.network and ctx.project is None:
            return Outcome("unknown", "the project is not on this machine")
        return self.run(checked, ctx)

    def validate(self, args: dict, ctx: Context) -> dict:
        raise NotImplementedError

    def run(self, args: dict, ctx: Context) -> Outcome:
        raise NotImplementedError


def _read(path: Path) -> str | None:
    try:
        return read_regular(path, limit=MAX_READ, linked=True).decode("utf-8", "replace")  # pnpm links its store in
    except (OSError, NotRegularFile):
        return None


class PathProbe(Probe):
    name = "path"

    def validate(self, args, ctx):
        return {"path": safety.path(args, ctx.project), "as_written": args["path"]}

    def run(self, args, ctx):
        if args["path"].exists():
            return Outcome("ok", f"{args['as_written']} exists")
        return Outcome("failed", gone(ctx.project, args["as_written"]))


class ContainsProbe(Probe):
    name = "contains"

    def validate(self, args, ctx):
        return {"path": safety.readable(args, ctx.project), "text": safety.text(args, "text", safety.MAX_TEXT),
                "as_written": args["path"]}

    def run(self, args, ctx):
        content = _read(args["path"])
        if content is None:
            return Outcome("failed", gone(ctx.project, args["as_written"]))
        if args["text"] in content:
            return Outcome("ok", f"{args['as_written']} contains {args['text'][:40]!r}")
        return Outcome("failed", f"{args['as_written']} no longer contains {args['text'][:40]!r}")


# Definitions by language: a function, class, type or constant named NAME.
_DEFINITIONS = {
    (".js", ".jsx", ".ts", ".tsx", ".mjs", ".cjs"): r"(?:function\*?|class|const|let|var|interface|type|enum)\s+{n}\b",
    (".go",): r"(?:func(?:\s*\([^)]*\))?|type|const|var)\s+{n}\b",
    (".rs",): r"(?:fn|struct|enum|trait|type|const|static|mod)\s+{n}\b",
    (".java", ".kt"): r"(?:(?:class|interface|enum|record|object|fun|val|var)\s+{n}\b|[\w<>\[\],]+\s+{n}\s*[(=;])",
}


class SymbolProbe(Probe):
    name = "symbol"

    def validate(self, args, ctx):
        return {"path": safety.readable(args, ctx.project), "name": safety.name(args, "name", safety.SYMBOL),
                "as_written": args["path"]}

    def run(self, args, ctx):
        source = _read(args["path"])
        if source is None:
            return Outcome("failed", gone(ctx.project, args["as_written"]))
        found = _defines(args["path"].suffix, source, args["name"])
        if found is None:
            return Outcome("unknown", f"cannot read definitions in {args['path'].suffix or 'this'} files")
        where = f"{args['name']} in {args['as_written']}"
        return Outcome("ok", f"{where} is defined") if found else Outcome("failed", f"{where} is no longer defined")


def _defines(suffix: str, source: str, name: str) -> bool | None:
    if suffix in (".py", ".pyi"):
        try:
            tree = ast.parse(source)
        except SyntaxError:
            return None
        return name in _python_names(tree)
    for suffixes, pattern in _DEFINITIONS.items():
        if suffix in suffixes:
            return re.search(pattern.replace("{n}", re.escape(name)), source) is not None
    return None


def _python_names(tree) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                if isinstance(target, ast.Name):
                    names.add(target.id)
    return names


class ScriptProbe(Probe):
    name = "script"

    def validate(self, args, ctx):
        return {"name": safety.name(args)}

    def run(self, args, ctx):
        sources = ctx.once("scripts", lambda: runnable_names(Path(ctx.project)))
        for where, names in sources.items():
            if args["name"] in names:
                return Outcome("ok", f"{args['name']} is in {where}")
        looked = ", ".join(sources) or "no package.json, Makefile, pyproject.toml or justfile"
        return Outcome("failed", f"{args['name']} is not a script or target (looked in {looked})")


def runnable_names(root: Path) -> dict[str, set[str]]:
    """Runnable names per manifest at the project root."""
    out: dict[str, set[str]] = {}
    package = _json(root / "package.json")
    if package is not None:
        out["package.json"] = set((package.get("scripts") or {}) if isinstance(package.get("scripts"), dict) else {})
    for make in ("Makefile", "makefile", "GNUmakefile"):
        text = _read(root / make)
        if text is not None:
            out[make] = set(re.findall(r"^([A-Za-z0-9][\w.\-/]*)\s*:(?!=)", text, re.M))
    pyproject = _toml(root / "pyproject.toml")
    if pyproject is not None:
        out["pyproject.toml"] = set(((pyproject.get("project") or {}).get("scripts") or {}))
    for just in ("justfile", "Justfile", ".justfile"):
        text = _read(root / just)
        if text is not None:
            out[just] = set(re.findall(r"^@?([A-Za-z0-9_][\w\-]*)(?:\s+[^:=\n]*)?:(?!=)", text, re.M))
    return out


class DependencyProbe(Probe):
    name = "dependency"

    def validate(self, args, ctx):
        return {"name": safety.name(args)}

    def run(self, args, ctx):
        sources = ctx.once("dependencies", lambda: declared(Path(ctx.project)))
        wanted = _norm(args["name"])
        for where, names in sources.items():
            if wanted in names:
                return Outcome("ok", f"{args['name']} is declared in {where}")
        looked = ", ".join(sources) or "no manifest"
        return Outcome("failed", f"{args['name']} is not declared (looked in {looked})")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name.lower())


def declared(root: Path) -> dict[str, set[str]]:
    """Declared package names per manifest at the project root, normalised as pip compares them."""
    out: dict[str, set[str]] = {}
    package = _json(root / "package.json")
    if package is not None:
        names = set()
        for key in ("dependencies", "devDependencies", "peerDependencies", "optionalDependencies"):
            if isinstance(package.get(key), dict):
                names |= set(package[key])
        out["package.json"] = {_norm(n) for n in names}
    pyproject = _toml(root / "pyproject.toml")
    if pyproject is not None:
        project = pyproject.get("project") or {}
        specs = list(project.get("dependencies") or [])
        for group in (project.get("optional-dependencies") or {}).values():
            specs += list(group)
        names = {_requirement(s) for s in specs if isinstance(s, str)}
        poetry = ((pyproject.get("tool") or {}).get("poetry") or {})
        for key in ("dependencies", "dev-dependencies"):
            names |= set(poetry.get(key) or {})
        for group in (poetry.get("group") or {}).values():
            names |= set((group or {}).get("dependencies") or {})
        out["pyproject.toml"] = {_norm(n) for n in names if n}
    for req in sorted(root.glob("requirements*.txt")):
        text = _read(req) or ""
        out[req.name] = {_norm(_requirement(line)) for line in text.splitlines()
                         if line.strip() and not line.lstrip().startswith(("#", "-"))}
    gomod = _read(root / "go.mod")
    if gomod is not None:
        out["go.mod"] = {_norm(m) for m in re.findall(r"^\s*(?:require\s+)?([\w.\-]+/[\w.\-/]+)\s+v", gomod, re.M)}
    cargo = _toml(root / "Cargo.toml")
    if cargo is not None:
        names = set()
        for key in ("dependencies", "dev-dependencies", "build-dependencies"):
            names |= set(cargo.get(key) or {})
        out["Cargo.toml"] = {_norm(n) for n in names}
    return out


def _requirement(spec: str) -> str:
    return re.split(r"[\s<>=!~;\[(@]", spec.strip(), maxsplit=1)[0]


def _json(path: Path):
    text = _read(path)
    try:
        value = json.loads(text) if text is not None else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _toml(path: Path):
    text = _read(path)
    try:
        return tomllib.loads(text) if text is not None else None
    except tomllib.TOMLDecodeError:
        return None


class BranchProbe(Probe):
    name = "branch"

    def validate(self, args, ctx):
        value = safety.name(args)
        if "@{" in value or value.endswith(".lock"):
            raise safety.Refused(f"name {value!r} is not a branch name")
        return {"name": value}

    def run(self, args, ctx):
        branches = ctx.once("branches", lambda: _branches(ctx))
        if branches is None:
            return Outcome("unknown", "the project is not a git repository (or git is missing)")
        if args["name"] in branches:
            return Outcome("ok", f"branch {args['name']} exists")
        return Outcome("failed", f"there is no branch {args['name']}")


def _branches(ctx: Context) -> set[str] | None:
    """Local branch names, and remote ones without their remote's name (origin/release/2.x -> release/2.x)."""
    out = git(ctx.project, "for-each-ref", "--format=%(refname)", "refs/heads", "refs/remotes", timeout=ctx.timeout)
    if out is None:
        return None
    names = set()
    for ref in out.splitlines():
        if ref.startswith("refs/heads/"):
            names.add(ref.removeprefix("refs/heads/"))
        elif ref.startswith("refs/remotes/"):
            names.add(ref.removeprefix("refs/remotes/").partition("/")[2])
    return names


class CommitProbe(Probe):
    name = "commit"

    def validate(self, args, ctx):
        return {"sha": safety.sha(args)}

    def run(self, args, ctx):
        found = git(ctx.project, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{args['sha']}^{{commit}}",
                    timeout=ctx.timeout)
        if git(ctx.project, "rev-parse", "--git-dir", timeout=ctx.timeout) is None:
            return Outcome("unknown", "the project is not a git repository (or git is missing)")
        if not found or not found.strip():
            return Outcome("failed", f"no commit {args['sha']} in the project")
        reachable = git(ctx.project, "merge-base", "--is-ancestor", found.strip(), "HEAD", timeout=ctx.timeout)
        if reachable is None:
            return Outcome("failed", f"commit {args['sha']} exists but is not reachable from HEAD")
        return Outcome("ok", f"commit {args['sha']} is in HEAD's history")


class UrlProbe(Probe):
    name = "url"
    network = True

    def validate(self, args, ctx):
        # Addresses are checked again when the probe connects (tools.http_status), against DNS rebinding.
        return {"url": safety.url(args, ctx.allow_private, resolve=ctx.network)}

    def run(self, args, ctx):
        status = http_status(args["url"], ctx.timeout, ctx.allow_private)
        if isinstance(status, int) and 200 <= status < 400:
            return Outcome("ok", f"{args['url']} answered {status}")
        # A 404 from a host we may not reach properly, a 401, a timeout: none of it proves the claim false.
        return Outcome("unknown", f"{args['url']}: {status}")


class PrProbe(Probe):
    name = "pr"
    network = True
    _PR = re.compile(r"^https://github\.com/([\w.-]+/[\w.-]+)/pull/(\d{1,9})/?$")

    def validate(self, args, ctx):
        value = safety.text(args, "url").strip()
        if not self._PR.match(value):
            raise safety.Refused(f"url {value!r} is not a GitHub pull request URL")
        return {"url": value}

    def run(self, args, ctx):
        repo, number = self._PR.match(args["url"]).groups()
        state = gh(["pr", "view", number, "--repo", repo, "--json", "state", "--jq", ".state"], ctx.timeout)
        if state is None:
            return Outcome("unknown", "the GitHub CLI (gh) is missing, not logged in, or did not answer")
        if state.strip() == "MERGED":
            return Outcome("ok", f"{args['url']} is merged")
        return Outcome("unknown", f"{args['url']} is {state.strip().lower() or 'not merged'}")


REGISTRY: dict[str, Probe] = {p.name: p for p in (
    PathProbe(), ContainsProbe(), SymbolProbe(), ScriptProbe(), DependencyProbe(), BranchProbe(), CommitProbe(),
    UrlProbe(), PrProbe())}


def check(claim, ctx: Context) -> Outcome:
    """The outcome of one claim as frontmatter holds it: {probe: NAME, args: {...}}."""
    if not isinstance(claim, dict) or not isinstance(claim.get("probe"), str):
        return Outcome("invalid", "a claim is a line naming a probe and its arguments, such as `path scripts/seed.py`")
    probe = REGISTRY.get(claim["probe"])
    if probe is None:
        return Outcome("invalid", f"unknown probe {claim['probe'][:40]!r}; probes are {', '.join(REGISTRY)}")
    args = claim.get("args") or {}
    if not isinstance(args, dict):
        return Outcome("invalid", "args must be a mapping")
    return probe.check(args, ctx)


def gone(root: Path | None, path: str) -> str:
    """'X is gone', with the rename from the project's history where there is one."""
    moved = renamed(root, path) if root is not None else None
    return f"{path} is gone" + (f" (renamed to {moved[0]} in {moved[1][:7]})" if moved else "")
