"""What does hafiza add to Claude Code's start, from `claude -p` to its first model request?

    .venv/bin/python bench/claude_start.py                 # 7 rounds, print the table
    .venv/bin/python bench/claude_start.py --save          # and write bench/results/claude-start-YYYY-MM-DD.{json,md}
    .venv/bin/python bench/claude_start.py --runs 5 --keep # fewer rounds; keep the work folder

The real client, pinned in tests/e2e/clients.py (installed from npm into .cache/e2e on first use, as
`make e2e` does), runs `claude -p "how do we deploy to production?"` against tests/model_server.py
(ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY=dummy), each variant in its own temporary HOME. The time is
from just before the process starts to the moment the server receives the first /v1/messages
request: what the user waits before the model starts thinking. Variants, interleaved round by round
so all of them see the same machine noise, after one unrecorded warm-up round (a fresh HOME's first
run migrates its state):

- claude: no hafiza;
- claude + hafiza: after `hafiza install claude-code` (hooks and MCP server), no warm process
  (HAFIZA_DAEMON=0: SessionStart and UserPromptSubmit recall in-process, keyword only);
- claude + hafiza, warm: the same with a warm process running (`hafiza daemon start`), as it is
  after a user's first prompt of the day;
- claude + hafiza, MCP awaited: like the second, with MCP_CONNECTION_NONBLOCKING=0, so the client
  waits for `hafiza mcp` however long it takes. By default Claude Code 2.1.197 waits at most 2 s for
  pending MCP servers before a `claude -p` run's first request; a server that takes longer joins
  later turns, and the first request goes without its tools.

Also `python -c pass` each round. The vaults hold three memories (HAFIZA_EMBEDDER=hash), so the
prompt hook injects a block. Runs the working tree's code (the editable install): the report
records HEAD and whether the tree was clean. Every warm process started here is stopped at the end.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE.parent / "tests" / "e2e"))
from common import cpu_model, median, python_pass, save  # noqa: E402
from model_server import ModelServer  # noqa: E402

PROMPT = "how do we deploy to production?"
MEMORIES = (("rule", "Always answer in Turkish when the user writes in Turkish."),
            ("knowledge", "Deploys go through infra/deploy.sh with the blue-green flag; never push to production by hand."),
            ("fact", "The staging database is reset every Monday at 06:00 UTC."))
FOREIGN = ("ANTHROPIC_", "CLAUDE", "HAFIZA_", "XDG_", "MCP_", "GIT_")  # nothing of this shell reaches the client
RUN_SECONDS = 120


class TimedServer(ModelServer):
    """The model server, noting when each request arrived (perf_counter)."""

    def __init__(self):
        super().__init__(lambda prompt: "ok")
        self.arrived: list[float] = []

    def record(self, request) -> None:
        if request.path.endswith("/v1/messages"):
            self.arrived.append(time.perf_counter())
        super().record(request)


class Variant:
    def __init__(self, name: str, root: Path, hafiza: bool, warm: bool = False, await_mcp: bool = False):
        self.name, self.hafiza, self.warm = name, hafiza, warm
        self.home, self.vault, self.project = root / "home", root / "vault", root / "project"
        self.extra = {"MCP_CONNECTION_NONBLOCKING": "0"} if await_mcp else {}
        if not warm:
            self.extra["HAFIZA_DAEMON"] = "0"
        self.first: list[float] = []
        self.total: list[float] = []

    def env(self, **extra) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith(FOREIGN)}
        env.update({"HOME": str(self.home), "XDG_CONFIG_HOME": str(self.home / ".config"),
                    "XDG_DATA_HOME": str(self.home / ".local" / "share"),
                    "XDG_CACHE_HOME": str(self.home / ".cache"), "HAFIZA_VAULT": str(self.vault),
                    "HAFIZA_EMBEDDER": "hash", "GIT_AUTHOR_NAME": "Bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
                    "GIT_COMMITTER_NAME": "Bench", "GIT_COMMITTER_EMAIL": "bench@example.com",
                    "GIT_CONFIG_NOSYSTEM": "1", "DISABLE_AUTOUPDATER": "1",
                    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", **self.extra, **extra})
        return env

    def hafiza_cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        proc = subprocess.run([sys.executable, "-m", "hafiza.cli.main", *args], capture_output=True, text=True,
                              env=self.env(), cwd=self.project, timeout=RUN_SECONDS)
        if check and proc.returncode != 0:
            raise SystemExit(f"hafiza {' '.join(args)} failed: {proc.stdout}{proc.stderr}")
        return proc

    def set_up(self) -> None:
        self.home.mkdir(parents=True)
        self.project.mkdir()
        if not self.hafiza:
            return
        self.hafiza_cli("init")
        for kind, text in MEMORIES:
            self.hafiza_cli("remember", "--type", kind, text)
        self.hafiza_cli("install", "claude-code")
        if self.warm:
            self.hafiza_cli("daemon", "start", check=False)
            deadline = time.time() + 60
            while not json.loads(self.hafiza_cli("daemon", "status", "--json").stdout).get("pid"):
                if time.time() > deadline:
                    raise SystemExit(f"the warm process for {self.vault} did not start in 60 s")
                time.sleep(0.2)

    def tear_down(self) -> None:
        if self.warm:
            self.hafiza_cli("daemon", "stop", check=False)

    def run(self, claude: Path, record: bool = True) -> None:
        with TimedServer() as server:
            env = self.env(ANTHROPIC_BASE_URL=server.url, ANTHROPIC_API_KEY="dummy")
            started = time.perf_counter()
            proc = subprocess.run([str(claude), "-p", PROMPT, "--session-id", str(uuid.uuid4())],
                                  capture_output=True, text=True, env=env, cwd=self.project,
                                  stdin=subprocess.DEVNULL, timeout=RUN_SECONDS)
            ended = time.perf_counter()
            arrived = list(server.arrived)
            bodies = [r.body for r in server.requests if r.path.endswith("/v1/messages")]
        if proc.returncode != 0 or not arrived:
            raise SystemExit(f"{self.name}: claude exited {proc.returncode} after {len(arrived)} request(s):\n"
                             f"{proc.stdout}\n{proc.stderr[-2000:]}")
        if self.hafiza and "<hafiza-recall>" not in json.dumps(bodies[0]):
            raise SystemExit(f"{self.name}: the first request carries no recalled block; hafiza is not set up")
        if record:
            self.first.append(arrived[0] - started)
            self.total.append(ended - started)


def claude_binary() -> tuple[Path, str]:
    """The pinned client (installed on first use, as the end-to-end tests do) and its version."""
    os.environ["HAFIZA_E2E"] = "1"
    from clients import PINNED, binary

    try:
        exe = binary("claude-code")
    except BaseException as exc:  # pytest.skip's exception: npm or the registry is not there
        raise SystemExit(f"cannot install Claude Code: {exc}") from None
    return exe, PINNED["claude-code"][1]


def stats(samples: list[float]) -> dict:
    return {"median_s": round(median(samples), 3), "min_s": round(min(samples), 3),
            "max_s": round(max(samples), 3), "samples_s": [round(s, 3) for s in samples]}


def code_state() -> dict:
    git = ["git", "-C", str(HERE.parent)]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                           text=True).stdout.strip()
    return {"head": head, "clean": not dirty}


def markdown(report: dict) -> str:
    base = report["variants"]["claude"]["first_request"]["median_s"]
    lines = [f"# Claude Code start with and without hafiza ({report['date']})", "",
             f"Claude Code {report['client_version']}, `claude -p` against a local fake model server; time from "
             f"process start to the first /v1/messages request, median of {report['runs']} interleaved rounds "
             f"(after one warm-up round). Machine: {report['machine']['cpu']}, Python {report['machine']['python']}. "
             f"Code: {report['code']['head']}{'' if report['code']['clean'] else ' with uncommitted changes'}.", "",
             "| variant | first request, median | min | max | vs claude | whole run, median |",
             "|---|---:|---:|---:|---:|---:|"]
    for name, v in report["variants"].items():
        first = v["first_request"]
        lines.append(f"| {name} | {first['median_s']:.2f} s | {first['min_s']:.2f} s | {first['max_s']:.2f} s | "
                     f"{first['median_s'] / base:.2f}x | {v['whole_run']['median_s']:.2f} s |")
    lines += [f"| `python -c pass` | {report['python_pass']['median_s'] * 1000:.0f} ms | | | | |", "",
              "- **claude + hafiza**: hooks and MCP server installed, no warm process (HAFIZA_DAEMON=0): the "
              "SessionStart and UserPromptSubmit hooks each recall in-process.",
              "- **warm**: the same with `hafiza daemon start` beforehand; each hook hands its payload to the "
              "warm process.",
              "- **MCP awaited**: MCP_CONNECTION_NONBLOCKING=0, so the client waits for `hafiza mcp` however "
              "long it takes. By default `claude -p` waits at most 2 s for MCP servers before its first request; "
              "a server slower than that misses the first request's tools (WaitForMcpServers is offered instead).",
              "", f"Ratios: {', '.join(f'{k} {v:.2f}x' for k, v in report['ratios'].items())}.", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--save", action="store_true")
    parser.add_argument("--today", default=dt.date.today().isoformat())
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    args = parser.parse_args()
    claude, version = claude_binary()
    work = Path(tempfile.mkdtemp(prefix="claude-start-"))
    variants = [Variant("claude", work / "plain", hafiza=False),
                Variant("claude + hafiza", work / "cold", hafiza=True),
                Variant("claude + hafiza, warm", work / "warm", hafiza=True, warm=True),
                Variant("claude + hafiza, MCP awaited", work / "await", hafiza=True, await_mcp=True)]
    passes: list[float] = []
    try:
        for variant in variants:
            variant.set_up()
        for variant in variants:
            variant.run(claude, record=False)
        for i in range(args.runs):
            passes.append(python_pass())
            for variant in variants:
                variant.run(claude)
            print(f"round {i + 1}/{args.runs}: " + ", ".join(f"{v.name} {v.first[-1]:.2f} s" for v in variants),
                  flush=True)
    finally:
        for variant in variants:
            variant.tear_down()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    report = {"date": args.today, "client": "claude-code", "client_version": version, "runs": args.runs,
              "prompt": PROMPT, "code": code_state(),
              "machine": {"cpu": cpu_model(), "cores": os.cpu_count(), "python": platform.python_version()},
              "python_pass": stats(passes),
              "variants": {v.name: {"first_request": stats(v.first), "whole_run": stats(v.total)} for v in variants}}
    base = median(variants[0].first)
    report["ratios"] = {v.name: round(median(v.first) / base, 3) for v in variants[1:]}
    text = markdown(report)
    print("\n" + text)
    if args.save:
        save("claude-start", args.today, report, text)


if __name__ == "__main__":
    main()
