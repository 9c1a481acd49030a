"""The README and the documentation site (docs/) do what they say: every command they show exists with the
options it names, and their worked examples, run as written against a temporary vault, print what the page
claims they print.

A `console` block is a worked example: `$ command` lines (a prompt such as `~/src/shop$ ` says where it
runs), each followed by the output the README claims. Every console block must be preceded by a marker
`<!-- readme-test: NAME -->` naming the scene below that sets up what it needs; the test runs its commands
in a shell, one after the other, and compares the output line by line after `normalized` (commit ids,
dates and durations vary), where a line `...` stands for any number of lines. `sh` blocks are checked
statically (the commands and options exist; full command lines parse), and those with a marker are run
too, each command required to succeed.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import ROOT, git, project_repo

README = ROOT / "README.md"
# Every page a person reads: the README, then the documentation site's pages (docs/cli.md, made from the
# parsers, is checked by tests/test_docs.py).
DOCUMENTS = [README, *sorted(p for p in (ROOT / "docs").rglob("*.md") if p.name != "cli.md")]
MARKER = re.compile(r"<!--\s*readme-test:\s*(.*?)\s*-->")  # a scene's name, and what it needs to know
PROMPT = re.compile(r"^(?:(?P<where>~[\w/.-]*)?\$ )(?P<command>.*)$")


@dataclass
class Block:
    lang: str
    text: str
    line: int           # where it starts in its page (1-based), for messages
    scene: str | None   # the marker right before it
    args: tuple = ()    # the marker's other words
    page: Path = README

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)} line {self.line}"


def blocks() -> list[Block]:
    return [block for page in DOCUMENTS for block in page_blocks(page)]


def page_blocks(page: Path) -> list[Block]:
    out, lines = [], page.read_text(encoding="utf-8").splitlines()
    i, scene, args = 0, None, ()
    while i < len(lines):
        m = MARKER.search(lines[i])
        if m:
            scene, *args = m[1].split()
        elif lines[i].startswith("```"):
            lang, start = lines[i][3:].strip(), i
            i += 1
            body = []
            while not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            out.append(Block(lang, "\n".join(body), start + 1, scene, tuple(args), page))
            scene = None
        elif lines[i].strip():
            scene = None if not lines[i].startswith("<!--") else scene
        i += 1
    return out


def command_lines(block: Block) -> list[str]:
    """The `hafiza ...` commands of a block, continuation lines joined, prompts and comments dropped."""
    text = block.text.replace("\\\n", " ")
    out = []
    for line in text.splitlines():
        m = PROMPT.match(line)
        line = m["command"] if m else line if block.lang == "sh" else ""
        line = re.sub(r"^(?:\.venv/bin/)?hafiza\b", "hafiza", line.strip())
        if line.startswith("hafiza "):
            out.append(line)
    return out


# ---- every command the README shows exists, with its options

def _cli():
    from hafiza.cli.app import cli

    return cli


def resolve(words: list[str]):
    """(the command that `hafiza WORDS...` names, the words left for it); the top when none."""
    from hafiza.cli.app import find

    command, rest = find(list(words))
    return (command or _cli()), rest


def options_of(command) -> set[str]:
    names = {"--help", "-h"}
    for flags, options in command.params:
        names |= {f for f in flags if f.startswith("-")}
        if isinstance(options.get("action"), type) and options["action"].__name__ == "BooleanOptionalAction":
            names |= {"--no-" + f[2:] for f in flags if f.startswith("--")}
    for sub in command.subcommands.values():
        names |= options_of(sub)
    return names


def synopsis_problems(text: str) -> list[str]:
    """What is wrong with a command as the README writes it: a command that does not exist, an option the
    command does not have, or (for a full command line, without placeholders) arguments its parser refuses."""
    words = shlex.split(text, comments=True)[1:]
    while words and words[0] in ("--vault", "--version", "-h", "--help") or words[:1] and words[0].startswith("--vault="):
        words = words[2:] if words[0] == "--vault" else words[1:]
        if not words:
            return []  # `hafiza --version`, `hafiza --help`
    command, rest = resolve(words)
    if command is _cli() or (rest and not rest[0].startswith("-") and command.subcommands and not command.bare):
        return [f"no command `hafiza {' '.join(words[:2])}`"]
    known = options_of(command)
    given = [w.split("=")[0] for w in rest if re.match(r"--?[a-zA-Z]", w)]
    problems = [f"`{text}`: no option {opt}" for opt in given if opt not in known]
    placeholder = re.search(r"[<>\[\]|…]|\.\.\.|\b[A-Z]{2,}\b", " ".join(rest))
    if not problems and not placeholder:
        from hafiza.cli.app import parse

        stderr = io.StringIO()
        try:
            with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
                parse(words)
        except SystemExit as exc:
            if exc.code:
                problems.append(f"`{text}`: {stderr.getvalue().splitlines()[-1]}")
    return problems


def test_every_command_in_the_examples_exists_with_the_options_it_names():
    problems = []
    for block in blocks():
        if block.lang in ("sh", "console"):
            for line in command_lines(block):
                problems += [f"{block.where}: {p}" for p in synopsis_problems(line)]
    assert problems == []


def test_every_command_in_the_commands_table_exists_with_the_options_it_names():
    """docs/commands.md: each row's command exists; each `--option` quoted in its description belongs to it, or
    to the command the quote starts with (`list --without-aliases`, `inbox file [--since DATE]`)."""
    rows = [line for line in (ROOT / "docs" / "commands.md").read_text(encoding="utf-8").splitlines()
            if line.startswith("| `hafiza ")]
    assert len(rows) > 30
    problems = []
    for row in rows:
        name_cell, what = row.split("|")[1], "|".join(row.split("|")[2:])
        for name in re.findall(r"`(hafiza [^`]+)`", name_cell):
            words = _words(name)[1:]
            command, _ = resolve(words)
            if command is _cli():
                problems.append(f"no command `{name}`")
                continue
            for quoted in re.findall(r"`([^`]+)`", what):
                said = _words(quoted)
                target = command
                if said and not said[0].startswith("-"):
                    target, rest = resolve(said)
                    if target is _cli() or rest == said:
                        target, rest = resolve([*words[:1], *said])
                    if target in (_cli(), command) and rest:
                        continue  # not a command: a file name, a value
                known = options_of(target)
                problems += [f"`{name}`: `{quoted}`: no option {opt}" for opt in said
                             if opt.startswith("--") and opt.split("=")[0] not in known]
    assert problems == []


def _words(text: str) -> list[str]:
    return re.sub(r"[<>\[\]|…]", " ", text).replace("\\", " ").split()


def test_every_worked_example_is_run_by_this_file():
    unmarked = [b.where for b in blocks() if b.lang == "console" and b.scene is None]
    assert unmarked == [], f"console blocks without a <!-- readme-test: NAME --> marker: {unmarked}"
    unknown = {b.scene for b in blocks() if b.scene} - set(SCENES)
    assert unknown == set()


def test_the_readme_is_a_front_door():
    """At most 300 lines, with the two source-checkout commands and the install as a tool."""
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300
    assert "make demo" in text and "make test" in text
    assert all(tool in text for tool in ("pipx install hafiza", "uv tool install hafiza", "pip install hafiza"))


# ---- running the worked examples

def normalized(line: str) -> str:
    line = line.rstrip()
    line = re.sub(r"'[0-9a-f]{7,40}'", "<sha>", line)  # quoted where it is all digits, as YAML must write it
    line = re.sub(r"\b[0-9a-f]{7,40}\b", "<sha>", line)
    line = re.sub(r"\b\d{4}-\d{2}-\d{2}(?:-\d{4}|T[\d:.]+Z?)?\b", "<date>", line)
    line = re.sub(r"\b\d+(?:\.\d+)? s\b", "<n> s", line)
    line = re.sub(r"\b\d{2}:\d{2}\b", "<time>", line)
    line = re.sub(r"(?<![\d.])\d\.\d{3}\b", "<score>", line)  # a search's score: 0.137
    return line


def same_output(expected: list[str], actual: list[str]) -> bool:
    """Whether `actual` matches `expected` line by line, a `...` line in `expected` standing for any lines."""
    want = [normalized(x) for x in expected]
    have = [normalized(x) for x in actual]

    def match(i: int, j: int) -> bool:
        if i == len(want):
            return j == len(have)
        if want[i].strip() == "...":
            return any(match(i + 1, k) for k in range(j, len(have) + 1))
        return j < len(have) and want[i] == have[j] and match(i + 1, j + 1)

    return match(0, 0)


def steps(block: Block) -> list[tuple[str | None, str, list[str]]]:
    """(where, command, claimed output) for each `$ ` line of a console block."""
    out = []
    for line in block.text.replace("\\\n", " ").splitlines():
        m = PROMPT.match(line)
        if m:
            out.append((m["where"], re.sub(r"\s+", " ", m["command"]).strip(), []))
        elif out:
            out[-1][2].append(line)
    for _, _, claimed in out:  # a blank line between two commands only spaces them
        while claimed and not claimed[-1].strip():
            claimed.pop()
    return out


def ran(command: str, cwd: Path, env: dict, block: Block | None = None) -> str:
    """The output of `command`, run in a shell in `cwd`, which must succeed (`block`: the README's, for the
    message)."""
    done = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    where = f"{block.where}: " if block else ""
    assert done.returncode == 0, f"{where}`{command}` exited {done.returncode}:\n{done.stderr}"
    return done.stdout.replace(env["HOME"], "/home/me")  # the pages' home, for the test's


def run_block(block: Block, home: Path, env: dict, cwd: Path) -> None:
    for where, command, claimed in steps(block):
        here = home / where[2:] if where and where.startswith("~/") else cwd
        actual = ran(command, here, env, block).splitlines()
        assert same_output(claimed, actual), (
            f"{block.where}: `{command}` printed\n" + "\n".join(actual)
            + "\n\nwhere the page claims\n" + "\n".join(claimed))


def hafiza_env() -> dict:
    """The test's environment with the `hafiza` of this interpreter first on PATH, as after an install."""
    bin_dir = Path(sys.executable).parent
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "HAFIZA_DAEMON": "0",
            "COLUMNS": "120"}


