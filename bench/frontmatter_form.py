"""What the Obsidian-clean form (issue 32) costs a memory's read and write, against the form written before.

    .venv/bin/python bench/frontmatter_form.py

A memory with a claim, a verification and a supersede, and a plain one with two tags: each parsed from the
text the earlier form held (nested `verified` and claims, plain ids) and from the new one (flat, links, one
line a claim), and written; the best of 7 rounds of 20,000, in microseconds. And, in a fresh process, whether
reading one such memory imports PyYAML (~20 ms a process, vault/format/frontmatter.py).
"""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
import timeit

from hafiza.vault.format import model

OLD = """---
id: deploy-from-main
type: rule
title: Deploys only from main
scope: project:app
created: 2026-11-01
updated: 2026-12-01
tags: [deploy, ci]
supersedes: [deploy-any]
status: active
claims:
- probe: path
  args: {path: infra/deploy.sh}
verified: {status: failed, at: 2026-12-01, by: verify, detail: infra/deploy.sh is gone}
source: manual
---
Deploys run `infra/deploy.sh` from main after CI.
"""
PLAIN = model.Memory(id="staging-db", title="The staging db listens on 5433", body="The staging db listens on 5433.",
                     tags=["db", "staging"], created=dt.date(2026, 11, 1), updated=dt.date(2026, 12, 1))


def best(fn, number: int = 20_000) -> float:
    return round(min(timeit.repeat(fn, number=number, repeat=7)) / number * 1e6, 1)


def imports_yaml(text: str) -> bool:
    code = ("import sys; from hafiza.vault.format import model; model.parse(sys.stdin.read()); "
            "print('yaml' in sys.modules)")
    return subprocess.run([sys.executable, "-c", code], input=text, capture_output=True, text=True,
                          check=True).stdout.strip() == "True"


def main() -> None:
    claimed = model.parse(OLD)
    new = model.dump(claimed)
    plain = model.dump(PLAIN)
    rows = [("claimed, earlier form", best(lambda: model.parse(OLD)), "-", imports_yaml(OLD)),
            ("claimed, new form", best(lambda: model.parse(new)), best(lambda: model.dump(claimed)), imports_yaml(new)),
            ("plain, new form", best(lambda: model.parse(plain)), best(lambda: model.dump(PLAIN)), imports_yaml(plain))]
    print("| memory | parse µs | dump µs | reading imports PyYAML |\n| --- | --- | --- | --- |")
    for row in rows:
        print("| " + " | ".join(str(v) for v in row) + " |")


if __name__ == "__main__":
    main()
