"""Skills: procedures repeated across sessions (counted, never by a model), drafted inert on a review branch,
promoted or rejected by a person. The sessions are tests/skill_sessions.py: 33 sessions of the four clients
in their real formats, with 3 planted procedures and 6 decoys."""

import datetime as dt
import json
import os
from pathlib import Path

import pytest

from conftest import git_head, git_subjects, run_cli
from hafiza.skills import catalog, drafts, gate, procedures, sources
from hafiza.skills.steps import command_step, mask, segments, steps
from hafiza.skills.transcripts import Call
from hafiza.vault import episodes
from hafiza.vault.offline.provider import Budget, OpenAIProvider
from hafiza.vault.review import Review
from model_server import ModelServer
import skill_sessions
from secrets_corpus import SECRET_VALUES

PLANTED_NAMES = {"release": "pull-changelog-tag", "migration": "db-snapshot-migrate", "frontend": "ci-lint-test"}


@pytest.fixture
def world(tmp_path):
    """HOME with the 33 sessions; the project they ran in, as it is today."""
    home = Path(os.environ["HOME"])
    project = skill_sessions.project(tmp_path / "dev" / "webshop")
    skill_sessions.write(home, project)
    return home, project


def found(home: Path, since=None):
    return procedures.from_sessions(procedures.read_sessions(sources.files(sources.locations({"HOME": str(home)})),
                                                             since))


def branch_files(vault, branch: str) -> dict[str, str]:
    b = Review(vault).branch(branch)
    return {p.commit.subject: vault.git.blob(p.commit.sha, f"skills/drafts/{p.commit.subject.split()[-1]}/SKILL.md")
            .decode() for p in b.proposals}


# ---- steps: what a tool call is, whatever the client

def test_each_clients_shell_and_edit_tools_become_the_same_steps():
    cwd = "/home/dev/webshop"
    calls = [Call("Bash", {"command": "make changelog"}, cwd),
             Call("exec_command", {"cmd": "make changelog"}, cwd),
             Call("shell", {"command": ["bash", "-lc", "make changelog"]}, cwd),
             Call("run_shell_command", {"command": "make changelog"}, cwd),
             Call("bash", {"command": "make changelog"}, cwd)]
    assert {steps(c)[0].template for c in calls} == {"run make changelog"}
    edits = [Call("Edit", {"file_path": f"{cwd}/migrations/0007_a.sql"}, cwd),
             Call("apply_patch", "*** Begin Patch\n*** Update File: migrations/0008_b.sql\n@@\n", cwd),
             Call("replace", {"file_path": f"{cwd}/migrations/0009_c.sql"}, cwd),
             Call("edit", {"filePath": f"{cwd}/migrations/0010_d.sql"}, cwd)]
    assert {steps(c)[0].template for c in edits} == {"edit migrations/*.sql"}
    assert steps(edits[0])[0].path == "migrations/0007_a.sql"


def test_literals_are_masked_and_looking_around_is_no_step():
    assert mask("git tag -a v1.4.2 -m 'Release 1.4.2'") == ["git", "tag", "-a", "<n>", "-m", "<text>"]
    assert mask("pytest tests/test_x.py --maxfail=2") == ["pytest", "tests/*.py", "--maxfail=<v>"]
    assert segments("cd web && npm ci && npm run lint; git status") == ["cd web", "npm ci", "npm run lint", "git status"]
    assert [command_step(c) for c in ("git status", "ls -la", "cat package.json", "git log --oneline")] == [None] * 4
    assert command_step("FORCE=1 ./deploy.sh || true").text == "FORCE=1 ./deploy.sh || true"  # verbatim, kept for the gate
    assert steps(Call("Read", {"file_path": "/x/a.py"}, "/x")) == []
    assert steps(Call("mcp__hafiza__recall", {"query": "x"}, "/x")) == []


def test_the_readers_carry_each_tool_call_whole(world):
    home, project = world
    sessions = procedures.read_sessions(sources.files(sources.locations({"HOME": str(home)})))
    clients = {client for client, _ in sessions}
    assert clients == {"claude-code", "codex", "gemini", "opencode"}
    calls = [t.call for turns in sessions.values() for t in turns]
    assert all(c.cwd == str(project) for c in calls if c.name in ("Bash", "exec_command", "run_shell_command", "bash"))


# ---- counting

