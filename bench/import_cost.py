"""What does importing each dependency cost a fresh process? `python -c "import <module>"` for each, interleaved
round by round with `python -c pass` (issue 31: a declared dependency is used, and what it costs is known).

    .venv/bin/python bench/import_cost.py --runs 31 --save

Run from an interpreter laid out as an installed hafiza's (common.installed_python: the editable install's
finder, which a user's install does not have, is not in the base). Reported: the median of each, and what
the import adds to the base.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import BASE, Samples, base_case, installed_python, interleaved, publish, timed  # noqa: E402

MODULES = ["yaml", "frontmatter", "whoosh.index", "numpy", "mcp", "concurrent.futures", "logging"]


def measure(python: str, modules: list[str], runs: int) -> Samples:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    cases = {BASE: base_case(python, env)} | {
        f"import {module}": (lambda m: lambda _n: timed([python, "-c", f"import {m}"], env))(module)
        for module in modules}
    samples = Samples()
    for n in range(runs + 1):  # round 0 compiles and warms the page cache
        interleaved(cases, samples, n, keep=n > 0)
    return samples


def markdown(report: dict) -> str:
    cases = report["cases"]
    base = cases[BASE]["median_ms"]
    out = [f"# Import costs, {report['date']}", "",
           f"`python bench/import_cost.py --runs {report['runs']} --save`: medians of whole processes, each "
           "import interleaved round by round with `python -c pass` in an installed-like interpreter. Load average "
           f"at the start: {report['load_at_start']:.1f}.", "",
           "| | median | ratio to the base | added to the base |", "|---|---|---|---|"]
    for case, row in cases.items():
        added = "" if case == BASE else f"{row['median_ms'] - base:+.1f} ms"
        out.append(f"| `{case}` | {row['median_ms']:.1f} ms | {row['ratio']:.2f}× | {added} |")
    return "\n".join(out) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--modules", nargs="+", default=MODULES)
    parser.add_argument("--save", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="hafiza-imports-") as tmp:
        python = installed_python(Path(tmp) / "python")
        report = {"date": dt.date.today().isoformat(), "runs": args.runs, "load_at_start": os.getloadavg()[0]}
        report["cases"] = measure(python, args.modules, args.runs).summary()
    publish("import-cost", report, markdown(report), args.save)


if __name__ == "__main__":
    main()
