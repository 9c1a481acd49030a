"""Where things live. The one place that resolves the default vault location."""

from __future__ import annotations

import os
from pathlib import Path

SIDECAR = ".hafiza"
MEMORIES = "memories"
FACTS = "facts"  # one note per entity, with dated history (vault/facts.py)
PROFILE = "profile.md"  # lines the user pins into every session's profile (indexer/profile.py)
# Recall's id of a fact note's attribute, `fact:<note>/<attribute>`: never a memory id (vault/format/ids.py).
FACT_DOC = "fact:"
WRITE_LOCK = "write.lock"  # in SIDECAR: held by the one writer at a time


def default_vault() -> Path:
    """`HAFIZA_VAULT`, else `$XDG_DATA_HOME/hafiza/vault` (~/.local/share/hafiza/vault)."""
    env = os.environ.get("HAFIZA_VAULT")
    if env:
        return Path(env).expanduser()
    return xdg_vault()


def xdg_vault() -> Path:
    """Where a process without HAFIZA_VAULT looks: an agent's hook, unless its command names the vault."""
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(Path.home(), ".local", "share")
    return Path(data) / "hafiza" / "vault"


def is_default(root: str | os.PathLike) -> bool:
    """Whether `root` is the default location (`xdg_vault`), rather than a folder named by --vault or
    HAFIZA_VAULT: the installers name only another folder in the commands they write."""
    return Path(root).resolve() == xdg_vault().resolve()


def no_vault(root: str | os.PathLike):
    """The VaultNotFound for a folder that holds no vault: it names the folder and the command that makes one
    there. Only `hafiza init` makes a vault in a named folder: a misspelt HAFIZA_VAULT must not become a vault
    nobody reads (the MCP server makes one, on its first start, at the default location alone: docs/mcp.md)."""
    import shlex

    from hafiza.vault.errors import VaultNotFound

    if is_default(root):
        return VaultNotFound(f"no vault at {root}; create one with `hafiza init`")
    return VaultNotFound(f"no vault at {root}; create one with `hafiza --vault {shlex.quote(str(root))} init`, "
                         "or correct --vault or HAFIZA_VAULT if you meant another folder")


def config_dir(environ=os.environ) -> Path:
    """The user's hafiza config folder: `$XDG_CONFIG_HOME/hafiza`, else ~/.config/hafiza.

    A relative XDG_CONFIG_HOME is ignored (the XDG spec says so): it would resolve inside whatever
    folder a command runs in, and a cloned project must never choose where a user's memory goes.
    """
    base = environ.get("XDG_CONFIG_HOME") or ""
    if not os.path.isabs(base):
        base = os.path.join(environ.get("HOME") or str(Path.home()), ".config")
    return Path(base) / "hafiza"


def data_dir(environ=os.environ) -> Path:
    """`$XDG_DATA_HOME/hafiza` (~/.local/share/hafiza): where team vaults given by URL are cloned."""
    base = environ.get("XDG_DATA_HOME") or ""
    if not os.path.isabs(base):
        base = os.path.join(environ.get("HOME") or str(Path.home()), ".local", "share")
    return Path(base) / "hafiza"


def resolve_vault(explicit: str | os.PathLike | None = None) -> Path:
    """`--vault` wins, then the environment, then the XDG default."""
    return Path(explicit).expanduser().resolve() if explicit else default_vault().resolve()


def check_sidecar(root: Path) -> None:
    """Refuse a vault whose `.hafiza` is not a folder (a file or link there would fail every command)."""
    from hafiza.vault.errors import HafizaError

    sidecar = Path(root) / SIDECAR
    if os.path.lexists(sidecar) and (sidecar.is_symlink() or not sidecar.is_dir()):
        raise HafizaError(f"{sidecar} is not a folder; hafiza keeps its rebuildable index there. Move it "
                          "away (it is never committed) and try again.")


def is_vault(root: Path) -> bool:
    return (Path(root) / ".git").exists() and (Path(root) / MEMORIES).is_dir()


def project_of(cwd: str | os.PathLike | None = None) -> str | None:
    """Name of the git repository holding `cwd` (its top folder's name), or None."""
    root = project_root(cwd)
    return root.name if root else None


def project_root(cwd: str | os.PathLike | None = None) -> Path | None:
    """The top folder of the git repository holding `cwd` (the current folder when None), or None."""
    here = Path(cwd or os.getcwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
    return None