def scene_blocks(name: str) -> list[Block]:
    found = [b for b in blocks() if b.scene == name]
    assert found, f"no page has a block marked {name}"
    return found


SCENES: dict[str, object] = {}


def scene(fn):
    SCENES[fn.__name__.removeprefix("scene_").replace("_", "-")] = fn
    return fn


def follows(expected: str, actual: str) -> bool:
    """Whether the lines of `expected` appear in `actual` in order, as a run, `...` standing for any lines."""
    want = expected.splitlines()
    have = actual.splitlines()
    return any(same_output(want + ["..."], have[start:]) for start in range(len(have)))


def recalled(prompt: str, cwd: Path, env: dict) -> str:
    """The block Claude Code's prompt hook would add for `prompt`, asked in `cwd`."""
    import json

    payload = {"session_id": "readme", "hook_event_name": "UserPromptSubmit", "prompt": prompt, "cwd": str(cwd),
               "transcript_path": ""}
    done = subprocess.run(["hafiza", "hook", "claude-code", "UserPromptSubmit"], input=json.dumps(payload),
                          capture_output=True, text=True, env=env, cwd=cwd, timeout=60)
    return json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"] if done.stdout.strip() else ""


@scene
def scene_verifier(tmp_path, vault, env):
    shop = project_repo(Path(env["HOME"]) / "src" / "shop", {"infra/deploy.sh": "#!/bin/sh\n"})  # no deploy/ yet
    console, block, diff = scene_blocks("verifier")
    run_block(console, Path(env["HOME"]), env, tmp_path)
    shown = recalled("how do deploys run here?", shop, env)
    assert follows(block.text, shown), f"{block.where}: the hook added\n{shown}"
    log = git(vault.root, "log", "-p", "-1")
    assert follows(diff.text, log), f"{diff.where}: the vault's last commit is\n{log}"


