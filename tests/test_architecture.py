"""Dependencies point down (docs/architecture.md, arrows): checked on the source with `ast`, and on real imports."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("vault", "indexer", "hooks", "curator", "verifier", "skills", "cli", "ui")

# package -> what it must never import (hafiza layers by folder name, or third-party top-level names).
# skills may use the verifier's probes (a skill draft's cited paths and targets must exist: skills/gate.py).
FORBIDDEN = {
    "vault": {"indexer", "hooks", "cli", "curator", "verifier", "skills", "click", "mcp"},
    "indexer": {"hooks", "cli", "curator", "verifier", "skills", "click", "mcp"},
    "curator": {"hooks", "cli", "verifier", "skills", "click", "mcp"},
    "verifier": {"hooks", "cli", "curator", "skills", "click", "mcp"},
    "skills": {"hooks", "cli", "curator", "click", "mcp"},
    "hooks": {"cli", "ui", "click"},
    # The web app is an adapter on top, beside the command line: it uses the library, never the CLI's code.
    "ui": {"cli", "click", "mcp"},
}
# The one import cycle kept on purpose: the thin hook (stdlib only) falls back to running the hook in-process
# (hooks/entry.py), which with hooks/wire.py reuses the thin hook's socket helpers and log.
DELIBERATE = {("hafiza.hooks.hafiza_hook", "hafiza.hooks.entry")}


def test_nothing_below_the_web_app_imports_it():
    """Only the command line starts the web app (`hafiza ui`); no layer of the library or the hooks knows it."""
    found = [f"{path.relative_to(ROOT)}:{line}" for package in LAYERS if package not in ("ui", "cli")
             for path in sorted((ROOT / package).rglob("*.py"))
             for line, module in imports_of(path, package) if layer_of(module) == "ui"]
    assert found == []


def imports_of(path: Path, package: str) -> list[tuple[int, str]]:
    """(line, absolute module) for every import in `path`, including those inside functions."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    here = ["hafiza", package, *path.relative_to(ROOT / package).with_suffix("").parts]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                base = here[:-node.level]
                module = ".".join(base + ([node.module] if node.module else []))
                names = [f"{module}.{a.name}" for a in node.names] if not node.module else [module]
            else:
                names = [node.module]
            out += [(node.lineno, name) for name in names]
    return out


