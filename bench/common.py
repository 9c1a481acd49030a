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
from typing import NamedTuple

HERE = Path(__file__).resolve().parent
BASE = "python -c pass"
# The generators and labelled sets the tests need live with the tests; the benchmarks use them from there.
sys.path.insert(0, str(HERE.parent / "tests"))
import gen  # noqa: E402  (tests/gen.py: realistic memories and queries)


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


def machine(**extra) -> dict:
    """What a result was measured on: cores, CPU, Python, the platform, the commit checked out (`+dirty` when
    files outside bench/ differ from it) and the load average now; and `extra`."""
    import platform

    git = ["git", "-C", str(HERE.parent)]
    commit = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run([*git, "status", "--porcelain", "--", ":!bench"], capture_output=True, text=True).stdout
    return {"nproc": os.cpu_count(), "cpu": cpu_model(), "python": platform.python_version(),
            "platform": platform.platform(), "commit": commit + ("+dirty" if dirty.strip() else ""),
            "loadavg_1m": round(os.getloadavg()[0], 2), **extra}


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
    return timed([sys.executable, "-c", "pass"]) / 1000


def log(text: str) -> None:
    """Progress, on stderr (stdout carries the report)."""
    print(text, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- running and timing

class Timing(NamedTuple):
    wall_ms: float
    cpu_ms: float  # user + system time of the process and of the processes it waited for (git, ...)
    out: str
    err: str


def run(argv, env: dict | None = None, cwd=None, input: str | None = None, timeout: float | None = None,
        check: bool = True) -> subprocess.CompletedProcess:
    """A command (text in and out); with `check`, one that must succeed: else exit with the tail of what it said."""
    proc = subprocess.run([str(a) for a in argv], env=env, cwd=cwd, input=input, capture_output=True, text=True,
                          timeout=timeout)
    if check and proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(map(str, argv))}\n{proc.stderr.strip()[-2000:]}")
    return proc


def measure(argv, env: dict | None = None, cwd=None, input: str | None = None) -> Timing:
    """One run of a command that must succeed: its wall and CPU milliseconds, and its output."""
    import resource
    import time

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = run(argv, env, cwd, input)
    wall = (time.perf_counter() - started) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return Timing(wall, cpu, proc.stdout, proc.stderr)


def timed(argv, env: dict | None = None, cwd=None, input: str | None = None) -> float:
    """Milliseconds from the start of a command (which must succeed) to its exit."""
    return measure(argv, env, cwd, input).wall_ms


def clock(work, *args, **kwargs) -> tuple[float, object]:
    """(milliseconds, result) of `work(*args, **kwargs)` in this process."""
    import time

    started = time.perf_counter()
    result = work(*args, **kwargs)
    return (time.perf_counter() - started) * 1000, result


def repeat(work, runs: int, warmup: int = 1) -> list[float]:
    """Milliseconds of each of `runs` calls of `work()` in this process, after `warmup` calls not timed."""
    for _ in range(warmup):
        work()
    return [clock(work)[0] for _ in range(runs)]


# --------------------------------------------------------------------------- statistics

def median(values) -> float:
    import statistics

    return statistics.median(values)


def percentile(values, p: float) -> float:
    """Nearest-rank percentile."""
    import math

    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def summary(values, digits: int = 1) -> dict:
    """p50, p95, min, max and count of `values`."""
    values = list(values)
    if not values:
        return {"n": 0}
    return {"p50": round(median(values), digits), "p95": round(percentile(values, 95), digits),
            "min": round(min(values), digits), "max": round(max(values), digits), "n": len(values)}


class Samples:
    """Timings by case, in milliseconds, and their medians and ratios to BASE."""

    def __init__(self) -> None:
        self.times: dict[str, list[float]] = {}

    def add(self, case: str, ms: float) -> None:
        self.times.setdefault(case, []).append(ms)

    def median(self, case: str) -> float:
        return median(self.times[case])

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
