"""The command line, run as a real process: help, one-line errors, every command's outcome."""

import contextlib
import importlib
import io
import json
import os
import pkgutil
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import git_head, git_subjects, run_cli
from hafiza.vault.store import usage
from hafiza.vault.store.vault import Vault


def all_commands():
    """(path, command) for every command and subcommand, with every cli module registered."""
    import hafiza.cli

    for info in pkgutil.iter_modules(hafiza.cli.__path__):
        importlib.import_module(f"hafiza.cli.{info.name}")
    from hafiza.cli.app import cli

    def walk(group, path):
        for name, command in sorted(group.subcommands.items()):
            yield (*path, name), command
            yield from walk(command, (*path, name))

    return cli, list(walk(cli, ()))


def in_process(*argv) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of `hafiza ARGV...` run in this process: for the help of every command,
    which would take a process each."""
    from hafiza.cli.app import run

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            run(list(argv))
            code = 0
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue(), err.getvalue()


def test_each_command_is_loaded_from_the_module_that_defines_it():
    from hafiza.cli.app import COMMANDS

    cli, commands = all_commands()
    defined = {path[0]: command.function.__module__.rsplit(".", 1)[1] for path, command in commands
               if len(path) == 1}
    assert defined == {name: module for module, names in COMMANDS.items() for name in names}


def test_a_command_imports_only_its_own_module():
    code = ("import sys; from hafiza.cli.main import command; sys.argv = ['hafiza', *sys.argv[1:]]\n"
            "try: command()\nexcept SystemExit: pass\n"
            "print(sorted(m.rsplit('.', 1)[1] for m in sys.modules if m.startswith('hafiza.cli.')), file=sys.stderr)")
    for argv, loaded in ((["--version"], ["main"]), (["show", "--help"], ["app", "args", "main", "read"]),
                         (["remember", "--help"], ["app", "args", "main", "write"])):
        proc = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=60)
        assert proc.stderr.strip().splitlines()[-1] == repr(loaded), (argv, proc.stderr)
    assert re.fullmatch(r"hafiza, version \S+\n", run_cli("--version").stdout)
    # the fast path in main.py and argparse's --version (after --vault, say) print the same line
    assert run_cli("--version").stdout == in_process("--vault", "/tmp", "--version")[1]


def test_only_the_invoked_commands_parser_is_built(monkeypatch):
    from hafiza.cli.args import Command

    built = []
    real = Command.parser
    monkeypatch.setattr(Command, "parser", lambda self, prog, parser=None: built.append(prog) or real(self, prog, parser))
    assert in_process("fact", "show", "--help")[0] == 0
    assert built == ["hafiza fact show"]
    assert in_process("fact", "--help")[0] == 0  # a group's help lists its subcommands: their parsers too
    assert built[1:] == ["hafiza fact", "hafiza fact set", "hafiza fact remove", "hafiza fact show",
                         "hafiza fact history", "hafiza fact list"]


def test_options_and_arguments_come_in_any_order(vault):
    run_cli("remember", "--type", "rule", "Deploys only from main.", "--id", "deploys", "--tag", "ci")
    run_cli("alias", "deploys", "canliya cikis", "--reason", "Turkish", "yayina alma")
    assert vault.get("deploys").aliases == ["canliya cikis", "yayina alma"]
    assert vault.get("deploys").tags == ["ci"] and vault.get("deploys").type == "rule"


def error_line(proc) -> str:
    """The single `Error: ...` line of a failed command (and no traceback)."""
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr + proc.stdout
    errors = [line for line in proc.stderr.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1, proc.stderr
    return errors[0]


def search_json(*args):
    """Keyword mode: exact result sets (the meaning channel returns near neighbours of anything)."""
    return json.loads(run_cli("search", "--json", "--mode", "keyword", *args).stdout)


# ---- help and errors

def test_every_command_has_help():
    cli, commands = all_commands()
    expected = {"init", "remember", "import", "show", "list", "edit", "search", "supersede", "forget", "used",
                "fold", "log", "undo", "reindex", "doctor", "stats"}
    assert expected <= {path[0] for path, _ in commands}
    for path, command in [((), cli), *commands]:
        for option in ("--help", "-h"):
            code, out, err = in_process(*path, option)
            assert (code, err) == (0, ""), (path, err)
            assert out.startswith(f"Usage: {' '.join(('hafiza', *path))} "), (path, out)
        assert command.help.strip(), f"{' '.join(path)} has no help text"
        for name, sub in command.subcommands.items():  # a group lists its subcommands, each with a summary
            assert re.search(rf"^ +{name} +{re.escape(sub.summary[:20])}", out, re.M), (path, name, out)


def test_the_top_help_lists_every_command_with_a_summary():
    _, commands = all_commands()
    out = run_cli("--help").stdout
    for (name, *rest), command in commands:
        if not rest:
            assert re.search(rf"^  {name} +{re.escape(command.summary[:20])}", out, re.M), name


@pytest.mark.parametrize("args, message", [
    (("nope",), "Error: no such command 'nope'"),
    (("--nope", "list"), "Error: unrecognized arguments: --nope"),
    (("list", "--nope"), "Error: unrecognized arguments: --nope"),
    (("show",), "Error: the following arguments are required: MEMORY_ID"),
    (("fact", "nope"), "Error: argument COMMAND: invalid choice: 'nope'"),
    (("fact", "set", "acme"), "Error: the following arguments are required: ATTRIBUTE, VALUE"),
    (("search", "x", "-n", "0"), "Error: argument -n/--limit: 0 is smaller than 1"),
    (("curate", "--pass", "nope"), "Error: argument --pass: invalid choice: 'nope'"),
    (("sessions", "search", "x", "--since", "yesterday"),
     "Error: argument --since: 'yesterday' is not a date (YYYY-MM-DD)"),
    (("inbox", "file", "--since", "2026-13-01"), "Error: argument --since: '2026-13-01' is not a date"),
    (("search", "--batch", "/no/such/file"), "Error: argument --batch: cannot open '/no/such/file'"),
    (("search",), "Error: give a QUERY (or --batch FILE)"),
    (("install", "codex", "--plugin", "p"), "Error: --plugin is for claude-code only"),
])
def test_a_usage_error_is_usage_and_one_error_line_with_status_2(vault, args, message):
    proc = run_cli(*args, check=False)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"Usage: hafiza")
    assert "Try 'hafiza" in proc.stderr
    assert error_line(proc).startswith(message), proc.stderr


def test_a_group_without_its_subcommand_shows_its_help(vault):
    proc = run_cli("fact", check=False)
    assert proc.returncode == 2 and proc.stderr.startswith("Usage: hafiza fact [-h] COMMAND ...")
    assert "history" in proc.stderr
    proc = run_cli(check=False)
    assert proc.returncode == 2 and "commands (`hafiza COMMAND -h`" in proc.stderr


def test_a_group_runs_its_own_listing_when_no_subcommand_is_given(vault):
    assert json.loads(run_cli("vault", "--json").stdout) == json.loads(run_cli("vault", "list", "--json").stdout)
    assert run_cli("review").stdout.startswith("no review branches")


def test_memory_types_are_case_insensitive(vault):
    assert run_cli("remember", "Deploys only from main.", "--type", "Rule", "--id", "deploys").returncode == 0
    assert vault.get("deploys").type == "rule"
    assert [d["id"] for d in json.loads(run_cli("list", "--type", "RULE", "--json").stdout)] == ["deploys"]


def test_no_click_anywhere():
    """click cost every command 40-60 ms of imports (issue 16): the command line is argparse's."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "hafiza.cli.main", "list", "--help"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    imported = {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert "argparse" in imported and not {m for m in imported if m.split(".")[0] == "click"}