def test_procedures_recur_in_three_sessions_on_two_days_counted_by_code(world):
    home, _ = world
    got = {tuple(p.templates): (len(p.seen), len(p.days)) for p in found(home)}
    assert got == {
        ("run npm ci", "run npm run lint", "run npm run test -- --coverage"): (5, 5),
        ("run git pull --rebase origin main", "run make changelog", "edit CHANGELOG.md",
         "run git tag -a <n> -m <text>"): (4, 4),
        ("run ./scripts/db-snapshot.sh staging", "edit migrations/*.sql", "run ./scripts/migrate.sh --env staging"): (3, 2),
        ("run git fetch origin", "run git rebase origin/main", "run git push --force origin HEAD:staging"): (3, 3),
        ("run ./tools/legacy-build.sh", "edit legacy/config/*.yml", "run ./tools/legacy-deploy.sh --target eu"): (3, 3),
        ("run npm run format || true", "run git commit -am format --no-verify"): (3, 3),
    }  # not: seed (2 sessions), terraform (3 sessions, one day), MCP calls, looking around, the fillers


def test_of_nested_runs_the_one_seen_most_often_is_the_procedure():
    from hafiza.skills.transcripts import Turn

    def session(n, day, commands):
        return [Turn(f"k{n}{i}", "claude-code", f"s{n}", "p", "tool", f"2026-11-{day:02d}T10:00:{i:02d}Z", i, c,
                     Call("Bash", {"command": c}, "/p")) for i, c in enumerate(commands)]

    base = ["npm ci", "npm run lint", "npm run test"]
    sessions = {("claude-code", f"s{n}"): session(n, 10 + n, base + (["npm run build"] if n < 3 else []))
                for n in range(5)}
    [p] = procedures.from_sessions(sessions)
    assert [s.text for s in p.steps] == base and len(p.seen) == 5   # not the 4 steps seen in 3 sessions
    sessions = {k: session(int(k[1][1:]), 10 + int(k[1][1:]), base + ["npm run build"]) for k in sessions}
    [p] = procedures.from_sessions(sessions)
    assert len(p.steps) == 4 and len(p.seen) == 5                    # equal counts: the longest


def test_since_leaves_older_sessions_out(world):
    home, _ = world
    late = {tuple(p.templates)[0] for p in found(home, dt.date(2026, 11, 22))}
    assert late == {"run npm ci"}  # 4 frontend sessions from the 22nd on; release has only 2 left


# ---- drafting: 3/3 planted, 0 decoys

def test_the_three_planted_procedures_are_drafted_and_no_decoy(vault, world):
    home, project = world
    report = drafts.run(vault, found(home), search_path=os.environ.get("PATH"), limit=10)  # every one gated
    assert {d.name for d in report.drafted} == set(PLANTED_NAMES.values())
    refused = dict(report.refused)
    assert set(refused) == {"fetch-rebase-push", "legacy-build-legacy-deploy", "format-commit"}
    assert any("bypass flag (--force)" in p for p in refused["fetch-rebase-push"])
    assert any("only 0 of the 3 paths and commands" in p for p in refused["legacy-build-legacy-deploy"])
    assert any("bypass flag" in p for p in refused["format-commit"])
    # one commit per draft, on a review branch; main untouched
    assert report.branch.startswith("skills/")
    assert git_subjects(vault.root)[0] != "hafiza: draft skill"
    texts = branch_files(vault, report.branch)
    assert set(texts) == {f"hafiza: draft skill {n}" for n in PLANTED_NAMES.values()}
    assert not (vault.root / "skills").exists()
    release = texts["hafiza: draft skill pull-changelog-tag"]
    front = release.split("---\n")[1]
    assert "name: pull-changelog-tag\n" in front and "disable-model-invocation: true\n" in front
    description = json.loads(front.split("description: ")[1].split("\n")[0])
    assert 0 < len(description) <= 200
    assert "2. Run `make changelog`" in release and "4. Run `git tag -a v1.4.4 -m 'Release 1.4.4'`" in release
    assert "3. Edit `CHANGELOG.md`" in release
    assert "recurred in 4 sessions on 4 days (2026-11-17, 2026-11-19, 2026-11-24, 2026-11-26)" in release
    assert release.count("session `") == 4 and len(release) <= gate.MAX_CHARS
    migration = texts["hafiza: draft skill db-snapshot-migrate"]
    assert "2. Edit `migrations/0010_change_3.sql` (files like `migrations/*.sql`)" in migration


def test_a_run_drafts_at_most_its_limit_and_never_the_same_twice(vault, world):
    home, _ = world
    first = drafts.run(vault, found(home), search_path=os.environ.get("PATH"), limit=1)
    assert [d.name for d in first.drafted] == ["ci-lint-test"] and first.left == 5  # not looked at this run
    second = drafts.run(vault, found(home), search_path=os.environ.get("PATH"), limit=3)
    assert {d.name for d in second.drafted} == {"pull-changelog-tag", "db-snapshot-migrate"}
    assert second.known == 1
    assert drafts.run(vault, found(home), search_path=os.environ.get("PATH")).drafted == []


