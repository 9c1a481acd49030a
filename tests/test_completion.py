"""`hafiza completion SHELL`: the scripts complete in the real shells.

bash completes through its own completion function (COMP_WORDS/COMP_CWORD, as readline calls it); fish
through `complete -C`, its own way of asking what a command line completes to; zsh's completion runs only
inside its line editor, so its script is syntax-checked and its function run with the completion system's
output builtins (`_describe`, `compadd`, `_files`) standing in as printers. zsh and fish are skipped where
they are not installed, except under `make e2e` (HAFIZA_E2E=1), which installs them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from conftest import run_cli
from hafiza.cli.app import MODULE_OF


def script(shell: str) -> str:
    return run_cli("completion", shell).stdout


def needs(shell: str) -> str:
    found = shutil.which(shell)
    if not found:
        if os.environ.get("HAFIZA_E2E") == "1":
            pytest.fail(f"{shell} is not installed; `make e2e` installs it with apt-get")
        pytest.skip(f"{shell} is not installed (make e2e installs it)")
    return found


def bash_complete(tmp_path, *words: str) -> list[str]:
    (tmp_path / "c.bash").write_text(script("bash"))
    quoted = " ".join("'" + w.replace("'", "'\\''") + "'" for w in words)
    program = (f"source {tmp_path / 'c.bash'}\nCOMP_WORDS=({quoted})\nCOMP_CWORD=$((${{#COMP_WORDS[@]}} - 1))\n"
               "_hafiza\nprintf '%s\\n' \"${COMPREPLY[@]}\"")
    done = subprocess.run(["bash", "--norc", "--noprofile", "-c", program], capture_output=True, text=True,
                          cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.splitlines() if line]


def test_bash_completes_commands_subcommands_options_and_choices(tmp_path):
    assert bash_complete(tmp_path, "hafiza", "rem") == ["remember", "remote"]
    assert set(bash_complete(tmp_path, "hafiza", "")) == set(MODULE_OF)
    assert bash_complete(tmp_path, "hafiza", "review", "acc") == ["accept"]
    assert bash_complete(tmp_path, "hafiza", "--vault", "/tmp", "superse") == ["supersede"]  # --vault's value skipped
    assert bash_complete(tmp_path, "hafiza", "remember", "--ty") == ["--type"]
    assert bash_complete(tmp_path, "hafiza", "remember", "--type", "r") == ["rule"]
    assert bash_complete(tmp_path, "hafiza", "install", "c") == ["claude-code", "codex", "cursor"]
    assert "--only" in bash_complete(tmp_path, "hafiza", "review", "accept", "--")
    assert "--no-auto" not in bash_complete(tmp_path, "hafiza", "inbox", "file", "--no-")  # a plain flag has no --no-
    (tmp_path / "memories.jsonl").write_text("")
    assert bash_complete(tmp_path, "hafiza", "import", "memo") == ["memories.jsonl"]  # a path argument


@pytest.fixture
def ids(vault, tmp_path, monkeypatch):
    """Two memories in $HAFIZA_VAULT and one in another vault, and hafiza on PATH for the scripts to ask."""
    monkeypatch.setenv("PATH", os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")]))
    run_cli("remember", "Production deploys use blue-green on Fridays")
    run_cli("remember", "Production deploys need a change ticket")
    run_cli("forget", "production-deploys-need-a-change-ticket")  # archived ones too: `restore` takes them
    run_cli("--vault", str(tmp_path / "other"), "init")
    run_cli("--vault", str(tmp_path / "other"), "remember", "Other vault's note", "--id", "production-notes")
    return ["production-deploys-need-a-change-ticket", "production-deploys-use-blue-green-on-fridays"]


def test_bash_completes_memory_ids_of_the_vault_the_line_names(tmp_path, ids):
    assert bash_complete(tmp_path, "hafiza", "show", "prod") == ids
    assert bash_complete(tmp_path, "hafiza", "restore", "production-deploys-n") == ids[:1]
    assert bash_complete(tmp_path, "hafiza", "supersede", ids[0], "prod") == ids
    assert bash_complete(tmp_path, "hafiza", "--vault", str(tmp_path / "other"), "log", "prod") == ["production-notes"]
    assert bash_complete(tmp_path, "hafiza", "--vault", str(tmp_path / "nowhere"), "show", "") == []
    assert run_cli("list", "--ids", "--status", "all").stdout.split() == ids


def test_every_command_and_option_is_in_each_script():
    """The scripts come from the parsers: every command, and every option of `remember`, is offered."""
    for shell in ("bash", "zsh", "fish"):
        text = script(shell)
        assert all(name in text for name in MODULE_OF), shell
        assert all(option in text for option in ("--supersedes", "--alias", "--scope", "--to")), shell


def test_zsh_script_parses_and_completes(tmp_path):
    zsh = needs("zsh")
    (tmp_path / "_hafiza").write_text(script("zsh"))
    assert subprocess.run([zsh, "-n", str(tmp_path / "_hafiza")], capture_output=True).returncode == 0

    def complete(*words: str) -> list[str]:
        program = (
            "compdef() { :; }\n"
            "_describe() { local -a items; items=(\"${(@P)4}\"); print -rl -- \"${(@)items%%:*}\"; }\n"
            "compadd() { [[ $1 == -- ]] && shift; print -rl -- \"$@\"; }\n"
            "_files() { print -r -- '<files>'; }\n"
            f"source {tmp_path / '_hafiza'}\n"
            "words=(\"$@\"); CURRENT=$#words\n_hafiza\n")
        done = subprocess.run([zsh, "-f", "-c", program, "zsh", *words], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return [line for line in done.stdout.splitlines() if line]

    assert set(complete("hafiza", "")) == set(MODULE_OF)
    assert complete("hafiza", "review", "") == ["show", "accept", "reject", "push"]
    assert "--type" in complete("hafiza", "remember", "--")
    assert "rule" in complete("hafiza", "remember", "--type", "")
    assert complete("hafiza", "--vault", "/tmp", "install", "")[:2] == ["claude-code", "codex"]
    assert complete("hafiza", "import", "") == ["<files>"]


def test_zsh_completes_memory_ids(tmp_path, ids):
    zsh = needs("zsh")
    (tmp_path / "_hafiza").write_text(script("zsh"))
    program = ("compdef() { :; }\ncompadd() { [[ $1 == -- ]] && shift; print -rl -- \"$@\"; }\n"
               f"source {tmp_path / '_hafiza'}\nwords=(\"$@\"); CURRENT=$#words\n_hafiza\n")

    def complete(*words: str) -> list[str]:
        done = subprocess.run([zsh, "-f", "-c", program, "zsh", *words], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout.split()  # compadd is given every id; zsh itself keeps those the word starts

    assert complete("hafiza", "show", "prod") == ids
    assert complete("hafiza", "--vault", str(tmp_path / "other"), "forget", "") == ["production-notes"]


def test_fish_completes(tmp_path):
    fish = needs("fish")
    (tmp_path / "hafiza.fish").write_text(script("fish"))
    assert subprocess.run([fish, "-n", str(tmp_path / "hafiza.fish")], capture_output=True).returncode == 0

    def complete(line: str) -> list[str]:
        done = subprocess.run([fish, "--no-config", "-c", f"source {tmp_path / 'hafiza.fish'}; complete -C {line!r}"],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return [row.split("\t")[0] for row in done.stdout.splitlines() if row]

    assert complete("hafiza rem") == ["remember", "remote"]
    assert complete("hafiza review ac") == ["accept"]
    assert "rule" in complete("hafiza remember --type ")
    assert complete("hafiza vault ") == ["add", "list", "remove"]
    assert "--only" in complete("hafiza review accept --on")


def test_fish_completes_memory_ids(tmp_path, ids):
    fish = needs("fish")
    (tmp_path / "hafiza.fish").write_text(script("fish"))

    def complete(line: str) -> list[str]:
        done = subprocess.run([fish, "--no-config", "-c", f"source {tmp_path / 'hafiza.fish'}; complete -C {line!r}"],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return [row.split("\t")[0] for row in done.stdout.splitlines() if row]

    assert complete("hafiza show prod") == ids
    assert complete(f"hafiza --vault {tmp_path / 'other'} used prod") == ["production-notes"]


def test_an_unknown_shell_is_a_usage_error():
    done = run_cli("completion", "powershell", check=False)
    assert done.returncode == 2 and "Error:" in done.stderr