def test_every_command_is_in_the_readme():
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    _, commands = all_commands()
    missing = [name for (name, *rest), _ in commands if not rest and not re.search(rf"hafiza {name}\b", readme)]
    assert missing == []


def test_help_as_a_process():
    out = run_cli("--help").stdout
    assert "remember" in out and "search" in out
    assert "Usage: hafiza remember" in run_cli("remember", "-h").stdout
    assert "Usage: hafiza review accept" in run_cli("review", "accept", "--help").stdout


@pytest.mark.parametrize("args, code, message", [
    (("show", "nope"), 3, "Error: no memory with id 'nope'"),
    (("forget", "nope"), 3, "Error: no memory with id 'nope'"),
    (("edit", "nope"), 3, "Error: no memory with id 'nope'"),
    (("used", "nope"), 3, "Error: no memory with id 'nope'"),
    (("supersede", "nope", "nada"), 3, "Error: no memory with id 'nada'"),
    (("remember", "text", "--type", "memo"), 2, "Error: argument --type: invalid choice: 'memo'"),
    (("remember", "text", "--scope", "team"), 1, "Error: scope: 'team' must be 'global' or 'project:<name>'"),
    (("remember", "text", "--id", "Bad Id"), 1, "Error: id 'Bad Id' is not valid"),
    (("remember", "   "), 1, "Error: the memory text is empty"),
    (("import", "no-such-file.jsonl"), 1, "Error: no-such-file.jsonl: no such file or folder"),
    (("undo", "0000000000"), 1, "Error: no commit '0000000000' in the vault's history"),
])
def test_user_mistakes_are_one_error_line(vault, args, code, message):
    before = git_subjects(vault.root)
    proc = run_cli(*args, check=False)
    assert proc.returncode == code, proc.stderr
    assert error_line(proc).startswith(message)
    assert git_subjects(vault.root) == before and not vault.git.dirty()


@pytest.fixture
def slugs(vault):
    """Three memories with the long ids titles make, two of them starting alike."""
    for text in ("Production deploys use blue-green on Fridays", "Production deploys need a change ticket",
                 "The staging database is reset every night"):
        run_cli("remember", text)
    return vault


def test_the_start_of_one_id_stands_for_it_and_the_output_is_the_same(slugs):
    whole = "the-staging-database-is-reset-every-night"
    assert run_cli("show", "the-staging").stdout == run_cli("show", whole).stdout
    assert run_cli("show", "the-staging", "--json").stdout == run_cli("show", whole, "--json").stdout
    assert run_cli("log", "the").stdout == run_cli("log", whole).stdout
    done = run_cli("forget", "the-sta", "--reason", "moved")
    assert done.stdout == f"archived {whole}\n" and done.stderr == ""  # nothing said beside it
    assert git_subjects(slugs.root)[0] == f"hafiza: forget {whole}"
    assert run_cli("restore", "the-sta").stdout == f"restored {whole}\n"
    run_cli("supersede", "production-deploys-n", "production-deploys-u")
    assert git_subjects(slugs.root)[0] == ("hafiza: supersede production-deploys-need-a-change-ticket with "
                                           "production-deploys-use-blue-green-on-fridays")
    run_cli("used", "the-st", "production-deploys-u")
    assert whole in (slugs.sidecar / "usage.log").read_text()


def test_an_unknown_id_names_the_ids_it_may_mean_and_changes_nothing(slugs):
    before = git_subjects(slugs.root)
    both = "production-deploys-need-a-change-ticket, production-deploys-use-blue-green-on-fridays"
    for args in (("show", "production-deploys"), ("forget", "production"), ("alias", "production-deploys", "x"),
                 ("edit", "production-deploys", "--text", "x"), ("used", "production-deploys"),
                 ("supersede", "the-staging-database-is-reset-every-night", "production")):
        proc = run_cli(*args, check=False)
        assert proc.returncode == 3 and proc.stdout == "", args  # as an unknown id always was
        assert error_line(proc).endswith(f"; did you mean: {both}?"), args
    typo = run_cli("show", "the-staging-databse-is-reset-every-night", check=False)  # a letter left out
    assert error_line(typo) == ("Error: no memory with id 'the-staging-databse-is-reset-every-night'; did you mean: "
                                "the-staging-database-is-reset-every-night?")
    assert error_line(run_cli("show", "Production deploys", check=False)).endswith(f"did you mean: {both}?")
    assert error_line(run_cli("show", "nothing-like-it", check=False)) == ("Error: no memory with id "
                                                                             "'nothing-like-it'")
    assert git_subjects(slugs.root) == before and not slugs.git.dirty()


def test_a_whole_id_is_never_taken_for_the_start_of_a_longer_one(vault):
    run_cli("remember", "Deploy with make deploy", "--id", "deploy")
    run_cli("remember", "Deploy steps: build, push, migrate", "--id", "deploy-steps")
    assert "id: deploy\n" in run_cli("show", "deploy").stdout
    assert run_cli("forget", "deploy").stdout == "archived deploy\n"
    assert "id: deploy-steps\n" in run_cli("show", "deploy-s").stdout


@pytest.mark.parametrize("command", [("search", "x"), ("list",), ("remember", "x"), ("doctor",), ("undo",)])
def test_a_missing_vault_is_one_error_line(tmp_path, command):
    proc = run_cli("--vault", str(tmp_path / "nowhere"), *command, check=False)
    assert proc.returncode == 2
    assert error_line(proc) == (f"Error: no vault at {tmp_path / 'nowhere'}; create one with "
                                f"`hafiza --vault {shlex.quote(str(tmp_path / 'nowhere'))} init`, or correct "
                                "--vault or HAFIZA_VAULT if you meant another folder")  # a bare `hafiza init` makes another
    assert not (tmp_path / "nowhere").exists()


# ---- where the vault is