def test_a_project_not_on_this_machine_drafts_nothing(vault, world, tmp_path):
    home, project = world
    project.rename(tmp_path / "elsewhere")
    report = drafts.run(vault, found(home), search_path=os.environ.get("PATH"))
    assert report.drafted == [] and report.branch is None
    assert all(any("exist in the project" in p for p in problems) for _, problems in report.refused)


# ---- the gate on its own

def test_the_gate_refuses_built_in_names_bypass_flags_long_bodies_and_missing_paths(tmp_path):
    step = command_step("make changelog")
    (tmp_path / "Makefile").write_text("changelog:\n\ttrue\n")
    ok = gate.problems("release-steps", "Cut a release.", "Run `make changelog`.", "seen in 3 sessions", [step],
                       tmp_path, None, "3")
    assert ok == []
    for name in ("review", "init", "compact", "memory", "help", "clear", "Bad Name"):
        assert gate.problems(name, "d", "x", "3", [step], tmp_path, None, "3")
    for text in ("git push --force", "git commit --no-verify", "FORCE=1 make", "x = 1  # noqa", "make x || true"):
        assert any("bypass" in p for p in gate.problems("n-a", "d", text, "3", [step], tmp_path, None, "3"))
    assert any("characters" in p for p in gate.problems("n-a", "d", "x" * 7001, "3", [step], tmp_path, None, "3"))
    assert any("description" in p for p in gate.problems("n-a", "d" * 201, "x", "3", [step], tmp_path, None, "3"))
    assert any("repetition" in p for p in gate.problems("n-a", "d", "x", "it is useful", [step], tmp_path, None, "3"))
    gone = [command_step("./tools/gone.sh"), command_step("make nothing-here"), step]
    assert any("only 1 of the 3" in p for p in gate.problems("n-a", "d", "x", "3", gone, tmp_path, None, "3"))
    for secret in [v for v in SECRET_VALUES.values() if "\n" not in v and "'" not in v][:8]:  # a token typed in a command
        held = command_step(f"curl -H 'Authorization: {secret}' https://ci.example/api")
        assert any("secret" in p for p in gate.problems("n-a", "d", f"Run `{held.text}`", "3", [step], tmp_path,
                                                         None, "3"))
    cited = "Run `make changelog`, then see `docs/missing.md` and `deploy/old/run.sh`."
    assert any("only 1 of the 3" in p for p in gate.problems("n-a", "d", cited, "3", [step], tmp_path, None, "3"))


# ---- with a model: prose only, and only when it passes the gate

def prose_server(answer):
    return ModelServer(lambda prompt: answer)


def test_the_model_writes_the_prose_and_code_keeps_the_commands(vault, world):
    home, _ = world
    answer = {"description": "Cut a release: changelog, tag.", "when": "Before tagging a release of the webshop.",
              "why": "Prevents forgetting the changelog before a tag; seen in 4 sessions."}
    with prose_server(answer) as server:
        provider = Budget(OpenAIProvider(server.url + "/v1", "scripted", backoff=0), 10)
        report = drafts.run(vault, [p for p in found(home) if p.templates[1] == "run make changelog"],
                            provider=provider, search_path=os.environ.get("PATH"))
        prompt = server.requests[0].body["messages"][-1]["content"]
    [draft] = report.drafted
    assert draft.by_model and draft.description == "Cut a release: changelog, tag."
    assert "Before tagging a release of the webshop." in draft.text
    assert "4. Run `git tag -a v1.4.4 -m 'Release 1.4.4'`" in draft.text  # verbatim, by code
    assert "git tag -a v1.4.4" in prompt


@pytest.mark.parametrize("answer", [
    {"description": "Release.", "when": "Then run `git push --force origin main` to publish.",
     "why": "Prevents slow releases; seen in 4 sessions."},                                    # a bypass flag
    {"description": "Release.", "when": "Run `deploy/prod.sh` and edit `config/release.toml`, `infra/tag.py`.",
     "why": "Seen in 4 sessions."},                                                             # paths that do not exist
    {"description": "Release.", "when": "Whenever.", "why": "It is a good habit."},            # no repetition named
    {"description": "x" * 300, "when": "Whenever.", "why": "Seen in 4 sessions."},              # too long
    "I think you should just tag it.",                                                          # no JSON at all
])
def test_a_confidently_wrong_model_is_dropped_for_the_codes_prose(vault, world, answer):
    home, _ = world
    with prose_server(answer) as server:
        provider = Budget(OpenAIProvider(server.url + "/v1", "scripted", backoff=0), 10)
        report = drafts.run(vault, [p for p in found(home) if p.templates[1] == "run make changelog"],
                            provider=provider, search_path=os.environ.get("PATH"))
    [draft] = report.drafted
    assert not draft.by_model
    assert "--force" not in draft.text and "deploy/prod.sh" not in draft.text
    assert draft.text.count("Run `") == 3


