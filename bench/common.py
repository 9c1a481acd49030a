"""What the benchmarks share: running commands and timing them in interleaved rounds against a baseline,
running against a frozen copy of the code, and saving results.

The machine is shared and noisy, so every figure is a median over rounds in which each case runs once,
in an order rotated from round to round, beside `python -c pass` (BASE): the ratio to the base measured
in the same run is what a result reports and a target is set in."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BASE = "python -c pass"


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


def run(argv, env: dict | None = None, cwd=None, input: str | None = None,
        timeout: float | None = None) -> subprocess.CompletedProcess:
    """A command that must succeed: its CompletedProcess (text), or exit with the tail of what it said."""
    proc = subprocess.run([str(a) for a in argv], env=env, cwd=cwd, input=input, capture_output=True, text=True,
                          timeout=timeout)
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(map(str, argv))}\n{proc.stderr.strip()[-2000:]}")
    return proc


def timed(argv, env: dict | None = None, cwd=None, input: str | None = None) -> float:
    """Milliseconds from the start of a command (which must succeed) to its exit."""
    import time

    started = time.perf_counter()
    run(argv, env, cwd, input)
    return (time.perf_counter() - started) * 1000


class Samples:
    """Timings by case, in milliseconds, and their medians and ratios to BASE."""

    def __init__(self) -> None:
        self.times: dict[str, list[float]] = {}

    def add(self, case: str, ms: float) -> None:
        self.times.setdefault(case, []).append(ms)

    def median(self, case: str) -> float:
        import statistics

        return statistics.median(self.times[case])

    def ratio(self, case: str, base: str = BASE) -> float:
        return self.median(case) / self.median(base)

    def summary(self, base: str = BASE) -> dict:
        """{case: {"median_ms", "ratio", "runs"}}, the base included (its ratio 1)."""
        return {case: {"median_ms": round(self.median(case), 1), "ratio": round(self.ratio(case, base), 2),
                       "runs": len(values)} for case, values in self.times.items()}


def interleaved(cases: dict, samples: Samples, round_number: int, keep: bool = True) -> None:
    """One round: each case (name -> a callable taking the round's number and returning milliseconds) run
    once, starting one further along each round, so no case always follows the same one. `keep` False: a
    warm-up round, run but not recorded."""
    names = list(cases)
    start = round_number % len(names)
    for name in names[start:] + names[:start]:
        ms = cases[name](round_number)
        if keep:
            samples.add(name, ms)


def base_case(python: str = sys.executable, env: dict | None = None):
    """The BASE case: `python -c pass` in `python`."""
    return lambda _round: timed([python, "-c", "pass"], env)