def test_vault_location_flag_then_env_then_xdg(tmp_path):
    run_cli("--vault", str(tmp_path / "flagged"), "init")
    run_cli("--vault", str(tmp_path / "flagged"), "remember", "flag", "--id", "flag")
    assert (tmp_path / "flagged" / "memories" / "flag.md").exists()
    run_cli("init")
    run_cli("remember", "env", "--id", "env")
    assert (tmp_path / "vault" / "memories" / "env.md").exists()
    xdg = tmp_path / "xdg"
    env = {"HAFIZA_VAULT": "", "XDG_DATA_HOME": str(xdg)}
    out = run_cli("init", env=env).stdout
    assert out.strip() == f"vault ready at {xdg / 'hafiza' / 'vault'}"
    run_cli("remember", "xdg", "--id", "xdg", env=env)
    assert (xdg / "hafiza" / "vault" / "memories" / "xdg.md").exists()


def test_init_twice_is_safe(tmp_path):
    run_cli("init")
    run_cli("init")
    assert git_subjects(tmp_path / "vault") == ["hafiza: init vault"]


# ---- remember, show, search

def test_remember_from_stdin(vault):
    out = run_cli("remember", "--title", "Test komutu", "--type", "preference", "--tag", "test", "--tag", "ci",
                  input="Testler `make test` ile çalışır.\nTek test: pytest -k isim\n").stdout
    assert out.strip() == "remembered test-komutu"
    memory = vault.get("test-komutu")
    assert memory.body == "Testler `make test` ile çalışır.\nTek test: pytest -k isim"
    assert (memory.type, memory.tags) == ("preference", ["test", "ci"])
    run_cli("remember", "-", "--id", "dash", input="from a dash\n")
    assert vault.get("dash").body == "from a dash"


def test_remember_json_and_show(vault):
    data = json.loads(run_cli("remember", "Deploy only from main.", "--type", "rule", "--scope", "project:shop",
                              "--alias", "canlıya çıkmak", "--json").stdout)
    assert data == {"id": "deploy-only-from-main", "title": "Deploy only from main.", "type": "rule",
                    "scope": "project:shop", "status": "active", "path": "memories/deploy-only-from-main.md",
                    "commit": git_head(vault.root)}
    text = run_cli("show", "deploy-only-from-main")
    assert (text.stdout, text.stderr) == ((vault.memories_dir / "deploy-only-from-main.md").read_text(), "")
    shown = json.loads(run_cli("show", "--json", "deploy-only-from-main").stdout)
    assert shown["aliases"] == ["canlıya çıkmak"] and shown["body"] == "Deploy only from main."
    assert "vault" not in shown  # read with no team vault: one vault, nothing to say which (tests/test_teams.py)


def test_search_json_has_the_documented_keys(vault):
    vault.remember("We use pnpm, not npm.", id="pnpm", tags=["tooling"])
    hits = search_json("pnpm")
    assert len(hits) == 1
    assert {"id", "title", "type", "score", "status", "path"} <= set(hits[0])
    assert (hits[0]["id"], hits[0]["type"], hits[0]["status"], hits[0]["path"]) == (
        "pnpm", "knowledge", "active", "memories/pnpm.md")
    assert isinstance(hits[0]["score"], float) and hits[0]["score"] > 0
    assert "parts" not in hits[0]


def test_search_explain_shows_the_parts(vault):
    vault.remember("We use pnpm, not npm.", id="pnpm")
    out = run_cli("search", "--explain", "--mode", "keyword", "pnpm").stdout
    for part in ("bm25=", "strength=", "usefulness=", "type_weight=", "status="):
        assert part in out
    parts = search_json("--explain", "--mode", "keyword", "pnpm")[0]["parts"]
    assert parts["strength"] == 1.0 and parts["usefulness"] == 1.0


def test_search_limit_and_no_match(vault):
    vault.import_many([{"id": f"staging-{n}", "text": f"Staging server number {n} runs nginx."} for n in range(4)],
                      source="import:test")
    assert len(search_json("--limit", "2", "nginx")) == 2
    assert run_cli("search", "--mode", "keyword", "kubernetes").stdout.strip() == "no memories match"
    assert search_json("kubernetes") == []


def test_forget_takes_a_memory_out_of_search(vault):
    vault.remember("Staging is on port 8080.", id="staging")
    run_cli("forget", "staging", "--reason", "server gone")
    assert git_subjects(vault.root)[0] == "hafiza: forget staging"
    assert search_json("staging") == []
    assert [h["status"] for h in search_json("--include-inactive", "staging")] == ["archived"]
    assert vault.get("staging").archived_reason == "server gone"


def test_alias_adds_phrases_in_one_commit_and_search_finds_them(vault):
    vault.remember("Client invoices go out in EUR.", id="invoices-eur")
    vault.remember("Standup is at 09:45.", id="standup")
    bare = json.loads(run_cli("list", "--without-aliases", "--json").stdout)
    assert [d["id"] for d in bare] == ["invoices-eur", "standup"]
    out = json.loads(run_cli("alias", "invoices-eur", "fatura para birimi", "hangi döviz", "--json").stdout)
    assert out == {"id": "invoices-eur", "added": ["fatura para birimi", "hangi döviz"],
                   "aliases": ["fatura para birimi", "hangi döviz"], "commit": git_head(vault.root)}
    commits = git_subjects(vault.root)
    assert commits[0] == "hafiza: alias invoices-eur"
    assert "already has" in run_cli("alias", "invoices-eur", "Hangi  döviz").stdout
    assert git_subjects(vault.root) == commits  # nothing new, no commit
    assert [h["id"] for h in search_json("döviz")] == ["invoices-eur"]
    assert [d["id"] for d in json.loads(run_cli("list", "--without-aliases", "--json").stdout)] == ["standup"]
    proc = run_cli("alias", "nope", "x", check=False)
    assert proc.returncode != 0 and "nope" in proc.stderr


# ---- import

def write_jsonl(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in rows))
    return path


def test_import_jsonl_is_one_commit(vault, tmp_path):
    source = write_jsonl(tmp_path / "memories.jsonl", [
        {"text": "We use pnpm.", "id": "pnpm", "tags": ["tooling"]},
        {"text": "Deploy only from main.", "type": "rule", "title": "Deploy rule"},
        {"text": "Müşteri İzmir'de.", "scope": "project:shop", "created": "2025-03-01"},
        "",
    ])
    before = len(git_subjects(vault.root))
    out = run_cli("import", str(source)).stdout
    assert out.splitlines() == [f"imported 3 memories from {source}", "  pnpm  (knowledge, global)  We use pnpm.",
                                "  deploy-rule  (rule, global)  Deploy rule",
                                "  musteri-izmir-de  (knowledge, project:shop)  Müşteri İzmir'de."]
    assert git_subjects(vault.root)[0] == "hafiza: import 3 memories"
    assert len(git_subjects(vault.root)) == before + 1
    izmir = vault.get("musteri-izmir-de")
    assert (izmir.scope, izmir.created.isoformat(), izmir.source) == ("project:shop", "2025-03-01",
                                                                     "import:memories.jsonl")
    assert [h["id"] for h in search_json("--all-scopes", "izmir")] == ["musteri-izmir-de"]