def modules(root: Path) -> dict[str, Path]:
    """Every hafiza module under `root` by its import name (a package by its own name)."""
    found = {}
    for layer in LAYERS:
        for path in sorted((root / layer).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            found[".".join(["hafiza", *parts]).removesuffix(".__init__")] = path
    return found


def module_graph(root: Path) -> dict[str, set[str]]:
    """hafiza module -> the hafiza modules it imports, imports inside functions included (`from x import y`
    counts as importing x.y where that is a module, else x: a package's `__init__` that imports its own modules
    is no cycle with a module that imports its siblings by `from . import sibling`)."""
    known = modules(root)
    graph = {}
    for name, path in known.items():
        here = name.split(".") + (["__init__"] if path.name == "__init__.py" else [])
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        wanted = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                wanted += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = ".".join(here[:-node.level] + ([node.module] if node.module else [])) if node.level else node.module
                named = [f"{base}.{alias.name}" for alias in node.names]
                wanted += named + ([base] if not all(name in known for name in named) else [])
        deps = set()
        for module in wanted:
            while module and module not in known:
                module = module.rpartition(".")[0]
            if module and module != name:
                deps.add(module)
        graph[name] = deps
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles of `graph`: each group of modules that reach one another (Tarjan's algorithm)."""
    order, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node: str) -> None:
        order[node] = low[node] = len(order)
        stack.append(node)
        on_stack.add(node)
        for after in sorted(graph.get(node, ())):
            if after not in order:
                visit(after)
                low[node] = min(low[node], low[after])
            elif after in on_stack:
                low[node] = min(low[node], order[after])
        if low[node] == order[node]:
            group = []
            while not group or group[-1] != node:
                group.append(stack.pop())
                on_stack.discard(group[-1])
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in order:
            visit(node)
    return found


def test_no_module_imports_itself_through_others():
    """An import cycle, even one hidden inside a function, means a symbol lives in the wrong module."""
    graph = module_graph(ROOT)
    for importer, imported in DELIBERATE:
        assert imported in graph[importer], f"{importer} no longer imports {imported}: drop it from DELIBERATE"
        graph[importer] = graph[importer] - {imported}
    assert cycles(graph) == []


def test_the_cycle_check_sees_imports_inside_functions(tmp_path):
    (tmp_path / "indexer").mkdir()
    (tmp_path / "indexer" / "a.py").write_text("from . import b\n")
    (tmp_path / "indexer" / "b.py").write_text("def f():\n    from hafiza.indexer.a import x\n")
    (tmp_path / "indexer" / "c.py").write_text("from .a import y\n")
    assert cycles(module_graph(tmp_path)) == [["hafiza.indexer.a", "hafiza.indexer.b"]]


def layer_of(module: str) -> str:
    """The layer or top-level distribution a module belongs to."""
    parts = module.split(".")
    if parts[0] == "hafiza" and len(parts) > 1:
        return parts[1]
    if parts[0] in LAYERS:  # a bare `import cli` would be a mistake too
        return parts[0]
    return parts[0]


def violations(package: str) -> list[str]:
    found = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for line, module in imports_of(path, package):
            if layer_of(module) in FORBIDDEN[package]:
                found.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_dependencies_point_down(package):
    assert violations(package) == []


def test_nothing_imports_click():
    """The command line is argparse's: click cost every command 40-60 ms of imports (issue 16)."""
    found = [f"{path.relative_to(ROOT)}:{line}" for package in LAYERS for path in sorted((ROOT / package).rglob("*.py"))
             for line, module in imports_of(path, package) if layer_of(module) == "click"]
    assert found == []


def test_the_checker_sees_relative_and_nested_imports(tmp_path, monkeypatch):
    # A deliberate violation in a scratch tree proves the check is not vacuous.
    fake = tmp_path / "vault"
    fake.mkdir()
    (fake / "bad.py").write_text("def f():\n    from ..indexer import recall\n    import click\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert violations("vault") == ["vault/bad.py:2 imports hafiza.indexer", "vault/bad.py:3 imports click"]


def test_every_layer_is_a_package_in_its_namespace():
    import importlib

    for layer in LAYERS:
        module = importlib.import_module(f"hafiza.{layer}")
        assert Path(module.__file__).parent == ROOT / layer


@pytest.mark.parametrize("module, banned", [
    ("hafiza.vault.store.vault", {"click", "mcp", "whoosh", "numpy"}),
    ("hafiza.indexer.recall", {"click", "mcp", "git"}),
    ("hafiza.hooks.entry", {"click", "mcp", "git", "yaml", "frontmatter"}),
    ("hafiza.cli.read", {"click", "mcp", "whoosh", "numpy", "yaml"}),
])
def test_importing_a_layer_does_not_pull_in_the_layers_above(module, banned):
    code = f"import sys, {module}\nprint(' '.join(sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert {m.split(".")[0] for m in loaded} & banned == set()
    layer = module.split(".")[1]
    above = {"vault": LAYERS[1:], "indexer": ("hooks", "cli", "ui"), "hooks": ("cli", "ui"), "cli": ("ui",)}[layer]
    assert [m for m in loaded if m.split(".")[:2] in [["hafiza", a] for a in above]] == []


def calls(path: Path, name: str) -> list[int]:
    """Lines where `path` calls `name(...)` (a bare name or an attribute's last part)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Call)
            and (getattr(node.func, "id", None) == name or getattr(node.func, "attr", None) == name)]


def test_adapters_open_vaults_only_through_the_one_write_path():
    """A Vault made by hand does not bring the index and vectors up to its writes: adapters (the command
    line, the hooks, the MCP server) open it with hafiza.indexer.refresh.writable, which does."""
    found = [f"{path.relative_to(ROOT)}:{line}" for package in ("cli", "hooks", "ui")
             for path in sorted((ROOT / package).rglob("*.py")) for line in calls(path, "Vault")]
    assert found == []


# The environment is read at the edges and passed in (hafiza.indexer.config); the library reads it
# only to resolve default locations: the vault (vault/format/paths.py) and the model cache (indexer/embed.py).
# vault/git/run.py hands the environment on to git with a few overrides (GIT_INDEX_FILE, commit dates).
ENVIRON_ALLOWED = {"vault/format/paths.py", "indexer/config.py", "indexer/embed.py", "vault/git/run.py"}


def test_the_library_does_not_read_the_environment():
    found = []
    for package in ("vault", "indexer", "curator", "verifier", "skills"):
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = str(path.relative_to(ROOT))
            tree = ast.parse(path.read_text(encoding="utf-8"))
            uses = [node.lineno for node in ast.walk(tree)
                    if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "putenv")]
            if uses and rel not in ENVIRON_ALLOWED:
                found += [f"{rel}:{line}" for line in uses]
    assert found == []


def test_the_tests_do_not_import_benchmark_code():
    """bench/ is a tool that uses the tests' generators and sets (tests/gen.py, tests/statements_corpus.py), not
    the reverse: a test that imported a benchmark would break whenever the benchmark changed."""
    tests = ROOT / "tests"
    bench = {path.stem for path in (ROOT / "bench").rglob("*.py")} - {path.stem for path in tests.glob("*.py")}
    found = []
    for path in sorted(tests.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(text, filename=str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            found += [f"{path.relative_to(ROOT)}:{node.lineno} imports {name}" for name in names
                      if name.split(".")[0] in bench | {"bench"}]
            target = node.func if isinstance(node, ast.Call) else node.targets[0] if isinstance(node, ast.Assign) else None
            if target is not None and ast.get_source_segment(text, target).startswith("sys.path") \
                    and "bench" in ast.get_source_segment(text, node):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} puts bench/ on sys.path")
    assert found == []


def test_git_is_reached_only_through_its_package():
    """vault/git/ is one room behind one interface (`from hafiza.vault.git import GitStore`): its modules (the
    tree editor, the index splicer, how a command runs) can change or go without a reader outside noticing."""
    found = [f"{path.relative_to(ROOT)}:{line} imports {module}" for package in LAYERS
             for path in sorted((ROOT / package).rglob("*.py")) if path.parent != ROOT / "vault" / "git"
             for line, module in imports_of(path, package) if module.startswith("hafiza.vault.git.")
             and (ROOT / "vault" / "git" / f"{module.split('.')[3]}.py").exists()]
    assert found == []


# The model-talking code (vault/offline: a provider that asks a language model, the checks of its answers) and the
# paths it must stay off, whatever imports inside functions would bring along: every write, and every prompt
# (the hook, recall and search, the warm process that answers the hook). No language model on the prompt path.
MODEL_TALK = "hafiza.vault.offline"
WRITE_PATH = ("hafiza.vault.store", "hafiza.vault.git", "hafiza.vault.format", "hafiza.vault.guard")
PROMPT_PATH = ("hafiza.hooks.hafiza_hook", "hafiza.hooks.entry", "hafiza.hooks.daemon", "hafiza.indexer.recall",
               "hafiza.indexer.search")


def reached(graph: dict[str, set[str]], starts) -> dict[str, str]:
    """Every module `starts` import, directly or through others: module -> the module that imports it on the way."""
    via, todo = {start: "" for start in starts}, list(starts)
    while todo:
        module = todo.pop()
        for after in sorted(graph.get(module, ())):
            if after not in via:
                via[after] = module
                todo.append(after)
    return via


def chain(via: dict[str, str], module: str) -> str:
    steps = [module]
    while via.get(steps[-1]):
        steps.append(via[steps[-1]])
    return " <- ".join(steps)


@pytest.mark.parametrize("path", ["write", "prompt"])
def test_nothing_on_the_write_or_prompt_path_reaches_the_model_talking_code(path):
    graph = module_graph(ROOT)
    starts = [m for m in graph if m.startswith(WRITE_PATH)] if path == "write" else list(PROMPT_PATH)
    assert all(start in graph for start in starts)
    via = reached(graph, starts)
    assert [chain(via, m) for m in sorted(via) if m.startswith(MODEL_TALK)] == []


def test_the_reach_check_follows_imports_inside_functions(tmp_path):
    for layer, name, text in (("hooks", "entry", "def f():\n    from hafiza.skills import capture\n"),
                              ("skills", "capture", "from . import implicit\n"),
                              ("skills", "implicit", "def f():\n    from hafiza.vault.offline.provider import x\n"),
                              ("vault", "offline/provider", "")):
        (tmp_path / layer / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / layer / f"{name}.py").write_text(text)
    graph = module_graph(tmp_path)
    via = reached(graph, ["hafiza.hooks.entry"])
    assert chain(via, "hafiza.vault.offline.provider") == ("hafiza.vault.offline.provider <- hafiza.skills.implicit <- "
                                                           "hafiza.skills.capture <- hafiza.hooks.entry")


# The vault's rooms (docs/architecture.md, "The vault's rooms") and the rooms each may import; a room is a
# subpackage of vault/ or one of its top-level modules. Files and errors are below every room.
BELOW = {"errors", "files"}
ROOMS = {
    "errors": set(),
    "files": {"errors"},
    "format": BELOW,
    "guard": BELOW,
    "git": BELOW,
    "offline": BELOW,  # the model-talking code needs nothing of the vault's
    "facts": BELOW | {"format", "guard"},
    "episodes": BELOW | {"format", "guard"},
    "store": BELOW | {"format", "guard", "git", "facts"},
    "sync": BELOW | {"format", "guard", "git", "facts", "store", "review"},
    "review": BELOW | {"format", "guard", "git", "sync"},
    "driver": BELOW | {"git", "sync"},  # `python -m hafiza.vault.driver`: the merge driver git runs
}
# Vault.init registers sync's merge driver in a new vault's git config (sync.machines.prepare).
ROOM_EXCEPTIONS = {("hafiza.vault.store.vault", "hafiza.vault.sync.machines")}
# Outside vault/, the model-talking code is for the offline jobs that choose to ask a model, and their commands.
ASKS_A_MODEL = {"curator", "verifier", "skills", "cli", "ui"}


def room_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if parts[:2] == ["hafiza", "vault"] and len(parts) > 2 else None


def test_each_room_of_the_vault_imports_only_the_rooms_below_it():
    assert set(ROOMS) == {path.stem for path in (ROOT / "vault").iterdir()
                          if path.stem != "__init__" and (path.suffix == ".py" or (path / "__init__.py").exists())}
    found = [f"{module} imports {imported}" for module, deps in sorted(module_graph(ROOT).items())
             if room_of(module) for imported in sorted(deps) if room_of(imported) not in (None, room_of(module))
             and room_of(imported) not in ROOMS[room_of(module)] and (module, imported) not in ROOM_EXCEPTIONS]
    assert found == []
    for module, imported in ROOM_EXCEPTIONS:
        assert imported in module_graph(ROOT)[module], f"{module} no longer imports {imported}: drop the exception"


def test_only_the_jobs_that_ask_a_model_import_the_model_talking_code():
    found = [f"{module} imports {imported}" for module, deps in sorted(module_graph(ROOT).items())
             if module.split(".")[1] not in ASKS_A_MODEL and room_of(module) != "offline"
             for imported in sorted(deps) if imported.startswith(MODEL_TALK)]
    assert found == []


# What the store asks of git: the narrow interface it uses (reading history and the last commit's files, committing
# files, putting git's index back, the state a killed git or an unfinished merge leaves). The rest of GitStore is
# sync's (remotes, merges) and review's (branches). A new need is added here on purpose.
STORE_USES_GIT = {
    "head", "log", "get", "changed", "changed_paths", "tracked", "blob_ids",  # reading
    "commit", "commit_contents", "untrack", "revert",                         # committing
    "unstage", "restore",                                                     # git's index and work tree put back
    "merging", "stale_lock", "leftovers", "tune", "git_dir",                  # the repository's state
}


def test_the_store_uses_git_through_a_few_operations():
    used = set()
    for path in sorted((ROOT / "vault" / "store").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            owner = getattr(node, "value", None)
            if isinstance(node, ast.Attribute) and (getattr(owner, "attr", None) == "git" or getattr(owner, "id", None) == "git"):
                used.add(node.attr)
    assert used - STORE_USES_GIT == set()
    assert used >= {"head", "commit", "log"}  # the check sees the store's calls
