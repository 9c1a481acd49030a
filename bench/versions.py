"""What does a change of the code cost the everyday operations? `remember`, `forget`, `search` and the hook
at each vault size, for the code of several commits side by side, interleaved round by round with
`python -c pass` (issue 31: the git object reader earning its place; the house in rooms, before and after).

    .venv/bin/python bench/versions.py --sizes 5000 20000 100000 --runs 21 --workdir /tmp/hafiza-scale \\
        --code before=main after=HEAD --save

Each `--code label=rev` is frozen with `git archive` (bench/common.snapshot) and run from an interpreter
laid out as an installed hafiza's (common.installed_python: no editable-install finder in the base or the
commands). The vaults are bench/scale.py's (keyword only, built once per size in --workdir), each version
writing and reading its own copy (versions of different index schemas would rebuild each other's). In each round,
every version's `remember` and `forget` run, in an order rotated per round, beside the base; then an
untimed `hafiza list` brings the index level, and every version's `search --mode keyword` and the Claude
Code prompt hook with no warm process (HAFIZA_DAEMON=0; the hook file of that version) run beside the base
again. The first round warms the page cache and is not recorded. Reported: medians, and ratios to the base.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import BASE, Samples, base_case, gen, installed_python, interleaved, publish, run, snapshot, timed  # noqa: E402
from vaults import Env, keyword_vault, payload, projects, screen, transcripts  # noqa: E402

WRITES, READS = ("remember", "forget"), ("search", "hook")


def measure(work: Path, size: int, runs: int, python: str, code: dict[str, Path], ops: list[str], envs: Env) -> dict:
    vault, built = keyword_vault(work, size, envs(HAFIZA_EMBEDDER="none"))
    # Each version writes and reads its own copy of the vault: versions whose index schemas differ (5 at 727bb47,
    # 8 on 2026-12-07's main) would each rebuild the other's index, and the rebuild would be timed.
    copies = {label: own_copy(vault, label) for label in code}
    env = {label: envs(HAFIZA_EMBEDDER="none", HAFIZA_VAULT=str(copies[label]), HAFIZA_DAEMON="0",
                       PYTHONPATH=str(folder)) for label, folder in code.items()}
    first = env[next(iter(code))]
    hafiza = [python, "-m", "hafiza.cli.main"]
    for each in env.values():
        run([*hafiza, "daemon", "stop"], each)
        run([*hafiza, "list"], each)  # the index level with the files before timing, in that version's schema
    rounds = runs + 1  # round 0 is not recorded
    forgettable = [d["id"] for d in json.loads(run([*hafiza, "list", "--json"], first).stdout)][: rounds * len(code)]
    prompts = screen(vault, gen.queries(400, seed=size % 97), projects(work), transcripts(work), rounds) if any(
        op in READS for op in ops) else []

    def remember(label):
        return lambda n: timed([*hafiza, "remember", f"versions note {label} {n} {os.getpid()} about a {size} vault"],
                               env[label])

    def forget(label):
        return lambda n: timed([*hafiza, "forget", forgettable.pop()], env[label])

    def search(label):
        return lambda n: timed([*hafiza, "search", "--mode", "keyword", prompts[n % len(prompts)][0]], env[label])

    def hook(label):
        def timed_hook(n):
            prompt, cwd, script = prompts[n % len(prompts)]
            argv = [python, "-S", code[label] / "hooks" / "hafiza_hook.py", "claude-code", "UserPromptSubmit"]
            return timed(argv, env[label], cwd, payload(prompt, cwd, script))
        return timed_hook

    cases = {"remember": remember, "forget": forget, "search": search, "hook": hook}
    writes = {BASE: base_case(python, first)} | {f"{op} [{label}]": cases[op](label)
                                                  for op in ops if op in WRITES for label in code}
    reads = {BASE: base_case(python, first)} | {f"{op} [{label}]": cases[op](label)
                                                 for op in ops if op in READS for label in code}
    samples = Samples()
    for n in range(rounds):
        if len(writes) > 1:
            interleaved(writes, samples, n, keep=n > 0)
        if len(reads) > 1:
            for each in env.values():
                run([*hafiza, "list"], each)  # the writes indexed: the reads find the index level
            interleaved(reads, samples, n, keep=n > 0)
    return {"memories": size, "runs": runs, "cases": samples.summary(), **built}


def own_copy(vault: Path, label: str) -> Path:
    """A copy of `vault` for the version `label` (made once, kept in the workdir beside it)."""
    import shutil
    import time

    copy = vault.with_name(f"{vault.name}-{label}")
    if not copy.exists():
        # git's automatic gc, detached by the import's last commit, packs loose objects while the tree is
        # copied (a 5,000-memory copy failed on objects gone mid-copy): wait until it lets go of its lock.
        # (A foreground `git gc` does not wait for it: it refuses while gc.pid is held.)
        # It may also start a moment after the import returns, so a copy that meets objects gone is made again.
        for attempt in range(5):
            deadline = time.monotonic() + 600
            while (vault / ".git" / "gc.pid").exists() and time.monotonic() < deadline:
                time.sleep(0.2)
            try:
                shutil.copytree(vault, copy, symlinks=True)
                break
            except shutil.Error:
                shutil.rmtree(copy, ignore_errors=True)
                time.sleep(2)
        else:
            raise RuntimeError(f"could not copy {vault}: its objects kept moving (git gc)")
    return copy


def markdown(report: dict) -> str:
    labels, ops = list(report["code"]), report["ops"]
    out = [f"# Versions side by side, {report['date']}", "",
           f"`python bench/versions.py --sizes {' '.join(str(r['memories']) for r in report['results'])} "
           f"--runs {report['runs']} --code {' '.join(f'{k}={v}' for k, v in report['code'].items())} --save`: "
           "keyword only, medians of whole processes, every version's commands interleaved round by round with "
           f"`python -c pass` (the ratio's base) in one run. Load average at the start: {report['load_at_start']:.1f}.",
           "", "| memories | `python -c pass` | " + " | ".join(f"`{op}` {label}" for op in ops for label in labels) + " |",
           "|---|---|" + "---|" * (len(ops) * len(labels))]
    for r in report["results"]:
        cases = r["cases"]
        cells = [f"{cases[f'{op} [{label}]']['median_ms']:,.0f} ms ({cases[f'{op} [{label}]']['ratio']:.1f}×)"
                 for op in ops for label in labels]
        out.append(f"| {r['memories']:,} | {cases[BASE]['median_ms']:.0f} ms | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[5000, 20000])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/hafiza-scale"))
    parser.add_argument("--code", nargs="+", default=["before=main", "after=HEAD"], metavar="LABEL=REV",
                        help="Versions to compare, each a label and a commit (default: before=main after=HEAD).")
    parser.add_argument("--ops", nargs="+", default=[*WRITES, *READS], choices=[*WRITES, *READS])
    parser.add_argument("--name", default="versions", help="Results file name: bench/results/<name>-<date>.md")
    parser.add_argument("--save", action="store_true")
    args = parser.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # modules compiled once, as installed
    revs = dict(item.split("=", 1) for item in args.code)
    code = {label: args.workdir / f"code-{label}" for label in revs}
    shas = {label: snapshot(rev, code[label]) for label, rev in revs.items()}
    python = installed_python(args.workdir / "python") if not (args.workdir / "python").exists() else str(
        args.workdir / "python" / "bin" / "python")
    envs = Env(args.workdir, "cache")
    report = {"date": dt.date.today().isoformat(), "runs": args.runs, "load_at_start": os.getloadavg()[0],
              "code": {label: f"{revs[label]} ({shas[label]})" for label in revs}, "ops": args.ops, "results": []}
    for size in args.sizes:
        print(f"{size:,} memories ...", file=sys.stderr, flush=True)
        report["results"].append(measure(args.workdir, size, args.runs, python, code, args.ops, envs))
        print(json.dumps(report["results"][-1]), file=sys.stderr, flush=True)
    publish(args.name, report, markdown(report), args.save)


if __name__ == "__main__":
    main()