# ---- episodes

def test_a_task_done_three_times_with_no_failure_since_is_drafted(vault, tmp_path):
    (tmp_path / "Makefile").write_text("certs:\n\ttrue\n")
    when = dt.datetime(2026, 11, 10, 9, 0)
    history = [("Rotate staging certs", "failure"), ("Rotate staging certs", "success"),
               ("rotate  staging certs", "success"), ("Rotate staging certs", "success"),
               ("Bump the API version", "success"), ("Bump the API version", "success"),
               ("Bump the API version", "failure"), ("Bump the API version", "success"),
               ("Restart the worker", "success"), ("Restart the worker", "success")]
    for n, (task, outcome) in enumerate(history):
        episodes.record(vault, task, outcome, "Ran `make certs` then checked the expiry date.",
                        now=when + dt.timedelta(days=n))
    found_ = procedures.from_episodes(vault.root)
    assert [(p.task, len(p.seen)) for p in found_] == [("Rotate staging certs", 3)]
    [p] = found_
    assert [s.text for s in p.steps] == ["make certs"]
    assert drafts.run(vault, found_, search_path=os.environ.get("PATH")).drafted == []  # no project to check in
    report = drafts.run(vault, found_, search_path=os.environ.get("PATH"), here=tmp_path)
    assert [d.name for d in report.drafted] == ["rotate-staging-certs"]
    assert "it succeeded 3 times with no failure since" in report.drafted[0].text


# ---- the command line: draft, list, show, promote, reject

def test_draft_list_show_promote_and_reject_from_the_command_line(vault, world):
    home, project = world
    out = json.loads(run_cli("skills", "draft", "--json").stdout)
    assert sorted(out["drafted"]) == sorted(PLANTED_NAMES.values()) and out["found"] == 6
    listed = json.loads(run_cli("skills", "list", "--json").stdout)
    assert {(e["name"], e["state"]) for e in listed} == {(n, "draft") for n in PLANTED_NAMES.values()}
    listed_branch = listed[0]["branch"]
    shown = run_cli("skills", "show", "ci-lint-test").stdout
    assert shown.startswith("---\nname: ci-lint-test\n") and "1. Run `npm ci`" in shown

    promoted = run_cli("skills", "promote", "ci-lint-test")
    installed = home / ".claude" / "skills" / "ci-lint-test" / "SKILL.md"
    assert f"installed {installed}" in promoted.stdout
    active = (vault.root / "skills" / "ci-lint-test" / "SKILL.md").read_text()
    assert installed.read_text() == active and "disable-model-invocation" not in active
    assert active.startswith("---\nname: ci-lint-test\ndescription: ") and "\n\n---\n" not in active
    assert active.split("\n---\n", 1)[1] == run_cli("skills", "show", "ci-lint-test").stdout.split("\n---\n", 1)[1]
    assert git_subjects(vault.root)[0] == "hafiza: promote skill ci-lint-test"
    assert not (vault.root / "skills" / "drafts").exists()

    run_cli("skills", "reject", "db-snapshot-migrate", "--why", "we script this in CI now")
    rulings = [json.loads(line) for line in (vault.root / "rulings.jsonl").read_text().splitlines()]
    assert rulings[-1]["why"] == "we script this in CI now"
    listed = {(e["name"], e["state"]) for e in json.loads(run_cli("skills", "list", "--json").stdout)}
    assert listed == {("pull-changelog-tag", "draft"), ("ci-lint-test", "active")}
    again = json.loads(run_cli("skills", "draft", "--json").stdout)
    assert again["drafted"] == [] and again["known"] == 3   # promoted, rejected, still open

    accepted = run_cli("review", "accept", listed_branch, check=False)
    assert accepted.returncode == 1 and "skills promote NAME" in accepted.stderr  # never a draft on main
    missing = run_cli("skills", "promote", "nope", check=False)
    assert missing.returncode == 3 and "no skill draft named 'nope'" in missing.stderr
    assert "Traceback" not in missing.stderr
    twice = run_cli("skills", "promote", "ci-lint-test", check=False)
    assert twice.returncode == 1 and "already a skill" in twice.stderr


