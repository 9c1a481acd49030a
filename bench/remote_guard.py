"""What the checks on what a remote sends cost (issue 29, items 3 and 4).

    python bench/remote_guard.py [N]   # N generated memories (default 5000); writes bench/results/remote-guard-<date>.md

- the incoming check (vault/sync/incoming.py): `rev-list` + `diff-tree` over a history of N memories, as
  `init --from` runs it over a whole clone (a sync reads only the commits it has not seen);
- the quarantine scan (vault/guard/quarantine.py) per memory, on tests/gen.py memories, which every file the
  index reads pays once per change (a full rebuild: N of them).
Medians of 5 rounds; the machine is shared, so the figures are an order of size, not a target.
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from common import HERE, gen, median, repeat


def median_ms(work, rounds: int = 5) -> float:
    return median(repeat(work, rounds, warmup=0))


def main(n: int = 5000) -> str:
    from hafiza.vault.git.repo import GitStore
    from hafiza.vault.guard.quarantine import kinds
    from hafiza.vault.sync.incoming import refused

    items = gen.memories(n, seed=1)
    with tempfile.TemporaryDirectory(prefix="hafiza-remote-guard-") as tmp:
        root = Path(tmp) / "vault"
        env = {**os.environ, "HAFIZA_VAULT": str(root), "HAFIZA_EMBEDDER": "none", "HAFIZA_DAEMON": "0"}
        source = Path(tmp) / "m.jsonl"
        with open(source, "w", encoding="utf-8") as fh:
            gen.write_jsonl(items, fh)
        for args in (["init"], ["import", str(source)]):
            subprocess.run([sys.executable, "-m", "hafiza.cli.main", *args], env=env, check=True, capture_output=True)
        git = GitStore(root)
        tip = git.head()
        check = median_ms(lambda: refused(git, tip, []))
        texts = [path.read_text(encoding="utf-8") for path in sorted((root / "memories").rglob("*.md"))]
        kinds(texts[0])  # the guard's import, paid once per process
        scan = median_ms(lambda: [kinds(t) for t in texts]) / len(texts)
    lines = [f"# What the remote guard costs ({dt.date.today()})", "",
             f"Method: `python bench/remote_guard.py {n}`: {n} tests/gen.py memories (seed 1), `hafiza init` + "
             "`hafiza import`; medians of 5 rounds in one process, on the shared 2-core machine.", "",
             "| what | cost |", "|---|---|",
             f"| incoming check over the whole history ({n} files; `init --from`) | {check:.0f} ms |",
             f"| quarantine scan of one memory (mean {sum(map(len, texts)) // len(texts)} chars) | {scan:.3f} ms |",
             f"| quarantine scans of a full rebuild ({n} memories) | {scan * n / 1000:.2f} s |", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    report = main(int(sys.argv[1]) if len(sys.argv) > 1 else 5000)
    (HERE / "results" / f"remote-guard-{dt.date.today()}.md").write_text(report, encoding="utf-8")
    print(report)
