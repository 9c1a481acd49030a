"""What the vault benchmarks share: environments without the user's settings, hafiza laid out as installed,
vaults built as a user builds them, prompts that recall something, Claude Code payloads with real-sized
transcripts, and warm processes started, watched and stopped."""

from __future__ import annotations

import json
import os
import random
import resource
import shutil
import sys
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import gen  # noqa: E402
from common import PACKAGES, log, run, timed  # noqa: E402

HAFIZA = [sys.executable, "-m", "hafiza.cli.main"]


class Env:
    """Environments for subprocesses: no inherited HAFIZA_* settings, a bytecode cache in the work folder."""

    def __init__(self, work: Path, bytecode: str):
        base = {k: v for k, v in os.environ.items() if not k.startswith("HAFIZA_")}
        if bytecode == "cache":
            base.pop("PYTHONDONTWRITEBYTECODE", None)
            base["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
        self.base = base

    def __call__(self, **extra: str | None) -> dict:
        env = dict(self.base)
        for k, v in extra.items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = v
        return env


class Install:
    """hafiza laid out as `pip install hafiza` lays it out, in a venv of its own.

    The dev venv has an editable install, whose finder is imported by every
    interpreter start that processes site-packages (~10 ms). Users get a
    regular install, so the hooks are measured from one: the code under test
    copied into the venv's site-packages as hafiza/<layer> (the wheel's
    layout), its dependencies reached through a .pth line holding the dev
    venv's site-packages path (a plain path: nothing imported at start-up).
    """

    def __init__(self, work: Path, code: Path):
        import sysconfig

        venv = work / "venv-installed"
        if not (venv / "bin" / "python").exists():
            run([sys.executable, "-m", "venv", "--without-pip", str(venv)], os.environ.copy())
        site = Path(run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                        os.environ.copy()).stdout.strip())
        shutil.rmtree(site / "hafiza", ignore_errors=True)
        for name in PACKAGES:
            shutil.copytree(code / name, site / "hafiza" / name, ignore=shutil.ignore_patterns("__pycache__"))
        (site / "hafiza-bench-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
        self.python = str(venv / "bin" / "python")
        self.hook = [self.python, "-S", str(site / "hafiza" / "hooks" / "hafiza_hook.py"), "claude-code",
                     "UserPromptSubmit"]


def hook_command(python: str) -> list[str]:
    """The hook command `hafiza install` writes, for `python` and the code it imports."""
    from hafiza.hooks.clients import hook_argv

    return hook_argv(python, "claude-code", "UserPromptSubmit")


def daemons(vault: Path) -> list[int]:
    """PIDs of warm processes serving `vault` (by command line)."""
    key = str(vault).encode()
    out = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/cmdline", "rb") as fh:
                cmd = fh.read()
        except OSError:
            continue
        args = cmd.split(b"\0")
        if b"hafiza.hooks.daemon" in args and key in args:
            out.append(int(entry.name))
    return out


def wait_quiet(max_load: float | None, limit: float) -> float:
    """Wait (up to `limit` s) until the 1-minute load average drops below `max_load`; the load then."""
    t0 = time.time()
    while max_load is not None and os.getloadavg()[0] >= max_load and time.time() - t0 < limit:
        time.sleep(5)
    return round(os.getloadavg()[0], 2)


def clean_state(vault: Path) -> None:
    side = vault / ".hafiza"
    shutil.rmtree(side / "sessions", ignore_errors=True)
    shutil.rmtree(side / "run", ignore_errors=True)
    for name in ("usage.log", "usage.folding", "hooks.log", "spool.jsonl"):
        (side / name).unlink(missing_ok=True)


def projects(work: Path) -> list[Path]:
    """Project folders (each a git repository by its .git) for the payload's cwd."""
    out = []
    for name in gen.PROJECTS:
        folder = work / "projects" / name
        (folder / ".git").mkdir(parents=True, exist_ok=True)
        (folder / "src").mkdir(exist_ok=True)
        out.append(folder / "src")
    return out


def transcripts(work: Path, count: int = 8, kb: int = 250, seed: int = 5) -> list[Path]:
    """Claude Code-like transcripts: user turns, assistant text, tool calls and their (bulky) results."""
    rng = random.Random(seed)
    texts = [m["text"] for m in gen.memories(300, seed=seed)]
    asks = gen.queries(400, seed=seed)
    out = []
    folder = work / "transcripts"
    folder.mkdir(exist_ok=True)
    for t in range(count):
        path = folder / f"session-{t}.jsonl"
        size, lines = 0, []
        while size < kb * 1024:
            lines.append({"type": "user", "message": {"role": "user", "content": rng.choice(asks)},
                          "uuid": str(uuid.UUID(int=rng.getrandbits(128))), "timestamp": "2026-11-30T10:00:00Z"})
            lines.append({"type": "assistant", "message": {"role": "assistant", "content": [
                {"type": "text", "text": " ".join(rng.sample(texts, 2))},
                {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "pytest -x -q"}}]}})
            lines.append({"type": "user", "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "\n".join(rng.sample(texts, 6))}]}})
            size = sum(len(json.dumps(line)) for line in lines)
        path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
        out.append(path)
    return out


def payload(prompt: str, cwd: Path, transcript: Path) -> str:
    return json.dumps({"session_id": f"bench-{uuid.uuid4()}", "transcript_path": str(transcript), "cwd": str(cwd),
                       "permission_mode": "default", "hook_event_name": "UserPromptSubmit", "prompt": prompt},
                      ensure_ascii=False)


def screen(vault: Path, pool: list[str], cwds: list[Path], scripts: list[Path], want: int) -> list[tuple]:
    """(prompt, cwd, transcript) triples that pass the gate and recall something on the cold path."""
    from hafiza.hooks.entry import recent_turns
    from hafiza.hooks.service import cold
    from hafiza.indexer.config import Settings
    from hafiza.indexer.gate import silence_reason
    from hafiza.vault.format.paths import project_of

    picked = []
    for i, prompt in enumerate(pool):
        cwd, script = cwds[i % len(cwds)], scripts[i % len(scripts)]
        if silence_reason(prompt):
            continue
        request = {"op": "recall", "query": prompt, "project": project_of(cwd), "exclude": [],
                   "context": recent_turns(str(script), prompt)}
        if cold(vault, request, Settings())["hits"]:
            picked.append((prompt, cwd, script))
        if len(picked) >= want:
            break
    return picked


def idle_cpu(pid: int, seconds: float = 12.0) -> float:
    """CPU share (%) a warm process uses while nobody asks it anything."""
    def ticks() -> int:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime + stime

    t0, c0 = time.monotonic(), ticks()
    time.sleep(seconds)
    return round((ticks() - c0) / os.sysconf("SC_CLK_TCK") / (time.monotonic() - t0) * 100, 1)


def keyword_vault(work: Path, size: int, env: dict) -> tuple[Path, dict]:
    """The vault of `size` memories in `work` (built once: `hafiza init` + one `hafiza import`)."""
    vault = work / f"vault-{size}"
    done = work / f"vault-{size}.json"
    if done.exists():
        return vault, json.loads(done.read_text())
    source = work / f"memories-{size}.jsonl"
    source.write_text("".join(json.dumps(m, ensure_ascii=False) + "\n" for m in gen.memories(size)))
    env = {**env, "HAFIZA_VAULT": str(vault)}
    run([*HAFIZA, "init"], env)
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    log(f"importing {size:,} memories ...")
    took = timed([*HAFIZA, "import", str(source)], env)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    commits = int(run(["git", "-C", str(vault), "rev-list", "--count", "HEAD"], env).stdout)
    info = {"import_s": round(took / 1000, 1), "import_peak_mb": round(max(peak, before) / 1024),
            "commits_after_import": commits}
    done.write_text(json.dumps(info))
    return vault, info


def warm_pid(vault: Path, env: dict, timeout: float = 600) -> int:
    run([*HAFIZA, "daemon", "start"], env)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = json.loads(run([*HAFIZA, "daemon", "status", "--json"], env).stdout)
        if status.get("pid") and status.get("running", True):
            return int(status["pid"])
        time.sleep(0.5)
    raise SystemExit("the warm process did not come up")


def settled(env: dict, timeout: float = 300) -> float | None:
    """Wait until the warm process has made its first full comparison of the files; its cost."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = json.loads(run([*HAFIZA, "daemon", "status", "--json"], env).stdout)
        if "full_sync_s" in status:
            return status["full_sync_s"]
        time.sleep(3)
    return None


def stop_all(vault: Path, env: dict) -> None:
    deadline = time.monotonic() + 60
    while daemons(vault) and time.monotonic() < deadline:
        run([*HAFIZA, "daemon", "stop"], env)
        time.sleep(1)


def peak_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0
