"""The real agents, installed from npm at pinned versions into a cache folder, for the end-to-end tests.

`make e2e` sets HAFIZA_E2E=1 and installs them (npm, once per version); without it, or when npm or
the registry cannot be reached, every end-to-end test is skipped with the reason, never failed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("HAFIZA_E2E_CACHE") or ROOT / ".cache" / "e2e")
# package, version, the binary it installs. Bump together with the README's client table.
PINNED = {
    "claude-code": ("@anthropic-ai/claude-code", "2.1.197", "claude"),
    "codex": ("@openai/codex", "0.171.0", "codex"),
    "gemini": ("@google/gemini-cli", "0.61.0", "gemini"),
    "opencode": ("opencode-ai", "1.18.33", "opencode"),
}
INSTALL_SECONDS = 600


def binary(client: str) -> Path:
    """The client's executable, installed on first use; skips the test when that cannot be done."""
    if os.environ.get("HAFIZA_E2E") != "1":
        pytest.skip("end-to-end tests with the real clients run with `make e2e` (HAFIZA_E2E=1)")
    package, version, name = PINNED[client]
    prefix = CACHE / f"{client}-{version}"
    exe = prefix / "node_modules" / ".bin" / name
    if exe.exists():
        return exe
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip(f"npm is not installed: cannot install {package}@{version}")
    prefix.mkdir(parents=True, exist_ok=True)
    try:
        proc = subprocess.run([npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund",
                               f"{package}@{version}"], capture_output=True, text=True, timeout=INSTALL_SECONDS)
    except subprocess.TimeoutExpired:
        pytest.skip(f"npm install {package}@{version} took over {INSTALL_SECONDS} s (registry unreachable?)")
    if proc.returncode != 0 or not exe.exists():
        pytest.skip(f"npm could not install {package}@{version}: {(proc.stderr or proc.stdout).strip()[-300:]}")
    return exe