@scene
def scene_curator(tmp_path, vault, env):
    import json

    shop = project_repo(Path(env["HOME"]) / "src" / "shop", {"infra/deploy.sh": "#!/bin/sh\n"})
    (shop / "ops").mkdir()
    git(shop, "mv", "infra/deploy.sh", "ops/deploy.sh")
    git(shop, "commit", "-qm", "move the deploy script")
    memories = [
        {"id": "tests-with-pnpm", "text": "Run the tests with pnpm, not npm.", "type": "rule", "created": "2026-11-02"},
        {"id": "tests-pnpm", "text": "Run the tests with  pnpm, not npm.", "type": "rule", "created": "2026-11-20"},
        {"id": "deploy-script", "text": "Deploys run `infra/deploy.sh`; production needs --confirm.",
         "title": "How deploys run", "scope": "project:shop"},
        {"id": "staging-db-5433", "text": "The staging db listens on port 5433."},
        {"id": "staging-db-6543", "text": "The staging db listens on port 6543 since the move."},
    ]
    items = tmp_path / "memories.jsonl"
    items.write_text("".join(json.dumps(m) + "\n" for m in memories))
    env["HAFIZA_EMBEDDER"] = "none"  # the test's hash embedder would pair unrelated notes "by meaning"
    ran(f"hafiza import {items}", tmp_path, env)
    [console] = scene_blocks("curator")
    run_block(console, Path(env["HOME"]), env, tmp_path)


