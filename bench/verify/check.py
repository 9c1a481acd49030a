#!/usr/bin/env python3
"""Is the verifier set whole against a fresh build of the `app` fixture? Prints counts.

    python3 bench/verify/check.py              # checks + counts; exit 1 on any error
    python3 bench/verify/check.py --markdown   # also print the README count tables
    .venv/bin/python bench/verify/check.py --import   # also import both files into a throwaway hafiza vault

Stdlib only (except --import), and independent of the verifier's code: every label is re-derived here with
plain file reads, regular expressions, Python's ast, tomllib, json and git.

memories.jsonl, per claim and its `expect`:
- fields, ids (unique across both files), scopes (`project:app`, `project:elsewhere`, `global`), dates;
- `expect` is parallel to `claims`; url claims expect {"network": ..., "offline": "unknown"} (or "invalid");
  pr claims expect "unknown" (or "invalid"); every claim of project:elsewhere expects "unknown"; project:app
  claims other than url and pr are never "unknown"; global memories carry only url and pr claims;
- `invalid` exactly when this file's own argument validator rejects the claim (so every other claim's
  arguments are valid);
- ok/failed of project:app at HEAD: paths exist (on disk and in HEAD's tree) or do not; the text is or is not
  in the file; the symbol is defined (Python: a module-level def/class/assignment; TS/JS, Go, Rust, Java:
  a definition pattern outside comments) or defined nowhere in the file (or the file is gone); the script is
  a package.json script, Makefile target, [project.scripts] entry or justfile recipe at the root, or none of
  them; the dependency is declared in a root manifest, or in none; the branch is a local branch; the commit
  exists and `git merge-base --is-ancestor` says HEAD reaches it;
- `renamed_to` (old path -> new path): the old path is the path of a failed claim of that memory, following
  `git log -M` renames from it ends at the new path, which exists; and every failed claim on a renamed path
  has one (no rename goes unlabelled);
- url claims on `@server`: the path is one of server.ROUTES and the label is the route's; the server is
  started and asked, and what it answers maps to the labels;
- the main argument of every claim (path, name, url, sha or `@key`) appears verbatim in the text.

extract.jsonl:
- `expect_claims` are path, script, branch, url and pr claims whose argument appears verbatim in the text;
  paths exist at HEAD, scripts exist at the root and appear as a command (`npm run X`, `pnpm X`, `make X`,
  `just X`, ...), branches exist, urls and PR urls validate; project:elsewhere memories expect none;
- `not_claims` (distractors) appear verbatim, are not expected claims, and their `why` kind agrees with the
  project (a `missing` path does not exist, a `missing-script` is no script, ...);
- every path-shaped token, URL, command-shaped mention and backticked span of a text is covered by an
  expected claim or a distractor, so no unlabelled candidate hides in a text.
"""

from __future__ import annotations

import ast
import collections
import datetime as dt
import ipaddress
import json
import posixpath
import re
import subprocess
import sys
import tempfile
import tomllib
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import project  # noqa: E402  (the fixture builder next to this file)
import server  # noqa: E402  (the local HTTP server of the url claims)

import fixture  # noqa: E402  (bench/fixture.py, on the path project.py set)
from hafiza.vault.format import kinds  # noqa: E402

REF = dt.date(2026, 12, 1)
TYPES = set(kinds.TYPES)
SCOPES = {"project:app", "project:elsewhere", "global"}
ARGS = {"path": {"path"}, "contains": {"path", "text"}, "symbol": {"path", "name"}, "script": {"name"},
        "dependency": {"name"}, "branch": {"name"}, "commit": {"sha"}, "url": {"url"}, "pr": {"url"}}
MAIN_ARG = {"path": "path", "symbol": "name", "script": "name", "dependency": "name", "branch": "name",
            "commit": "sha", "url": "url", "pr": "url"}  # contains: its text need not be quoted in the memory
OUTCOMES = {"ok", "failed", "unknown", "invalid"}
MEM_KEYS = {"id", "title", "text", "type", "tags", "scope", "created", "claims", "expect"}
EXTRACT_KEYS = {"id", "title", "text", "type", "tags", "scope", "created", "expect_claims", "not_claims"}
EXTRACT_PROBES = {"path", "script", "branch", "url", "pr"}
NOT_CLAIM_KINDS = {"prose", "library", "identifier", "placeholder", "glob", "outside", "missing", "not-a-script",
                   "missing-script", "route", "timezone", "number", "other-project"}