def test_promote_and_reject_json(vault, world):
    home, _ = world
    run_cli("skills", "draft")
    promoted = json.loads(run_cli("skills", "promote", "ci-lint-test", "--json").stdout)
    installed = home / ".claude" / "skills" / "ci-lint-test" / "SKILL.md"
    assert promoted == {"name": "ci-lint-test", "commit": git_head(vault.root), "installed": [str(installed)]}
    assert installed.read_text() == (vault.root / "skills" / "ci-lint-test" / "SKILL.md").read_text()
    rejected = json.loads(run_cli("skills", "reject", "db-snapshot-migrate", "--json").stdout)
    assert rejected == {"name": "db-snapshot-migrate", "commit": git_head(vault.root)}
    assert git_subjects(vault.root)[:2] == [f"hafiza: reject 1 proposal of {Review(vault).branches()[0].name}",
                                            "hafiza: promote skill ci-lint-test"]
    for command in ("promote", "reject"):
        missing = run_cli("skills", command, "nope", "--json", check=False)
        assert (missing.returncode, missing.stdout) == (3, "")
        assert "Error: no skill draft named 'nope'" in missing.stderr


def test_promote_into_a_project_and_never_over_another_skill(vault, world, tmp_path):
    home, project = world
    run_cli("skills", "draft")
    theirs = home / ".claude" / "skills" / "pull-changelog-tag" / "SKILL.md"
    theirs.parent.mkdir(parents=True)
    theirs.write_text("---\nname: pull-changelog-tag\ndescription: mine\n---\nmine\n")
    refused = run_cli("skills", "promote", "pull-changelog-tag", check=False)
    assert refused.returncode == 1 and "already holds a different skill" in refused.stderr
    assert not (vault.root / "skills" / "pull-changelog-tag").exists()  # nothing committed
    nowhere = run_cli("skills", "promote", "pull-changelog-tag", "--project", str(tmp_path / "nowhere"), check=False)
    assert nowhere.returncode == 1 and "no such folder" in nowhere.stderr
    run_cli("skills", "promote", "pull-changelog-tag", "--project", str(project))
    assert (project / ".claude" / "skills" / "pull-changelog-tag" / "SKILL.md").is_file()
    assert theirs.read_text().endswith("mine\n")


RECORDED_TOOLS = Path(__file__).parent / "fixtures" / "sessions" / "tools" / "home"


def recorded_home(tmp_path) -> Path:
    """tests/fixtures/sessions/tools/home: one session of each real client (Claude Code 2.1.197, Codex 0.171.0,
    Gemini CLI 0.61.0, opencode 1.18.33, recorded against the e2e model servers) running the same release
    steps with its own shell and edit tools; opencode's database built from its SQL dump."""
    import shutil
    import sqlite3

    home = tmp_path / "recorded"
    shutil.copytree(RECORDED_TOOLS, home)
    data = home / ".local" / "share" / "opencode"
    with sqlite3.connect(data / "opencode.db") as con:
        con.executescript((data / "opencode.sql").read_text(encoding="utf-8"))
    return home


def test_each_real_clients_tool_calls_give_the_same_steps(tmp_path):
    home = recorded_home(tmp_path)
    sessions = procedures.read_sessions(sources.files(sources.locations({"HOME": str(home)})))
    assert sorted(client for client, _ in sessions) == ["claude-code", "codex", "gemini", "opencode"]
    templates = {client: [s.template for s in procedures.session_steps(turns)] for (client, _), turns in sessions.items()}
    release = ["run make changelog", "edit CHANGELOG.md", "run git tag -a <n> -m <text> || echo no-repo"]
    # Codex 0.171 offers a model it does not know only exec_command (no apply_patch): no edit step there
    assert templates == {"claude-code": release, "gemini": release, "opencode": release,
                         "codex": [release[0], release[2]]}
    texts = {client: procedures.session_steps(turns)[-1].text for (client, _), turns in sessions.items()}
    assert texts["codex"] == 'git tag -a v1.4.3 -m "Release 1.4.3" || echo no-repo'  # verbatim, its own quotes
    assert {t.call.cwd for turns in sessions.values() for t in turns} == {"/home/dev/project"}
    assert procedures.from_sessions(sessions) == []  # four sessions, but all on one day


def test_the_recorded_real_sessions_hold_no_procedure(vault):
    """The transcripts recorded from the real clients call only hafiza's MCP tools: nothing to draft."""
    from test_sessions import FIXTURES

    sessions = procedures.read_sessions(sources.files(sources.locations({"HOME": str(FIXTURES)})))
    assert sessions and procedures.from_sessions(sessions) == []
    assert all(procedures.session_steps(turns) == [] for turns in sessions.values())