def run_commands(block: Block, env: dict, cwd: Path) -> list[str]:
    """Run the `hafiza` commands of an `sh` block in order, each required to succeed; their outputs."""
    return [ran(command, cwd, env, block) for command in command_lines(block)]


@scene
def scene_quick_start(tmp_path, vault, env):
    """The README's first minute as written, on a machine with no vault yet: init in the default place,
    remember, a search that finds the memory by its alias in a Turkish sentence, and the install."""
    env = {k: v for k, v in env.items() if k != "HAFIZA_VAULT"}
    [block] = scene_blocks("quick-start")
    assert [command.split()[1] for _, command, _ in steps(block)] == ["init", "remember", "search", "install"]
    run_block(block, Path(env["HOME"]), env, tmp_path)
    assert (Path(env["XDG_DATA_HOME"]) / "hafiza" / "vault" / ".git").is_dir()
    assert "hafiza_hook.py" in (Path(env["HOME"]) / ".claude" / "settings.json").read_text()


@scene
def scene_hook(tmp_path, vault, env):
    """The README's hook payloads: the rule of the first minute recalled for a Turkish prompt, and silence
    for "ok, devam et"; the block the model reads is the one in the hook's output."""
    import json

    env = {k: v for k, v in env.items() if k != "HAFIZA_VAULT"}
    scene_quick_start(tmp_path, vault, env)
    console, block = scene_blocks("hook")
    run_block(console, Path(env["HOME"]), env, tmp_path)
    first = steps(console)[0]
    said = json.loads(first[2][0])["hookSpecificOutput"]["additionalContext"]
    assert said == block.text
    assert steps(console)[1][2] == []  # the silent prompt prints nothing


def run_scene(name: str, tmp_path: Path, env: dict) -> None:
    """Run the one console block marked `name`, from HOME."""
    [console] = scene_blocks(name)
    run_block(console, Path(env["HOME"]), env, tmp_path)


@scene
def scene_hooks(tmp_path, vault, env):
    """The hooks page: a session start's profile through the hook, `hafiza profile`, a silent Gemini prompt."""
    run_scene("hooks", tmp_path, env)


@scene
def scene_first_vault(tmp_path, vault, env):
    """Getting started: a supersede, the search that finds only the new version, show, log, undo."""
    run_scene("first-vault", tmp_path, env)


@scene
def scene_capture(tmp_path, vault, env):
    from test_sessions import recorded_home

    recorded_home(Path(env["HOME"]))
    run_scene("capture", tmp_path, env)


