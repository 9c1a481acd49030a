"""What does one team vault add to the prompt hook, cold and warm (issue 15: keep the prompt path fast)?

    .venv/bin/python bench/team_latency.py                         # 5,000 personal + 1,000 team, 30 rounds
    .venv/bin/python bench/team_latency.py --personal 1000 --team 500 --runs 10   # quick look

A personal vault of --personal memories and a team vault of --team (tests/gen.py, different seeds) are
built keyword-only (`hafiza import`, HAFIZA_EMBEDDER=none). Four hook variants run the command
`hafiza install` writes (hook_latency.hook_command) on a real Claude Code payload, interleaved round
by round so they share the machine's noise:

- cold, no team: HAFIZA_DAEMON=0, a config folder with no vault list;
- cold, one team: the same personal vault, a config folder listing the team vault;
- warm, no team / warm, one team: a keyword-only warm process (HAFIZA_EMBEDDER=none) for each.

Each variant has its own copy of the personal vault (and its own XDG_CONFIG_HOME), so one's session
state and warm process do not serve another. Prompts are screened to recall something from the
personal vault. Prints wall-clock medians (and p95) and the ratio team / no team, cold and warm.
The meaning channel is left out: its cost per vault is one vector search (~2 ms at 5,000), measured
with the model in bench/hook_latency.py.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import gen  # noqa: E402
from common import log, measure, median, percentile, run  # noqa: E402
from vaults import hook_command, payload, projects, screen, transcripts  # noqa: E402

VARIANTS = ("cold_none", "cold_team", "warm_none", "warm_team")


def hafiza(vault: Path, *args: str, env: dict) -> None:
    run([sys.executable, "-m", "hafiza.cli.main", "--vault", str(vault), *args], env)


def build(work: Path, name: str, n: int, seed: int, env: dict) -> Path:
    vault = work / name
    source = work / f"{name}.jsonl"
    with open(source, "w", encoding="utf-8") as fh:
        gen.write_jsonl(gen.memories(n, seed=seed), fh)
    hafiza(vault, "init", env=env)
    hafiza(vault, "import", str(source), env=env)
    hafiza(vault, "reindex", env=env)
    return vault


def variant_env(base: dict, work: Path, key: str, vault: Path, team: Path) -> dict:
    config = work / f"config-{key}"
    (config / "hafiza").mkdir(parents=True, exist_ok=True)
    if key.endswith("_team"):
        (config / "hafiza" / "vaults.json").write_text(json.dumps({"vaults": {"team": {"path": str(team)}}}))
    env = {**base, "HAFIZA_VAULT": str(vault), "XDG_CONFIG_HOME": str(config), "HAFIZA_EMBEDDER": "none"}
    if key.startswith("cold"):
        env["HAFIZA_DAEMON"] = "0"
    return env


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--personal", type=int, default=5000)
    ap.add_argument("--team", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--workdir")
    args = ap.parse_args(argv)
    work = Path(args.workdir or tempfile.mkdtemp(prefix="hafiza-team-latency-"))
    work.mkdir(parents=True, exist_ok=True)
    base = {k: v for k, v in os.environ.items() if not k.startswith("HAFIZA_")}
    base["HAFIZA_EMBEDDER"] = "none"
    log(f"building {args.personal} + {args.team} memories in {work}")
    personal = build(work, "personal", args.personal, 1, base)
    team = build(work, "team", args.team, 7, base)
    envs, vaults = {}, {}
    for key in VARIANTS:
        vaults[key] = work / f"personal-{key}"
        shutil.copytree(personal, vaults[key], symlinks=True)
        envs[key] = variant_env(base, work, key, vaults[key], team)
    cwds, scripts = projects(work), transcripts(work, count=4)
    prompts = screen(personal, gen.queries(400, seed=2), cwds, scripts, 40)
    python = sys.executable
    try:
        for key in VARIANTS:
            if key.startswith("warm"):
                hafiza(vaults[key], "daemon", "start", env=envs[key])
        time.sleep(2)
        wall = {k: [] for k in VARIANTS}
        injected = {k: 0 for k in VARIANTS}
        team_hits = {k: 0 for k in VARIANTS}
        for i in range(-3, args.runs):
            prompt, cwd, script = prompts[max(i, 0) % len(prompts)]
            order = VARIANTS[i % 4:] + VARIANTS[:i % 4]
            for key in order:
                ms, _, out, _ = measure(hook_command(python), envs[key], cwd, input=payload(prompt, cwd, script))
                if i >= 0:
                    wall[key].append(ms)
                    injected[key] += "<hafiza-recall>" in out
                    team_hits[key] += "vault: team" in out
        served = {k: json.loads(run([python, "-m", "hafiza.cli.main", "daemon", "status", "--json"], envs[k],
                                    check=False).stdout or "{}")
                  .get("served") for k in VARIANTS if k.startswith("warm")}
    finally:
        for key in VARIANTS:
            if key.startswith("warm"):
                run([python, "-m", "hafiza.cli.main", "daemon", "stop"], envs[key], check=False)
    p50 = {k: round(median(v), 1) for k, v in wall.items()}
    report = {
        "personal": args.personal, "team": args.team, "runs": args.runs,
        "p50_ms": p50, "p95_ms": {k: round(percentile(v, 95), 1) for k, v in wall.items()},
        "ratio_team_to_none": {"cold": round(p50["cold_team"] / p50["cold_none"], 2),
                               "warm": round(p50["warm_team"] / p50["warm_none"], 2)},
        "injected": injected, "with_a_team_hit": team_hits, "warm_served": served,
        "load_avg": os.getloadavg(),
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
