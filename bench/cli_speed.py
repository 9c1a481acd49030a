"""What a person waits for at the command line: whole-process times of everyday commands, as ratios to
`python -c pass` measured in the same run (the machine is shared; trust the ratios over the times).

    python bench/cli_speed.py --sizes 1000 5000 --runs 7 --save

Each size gets a vault of generated memories (bench/gen.py), indexed and embedded first. Commands are
interleaved round by round with the baseline; `search` is timed with the warm process running, as the
hooks leave it. Targets (issue 16): remember <= 5x, show/list/--version <= 3x, search (warm) <= 3x.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import gen  # noqa: E402
from common import save, snapshot, use_code  # noqa: E402

HAFIZA = [sys.executable, "-m", "hafiza.cli.main"]
TARGETS = {"remember": 5, "show": 3, "list": 3, "--version": 3, "search (warm)": 3}


def _time(argv: list[str], env: dict) -> float:
    started = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def _embedded(env: dict, timeout: float = 1800) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        checks = json.loads(subprocess.run([*HAFIZA, "doctor", "--json"], env=env, capture_output=True,
                                           text=True).stdout)
        if next(c for c in checks if c["name"] == "vectors")["level"] == "ok":
            return
        time.sleep(5)
    raise SystemExit("the background embedding did not finish")


def measure(size: int, runs: int) -> dict:
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp:
        vault = Path(tmp) / "vault"
        env = {**os.environ, "HAFIZA_VAULT": str(vault)}
        items = Path(tmp) / "memories.jsonl"
        items.write_text("".join(json.dumps(m, ensure_ascii=False) + "\n" for m in gen.memories(size)))
        subprocess.run([*HAFIZA, "init"], env=env, check=True, capture_output=True)
        subprocess.run([*HAFIZA, "import", str(items)], env=env, check=True, capture_output=True)
        _embedded(env)  # the import hands the embedding to a background process: wait for it
        some = json.loads(subprocess.run([*HAFIZA, "list", "--json"], env=env, check=True,
                                         capture_output=True, text=True).stdout)[0]["id"]
        subprocess.run([*HAFIZA, "daemon", "start"], env=env, check=True, capture_output=True)
        time.sleep(3)
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "--version": [*HAFIZA, "--version"],
            "show": [*HAFIZA, "show", some],
            "list": [*HAFIZA, "list"],
            "search (warm)": [*HAFIZA, "search", "deploy staging pnpm"],
            "remember": None,  # a new text each round
        }
        times: dict[str, list[float]] = {name: [] for name in commands}
        for n in range(runs):
            for name, argv in commands.items():
                argv = argv or [*HAFIZA, "remember", f"bench note {n} about the {size} vault speed"]
                times[name].append(_time(argv, env))
        subprocess.run([*HAFIZA, "daemon", "stop"], env=env, capture_output=True)
        time.sleep(5)  # the writes' background embedding finishes before the folder goes
    base = statistics.median(times["python -c pass"])
    return {"memories": size, "runs": runs, "python_pass_ms": round(base * 1000, 1),
            "median_ms": {k: round(statistics.median(v) * 1000, 1) for k, v in times.items()},
            "ratio": {k: round(statistics.median(v) / base, 1) for k, v in times.items() if k != "python -c pass"}}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--save", action="store_true")
    parser.add_argument("--commit", default="HEAD",
                        help="Measure the code of this commit, frozen (default HEAD; `worktree`: the files as they are).")
    args = parser.parse_args(argv)
    code = "worktree"
    if args.commit != "worktree":  # other work lands in the tree meanwhile: every process imports a frozen copy
        folder = Path(tempfile.mkdtemp(prefix="hafiza-cli-speed-"))
        code = snapshot(args.commit, folder / "code")
        use_code(folder / "code")
    report = {"date": dt.date.today().isoformat(), "commit": code, "load_at_start": os.getloadavg()[0],
              "targets": TARGETS,
              "sizes": [measure(size, args.runs) for size in args.sizes]}
    print(json.dumps(report, indent=1))
    if args.save:
        save("cli-speed", report["date"], report, markdown(report))


def markdown(r: dict) -> str:
    names = [k for k in r["sizes"][0]["ratio"]]
    lines = [f"# Command-line speed, {r['date']}", "",
             f"`python bench/cli_speed.py --save` at {r.get('commit', 'worktree')}: whole-process medians, "
             "interleaved with `python -c pass`; search with the warm process running. Load average at the "
             f"start: {r.get('load_at_start', '?')}.", "",
             "| memories | `python -c pass` | " + " | ".join(f"`{n}`" for n in names) + " |",
             "|---|---|" + "---|" * len(names)]
    for s in r["sizes"]:
        cells = [f"{s['median_ms'][n]:.0f} ms ({s['ratio'][n]}×, target ≤ {r['targets'][n]}×)" for n in names]
        lines.append(f"| {s['memories']:,} | {s['python_pass_ms']:.0f} ms | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
