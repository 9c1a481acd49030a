"""How long does a person wait for each everyday command, as a ratio to `python -c pass`?

What a person waits for at the command line: whole-process times of everyday commands, as ratios to
`python -c pass` measured in the same run (the machine is shared; trust the ratios over the times).

    python bench/cli_speed.py --sizes 1000 5000 --runs 7 --save

Each size gets a vault of generated memories (tests/gen.py), indexed and embedded first, and the warm
process running, as the hooks leave it. Each command is timed in a block of its own, each run paired
with a run of the baseline, so work one command leaves behind (the warm process embedding a new memory)
is not billed to another; `remember` runs last, a second apart, as a person types them. Every process
runs in an interpreter that starts as an installed hafiza's does (common.installed_python). Both the
wall time and the CPU time (user + system, the process and the git processes it waits for) are
reported: on a shared machine the CPU time is the steadier of the two.
Targets (issue 16): remember <= 5x, show/list/--version <= 3x, search (warm) <= 3x.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import gen  # noqa: E402
from common import PACKAGES, installed_python, measure, median, save, snapshot, use_code  # noqa: E402

INTERPRETERS = ("installed", "dev")  # see `main`
TARGETS = {"remember": 5, "show": 3, "list": 3, "--version": 3, "search (warm)": 3}


def _embedded(hafiza: list[str], env: dict, timeout: float = 1800) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        checks = json.loads(subprocess.run([*hafiza, "doctor", "--json"], env=env, capture_output=True,
                                           text=True).stdout)
        if next(c for c in checks if c["name"] == "vectors")["level"] == "ok":
            return
        time.sleep(5)
    raise SystemExit("the background embedding did not finish")


def measure_size(size: int, runs: int, python: str, interpreter: str) -> dict:
    hafiza = [python, "-m", "hafiza.cli.main"]
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp:
        vault = Path(tmp) / "vault"
        env = {**os.environ, "HAFIZA_VAULT": str(vault)}
        items = Path(tmp) / "memories.jsonl"
        items.write_text("".join(json.dumps(m, ensure_ascii=False) + "\n" for m in gen.memories(size)))
        subprocess.run([*hafiza, "init"], env=env, check=True, capture_output=True)
        subprocess.run([*hafiza, "import", str(items)], env=env, check=True, capture_output=True)
        _embedded(hafiza, env)  # the import hands the embedding to a background process: wait for it
        some = json.loads(subprocess.run([*hafiza, "list", "--json"], env=env, check=True,
                                         capture_output=True, text=True).stdout)[0]["id"]
        subprocess.run([*hafiza, "daemon", "start"], env=env, check=True, capture_output=True)
        time.sleep(3)
        commands = {
            "--version": [*hafiza, "--version"],
            "show": [*hafiza, "show", some],
            "list": [*hafiza, "list"],
            "search (warm)": [*hafiza, "search", "deploy staging pnpm"],
            "remember": None,  # a new text each run
        }
        wall: dict[str, list[float]] = {name: [] for name in ["python -c pass", *commands]}
        cpu: dict[str, list[float]] = {name: [] for name in wall}
        for name, argv in commands.items():
            for n in range(runs):
                for which, command in (("python -c pass", [python, "-c", "pass"]),
                                       (name, argv or [*hafiza, "remember", f"bench note {n} about the {size} vault"])):
                    took = measure(command, env)
                    wall[which].append(took.wall_ms)
                    cpu[which].append(took.cpu_ms)
                if argv is None:
                    time.sleep(1)
        subprocess.run([*hafiza, "daemon", "stop"], env=env, capture_output=True)
        time.sleep(5)  # any background embedding finishes before the folder goes
    base, base_cpu = median(wall["python -c pass"]), median(cpu["python -c pass"])
    return {"memories": size, "runs": runs, "interpreter": interpreter, "python_pass_ms": round(base, 1),
            "python_pass_cpu_ms": round(base_cpu, 1),
            "median_ms": {k: round(median(v), 1) for k, v in wall.items()},
            "median_cpu_ms": {k: round(median(v), 1) for k, v in cpu.items()},
            "ratio": {k: round(median(v) / base, 1) for k, v in wall.items() if k != "python -c pass"},
            "cpu_ratio": {k: round(median(v) / base_cpu, 1) for k, v in cpu.items() if k != "python -c pass"}}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--interpreters", nargs="+", choices=INTERPRETERS, default=list(INTERPRETERS))
    parser.add_argument("--save", action="store_true")
    parser.add_argument("--commit", default="HEAD",
                        help="Measure the code of this commit, frozen (default HEAD; `worktree`: the files as they are).")
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="hafiza-cli-speed-"))
    if args.commit == "worktree":
        code = "worktree"
        (folder / "code" / "hafiza").mkdir(parents=True)
        for name in PACKAGES:
            os.symlink(HERE.parent / name, folder / "code" / "hafiza" / name)
    else:  # other work lands in the tree meanwhile: every process imports a frozen copy
        code = snapshot(args.commit, folder / "code")
    use_code(folder / "code")
    # `installed`: as a user's `pip install hafiza` starts (common.installed_python); `dev`: this checkout's
    # venv, whose editable install adds ~30 ms to every start, the baseline's included (issue 16's figures).
    pythons = {"installed": installed_python(folder / "venv"), "dev": sys.executable}
    report = {"date": dt.date.today().isoformat(), "commit": code, "load_at_start": os.getloadavg()[0],
              "targets": TARGETS,
              "sizes": [measure_size(size, args.runs, pythons[which], which) for which in args.interpreters
                        for size in args.sizes]}
    print(json.dumps(report, indent=1))
    if args.save:
        save("cli-speed", report["date"], report, markdown(report))


def markdown(r: dict) -> str:
    names = [k for k in r["sizes"][0]["ratio"]]
    lines = [f"# Command-line speed, {r['date']}", "",
             f"`python bench/cli_speed.py --save` at {r.get('commit', 'worktree')}, {r['sizes'][0]['runs']} runs of "
             "each command, each paired with a run of `python -c pass`, in an interpreter that starts as an "
             "installed hafiza's does; search with the warm process running. Medians; the ratio is to the "
             f"baseline's median. Load average at the start: {r.get('load_at_start', '?')}.", "",
             "Interpreter `installed` starts as a user's `pip install hafiza` does; `dev` is this checkout's "
             "venv, whose editable install's finder adds the same ~30 ms to every start, the baseline's too "
             "(how issue 16 measured).", "",
             "| interpreter | memories | time | `python -c pass` | " + " | ".join(f"`{n}`" for n in names) + " |",
             "|---|---|---|---|" + "---|" * len(names)]
    for s in r["sizes"]:
        for label, ms, base, ratio in (("wall", "median_ms", "python_pass_ms", "ratio"),
                                       ("CPU", "median_cpu_ms", "python_pass_cpu_ms", "cpu_ratio")):
            if ms not in s:
                continue
            cells = [f"{s[ms][n]:.0f} ms ({s[ratio][n]}×)" for n in names]
            lines.append(f"| {s.get('interpreter', 'dev')} | {s['memories']:,} | {label} | {s[base]:.0f} ms | "
                         + " | ".join(cells) + " |")
    lines += ["", "Targets: " + ", ".join(f"`{n}` ≤ {r['targets'][n]}×" for n in names) + "."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