def test_an_import_dry_run_gives_the_real_import_s_report_and_writes_nothing(vault, tmp_path):
    vault.remember("We use pnpm.")
    source = write_jsonl(tmp_path / "memories.jsonl", [
        {"text": "We use pnpm."}, {"text": "Deploy only from main.", "type": "rule", "title": "Deploy rule"},
        {"text": "bad type", "type": "memo"}])
    head = git_subjects(vault.root)
    dry = run_cli("import", str(source), "--dry-run", "--skip-invalid")
    assert git_subjects(vault.root) == head and len(vault.load_all()[0]) == 1
    real = run_cli("import", str(source), "--skip-invalid")
    assert real.stdout.splitlines() == [f"imported 1 memory from {source}; skipped 1 already in the vault",
                                        "  deploy-rule  (rule, global)  Deploy rule"]
    assert dry.stdout == real.stdout.replace("imported", "would import", 1).replace(
        "in the vault\n", "in the vault; nothing was written\n", 1)
    assert dry.stderr == real.stderr and "skipped: item memories.jsonl:3: unknown type 'memo'" in real.stderr


@pytest.mark.parametrize("bad, reason", [
    ("{not json", "memories.jsonl:2: not JSON"),
    ('{"title": "no text"}', 'memories.jsonl:2: expected an object with a non-empty "text"'),
    ('{"text": "bad type", "type": "memo"}', "item memories.jsonl:2: unknown type 'memo'"),
    ('{"text": "bad date", "created": "soon"}', "item memories.jsonl:2: created: expected a date"),
    ('{"text": "taken id", "id": "pnpm"}', "item memories.jsonl:2: id 'pnpm' is already taken"),
])
def test_a_bad_line_refuses_the_whole_import(vault, tmp_path, bad, reason):
    if "taken" in bad:
        vault.remember("existing", id="pnpm")
    source = write_jsonl(tmp_path / "memories.jsonl", [{"text": "good one"}, bad, {"text": "good too"}])
    before, files = git_subjects(vault.root), [p.name for p in vault.paths()]
    proc = run_cli("import", str(source), check=False)
    assert reason in error_line(proc)
    assert git_subjects(vault.root) == before and [p.name for p in vault.paths()] == files
    assert not vault.git.dirty()


def test_skip_invalid_imports_the_rest_and_lists_the_others(vault, tmp_path):
    vault.remember("existing", id="pnpm")
    source = write_jsonl(tmp_path / "memories.jsonl", [
        {"text": "good one"}, "{not json", {"text": "bad type", "type": "memo"}, {"text": "taken", "id": "pnpm"},
        {"text": "good too"}])
    out = run_cli("import", str(source), "--skip-invalid")
    assert out.stdout.splitlines()[0] == f"imported 2 memories from {source}"
    assert out.stderr.splitlines() == [
        "skipped: memories.jsonl:2: not JSON (Expecting property name enclosed in double quotes)",
        "skipped: item memories.jsonl:3: unknown type 'memo'; use one of identity, rule, preference, lesson, "
        "knowledge, fact",
        "skipped: item memories.jsonl:4: id 'pnpm' is already taken"]
    assert {p.name for p in vault.paths()} == {"pnpm.md", "good-one.md", "good-too.md"}
    assert git_subjects(vault.root)[0] == "hafiza: import 2 memories"
    assert vault.get("pnpm").body == "existing"


@pytest.mark.parametrize("line, reason", [
    (b'{"text": "deep", "tags": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "memories.jsonl:2: a value nested too "
     "deeply to read"),
    ('{"text": "Müşteri İzmir\'de."}'.encode("cp1254"), "memories.jsonl:2: not UTF-8 (byte 0xfc at column 12)"),
])
def test_an_unreadable_line_is_one_line_with_its_number_not_a_traceback(vault, tmp_path, line, reason):
    """Issue 29, item 6: both showed a Python traceback."""
    source = tmp_path / "memories.jsonl"
    source.write_bytes(b'{"text": "good one"}\n' + line + b'\n{"text": "good too"}\n')
    proc = run_cli("import", str(source), check=False)
    assert proc.returncode == 1 and reason in error_line(proc) and "Traceback" not in proc.stderr
    out = run_cli("import", str(source), "--skip-invalid")
    assert out.stdout.splitlines()[0] == f"imported 2 memories from {source}" and reason in out.stderr


def test_importing_a_file_whose_items_carry_ids_again_skips_them_and_says_how_many(vault, tmp_path):
    """Issue 29, item 6: the second import failed on the first id ("already taken")."""
    rows = [{"text": "We use pnpm.", "id": "pnpm"}, {"text": "Deploy only from main.", "id": "deploy", "scope": "project:shop"}]
    source = write_jsonl(tmp_path / "memories.jsonl", rows)
    run_cli("import", str(source))
    head = git_subjects(vault.root)
    write_jsonl(source, [*rows, {"text": "Tests run with pytest.", "id": "pytest"}])
    out = run_cli("import", str(source))
    assert out.stdout.splitlines() == [f"imported 1 memory from {source}; skipped 2 already in the vault",
                                       "  pytest  (knowledge, global)  Tests run with pytest."]
    assert out.stderr.splitlines() == [
        "skipped: item memories.jsonl:1: already in the vault as pnpm (same id, text and scope)",
        "skipped: item memories.jsonl:2: already in the vault as deploy (same id, text and scope)"]
    assert git_subjects(vault.root) == ["hafiza: import 1 memory", *head]


def test_import_a_markdown_folder_is_one_commit(vault, tmp_path):
    notes = tmp_path / "notes"
    (notes / "sub").mkdir(parents=True)
    (notes / "deploy.md").write_text("---\ntype: rule\ntags: [deploy]\n---\n# Deploy from main\n\nOnly main goes to prod.\n")
    (notes / "sub" / "pnpm-note.md").write_text("We use pnpm.\n")
    (notes / "sub" / "izmir.md").write_text("---\nid: izmir-client\ntitle: İzmir müşterisi\ncreated: 2025-02-03\n---\nAlsancak ofisi.\n")
    (notes / "ignored.txt").write_text("not markdown")
    before = len(git_subjects(vault.root))
    data = json.loads(run_cli("import", str(notes), "--json").stdout)
    assert sorted(data["imported"]) == ["deploy-from-main", "izmir-client", "pnpm-note"]
    assert data["skipped"] == []
    assert len(git_subjects(vault.root)) == before + 1
    deploy = vault.get("deploy-from-main")
    assert (deploy.type, deploy.tags, deploy.title) == ("rule", ["deploy"], "Deploy from main")
    izmir = vault.get("izmir-client")
    assert (izmir.title, izmir.created.isoformat(), izmir.body) == ("İzmir müşterisi", "2025-02-03", "Alsancak ofisi.")
    assert vault.get("pnpm-note").title == "pnpm note"


