"""What the benchmarks share: running against a frozen copy of the code, and saving results."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


PACKAGES = ("vault", "indexer", "hooks", "curator", "verifier", "skills", "cli", "ui")


def snapshot(rev: str, dest: Path) -> str:
    """The code at `rev`, unpacked under `dest` as an importable `hafiza` package; its short hash.

    Other work lands commits in the tree while a benchmark runs; every process
    of the run (this one, hooks, warm processes, the CLI) imports this frozen
    copy through PYTHONPATH, which the editable install's finder yields to.
    """
    git = ["git", "-C", str(HERE.parent)]
    sha = subprocess.run([*git, "rev-parse", "--short", rev], capture_output=True, text=True, check=True).stdout.strip()
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    archive = subprocess.run([*git, "archive", sha], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    (dest / "hafiza").mkdir()
    for name in PACKAGES:
        os.symlink(f"../{name}", dest / "hafiza" / name)
    return sha


def use_code(dest: Path) -> None:
    """Make this process and every child import the snapshot, compiled once and kept as an installed
    hafiza's modules are (where the machine sets PYTHONDONTWRITEBYTECODE, every process would compile
    every module again: ~80 ms of a `remember`)."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.path.insert(0, str(dest))
    os.environ["PYTHONPATH"] = os.pathsep.join([str(dest), *filter(None, [os.environ.get("PYTHONPATH")])])


def installed_python(folder: Path) -> str:
    """An interpreter that starts as one with hafiza installed from a wheel does: a new venv whose only
    .pth file adds this venv's site-packages (Whoosh, numpy...) to the path without running the
    .pth files there. Of those, the editable install's finder costs about as much again as the
    interpreter's start (it imports pathlib, re and fnmatch at startup): a cost of developers' checkouts,
    not of users' installs, and one that would flatter every ratio to `python -c pass`. hafiza itself
    is imported from PYTHONPATH (`use_code`)."""
    import sysconfig

    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    site = next(folder.glob("lib/python*/site-packages"))
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return str(folder / "bin" / "python")


def publish(name: str, report: dict, markdown: str, keep: bool) -> int:
    """Print a benchmark's report; with `keep` (--save) also write it under bench/results/. The exit code."""
    print(markdown)
    if keep:
        save(name, report["date"], report, markdown)
    return 0


def save(name: str, today: str, report: dict, markdown: str) -> None:
    """Write bench/results/<name>-<today>.json and .md."""
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    (out / f"{name}-{today}.json").write_text(json.dumps(report, ensure_ascii=False, indent=2) + "\n")
    (out / f"{name}-{today}.md").write_text(markdown)
    print(f"\nsaved {out / f'{name}-{today}.json'} and .md")


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def python_pass() -> float:
    """Seconds for `python -c pass` in this interpreter: the baseline every timing is read against."""
    import subprocess
    import sys
    import time

    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - started
