"""Paths a memory's text names: what the curator checks for dead paths and the verifier turns into claims.

Templates (`<name>`, `{x}`, `*.py`, `$HOME`, `~/`) and paths meant to come and go (`node_modules`,
`dist`, `build`, `/tmp`, `*.log`...) are left out: on a real vault most first-run dead-path flags
were of that kind. A bare `Next.js` is a library, `and/or` prose; a quoted or slashed name with a
file extension, or a name written as a folder (`docs/`), is a path.
"""

from __future__ import annotations

import re

# Folders that builds, package managers and tools create and remove: never evidence of a stale memory.
DISPOSABLE = frozenset({
    "node_modules", "dist", "build", ".next", ".nuxt", "target", ".venv", "venv", "env", "__pycache__",
    ".cache", "coverage", ".pytest_cache", ".mypy_cache", ".tox", "out", "tmp", "temp", ".git",
    "worktrees", ".worktrees", ".turbo", ".parcel-cache", "vendor", "bin", "obj", ".gradle", "site-packages"})
DISPOSABLE_ROOTS = ("/tmp/", "/var/tmp/", "/dev/", "/proc/", "/sys/", "/run/", "/private/tmp/")
DISPOSABLE_SUFFIXES = (".log", ".pid", ".lock", ".tmp", ".swp", ".bak")
TEMPLATE = re.compile(r"[<>{}*?$%\[\]|]|\.\.\.|…")
# A path-looking token: segments of word characters, dots and dashes joined by '/'.
# The look-behind keeps a template's tail (`$ROOT/uploads/`, `~/x`, `<dir>/y`) from matching as a path.
_PATH = re.compile(r"(?<![\w/.:@$~<{%-])(?:\.{1,2}/|/)?[\w.@+-]+(?:/[\w.@+-]+)+/?"
                   r"|(?<![\w/.:@$~<{%-])[\w.@+-]+/(?![\w/])"
                   r"|(?<![\w/.$~<{%-])[\w-]+\.[A-Za-z][\w]{0,9}(?![\w/])")
_CODE = re.compile(r"`([^`\n]{1,300})`")
_URLISH = re.compile(r"^[a-z][a-z0-9+.-]*://|^[\w.-]+@[\w.-]+|^www\.", re.IGNORECASE)
NAMED_FILES = ("makefile", "dockerfile", "justfile", "procfile", "jenkinsfile", "gemfile", "vagrantfile", "rakefile")
PLACEHOLDER = re.compile(r"^(something|foo|bar|baz|example|your|my|xxx|some)[_.-]", re.IGNORECASE)
# Extensions that make a bare word (no '/') a file name rather than a version ("v2.1") or a host.
FILE_EXTENSIONS = frozenset(
    "py sh bash zsh js mjs cjs ts tsx jsx json yaml yml toml ini cfg conf md rst txt sql go rs java kt rb php "
    "c h cc cpp hpp cs swift lua pl r ipynb html css scss vue svelte lock env dockerfile mk gradle xml csv mod sum"
    .split())


def mentioned(text: str) -> list[str]:
    """Paths a text names, in order, without templates or disposable paths."""
    out = []
    for span in _CODE.findall(text):
        word = span.strip().split(" ")[0]  # `infra/backup_db.sh prod`: the command, not its arguments
        word = word.split(":")[0] if re.search(r":\d+$", word) else word  # `auth.py:88`
        if _looks_like_path(word, quoted=True):
            out.append(word)
    outside = _CODE.sub(" ", text)
    for match in _PATH.finditer(outside):
        word = match.group().rstrip(".,;:)")
        if _looks_like_path(word, quoted=False):
            out.append(word)
    return [p for p in dict.fromkeys(out) if not disposable(p)]


def _looks_like_path(token: str, quoted: bool) -> bool:
    if _URLISH.search(token) or token.startswith("-") or len(token) < 3:
        return False
    name = token.rstrip("/").rsplit("/", 1)[-1]
    ext = name.rsplit(".", 1)[-1].lower() if "." in name.strip(".") else ""
    has_ext = ext in FILE_EXTENSIONS or name.lower().startswith(NAMED_FILES)
    if PLACEHOLDER.search(name):
        return False
    if token.endswith("/") and name:
        return True  # `docs/`: written as a folder
    if "/" in token.strip("/"):
        # A bare "and/or", "TR/EN" or "src/api" is prose as often as a folder; quoted, or with a file name
        # or a trailing slash, it is a path.
        return quoted or has_ext or token.endswith("/")
    # Bare `Next.js`, `moment.js`, `Vue.js` are libraries far more often than files.
    return has_ext and (quoted or (token.count(".") == 1 and ext != "js"))


def disposable(path: str) -> bool:
    if TEMPLATE.search(path) or path.startswith("~") or path.startswith(("http:", "https:")):
        return True
    if path.startswith(DISPOSABLE_ROOTS) or path.lower().endswith(DISPOSABLE_SUFFIXES):
        return True
    return any(part in DISPOSABLE for part in path.strip("/").split("/"))
