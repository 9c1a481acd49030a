"""Where each project lives on this machine: what resolves a `project:<name>` memory's relative paths.

Machine-local (a laptop and a CI box keep a project in different folders), so it sits in the
sidecar and is never committed. Hooks and the command line record a project when they run
inside it; a missing map only means the curator cannot tell whether such a path still exists.
"""

from __future__ import annotations

import json
from pathlib import Path

from hafiza.vault.files import DIR_MODE, atomic_write, read_regular
from hafiza.vault.format.paths import project_root

FILE = "projects.json"


def known(sidecar: Path) -> dict[str, Path]:
    """name -> folder, as last recorded."""
    try:
        data = json.loads(read_regular(Path(sidecar) / FILE, limit=1 << 20))
    except (OSError, ValueError):
        return {}
    return {str(k): Path(v) for k, v in data.items() if isinstance(v, str)} if isinstance(data, dict) else {}


def record(sidecar: Path, cwd: str | Path | None) -> str | None:
    """Note the git project holding `cwd` (its top folder's name -> path); written only when it changed."""
    root = project_root(cwd) if cwd else None
    if root is None:
        return None
    current = known(sidecar)
    if current.get(root.name) != root:
        current[root.name] = root
        Path(sidecar).mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        atomic_write(Path(sidecar) / FILE, json.dumps({k: str(v) for k, v in sorted(current.items())}, indent=1),
                     fsync=False)
    return root.name



def folder(scope: str, places: dict) -> Path | None:
    """The folder on this machine of a `project:<name>` scope, from `places` (name -> folder); None for
    a global memory or a project that is not here."""
    if not scope.startswith("project:"):
        return None
    root = places.get(scope.removeprefix("project:"))
    return Path(root) if root is not None and Path(root).is_dir() else None