LANG = {".py": "python", ".ts": "typescript", ".tsx": "typescript", ".js": "javascript", ".jsx": "javascript",
        ".go": "go", ".rs": "rust", ".java": "java"}
SERVER = "@server"

errors: list[str] = []


def err(msg: str) -> None:
    errors.append(msg)


def git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=repo, check=check, capture_output=True, text=True)


# ---------------------------------------------------------------- argument validation (independent of the verifier)
def path_problem(value) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return "empty path"
    if "\x00" in value or "\\" in value:
        return "NUL or backslash"
    if value.startswith("/") or re.match(r"^[A-Za-z]:", value) or value.startswith("~"):
        return "absolute path"
    norm = posixpath.normpath(value)
    if norm == ".." or norm.startswith("../"):
        return "escapes the project"
    return None


def name_problem(value, probe: str) -> str | None:
    if not isinstance(value, str) or not value:
        return "empty name"
    if value.startswith("-"):
        return "option-shaped"
    if re.search(r"[\s\x00-\x1f\x7f]", value):
        return "whitespace or control characters"
    if probe == "symbol" and not re.fullmatch(r"[A-Za-z_$][A-Za-z0-9_$]*", value):
        return "not an identifier"
    if probe == "branch" and (".." in value or re.search(r"[~^:?*\[\\]", value) or value.endswith((".lock", "/", "."))
                              or "@{" in value or value.startswith("/")):
        return "not a branch name"
    return None


def url_problem(value) -> str | None:
    if not isinstance(value, str) or re.search(r"\s", value):
        return "not a URL"
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "not an http(s) URL"
    host = parts.hostname
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        ip = None
    if (ip and ip.is_link_local) or host in ("metadata.google.internal", "metadata"):
        return "cloud metadata / link-local address"
    return None


def resolve_sha(value: str, shas: dict) -> str:
    if isinstance(value, str) and value.startswith("@") and value[1:] in shas:
        return shas[value[1:]][:10]
    return value


def arg_problem(claim: dict, shas: dict, base: str) -> str | None:
    probe, args = claim["probe"], claim["args"]
    if probe in ("path", "contains", "symbol"):
        if problem := path_problem(args["path"]):
            return problem
    if probe == "contains" and (not isinstance(args["text"], str) or not args["text"]):
        return "empty text"
    if probe in ("symbol", "script", "dependency", "branch"):
        if problem := name_problem(args["name"], probe):
            return problem
    if probe == "commit":
        sha = resolve_sha(args["sha"], shas)
        if not (isinstance(sha, str) and re.fullmatch(r"[0-9a-fA-F]{4,40}", sha)):
            return "not a hex commit id"
    if probe == "url":
        return url_problem(args["url"].replace(SERVER, base, 1) if args["url"].startswith(SERVER) else args["url"])
    if probe == "pr":
        if not re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+/pull/\d+/?", args["url"]):
            return "not a GitHub pull request URL"
    return None


