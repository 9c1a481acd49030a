"""hafiza installed as a user installs it, from a wheel built out of a copy of this checkout, and used from
outside it: the demo runs, `hafiza install claude-code` writes hooks that name the installed environment,
and once the build tree is deleted the hook Claude Code would run still recalls. The sdist installs too,
and `pipx install` and `uv tool install` of the wheel give a working `hafiza`.

Run by `make e2e` (HAFIZA_E2E=1): building and installing reach PyPI for setuptools and hafiza's
dependencies (pip's cache makes the second run quick).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BASE_PYTHON = getattr(sys, "_base_executable", sys.executable)  # a fresh venv's, not this checkout's venv

pytestmark = pytest.mark.skipif(os.environ.get("HAFIZA_E2E") != "1",
                                reason="installs from a built wheel run with `make e2e` (HAFIZA_E2E=1)")


def run(*argv, cwd: Path, env: dict | None = None, input: str | None = None, timeout: int = 900):
    done = subprocess.run([str(a) for a in argv], cwd=cwd, env=env, input=input, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, f"{' '.join(map(str, argv))} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


class Installed:
    """A wheel and an sdist built from a copy of the checkout, the wheel installed in a fresh venv."""

    def __init__(self, top: Path):
        self.top = top
        self.source = top / "src"       # the build tree: a copy of the checkout's files, deleted after the build
        self.dist = top / "dist"
        self.env = top / "env"
        self.home = top / "home"
        self.elsewhere = top / "elsewhere"   # where the commands run: neither the checkout nor the build tree
        for folder in (self.home, self.elsewhere):
            folder.mkdir(parents=True)

    def copy_checkout(self) -> None:
        """The checkout's files as git knows them (committed or not; ignored ones such as .venv left out)."""
        listed = run("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=ROOT).stdout
        for name in filter(None, listed.split("\0")):
            if (ROOT / name).is_file():
                (self.source / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / name, self.source / name)

    def environ(self, **extra) -> dict:
        keep = {k: v for k, v in os.environ.items() if not k.startswith(("HAFIZA_", "VIRTUAL_ENV", "PYTHON"))}
        return {**keep, "HOME": str(self.home), "XDG_DATA_HOME": str(self.home / ".local" / "share"),
                "XDG_CONFIG_HOME": str(self.home / ".config"), "PATH": f"{self.env / 'bin'}{os.pathsep}/usr/bin:/bin",
                "HAFIZA_DAEMON": "0", **extra}

    def hafiza(self, *args, **kwargs):
        return run(self.env / "bin" / "hafiza", *args, cwd=self.elsewhere, env=self.environ(), **kwargs)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    world = Installed(tmp_path_factory.mktemp("installed"))
    world.copy_checkout()
    run(sys.executable, "-m", "build", "--outdir", world.dist, world.source, cwd=world.top)
    run(BASE_PYTHON, "-m", "venv", world.env, cwd=world.top)
    [wheel] = world.dist.glob("hafiza-*.whl")
    run(world.env / "bin" / "pip", "install", "--quiet", wheel, cwd=world.elsewhere)
    shutil.rmtree(world.source)
    yield world
    if (world.home / ".local" / "share" / "hafiza" / "vault").exists():  # the hook may have started its warm process
        world.hafiza("daemon", "stop")  # which would outlive the run


def test_the_wheel_holds_the_package_data_and_the_license(installed):
    import zipfile

    [wheel] = installed.dist.glob("hafiza-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for wanted in ("hafiza/hooks/hafiza_hook.py", "hafiza/hooks/plugin/.mcp.json", "hafiza/hooks/opencode/hafiza.ts",
                   "hafiza/hooks/goose/hafiza-goose", "hafiza/cli/demo/memories.jsonl",
                   "hafiza/indexer/data/background.txt"):
        assert wanted in names
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names)
    assert not any(name.startswith(("tests/", "bench/", "docs/")) for name in names)


def test_the_demo_runs_from_the_installed_wheel(installed):
    out = installed.hafiza("demo", timeout=900).stdout
    assert "Supersession" in out and "Silence" in out