def test_a_broken_markdown_file_refuses_the_folder_import(vault, tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "good.md").write_text("Good note.\n")
    (notes / "bad.md").write_text("---\ntags: [a, b\n---\nBody\n")
    before = git_subjects(vault.root)
    assert "bad.md: unreadable frontmatter" in error_line(run_cli("import", str(notes), check=False))
    assert git_subjects(vault.root) == before and vault.paths() == []
    run_cli("import", str(notes), "--skip-invalid")
    assert [p.name for p in vault.paths()] == ["good.md"]


# ---- edit, with a real editor program

EDITOR = """
import os, pathlib, sys
path = pathlib.Path(sys.argv[1])
text = path.read_text(encoding="utf-8")
path.write_text(text.replace(os.environ["EDIT_FROM"], os.environ["EDIT_TO"]), encoding="utf-8")
"""


@pytest.fixture
def editor(tmp_path):
    script = tmp_path / "editor.py"
    script.write_text(EDITOR)

    def env(old, new):
        return {"EDITOR": f"{sys.executable} {script}", "VISUAL": "", "EDIT_FROM": old, "EDIT_TO": new}

    return env


def test_edit_commits_a_valid_change(vault, editor):
    vault.remember("Staging is on port 8080.", id="staging")
    out = run_cli("edit", "staging", env=editor("port 8080", "port 9090"))
    assert out.stdout.strip() == "edited staging"
    assert vault.get("staging").body == "Staging is on port 9090."
    assert git_subjects(vault.root)[0] == "hafiza: edit staging"
    assert [h["id"] for h in search_json("9090")] == ["staging"]


def test_an_invalid_edit_changes_nothing_and_keeps_a_draft(vault, editor):
    vault.remember("Staging is on port 8080.", id="staging")
    before, text = git_subjects(vault.root), (vault.memories_dir / "staging.md").read_text()
    proc = run_cli("edit", "staging", env=editor("type: knowledge", "type: memo"), check=False)
    line = error_line(proc)
    assert "type: 'memo' is not one of" in line and "nothing changed; your edit is saved in" in line
    assert (vault.memories_dir / "staging.md").read_text() == text
    assert git_subjects(vault.root) == before
    drafts = list((vault.sidecar / "drafts").glob("staging-*.md"))
    assert len(drafts) == 1 and "type: memo" in drafts[0].read_text()
    assert str(drafts[0]) in line


def test_edit_resume_reopens_the_saved_draft_and_applies_it(vault, editor):
    """A refused edit keeps a draft; `edit --resume` opens the draft (not the memory: only the draft says
    `memo`), and once fixed the edit lands and the draft goes. A second refusal keeps one draft, the newer."""
    vault.remember("Staging is on port 8080.", id="staging")
    proc = run_cli("edit", "staging", env=editor("type: knowledge", "type: memo"), check=False)
    assert "`hafiza edit staging --resume` reopens it" in error_line(proc)
    proc = run_cli("edit", "staging", "--resume", env=editor("type: memo", "type: memo2"), check=False)
    assert "type: 'memo2' is not one of" in error_line(proc)
    drafts = list((vault.sidecar / "drafts").glob("staging-*.md"))
    assert len(drafts) == 1 and "type: memo2" in drafts[0].read_text()
    out = run_cli("edit", "staging", "--resume", env=editor("type: memo2", "type: rule"))
    assert out.stdout.strip() == "edited staging"
    assert vault.get("staging").type == "rule"
    assert list((vault.sidecar / "drafts").glob("staging-*.md")) == []
    proc = run_cli("edit", "staging", "--resume", env=editor("x", "y"), check=False)
    assert "no saved draft for 'staging'" in error_line(proc)