@scene
def scene_facts(tmp_path, vault, env):
    """A fact note made and changed, shown, and found by a question about where it was before."""
    run_scene("facts", tmp_path, env)
    assert "fact:acme-a-s/based-in" in ran('hafiza search "where was acme previously"', tmp_path, env)


@scene
def scene_sessions(tmp_path, vault, env):
    """The recorded transcripts of the four clients: each search finds something, show prints the session."""
    import json

    from test_sessions import recorded_home

    recorded_home(Path(env["HOME"]))
    [block] = scene_blocks("sessions")
    imported, again, search, searched, shown = run_commands(block, env, tmp_path)
    assert imported.startswith("22 turns") and "staging" in search.lower()
    assert "deploy" in json.loads(searched)[0]["context"][0]
    assert shown.startswith("session 01a233a6-8665") and "Buildkite" in shown


@scene
def scene_sync(tmp_path, vault, env):
    """Two machines through one remote, a bare repository standing in for the README's GitHub URL."""
    import json

    remote = tmp_path / "memory.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    [block] = scene_blocks("sync")
    block.text = block.text.replace("git@github.com:me/memory.git", str(remote))
    ran('hafiza remember "The staging db listens on 5433."', tmp_path, env)
    first = {**env}
    other = {**env, "HAFIZA_VAULT": str(tmp_path / "laptop")}
    commands = command_lines(block)
    assert len(commands) == 5
    outputs = [ran(command, tmp_path, machine, block)
               for command, machine in zip(commands, (first, first, other, other, other))]
    assert "5433" in ran("hafiza search 'staging db port'", tmp_path, other)
    assert json.loads(outputs[-1])["pushed_commits"] == 0  # the laptop made nothing of its own to send


def contains(whole, part) -> bool:
    """Whether every key of `part` is in `whole` with a value that contains its value; lists item by item."""
    if isinstance(part, dict):
        return isinstance(whole, dict) and all(k in whole and contains(whole[k], v) for k, v in part.items())
    if isinstance(part, list):
        return isinstance(whole, list) and len(whole) == len(part) and all(map(contains, whole, part))
    return whole == part


@scene
def scene_clients(tmp_path, vault, env):
    """Each client's config snippet is what `hafiza install CLIENT` writes into a fresh HOME, with this
    interpreter's paths written as the pages' pipx install under /home/me."""
    import json

    from hafiza.hooks.clients import HOOK_SCRIPT

    env = {k: v for k, v in env.items() if k != "HAFIZA_VAULT"}  # the default vault: no HAFIZA_VAULT in the hooks
    home = Path(env["HOME"])
    ran("hafiza init", tmp_path, env)
    venv = Path(sys.executable).parent
    shown = "/home/me/.local/share/pipx/venvs/hafiza"  # the pages show a pipx install's paths
    paths = {str(venv / "python"): f"{shown}/bin/python", str(venv / "python3"): f"{shown}/bin/python",
             str(Path(sys.executable)): f"{shown}/bin/python",
             str(HOOK_SCRIPT): f"{shown}/lib/python3.11/site-packages/hafiza/hooks/hafiza_hook.py",
             str(venv / "hafiza"): f"{shown}/bin/hafiza"}
    installed = set()
    for block in scene_blocks("clients"):
        client, where = block.args
        if client not in installed:
            ran(f"hafiza install {client}", tmp_path, env, block)
            installed.add(client)
        text = (home / where.removeprefix("~/")).read_text(encoding="utf-8")
        for real, shown in sorted(paths.items(), key=lambda kv: -len(kv[0])):
            text = text.replace(real, shown)
        if block.lang == "json":
            assert contains(json.loads(text), json.loads(block.text)), (
                f"{block.where}: {where} holds\n{text}")
        else:
            assert follows(block.text, text), f"{block.where}: {where} holds\n{text}"


@pytest.mark.parametrize("name", sorted(SCENES))
def test_the_readmes_worked_example_prints_what_the_readme_says(name, tmp_path, vault):
    SCENES[name](tmp_path, vault, hafiza_env())