def test_installed_hooks_name_the_environment_and_recall_after_the_checkout_is_gone(installed):
    """init, remember, install claude-code from the wheel; the hook command in settings.json runs the installed
    interpreter and script (never the checkout's, and the build tree is deleted), and it recalls."""
    assert not installed.source.exists()
    installed.hafiza("init")
    installed.hafiza("remember", "Production deploys only from main, after CI is green.", "--type", "rule",
                     "--alias", "canlıya çıkmak")
    out = installed.hafiza("install", "claude-code").stdout
    assert "source checkout" not in out
    settings = json.loads((installed.home / ".claude" / "settings.json").read_text())
    command = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    assert command.startswith(str(installed.env / "bin" / "python"))
    assert f"{installed.env}/lib/" in command and "site-packages/hafiza/hooks/hafiza_hook.py" in command
    assert str(ROOT) not in command and str(installed.source) not in command
    server = json.loads((installed.home / ".claude.json").read_text())["mcpServers"]["hafiza"]
    assert server["command"] == str(installed.env / "bin" / "hafiza")

    payload = {"session_id": "s1", "hook_event_name": "UserPromptSubmit", "cwd": str(installed.elsewhere),
               "prompt": "yarın canlıya çıkmak istiyorum, hangi branch?", "transcript_path": ""}
    env = {k: v for k, v in installed.environ().items() if k != "HAFIZA_DAEMON"}  # as Claude Code runs it
    env["PATH"] = "/usr/bin:/bin"  # the agent's PATH need not hold hafiza
    done = run("bash", "-c", command, cwd=installed.elsewhere, env=env, input=json.dumps(payload), timeout=120)
    said = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "production-deploys-only-from-main-after-ci-is-green" in said
    doctor = installed.hafiza("doctor").stdout
    assert "ok    clients: claude-code: hooks and MCP point at this vault" in doctor


def test_the_sdist_builds_and_installs(installed, tmp_path):
    [sdist] = installed.dist.glob("hafiza-*.tar.gz")
    env = tmp_path / "env"
    run(BASE_PYTHON, "-m", "venv", env, cwd=tmp_path)
    run(env / "bin" / "pip", "install", "--quiet", "--no-deps", sdist, cwd=tmp_path)
    assert run(env / "bin" / "hafiza", "--version", cwd=tmp_path).stdout.startswith("hafiza, version ")


@pytest.mark.parametrize("tool", ["pipx", "uv"])
def test_a_tool_install_of_the_wheel_works(installed, tool, tmp_path):
    """`pipx install` and `uv tool install` of the wheel: `hafiza` on the tool's bin folder, and the hooks it
    would write name the tool's own environment."""
    found = shutil.which(tool, path=str(Path(sys.executable).parent)) or shutil.which(tool)
    assert found, f"{tool} is in the test extra (pyproject.toml)"
    [wheel] = installed.dist.glob("hafiza-*.whl")
    bin_dir, env = tmp_path / "bin", installed.environ()
    if tool == "pipx":
        env.update(PIPX_HOME=str(tmp_path / "pipx"), PIPX_BIN_DIR=str(bin_dir), PIPX_MAN_DIR=str(tmp_path / "man"))
        run(found, "install", "--python", BASE_PYTHON, wheel, cwd=tmp_path, env=env)
    else:
        env.update(UV_TOOL_DIR=str(tmp_path / "uv"), UV_TOOL_BIN_DIR=str(bin_dir))
        run(found, "tool", "install", "--python", BASE_PYTHON, wheel, cwd=tmp_path, env=env)
    assert run(bin_dir / "hafiza", "--version", cwd=tmp_path, env=env).stdout.startswith("hafiza, version ")
    diff = run(bin_dir / "hafiza", "install", "claude-code", "--dry-run", cwd=tmp_path, env=env).stdout
    assert f"{tmp_path / ('pipx' if tool == 'pipx' else 'uv')}" in diff and "hafiza_hook.py claude-code" in diff
    assert str(ROOT) not in diff


def test_pip_installs_from_a_git_url(tmp_path):
    """`pip install git+URL`: a repository of the checkout's files (as the public one would be), installed into a
    fresh venv; the command line and keyword recall work from it."""
    repo = tmp_path / "hafiza.git"
    world = Installed(tmp_path / "copy")
    world.copy_checkout()
    for command in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "hafiza"]):
        run("git", *command, cwd=world.source)
    run("git", "clone", "-q", "--bare", world.source, repo, cwd=tmp_path)
    shutil.rmtree(world.source)
    run(BASE_PYTHON, "-m", "venv", world.env, cwd=tmp_path)
    run(world.env / "bin" / "pip", "install", "--quiet", f"git+file://{repo}", cwd=tmp_path)
    keywords = world.environ(HAFIZA_EMBEDDER="none")  # the model's path is the wheel test's (the demo)
    for args in (["init"], ["remember", "The staging db listens on 5433."]):
        run(world.env / "bin" / "hafiza", *args, cwd=world.elsewhere, env=keywords)
    found = run(world.env / "bin" / "hafiza", "search", "staging db port", cwd=world.elsewhere, env=keywords)
    assert "5433" in found.stdout