def test_two_edits_refused_at_once_keep_a_draft_each(vault, editor):
    """New-user trial: two refused edits in the same second shared one draft file, so the first one's error
    named a file that now held the other's edit. Both run at once here, as two people (or agents) would."""
    vault.remember("Staging is on port 8080.", id="staging")
    procs = [subprocess.Popen([sys.executable, "-m", "hafiza.cli.main", "edit", "staging"], text=True,
                              env={**os.environ, **editor("type: knowledge", f"type: memo{n}")},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for n in (1, 2)]
    said = [proc.communicate(timeout=120) for proc in procs]
    assert [proc.returncode for proc in procs] == [1, 1]
    drafts = []
    for n, (_, stderr) in enumerate(said, 1):
        draft = Path(re.search(r"your edit is saved in (\S+);", stderr).group(1))
        assert f"type: memo{n}" in draft.read_text()  # each error names the draft that holds its own edit
        drafts.append(draft)
    assert drafts[0] != drafts[1]
    assert sorted((vault.sidecar / "drafts").iterdir()) == sorted(drafts)


def test_a_draft_is_never_written_over_and_resume_takes_the_newest_of_its_own(vault):
    drafts = vault.sidecar / "drafts"
    drafts.mkdir(parents=True)
    names = ["staging-20261201-120000.md", "staging-20261201-120000-000001.md",  # before and after microseconds
             "staging-20261201-120000-000001-1.md", "staging-2-20271231-235959-999999.md"]  # staging-2's own
    for name in names:
        (drafts / name).write_text(name)
    assert vault.latest_draft("staging") == drafts / "staging-20261201-120000-000001-1.md"
    assert vault.latest_draft("staging-2") == drafts / "staging-2-20271231-235959-999999.md"
    first, second = vault.save_draft("staging", "one"), vault.save_draft("staging", "two")
    assert first != second and (first.read_text(), second.read_text()) == ("one", "two")
    assert vault.latest_draft("staging") == second
    from hafiza.vault.files import atomic_write

    with pytest.raises(FileExistsError):
        atomic_write(first, "three", replace=False)
    assert first.read_text() == "one" and sorted(p.name for p in drafts.iterdir()) == sorted(
        [*names, first.name, second.name])  # no temp file left behind


def test_resume_with_the_draft_unchanged_tries_it_again(vault):
    """New-user trial: `edit --resume` left as it was said "no changes", and the draft stayed untried. An edit
    refused because another writer held the vault goes through once it is free."""
    from hafiza.vault.errors import VaultLocked
    from hafiza.vault.store.lock import locked

    vault.remember("Staging is on port 8080.", id="staging")
    text = (vault.memories_dir / "staging.md").read_text().replace("8080", "9090")
    with locked(vault.lock_path), pytest.raises(VaultLocked):
        Vault(vault.root, lock_timeout=0.2).edit("staging", text)
    unsaved = {"EDITOR": "true", "VISUAL": ""}  # quits without saving
    out = run_cli("edit", "staging", "--resume", env=unsaved)
    assert out.stdout.strip() == "edited staging" and "the draft is unchanged; saving it as it is" in out.stderr
    assert vault.get("staging").body == "Staging is on port 9090."
    assert not any((vault.sidecar / "drafts").iterdir())
    assert run_cli("edit", "staging", env=unsaved).stdout.strip() == "no changes"  # no draft: nothing to retry


def test_resume_with_a_draft_still_refused_says_so_and_keeps_it(vault, editor):
    vault.remember("Staging is on port 8080.", id="staging")
    run_cli("edit", "staging", env=editor("type: knowledge", "type: memo"), check=False)
    proc = run_cli("edit", "staging", "--resume", env={"EDITOR": "true", "VISUAL": ""}, check=False)
    assert "the draft is unchanged; saving it as it is" in proc.stderr
    assert "type: 'memo' is not one of" in error_line(proc) and "no changes" not in proc.stdout
    [draft] = (vault.sidecar / "drafts").iterdir()
    assert "type: memo" in draft.read_text() and str(draft) in error_line(proc)


def test_an_edit_with_broken_yaml_is_refused(vault, editor):
    vault.remember("Staging is on port 8080.", id="staging")
    proc = run_cli("edit", "staging", env=editor("tags: []", "tags: [a, b"), check=False)
    assert "invalid YAML frontmatter" in error_line(proc)
    assert vault.get("staging").tags == []


def test_an_editor_that_saves_nothing_changes_nothing(vault, editor):
    vault.remember("Staging is on port 8080.", id="staging")
    before = git_subjects(vault.root)
    out = run_cli("edit", "staging", env={"EDITOR": "true", "VISUAL": ""})
    assert out.stdout.strip() == "no changes"
    assert git_subjects(vault.root) == before


# ---- list, log, stats, doctor

@pytest.fixture
def listed(vault):
    vault.import_many([
        {"id": "deploy", "text": "Deploy from main.", "type": "rule"},
        {"id": "pnpm", "text": "We use pnpm."},
        {"id": "npm", "text": "We use npm."},
        {"id": "shop-linter", "text": "ruff", "scope": "project:shop", "type": "preference"},
    ], source="import:test")
    vault.supersede("npm", "pnpm")
    return vault


def list_ids(*args):
    return [d["id"] for d in json.loads(run_cli("list", "--json", *args).stdout)]


def test_list_filters(listed):
    assert list_ids() == ["deploy", "pnpm", "shop-linter"]
    assert list_ids("--type", "rule") == ["deploy"]
    assert list_ids("--status", "superseded") == ["npm"]
    assert list_ids("--status", "all") == ["deploy", "npm", "pnpm", "shop-linter"]
    assert list_ids("--scope", "project:shop") == ["shop-linter"]
    assert list_ids("--scope", "global", "--type", "knowledge") == ["pnpm"]
    text = run_cli("list", "--status", "all").stdout
    assert "npm  (knowledge, global) [superseded]  We use npm." in text


def test_log_shows_what_hafiza_did(listed):
    (listed.root / "README.md").write_text("mine\n")
    subprocess.run(["git", "-C", str(listed.root), "add", "README.md"], check=True)
    subprocess.run(["git", "-C", str(listed.root), "commit", "-qm", "my own change"], check=True)
    run_cli("forget", "deploy", "--reason", "moved to the wiki")
    out = run_cli("log").stdout.splitlines()
    assert "hafiza: forget deploy" in out[0] and out[1].strip() == "reason: moved to the wiki"
    assert not any("my own change" in line for line in out)
    entries = json.loads(run_cli("log", "--json", "-n", "3").stdout)
    assert [(e["action"], e["actor"]) for e in entries] == [("forget", "cli"), ("supersede", "cli"), ("import", "cli")]
    assert entries[0]["reason"] == "moved to the wiki"
    assert "my own change" in run_cli("log", "--all").stdout


def test_stats(listed):
    listed.record_use(["pnpm"])
    data = json.loads(run_cli("stats", "--json").stdout)
    assert data["memories"] == 4
    assert data["by_type"] == {"rule": 1, "knowledge": 2, "preference": 1}
    assert data["by_status"] == {"active": 3, "superseded": 1}
    assert data["by_scope"] == {"global": 3, "project:shop": 1}
    assert data["pending_usage"] == {"shown": 0, "used": 1}
    assert data["index_bytes"] > 0
    assert "memories: 4" in run_cli("stats").stdout


def test_doctor_on_a_healthy_vault(listed):
    run_cli("reindex")  # the fixture wrote through the vault layer, which does not embed
    proc = run_cli("doctor")
    assert "files: 4 memories parse" in proc.stdout
    checks = {c["name"]: c for c in json.loads(run_cli("doctor", "--json").stdout)}
    levels = {name: c["level"] for name, c in checks.items()}
    assert {"files": "ok", "index": "ok", "vectors": "ok", "lock": "ok", "git": "ok",
            "usage": "ok"}.items() <= levels.items()
    assert checks["vectors"]["summary"].startswith("4 memories embedded by hash")
    assert checks["aliases"]["summary"].startswith("3 of 3 active memories (100%) have no aliases")
    assert proc.returncode == 0


def test_a_new_vault_warns_of_nothing_and_counts_one_as_one(vault):
    doctor = run_cli("doctor").stdout
    assert [line for line in doctor.splitlines() if not line.startswith("ok ")] == []  # no memories, no vectors: fine
    assert "vectors: no memories to embed yet\n" in doctor and "git: clean, 1 commit\n" in doctor
    search = run_cli("search", "deploy to production")
    assert search.stdout == "no memories match\n" and search.stderr == ""
    assert "by type: none\nby status: none\nby scope: none\n" in run_cli("stats").stdout
    run_cli("remember", "Deploy from main only", "--id", "deploy")
    assert run_cli("alias", "deploy", "canlıya çıkış").stdout == "deploy: added 1 alias: canlıya çıkış\n"
    doctor = run_cli("doctor").stdout
    assert "files: 1 memory parses\n" in doctor and "index: 1 memory indexed" in doctor
    assert "vectors: 1 memory embedded by hash" in doctor and "aliases: the one active memory has aliases" in doctor
    run_cli("used", "deploy")
    assert run_cli("fold").stdout == "folded usage of 1 memory\n"
    assert git_subjects(vault.root)[0] == "hafiza: fold usage of 1 memory"
    assert "by type: knowledge 1\n" in run_cli("stats").stdout


def test_the_warm_process_of_a_new_vault_says_nothing_of_vectors(vault):
    run_cli("daemon", "start")
    try:
        assert "vectors" not in run_cli("daemon", "status").stdout
        status = json.loads(run_cli("daemon", "status", "--json").stdout)
        assert status["mode"] == "hybrid" and status["vectors"] == status["documents"] == 0
    finally:
        run_cli("daemon", "stop")


def test_memories_without_vectors_are_said_to_have_none_and_the_next_write_makes_them(vault):
    run_cli("remember", "Deploy from main only", env={"HAFIZA_EMBEDDER": "none"})  # the meaning channel off
    check = next(c for c in json.loads(run_cli("doctor", "--json").stdout) if c["name"] == "vectors")
    assert check["level"] == "warn" and check["summary"].startswith(
        "no hash 2 vectors for the 1 memory yet (none are made while HAFIZA_EMBEDDER=none")
    assert check["summary"].endswith("recall is keyword-only until the next write or `hafiza reindex`")
    search = run_cli("search", "deploy from main")
    assert "no vectors for this vault's memories yet" in search.stderr and "next write" in search.stderr
    run_cli("remember", "Staging is on port 8443")
    check = next(c for c in json.loads(run_cli("doctor", "--json").stdout) if c["name"] == "vectors")
    assert check["level"] == "ok" and check["summary"].startswith("2 memories embedded by hash")


def test_doctor_warns_when_the_vectors_are_of_an_earlier_format(listed):
    run_cli("reindex")
    meta = listed.sidecar / "vectors.json"
    meta.write_text(meta.read_text().replace('"format": 3', '"format": 1'))
    check = next(c for c in json.loads(run_cli("doctor", "--json").stdout) if c["name"] == "vectors")
    assert check["level"] == "warn" and "hafiza reindex" in check["summary"]
    run_cli("reindex")
    check = next(c for c in json.loads(run_cli("doctor", "--json").stdout) if c["name"] == "vectors")
    assert check["level"] == "ok"


def test_vectors_of_format_2_work_doctor_says_what_to_do_and_the_next_write_upgrades_them(listed):
    import zlib

    import numpy as np

    from hafiza.indexer.embed import HashEmbedder
    from hafiza.indexer.vectors import VECTORS, VectorStore

    run_cli("reindex")
    e = HashEmbedder()
    store = VectorStore(listed.sidecar)
    assert store.load(e.name, e.version, e.dim)
    rows, meta = store.rows(), json.loads((listed.sidecar / "vectors.json").read_text())
    del store
    (listed.sidecar / VECTORS).unlink()  # as hafiza before format 3 wrote them: float32, read into memory
    np.save(listed.sidecar / VECTORS, rows)
    meta.update(format=2, crc32=zlib.crc32(rows.tobytes()))
    del meta["dtype"], meta["scale"]
    (listed.sidecar / "vectors.json").write_text(json.dumps(meta))
    check = next(c for c in json.loads(run_cli("doctor", "--json").stdout) if c["name"] == "vectors")
    assert check["level"] == "warn" and "earlier hafiza (format 2)" in check["summary"]
    assert "next write" in check["summary"] and "hafiza reindex" in check["summary"]
    out = run_cli("search", "deploy main", "--mode", "meaning", "--json")
    assert json.loads(out.stdout)[0]["id"] == "deploy" and "Traceback" not in out.stderr
    assert "format 2" in out.stderr  # said, not hidden
    run_cli("remember", "Staging is on port 8443.")  # any write stores them as format 3, embedding only its memory
    assert json.loads((listed.sidecar / "vectors.json").read_text())["format"] == 3
    check = next(c for c in json.loads(run_cli("doctor", "--json").stdout) if c["name"] == "vectors")
    assert check["level"] == "ok" and check["summary"].startswith("5 memories embedded")


def test_a_hand_edit_is_embedded_by_the_warm_process_and_doctor_says_so_until_then(listed):
    from hafiza.hooks.daemon import full_sync
    from hafiza.indexer.embed import HashEmbedder
    from hafiza.indexer.recall import Recall

    run_cli("reindex")
    path = listed.memories_dir / "deploy.md"
    path.write_text(path.read_text().replace("Deploy from main.", "Avalanche risk, check the snowpack first."))
    check = next(c for c in json.loads(run_cli("doctor", "--json", check=False).stdout) if c["name"] == "vectors")
    assert check["level"] == "warn" and check["summary"].startswith("1 of 4 memories are new or changed")
    recall = Recall(listed.root, HashEmbedder())
    full_sync(recall)
    check = next(c for c in json.loads(run_cli("doctor", "--json").stdout) if c["name"] == "vectors")
    assert check["level"] == "ok"
    hits = recall.search("snowpack avalanche", mode="meaning", all_scopes=True)
    assert hits[0].id == "deploy" and hits[0].parts["cosine"] > 0.5


def test_a_malformed_file_is_reported_by_doctor_and_reindex_and_the_rest_work(listed):
    broken = listed.memories_dir / "broken.md"
    broken.write_text("---\nid: broken\ntype: rule\ntitle: Broken: yes\n---\nWe use pnpm everywhere.\n")
    bad_count = listed.memories_dir / "bad-count.md"
    bad_count.write_text("---\nid: bad-count\nshown: yes\n---\npnpm again.\n")

    proc = run_cli("doctor", check=False)
    assert proc.returncode == 1
    assert "files: 2 files do not parse" in proc.stdout
    assert f"{broken}:4: invalid YAML frontmatter" in proc.stdout
    assert f"{bad_count}: shown: expected a non-negative number, got True" in proc.stdout
    checks = {c["name"]: c for c in json.loads(run_cli("doctor", "--json", check=False).stdout)}
    assert checks["files"]["level"] == "fail" and checks["index"]["level"] == "ok"
    assert checks["git"]["level"] == "warn"

    proc = run_cli("reindex")
    assert proc.stdout.strip() == "indexed 4 memories; 2 files skipped"
    assert "skipped memories/broken.md: invalid YAML frontmatter" in proc.stderr
    assert "skipped memories/bad-count.md: shown: expected a non-negative number" in proc.stderr

    assert [h["id"] for h in search_json("pnpm")] == ["pnpm"]
    assert list_ids() == ["deploy", "pnpm", "shop-linter"]
    # and writes still work: the broken files are committed as they are, as hand edits
    run_cli("remember", "Redis on 6380.", "--id", "redis")
    assert git_subjects(listed.root)[:2] == ["hafiza: remember redis", "hafiza: record manual edits"]


def test_doctor_reports_a_held_lock_and_hand_edits(listed):
    holder = subprocess.Popen([sys.executable, "-c", "import sys\nfrom pathlib import Path\n"
                               "from hafiza.vault.store.lock import locked\n"
                               "with locked(Path(sys.argv[1])):\n print('locked', flush=True)\n sys.stdin.readline()",
                               str(listed.lock_path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        (listed.memories_dir / "pnpm.md").write_text((listed.memories_dir / "pnpm.md").read_text() + "More.\n")
        checks = {c["name"]: c for c in json.loads(run_cli("doctor", "--json").stdout)}
        assert checks["lock"]["level"] == "warn" and f"pid {holder.pid}" in checks["lock"]["summary"]
        assert checks["git"]["level"] == "warn"
    finally:
        holder.stdin.close()
        holder.wait(timeout=10)


def test_fold_and_used_through_the_cli(listed):
    assert run_cli("used", "pnpm", "deploy").stdout.strip() == "recorded use of 2 memories"
    assert run_cli("used", "deploy", "deploy").stdout.strip() == "recorded use of 1 memory"  # each id once
    assert usage.pending(listed.sidecar)["deploy"].used == 2
    assert run_cli("fold").stdout.strip() == "folded usage of 2 memories"
    assert Vault(listed.root).get("deploy").used == 2


# ---- what click drew for us: colour and progress, on a terminal only

def test_colour_only_on_a_terminal_and_never_with_no_color(monkeypatch):
    from hafiza.cli.args import style

    main, other = os.openpty()
    with open(other, "w") as terminal, open(os.devnull, "w") as pipe:
        monkeypatch.delenv("NO_COLOR", raising=False)
        assert style("FAIL", fg="red", stream=terminal) == "\x1b[31mFAIL\x1b[0m"
        assert style("id", bold=True, stream=terminal) == "\x1b[1mid\x1b[0m"
        assert style("FAIL", fg="red", stream=pipe) == "FAIL"
        monkeypatch.setenv("NO_COLOR", "1")
        assert style("FAIL", fg="red", stream=terminal) == "FAIL"
    os.close(main)


def test_the_progress_bar_draws_on_stderr_once_per_percent(capsys):
    from hafiza.cli.args import Bar

    bar = Bar("indexing", 200)
    for done in range(0, 201):
        bar.update(done)
    err = capsys.readouterr().err
    assert err.count("\r") == 101 and err.endswith("\rindexing [" + "#" * 36 + "] 100%  200/200\n")
    assert "\rindexing [" + "#" * 18 + "-" * 18 + "]  50%  100/200" in err


def test_reindex_draws_a_progress_bar_on_a_terminal_only(vault):
    vault.import_many([{"text": f"Note {n} about the queue workers."} for n in range(60)], source="import:test")
    assert run_cli("reindex").stderr == ""
    main, other = os.openpty()
    proc = subprocess.run([sys.executable, "-m", "hafiza.cli.main", "reindex"], stdout=subprocess.PIPE,
                          stderr=other, timeout=120)
    os.close(other)
    drawn = b""
    while chunk := _read(main):
        drawn += chunk
    os.close(main)
    assert proc.returncode == 0 and b"indexing [" in drawn and b"100%  60/60" in drawn


def _read(fd) -> bytes:
    try:
        return os.read(fd, 65536)
    except OSError:  # EIO: the terminal's other end is closed and all was read
        return b""


@pytest.mark.parametrize("setup,status,out,err", [
    ("print('answer', end='')", None, "answer", ""),  # buffered output is flushed before the quick exit
    ("pass", "no such memory", "", "no such memory\n"),
    ("pass", 3, "", ""),
    ("class Held:\n    def __del__(self): print('torn down')\nheld = Held()", 0, "", ""),  # no teardown
    ("import atexit; atexit.register(lambda: print('cleaned up'))", 4, "cleaned up\n", ""),  # the ordinary way
    ("import threading, time; threading.Thread(target=lambda: (time.sleep(0.2), print('thread done'))).start()",
     0, "thread done\n", ""),
])
def test_the_quick_exit_flushes_what_was_said_and_steps_aside_for_what_still_runs(setup, status, out, err):
    code = f"from hafiza.hooks.hafiza_hook import leave\n{setup}\nleave({status!r})\nprint('not reached')"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        status if isinstance(status, int) else 0 if status is None else 1, out, err)


@pytest.mark.parametrize("how", ["supersede", "remember --supersedes", "import"])
def test_a_superseding_memory_takes_the_aliases_people_type(vault, tmp_path, how):
    """Issue 30, item 7: the README's quick-start query finds the memory after it is superseded."""
    run_cli("remember", "Production deploys only from main, after CI is green.", "--type", "rule",
            "--alias", "canlıya çıkmak", "--alias", "prod'a çıkmak", "--id", "deploys")
    new = "Production deploys only from main or a release branch, after CI is green."
    if how == "supersede":
        run_cli("remember", new, "--type", "rule", "--alias", "release", "--alias", "Canlıya  çıkmak", "--id", "deploys-2")
        run_cli("supersede", "deploys", "deploys-2")
    elif how == "import":
        (tmp_path / "new.jsonl").write_text(json.dumps({"text": new, "id": "deploys-2", "supersedes": ["deploys"],
                                                        "aliases": ["release"]}) + "\n")
        run_cli("import", str(tmp_path / "new.jsonl"))
    else:
        run_cli("remember", new, "--type", "rule", "--alias", "release", "--id", "deploys-2", "--supersedes", "deploys")
    shown = json.loads(run_cli("show", "deploys-2", "--json").stdout)
    mine = ["release", "Canlıya çıkmak"] if how == "supersede" else ["release", "canlıya çıkmak"]
    assert shown["aliases"] == [*mine, "prod'a çıkmak"]  # the same phrase is not taken twice
    hits = json.loads(run_cli("search", "yarın canlıya çıkmak istiyorum, hangi branch?", "--json",
                              "--mode", "keyword").stdout)
    assert [h["id"] for h in hits][:1] == ["deploys-2"]


def test_remembering_the_same_text_again_points_at_the_memory_that_has_it(vault):
    """Issue 30, item 10: an exact duplicate (spacing and case aside) is not written twice, and is named."""
    first = json.loads(run_cli("remember", "Deploys go out on Thursdays only.", "--json").stdout)
    before = git_subjects(vault.root)
    again = run_cli("remember", "deploys  go out on\nThursdays ONLY.")
    assert again.returncode == 0 and again.stdout.strip() == (
        f"already remembered as {first['id']} (the same text and scope); nothing written")
    shown = json.loads(run_cli("remember", "Deploys go out on Thursdays only.", "--json").stdout)
    assert shown == {**first, "commit": None, "duplicate": True}  # nothing committed
    assert git_subjects(vault.root) == before and len(list(vault.memories_dir.glob("*.md"))) == 1
    other = json.loads(run_cli("remember", "Deploys go out on Thursdays only.", "--scope", "project:web",
                               "--json").stdout)
    assert other["id"] != first["id"] and "duplicate" not in other  # another scope is another memory


def test_the_demo_shows_the_old_memory_and_leaves_no_vault_behind(tmp_path):
    """Issue 30, item 10: "the old memory is kept, labelled" showed no old memory (with the model, pnpm
    memories filled the three places), and every run left its vault in the temporary folder."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    out = run_cli("demo", env={"TMPDIR": str(temp)}).stdout
    section = out.split("# ... the old memory is kept, labelled")[1].split("\n\n")[0]
    assert "package-manager-npm [superseded by package-manager-pnpm]  Frontend uses npm" in section
    assert list(temp.iterdir()) == [] and "hafiza demo --keep DIR" in out
    kept = run_cli("demo", "--keep", str(tmp_path / "kept"), env={"TMPDIR": str(temp)}).stdout
    assert (tmp_path / "kept" / "memories").is_dir() and f"HAFIZA_VAULT={tmp_path / 'kept'}" in kept