# ---------------------------------------------------------------- the project, read plainly
class Project:
    def __init__(self, repo: Path, shas: dict):
        self.repo, self.shas = repo, shas
        self.branches = set(git(repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/").stdout.split())
        self.renames, self.deleted, self.on_main = {}, set(), set()
        for line in git(repo, "log", "--reverse", "-M", "--name-status", "--format=", "HEAD").stdout.splitlines():
            parts = line.split("\t")
            if parts[0].startswith("R"):
                self.renames[parts[1]] = parts[2]
                self.on_main.update(parts[1:3])
            elif parts[0] == "D":
                self.deleted.add(parts[1])
            elif parts[0] == "A":
                self.deleted.discard(parts[1])  # restored later
                self.on_main.add(parts[1])
        self.scripts = self._scripts()
        self.deps = self._deps()

    def read(self, rel: str) -> str | None:
        path = self.repo / rel
        return path.read_text(encoding="utf-8") if path.is_file() else None

    def exists(self, rel: str) -> bool:
        rel = rel.rstrip("/")
        return (self.repo / rel).exists() and bool(git(self.repo, "ls-tree", "HEAD", "--", rel).stdout.strip())

    def rename_end(self, rel: str) -> str:
        end, seen = rel, set()
        while end in self.renames and end not in seen:
            seen.add(end)
            end = self.renames[end]
        return end

    def path_kind(self, rel: str) -> str:
        """How a path that is absent at HEAD got that way: renamed, deleted, or never on main."""
        rel = rel.rstrip("/")
        if self.rename_end(rel) != rel:
            return "renamed"
        if rel in self.deleted or any(d.startswith(rel + "/") for d in self.deleted):
            return "deleted"
        return "never on main"

    # scripts ------------------------------------------------------
    def _scripts(self) -> dict[str, set[str]]:
        found = {}
        text = self.read("package.json")
        found["package.json"] = set(json.loads(text).get("scripts", {})) if text else set()
        targets = set()
        for line in (self.read("Makefile") or "").splitlines():
            if line.startswith(("\t", "#", " ")):
                continue
            m = re.match(r"^([^\s:=#%][^:=#]*?)\s*::?(?!=)", line)
            if m:
                targets.update(t for t in m.group(1).split() if not t.startswith("."))
        found["Makefile"] = targets
        text = self.read("pyproject.toml")
        data = tomllib.loads(text) if text else {}
        found["pyproject.toml"] = set(data.get("project", {}).get("scripts", {})) \
            | set(data.get("project", {}).get("gui-scripts", {})) \
            | set(data.get("tool", {}).get("poetry", {}).get("scripts", {}))
        recipes = set()
        for line in (self.read("justfile") or "").splitlines():
            m = re.match(r"^@?([A-Za-z_][\w-]*)(?:\s+[^:=]*)?:(?!=)", line)
            if m and m.group(1) not in ("alias", "set", "export", "import", "mod"):
                recipes.add(m.group(1))
        found["justfile"] = recipes
        return found

    def script_in(self, name: str) -> list[str]:
        return [where for where, names in self.scripts.items() if name in names]

    # dependencies -------------------------------------------------
    @staticmethod
    def pep503(name: str) -> str:
        return re.sub(r"[-_.]+", "-", name).lower()

    def _deps(self) -> dict[str, set[str]]:
        found = {}
        text = self.read("package.json")
        data = json.loads(text) if text else {}
        found["package.json"] = set(data.get("dependencies", {})) | set(data.get("devDependencies", {}))
        text = self.read("pyproject.toml")
        data = tomllib.loads(text) if text else {}
        reqs = list(data.get("project", {}).get("dependencies", []))
        for extra in data.get("project", {}).get("optional-dependencies", {}).values():
            reqs += extra
        names = {self.pep503(re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", r).group(1)) for r in reqs}
        poetry = data.get("tool", {}).get("poetry", {})
        names |= {self.pep503(n) for n in poetry.get("dependencies", {}) if n != "python"}
        for group in poetry.get("group", {}).values():
            names |= {self.pep503(n) for n in group.get("dependencies", {})}
        found["pyproject.toml"] = names
        reqs = set()
        for path in sorted(self.repo.glob("requirements*.txt")):
            for line in path.read_text(encoding="utf-8").splitlines():
                line = line.split("#", 1)[0].strip()
                if line and not line.startswith("-"):
                    reqs.add(self.pep503(re.match(r"([A-Za-z0-9][A-Za-z0-9._-]*)", line).group(1)))
        found["requirements*.txt"] = reqs
        mods, block = set(), False
        for line in (self.read("go.mod") or "").splitlines():
            line = line.split("//", 1)[0].strip()
            if line.startswith("require ("):
                block = True
            elif block and line == ")":
                block = False
            elif block and line:
                mods.add(line.split()[0])
            elif line.startswith("require "):
                mods.add(line.split()[1])
        found["go.mod"] = mods
        text = self.read("Cargo.toml")
        data = tomllib.loads(text) if text else {}
        found["Cargo.toml"] = set(data.get("dependencies", {})) | set(data.get("dev-dependencies", {})) \
            | set(data.get("build-dependencies", {}))
        return found

    def dep_in(self, name: str) -> list[str]:
        where = []
        for manifest, names in self.deps.items():
            key = self.pep503(name) if manifest in ("pyproject.toml", "requirements*.txt") else name
            if key in names:
                where.append(manifest)
        return where

    def dep_history(self, name: str) -> str:
        """The root manifest that declared `name` in some commit of main, for the counts."""
        for manifest in ("package.json", "pyproject.toml", "requirements-dev.txt", "go.mod", "Cargo.toml"):
            log = git(self.repo, "log", "-p", "--format=", "HEAD", "--", manifest).stdout
            if re.search(rf"^[-+].*(?<![\w./-]){re.escape(name)}(?![\w./-])", log, re.M):
                return "requirements*.txt" if manifest.startswith("requirements") else manifest
        return "never declared"

    def script_history(self, name: str) -> str:
        for manifest in ("package.json", "Makefile", "pyproject.toml", "justfile"):
            log = git(self.repo, "log", "-p", "--format=", "HEAD", "--", manifest).stdout
            if re.search(rf"^-\s*(\"{re.escape(name)}\"|{re.escape(name)}(\s+\w+)*\s*[:=])", log, re.M):
                return manifest
        return "never defined"

    # symbols ------------------------------------------------------
    @staticmethod
    def strip_comments(text: str, lang: str) -> str:
        text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
        return re.sub(r"//[^\n]*", " ", text)

    def symbol(self, rel: str, name: str) -> tuple[bool, bool]:
        """(defined at the top level, defined anywhere) in the file; (False, False) if the file is gone."""
        text = self.read(rel)
        if text is None:
            return False, False
        lang = LANG.get(Path(rel).suffix)
        if lang == "python":
            tree = ast.parse(text)

            def names(node):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    return {node.name}
                if isinstance(node, ast.Assign):
                    return {t.id for t in node.targets if isinstance(t, ast.Name)}
                if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                    return {node.target.id}
                return set()

            top = set().union(*(names(n) for n in tree.body))
            anywhere = set().union(*(names(n) for n in ast.walk(tree)))
            return name in top, name in anywhere
        code = self.strip_comments(text, lang)
        n = re.escape(name)
        patterns = {
            "typescript": [rf"\b(?:function\*?|class|interface|type|enum|const|let|var)\s+{n}\b"],
            "javascript": [rf"\b(?:function\*?|class|const|let|var)\s+{n}\b"],
            "go": [rf"\bfunc\s+{n}\s*[\[(]", rf"\bfunc\s*\([^)]*\)\s*{n}\s*\(", rf"\b(?:type|const|var)\s+{n}\b"],
            "rust": [rf"\b(?:fn|struct|enum|trait|type|const|static|mod|union)\s+{n}\b"],
            "java": [rf"\b(?:class|interface|enum|record)\s+{n}\b", rf"\b[\w<>\[\]]+\s+{n}\s*\(",
                     rf"\b(?:final|static)\s+[\w<>\[\]]+\s+{n}\s*="],
        }[lang]
        found = any(re.search(p, code) for p in patterns)
        return found, found

    # commits ------------------------------------------------------
    def commit(self, sha: str) -> tuple[bool, bool]:
        exists = git(self.repo, "cat-file", "-e", f"{sha}^{{commit}}", check=False).returncode == 0
        reachable = exists and git(self.repo, "merge-base", "--is-ancestor", sha, "HEAD", check=False).returncode == 0
        return exists, reachable


# ---------------------------------------------------------------- memories.jsonl
def check_fields(items: list[dict], keys: set, optional: set, where: str, seen: set) -> None:
    for n, item in enumerate(items, 1):
        at = f"{where}:{n} ({item.get('id')})"
        keys_ok, problems = fixture.entry_problems(item, keys, optional, seen)
        for problem in problems:
            err(f"{at}: {problem}")
        if not keys_ok:
            continue
        if item["type"] not in TYPES or item["scope"] not in SCOPES:
            err(f"{at}: type {item['type']!r} or scope {item['scope']!r}")
        if not isinstance(item["tags"], list) or not item["title"].strip() or not item["text"].strip():
            err(f"{at}: tags, title or text")
        if not dt.date.fromisoformat(item["created"]) <= REF:
            err(f"{at}: created after {REF}")


def truth(proj: Project, claim: dict) -> tuple[str, str]:
    """(ok|failed, a detail for the counts) for a valid project:app claim other than url and pr."""
    probe, args = claim["probe"], claim["args"]
    if probe == "path":
        if proj.exists(args["path"]):
            return "ok", "exists"
        return ("failed", "exists on disk only") if (proj.repo / args["path"]).exists() else ("failed", proj.path_kind(args["path"]))
    if probe == "contains":
        text = proj.read(args["path"])
        if text is None:
            return "failed", "file gone"
        return ("ok", "found") if args["text"] in text else ("failed", "not in the file")
    if probe == "symbol":
        top, anywhere = proj.symbol(args["path"], args["name"])
        lang = LANG.get(Path(args["path"]).suffix, "other")
        if top:
            return "ok", lang
        if anywhere:
            return "nested", lang  # neither label is safe: the set must not contain one
        return "failed", lang
    if probe == "script":
        where = proj.script_in(args["name"])
        return ("ok", where[0]) if where else ("failed", proj.script_history(args["name"]))
    if probe == "dependency":
        where = proj.dep_in(args["name"])
        return ("ok", where[0]) if where else ("failed", proj.dep_history(args["name"]))
    if probe == "branch":
        if args["name"] in proj.branches:
            return "ok", "branch"
        tag = git(proj.repo, "rev-parse", "-q", "--verify", f"refs/tags/{args['name']}", check=False).returncode == 0
        return "failed", "a tag, not a branch" if tag else "no such branch"
    if probe == "commit":
        exists, reachable = proj.commit(resolve_sha(args["sha"], proj.shas))
        if reachable:
            return "ok", "reachable"
        if not exists:
            return "failed", "no such commit"
        on = git(proj.repo, "branch", "--contains", resolve_sha(args["sha"], proj.shas)).stdout.split()
        return "failed", "on another branch only" if on else "dangling"
    raise ValueError(probe)


def serve_check(base: str, paths: set[str]) -> None:
    """Ask the real server every route a label uses and map its answer as a url probe must."""
    for route in sorted(paths):
        try:
            with urllib.request.urlopen(base + route, timeout=1.5) as resp:
                outcome = "ok" if 200 <= resp.status < 400 else "unknown"
        except urllib.error.HTTPError as exc:
            outcome = "ok" if 200 <= exc.code < 400 else "unknown"
        except (urllib.error.URLError, TimeoutError, OSError):
            outcome = "unknown"
        if outcome != server.ROUTES[route][1]:
            err(f"server {route}: answered as {outcome}, ROUTES says {server.ROUTES[route][1]}")


def check_memories(mems: list[dict], proj: Project, base: str, counts: dict) -> None:
    routes = set()
    for mem in mems:
        at = f"memories {mem['id']}"
        claims, expect = mem["claims"], mem["expect"]
        if not isinstance(claims, list) or not claims or len(claims) != len(expect):
            err(f"{at}: claims and expect must be non-empty lists of one length")
            continue
        failed_paths = set()
        for i, (claim, exp) in enumerate(zip(claims, expect)):
            where = f"{at} claim {i} {json.dumps(claim, ensure_ascii=False)}"
            probe = claim.get("probe")
            if probe not in ARGS or set(claim.get("args", {})) != ARGS[probe] or set(claim) != {"probe", "args"}:
                err(f"{where}: unknown probe or wrong args")
                continue
            args = claim["args"]
            problem = arg_problem(claim, proj.shas, base)
            if isinstance(exp, dict):
                if probe != "url" or set(exp) != {"network", "offline"} or exp["offline"] != "unknown" \
                        or exp["network"] not in ("ok", "unknown"):
                    err(f"{where}: bad expect {exp}")
                    continue
            elif exp not in OUTCOMES or (probe == "url" and exp != "invalid"):
                err(f"{where}: bad expect {exp!r} (url claims expect a network/offline pair unless invalid)")
                continue
            if (exp == "invalid") != bool(problem):
                err(f"{where}: labelled {exp} but the argument check says {problem or 'valid'}")
                continue
            main = MAIN_ARG.get(probe)
            if main and str(args[main]) not in mem["text"]:
                err(f"{where}: {args[main]!r} is not verbatim in the text")
            if exp == "invalid":
                counts["outcome"][(probe, "invalid")] += 1
                counts["detail"][("invalid", probe, problem)] += 1
                continue
            if mem["scope"] == "global" and probe not in ("url", "pr"):
                err(f"{where}: a global memory can only carry url and pr claims")
            if probe == "url":
                if mem["scope"] == "project:elsewhere":
                    err(f"{where}: keep url claims out of project:elsewhere")
                if not args["url"].startswith(SERVER + "/"):
                    err(f"{where}: a valid url claim must point at {SERVER}")
                    continue
                route = args["url"][len(SERVER):]
                if route not in server.ROUTES or server.ROUTES[route][1] != exp["network"]:
                    err(f"{where}: route {route} is labelled {exp['network']}, ROUTES says "
                        f"{server.ROUTES.get(route, ('', 'no such route'))[1]}")
                routes.add(route)
                counts["outcome"][("url", "network " + exp["network"])] += 1
                counts["outcome"][("url", "offline unknown")] += 1
                counts["detail"][("url", exp["network"], server.ROUTES.get(route, ("?",))[0])] += 1
                continue
            if probe == "pr":
                if exp != "unknown":
                    err(f"{where}: a valid pr claim is unknown in the bench (gh absent or unauthenticated)")
                counts["outcome"][("pr", exp)] += 1
                continue
            if mem["scope"] == "project:elsewhere":
                if exp != "unknown":
                    err(f"{where}: project:elsewhere is not on this machine, every claim is unknown")
                counts["outcome"][(probe, "unknown")] += 1
                counts["detail"][("unknown", probe, "project not on this machine")] += 1
                continue
            if exp == "unknown":
                err(f"{where}: a project:app claim of a local probe is never unknown")
                continue
            got, detail = truth(proj, claim)
            if got != exp:
                err(f"{where}: labelled {exp}, the project says {got} ({detail})")
            counts["outcome"][(probe, exp)] += 1
            counts["detail"][(probe, exp, detail)] += 1
            if exp == "failed" and probe in ("path", "contains", "symbol"):
                failed_paths.add(args["path"])
                if probe == "symbol" and proj.read(args["path"]) is None:
                    counts["detail"][(probe, "failed", "its file is gone")] += 1
            if exp == "failed" and probe in ("symbol", "script", "dependency"):
                source = {"symbol": args.get("path"), "script": None, "dependency": None}[probe]
                files = [source] if source else ["package.json", "Makefile", "pyproject.toml", "justfile",
                                                 "requirements-dev.txt", "go.mod", "Cargo.toml"]
                if any(args["name"] in (proj.read(f) or "") for f in files):
                    counts["grep_traps"][probe] += 1
        renamed = mem.get("renamed_to", {})
        for old, new in renamed.items():
            if old not in failed_paths:
                err(f"{at}: renamed_to {old}: not the path of a failed claim of this memory")
            if proj.rename_end(old) != new:
                err(f"{at}: renamed_to {old} -> {new}, but git log -M renames end at {proj.rename_end(old)}")
            if not proj.exists(new):
                err(f"{at}: renamed_to {new} does not exist")
            counts["renamed_to"]["hops > 1" if proj.renames.get(old) != new else "one hop"] += 1
        for old in failed_paths:
            if proj.rename_end(old) != old and old not in renamed:
                err(f"{at}: {old} was renamed to {proj.rename_end(old)}: add renamed_to")
    base_url, stop = server.start(slow_seconds=5)
    try:
        serve_check(base_url, routes)
    finally:
        stop()


# ---------------------------------------------------------------- extract.jsonl
PATH_RE = re.compile(r"(?<![\w@])(?:[~.\w{<*/-][\w.{}<>*?~/-]*/[\w.{}<>*?~/-]*"
                     r"|[\w*.<>-]+\.(?:py|sh|ts|tsx|js|json|ya?ml|toml|md|html|log|sql|rs|go|java|txt|mod)\b"
                     r"|\b(?:Makefile|justfile|Dockerfile)\b|\.env(?:\.\w+)?\b)")
URL_RE = re.compile(r"https?://[^\s)`\"']+")
CMD_RE = re.compile(r"\b(?:npm run|pnpm run|yarn|pnpm|make|just)\s+[\w:./-]+")
COMMANDS = ("npm run {}", "pnpm run {}", "pnpm {}", "yarn {}", "make {}", "just {}")


def clean(token: str) -> str:
    return token.rstrip(".,;:)'`")


def check_extract(items: list[dict], proj: Project, counts: dict) -> None:
    for item in items:
        at = f"extract {item['id']}"
        text, expected, distractors = item["text"], item["expect_claims"], item["not_claims"]
        args = []
        for claim in expected:
            probe = claim.get("probe")
            if probe not in EXTRACT_PROBES or set(claim.get("args", {})) != ARGS[probe]:
                err(f"{at}: {claim}: extraction proposes only path, script, branch, url and pr claims")
                continue
            value = claim["args"][MAIN_ARG[probe]]
            args.append(value)
            counts["extract"][probe] += 1
            if value not in text:
                err(f"{at}: {value!r} is not verbatim in the text")
            if item["scope"] != "project:app" and probe not in ("url", "pr"):
                err(f"{at}: {value!r}: {item['scope']} is not on this machine, nothing to check it against")
            if arg_problem(claim, proj.shas, "http://127.0.0.1:1"):
                err(f"{at}: {value!r}: {arg_problem(claim, proj.shas, 'http://127.0.0.1:1')}")
            elif probe == "path" and not proj.exists(value):
                err(f"{at}: path {value!r} does not exist at HEAD")
            elif probe == "script" and not (proj.script_in(value) and any(c.format(value) in text for c in COMMANDS)):
                err(f"{at}: script {value!r} is not a root script, or not written as a command")
            elif probe == "branch" and value not in proj.branches:
                err(f"{at}: branch {value!r} does not exist")
            elif probe == "url" and "<" in value:
                err(f"{at}: url {value!r} is a placeholder")
        if len(set(args)) != len(args):
            err(f"{at}: an expected claim is listed twice")
        for entry in distractors:
            token, why = entry["text"], entry["why"]
            kind = why.split(":")[0]
            counts["distractor"][kind] += 1
            if token not in text:
                err(f"{at}: distractor {token!r} is not verbatim in the text")
            if kind not in NOT_CLAIM_KINDS:
                err(f"{at}: distractor {token!r}: unknown kind {kind!r}")
            if token in args:
                err(f"{at}: {token!r} is both expected and a distractor")
            if kind in ("missing", "placeholder", "glob") and proj.exists(token.removeprefix("./")):
                err(f"{at}: distractor {token!r} ({kind}) exists in the project")
            if kind == "missing" and proj.path_kind(token) == "never on main" and not why.startswith("missing: git-ignored"):
                err(f"{at}: distractor {token!r}: say why it is missing (renamed, deleted, git-ignored)")
            if kind == "missing-script" and proj.script_in(token.split()[-1]):
                err(f"{at}: distractor {token!r} is a script after all")
            if kind == "other-project" and item["scope"] == "project:app":
                err(f"{at}: distractor {token!r}: other-project in a project:app memory")
            if kind == "route" and not token.startswith("/"):
                err(f"{at}: distractor {token!r}: a route starts with /")
        covered = args + [d["text"] for d in distractors]
        spans = re.findall(r"`([^`]+)`", text)
        candidates = [clean(t) for t in PATH_RE.findall(text)] + [clean(u) for u in URL_RE.findall(text)] \
            + CMD_RE.findall(text) + spans
        for token in candidates:
            if token and not any(c in token or token in c for c in covered):
                err(f"{at}: candidate {token!r} is neither an expected claim nor a labelled distractor")
        if not expected:
            counts["extract"]["memories with no claim"] += 1


# ---------------------------------------------------------------- import
def try_import(paths: list[Path], count: int) -> None:
    from hafiza.cli.importer import read_jsonl
    from hafiza.vault.store.vault import Vault

    items, problems = [], []
    for path in paths:
        more, bad = read_jsonl(path)
        items += more
        problems += bad
    with tempfile.TemporaryDirectory() as tmp:
        vault = Vault.init(Path(tmp) / "vault", actor="bench")
        memories, skipped = vault.import_many(items, source="import:verify-bench", skip_invalid=True)
    for problem in problems + skipped:
        err(f"import: {problem}")
    if len(memories) != count:
        err(f"import: {len(memories)} of {count} memories imported")


# ---------------------------------------------------------------- main
def main(argv: list[str]) -> int:
    mems = [json.loads(line) for line in open(HERE / "memories.jsonl", encoding="utf-8") if line.strip()]
    extract = [json.loads(line) for line in open(HERE / "extract.jsonl", encoding="utf-8") if line.strip()]
    seen: set[str] = set()
    check_fields(mems, MEM_KEYS, {"renamed_to"}, "memories.jsonl", seen)
    check_fields(extract, EXTRACT_KEYS, set(), "extract.jsonl", seen)
    if errors:
        print("\n".join(errors))
        return 1
    counts = {k: collections.Counter() for k in ("outcome", "detail", "grep_traps", "renamed_to", "extract", "distractor")}
    with tempfile.TemporaryDirectory() as tmp:
        repo = project.build(Path(tmp))
        proj = Project(repo, project.shas(Path(tmp)))
        head = git(repo, "rev-parse", "HEAD").stdout.strip()
        check_memories(mems, proj, "http://127.0.0.1:8000", counts)
        check_extract(extract, proj, counts)
    if "--import" in argv:
        try_import([HERE / "memories.jsonl", HERE / "extract.jsonl"], len(mems) + len(extract))

    out = counts["outcome"]
    probes = list(ARGS)
    cols = ["ok", "failed", "unknown", "invalid"]
    scopes = collections.Counter(m["scope"] for m in mems)
    n_claims = sum(len(m["claims"]) for m in mems)
    lines = [f"memories.jsonl: {len(mems)} memories ({', '.join(f'{k} {v}' for k, v in sorted(scopes.items()))}), "
             f"{n_claims} claims", ""]
    table = [["probe", *cols, "total"]]
    for probe in probes:
        if probe == "url":
            row = ["url (--network)", str(out[("url", "network ok")]), "0", str(out[("url", "network unknown")]),
                   str(out[("url", "invalid")])]
            table.append(row + [str(sum(int(c) for c in row[1:]))])
            row = ["url (offline)", "0", "0", str(out[("url", "offline unknown")]), str(out[("url", "invalid")])]
        else:
            row = [probe] + [str(out[(probe, c)]) for c in cols]
        table.append(row + [str(sum(int(c) for c in row[1:]))])
    totals = ["all (url offline)"] + [str(sum(int(r[i]) for r in table[1:] if r[0] != "url (--network)"))
                                      for i in range(1, 6)]
    table.append(totals)
    lines += [" | ".join(r) for r in table]
    lines.append("")
    detail = counts["detail"]
    groups = collections.defaultdict(list)
    for (a, b, c), v in sorted(detail.items()):
        groups[(a, b)].append(f"{c} {v}")
    lines += [f"{a} {b}: " + ", ".join(v) for (a, b), v in groups.items()]
    lines.append("failed claims whose name is still in the file as text (a grep says yes, a parser says no): "
                 + ", ".join(f"{k} {v}" for k, v in sorted(counts["grep_traps"].items())))
    lines.append("renamed_to hints: " + ", ".join(f"{k} {v}" for k, v in sorted(counts["renamed_to"].items())))
    lines.append("")
    x_claims = sum(len(i["expect_claims"]) for i in extract)
    lines.append(f"extract.jsonl: {len(extract)} memories "
                 f"({', '.join(f'{k} {v}' for k, v in sorted(collections.Counter(i['scope'] for i in extract).items()))}), "
                 f"{x_claims} expected claims: "
                 + ", ".join(f"{k} {v}" for k, v in sorted(counts["extract"].items())))
    lines.append(f"distractors ({sum(counts['distractor'].values())}): "
                 + ", ".join(f"{k} {v}" for k, v in sorted(counts["distractor"].items())))
    lines.append(f"fixture HEAD {head}")
    print("\n".join(lines))
    if "--markdown" in argv:
        print("\n| " + " | ".join(table[0]) + " |\n|" + " --- |" * len(table[0]))
        for row in table[1:]:
            print("| " + " | ".join(row) + " |")
    if errors:
        print(f"\n{len(errors)} errors:")
        print("\n".join(errors))
        return 1
    print("\nok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
