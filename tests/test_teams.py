"""Team vaults: more git repositories read in the same ranking, with real git remotes in tmp_path."""

import json
import os
import subprocess
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp_types import Implementation

from conftest import git_subjects, run_cli
from test_hooks import _daemons, _start, _stop, _wait, context_of, hook
from hafiza.hooks import wire
from hafiza.hooks.mcp import create_server

PERSONAL_RULE = "Deploy billing to production only from main after CI is green"
TEAM_RULE = "Billing production deploys need a second reviewer from the payments team"
PROMPT = {"session_id": "s1", "hook_event_name": "UserPromptSubmit", "cwd": "/tmp",
          "prompt": "how do we deploy billing to production?"}


def bare(path: Path) -> Path:
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(path)], check=True)
    return path


def team_folder() -> Path:
    return Path(os.environ["XDG_DATA_HOME"]) / "hafiza" / "teams" / "team"


def remote_subjects(remote: Path, ref: str = "main") -> list[str]:
    out = subprocess.run(["git", "--git-dir", str(remote), "log", "--format=%s", ref], capture_output=True, text=True)
    return out.stdout.splitlines()


@pytest.fixture
def teamed(vault, tmp_path):
    """The personal vault with a rule, and the team vault `team` cloned from a bare remote, with another."""
    run_cli("remember", PERSONAL_RULE, "--id", "billing-from-main")
    remote = bare(tmp_path / "team.git")
    assert "0 memories indexed" in run_cli("vault", "add", "team", str(remote)).stdout
    run_cli("remember", "--to", "team", TEAM_RULE, "--id", "billing-second-reviewer")
    return remote


def test_recall_reads_both_vaults_in_one_ranking_each_hit_labelled(teamed, vault):
    hits = json.loads(run_cli("search", "billing production deploy", "--json").stdout)
    assert {(h["id"], h["vault"]) for h in hits} == {("billing-from-main", "personal"),
                                                    ("billing-second-reviewer", "team")}
    shown = run_cli("search", "billing production deploy").stdout
    assert "[vault: team]" in shown and "[vault: personal]" in shown
    text = context_of(hook("claude-code", "UserPromptSubmit", PROMPT))  # the cold hook
    assert "- [knowledge, vault: team] billing-second-reviewer" in text
    assert "- [knowledge, vault: personal] billing-from-main" in text
    # Each impression is logged in the vault the memory came from, to be folded there.
    assert "billing-second-reviewer" in (team_folder() / ".hafiza" / "usage.log").read_text()
    assert "billing-second-reviewer" not in (vault.sidecar / "usage.log").read_text()


def test_hybrid_search_reads_each_vaults_vectors(teamed, vault):
    hits = json.loads(run_cli("search", "billing production deploy", "--mode", "hybrid", "--json", "--explain").stdout)
    by_id = {h["id"]: h for h in hits}
    assert by_id["billing-second-reviewer"]["vault"] == "team" and by_id["billing-from-main"]["vault"] == "personal"
    assert "cosine" in by_id["billing-second-reviewer"]["parts"]  # the team vault's own vectors answered
    assert (team_folder() / ".hafiza" / "vectors.npy").is_file()


def test_the_warm_process_reads_the_team_vault_too(teamed, vault):
    env = {"HAFIZA_EMBEDDER": "none"}
    cold = context_of(hook("claude-code", "UserPromptSubmit", {**PROMPT, "session_id": "c"}, env))
    _start(vault.root)
    try:
        warm = context_of(hook("claude-code", "UserPromptSubmit", {**PROMPT, "session_id": "w"}, env))
        assert wire.ask(vault.root, {"op": "status"})["served"] >= 1
        # `vault remove` stops it, so the next prompt's process reads the new list.
        run_cli("vault", "remove", "team")
        assert _wait(lambda: not _daemons(vault.root), 10)
    finally:
        _stop(vault.root)
    assert warm == cold and "vault: team] billing-second-reviewer" in warm
    assert "billing-second-reviewer" not in context_of(hook("claude-code", "UserPromptSubmit", PROMPT))
    assert (team_folder() / "memories" / "billing-second-reviewer.md").is_file()  # removed from the list only
    run_cli("vault", "add", "team", str(teamed))  # added again: the folder left behind is taken back
    assert "billing-second-reviewer" in run_cli("search", "billing production deploy").stdout


def test_writes_go_to_the_personal_vault_unless_to(teamed, vault):
    assert git_subjects(team_folder())[0] == "hafiza: remember billing-second-reviewer"
    assert not (vault.root / "memories" / "billing-second-reviewer.md").exists()
    run_cli("remember", "Invoices are generated on the first of the month", "--id", "invoice-day")
    assert (vault.root / "memories" / "invoice-day.md").is_file()
    assert not (team_folder() / "memories" / "invoice-day.md").exists()
    run_cli("used", "billing-second-reviewer", "invoice-day")  # each use counted in its own vault
    assert "billing-second-reviewer" in (team_folder() / ".hafiza" / "usage.log").read_text()
    assert "invoice-day" not in (team_folder() / ".hafiza" / "usage.log").read_text()
    assert "invoice-day" in (vault.sidecar / "usage.log").read_text()
    bad = run_cli("remember", "--to", "nope", "something to keep", check=False)
    assert bad.returncode != 0 and "no vault named 'nope'" in bad.stderr and "Traceback" not in bad.stderr


def test_a_team_memorys_whole_id_is_never_taken_for_the_start_of_yours(teamed, vault):
    run_cli("remember", "The second reviewer rota is on the wiki", "--id", "billing-second-reviewer-rota")
    assert run_cli("used", "billing-second-reviewer").stdout == "recorded use of 1 memory\n"
    assert "billing-second-reviewer" in (team_folder() / ".hafiza" / "usage.log").read_text()
    assert not (vault.sidecar / "usage.log").exists()
    run_cli("used", "billing-second-reviewer-r")  # the start of one of yours
    assert "billing-second-reviewer-rota" in (vault.sidecar / "usage.log").read_text()


def test_the_start_of_a_team_memorys_id_stands_for_it_and_a_typo_names_it(teamed, vault):
    """A team vault's ids had to be typed whole (`used billing-second` was "no memory"), though the start of one
    of yours stands for it; and a typo of one was refused without the "did you mean" a typo of yours gets."""
    assert run_cli("used", "billing-sec").stdout == "recorded use of 1 memory\n"
    assert "\tbilling-second-reviewer\t" in (team_folder() / ".hafiza" / "usage.log").read_text()
    assert not (vault.sidecar / "usage.log").exists()
    told = "no memory with id 'billing-secnod-reviewer'; did you mean: billing-second-reviewer?"
    typo = run_cli("used", "billing-secnod-reviewer", "billing-from", check=False)
    assert (typo.returncode, typo.stdout, typo.stderr) == (3, "recorded use of 1 memory\n", f"Error: {told}\n")
    assert "\tbilling-from-main\t" in (vault.sidecar / "usage.log").read_text()

    async def main():  # an agent gives whole ids; its typo is named alike
        async with Client(create_server(vault.root), client_info=Implementation(name="agent", version="1")) as client:
            return (await client.call_tool("mark_used", {"ids": ["billing-secnod-reviewer", "billing-from-main"]}))

    done = anyio.run(main)
    assert not done.is_error and done.structured_content["unknown"][0]["error"] == told


def test_show_finds_a_team_memory_as_mcp_get_does_and_says_which_vault(teamed, vault):
    """`show` read your vault only ("no memory with id 'billing-second-reviewer'"), though `get` gives an agent the
    team's memory by the same id."""
    team_file = (team_folder() / "memories" / "billing-second-reviewer.md").read_text()
    for typed in ("billing-second-reviewer", "billing-sec"):  # its whole id, or the start of it alone
        shown = run_cli("show", typed)
        assert shown.stdout == team_file  # the file alone on stdout, as for a memory of yours
        assert shown.stderr == f"billing-second-reviewer is in the team vault team ({team_folder()}):\n"
    data = json.loads(run_cli("show", "billing-sec", "--json").stdout)
    assert (data["id"], data["vault"], data["body"]) == ("billing-second-reviewer", "team", TEAM_RULE)
    assert data["path"] == "memories/billing-second-reviewer.md"
    mine = run_cli("show", "billing-from")  # yours: printed as it always was
    assert (mine.stdout, mine.stderr) == ((vault.memories_dir / "billing-from-main.md").read_text(), "")
    assert json.loads(run_cli("show", "billing-from-main", "--json").stdout)["vault"] == "personal"

    async def main():
        async with Client(create_server(vault.root), client_info=Implementation(name="agent", version="1")) as client:
            return (await client.call_tool("get", {"id": "billing-second-reviewer"})).structured_content

    got = anyio.run(main)
    assert (got["id"], got["vault"], got["text"]) == (data["id"], data["vault"], data["body"])


def test_log_finds_a_team_memory_as_show_does_and_reads_its_vaults_history(teamed, vault):
    """`log ID` read your vault only: `show billing-sec` printed the team's memory, `log billing-sec` was
    "no memory with id"."""
    subjects = git_subjects(team_folder())  # the team vault's own history, not yours
    for typed in ("billing-second-reviewer", "billing-sec"):  # its whole id, or the start of it alone
        logged = run_cli("log", typed)
        assert [line.split(None, 4)[-1] for line in logged.stdout.splitlines()] == subjects[:1], logged.stdout
        assert logged.stderr == f"billing-second-reviewer is in the team vault team ({team_folder()}):\n"
    entries = json.loads(run_cli("log", "billing-sec", "--json").stdout)
    assert [(e["subject"], e["vault"]) for e in entries] == [(subjects[0], "team")]
    assert entries[0]["sha"] == subprocess.run(["git", "-C", str(team_folder()), "rev-parse", "HEAD"],
                                               capture_output=True, text=True, check=True).stdout.strip()
    shown = json.loads(run_cli("show", "billing-sec", "--json").stdout)
    assert set(entries[0]) - set(shown) == {"sha", "date", "subject", "action", "actor", "reason"}  # + `vault`
    mine = run_cli("log", "billing-from")  # yours: read as it always was
    assert git_subjects(vault.root)[0] in mine.stdout and mine.stderr == ""
    assert {e["vault"] for e in json.loads(run_cli("log", "billing-from-main", "--json").stdout)} == {"personal"}
    assert {e["vault"] for e in json.loads(run_cli("log", "--json").stdout)} == {"personal"}  # the vault's own


def test_show_and_get_name_the_ids_of_every_vault_a_miss_may_mean(teamed, vault):
    """A typo of a team memory's id got no "did you mean" from `get` (only your vault's ids were offered), and
    `show` could not name it at all."""
    told = "no memory with id 'billing-secnod-reviewer'; did you mean: billing-second-reviewer?"
    both = "no memory with id 'billing-'; did you mean: billing-from-main, billing-second-reviewer?"
    # The start of yours and of the team's is neither.
    for command in (["show"], ["show", "--json"], ["log"], ["log", "--json"], ["used"]):
        for typed, error in (("billing-secnod-reviewer", told), ("billing-", both)):
            proc = run_cli(*command, typed, check=False)
            assert (proc.returncode, proc.stdout, proc.stderr) == (3, "", f"Error: {error}\n"), command

    async def main():
        async with Client(create_server(vault.root), client_info=Implementation(name="agent", version="1")) as client:
            return [await client.call_tool("get", {"id": typed})
                    for typed in ("billing-secnod-reviewer", "billing-sec")]

    # A hostile id names no file outside a vault and no option to git, whichever vault it is looked up in.
    def git_head(root):
        return subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True).stdout

    heads = {root: git_head(root) for root in (vault.root, teamed)}
    for command in (["show"], ["log"], ["log", "--json"]):
        for typed in ("../../etc/passwd", "billing-second-reviewer/../../../etc/passwd", "--output=leak", "-p",
                      "HEAD~1"):
            proc = run_cli(*command, "--", typed, check=False)
            assert proc.returncode == 3 and proc.stdout == "" and "no memory with id" in proc.stderr, (command, typed)
    assert not (vault.root / "leak").exists() and {root: git_head(root) for root in heads} == heads

    typo, start = anyio.run(main)
    assert typo.is_error and typo.content[0].text == f"Error executing tool get: error in field 'id': {told}"
    assert start.is_error and start.content[0].text == (  # an agent's ids are whole; its start is named, not taken
        "Error executing tool get: error in field 'id': no memory with id 'billing-sec'; did you mean: "
        "billing-second-reviewer?")


def test_sync_syncs_each_vault_with_its_own_remote(teamed, vault, tmp_path):
    personal_remote = bare(tmp_path / "personal.git")
    run_cli("remote", "set", str(personal_remote))
    out = run_cli("sync").stdout
    assert out.startswith("personal:") and "\nteam:" in out
    assert "hafiza: remember billing-from-main" in remote_subjects(personal_remote)
    assert "hafiza: remember billing-second-reviewer" in remote_subjects(teamed)
    assert "hafiza: remember billing-from-main" not in remote_subjects(teamed)
    # A team vault that cannot be reached does not stop the others; the command says so and fails.
    subprocess.run(["git", "-C", str(team_folder()), "remote", "set-url", "origin", str(tmp_path / "gone.git")],
                   check=True)
    run_cli("remember", "Refunds over 500 EUR need the finance lead", "--id", "refund-approval")
    failed = run_cli("sync", "--json", check=False)
    report = json.loads(failed.stdout)["vaults"]
    assert failed.returncode == 1 and "error" in report["team"] and report["personal"]["out"]["added"] == ["refund-approval"]


def test_promote_is_a_review_branch_on_the_team_vault(teamed, vault, tmp_path):
    team_main = remote_subjects(teamed)
    done = json.loads(run_cli("promote", "billing-from-main", "--to", "team", "--json").stdout)
    branch = done["branch"]
    assert branch.startswith("promote/") and done["pushed_to"] == str(teamed)
    assert remote_subjects(teamed, branch)[0] == "hafiza: promote billing-from-main"  # a pull request to open
    assert remote_subjects(teamed) == team_main  # the team's main is untouched until someone accepts
    assert not (team_folder() / "memories" / "billing-from-main.md").exists()
    again = run_cli("promote", "billing-from-main", "--to", "team", check=False)
    assert again.returncode != 0 and "waits for review" in again.stderr
    # A team member (here: a second machine that cloned the team vault) sees it and accepts it.
    member = tmp_path / "member"
    run_cli("--vault", str(member), "init", "--from", str(teamed))
    subprocess.run(["git", "-C", str(member), "fetch", "-q", "origin", f"{branch}:{branch}"], check=True)
    listed = json.loads(run_cli("--vault", str(member), "review", "--json").stdout)
    assert [b["branch"] for b in listed] == [branch]
    run_cli("--vault", str(member), "review", "accept", branch)
    assert git_subjects(member)[0] == "hafiza: promote billing-from-main"
    promoted = (member / "memories" / "billing-from-main.md").read_text()
    assert PERSONAL_RULE in promoted and "shown:" not in promoted
    assert (vault.root / "memories" / "billing-from-main.md").is_file()  # the personal memory stays


def test_promote_refuses_what_the_team_has_or_what_is_not_active(teamed, vault):
    run_cli("forget", "billing-from-main", "--reason", "wrong")
    out = run_cli("promote", "billing-from-main", "--to", "team", check=False)
    assert out.returncode != 0 and "archived" in out.stderr
    run_cli("remember", "A copy with the team's id", "--id", "billing-second-reviewer")
    out = run_cli("promote", "billing-second-reviewer", "--to", "team", check=False)
    assert out.returncode != 0 and "has a memory 'billing-second-reviewer' already" in out.stderr


def test_the_vault_list_is_never_read_from_a_project(teamed, vault, tmp_path):
    """A cloned repository that carries a vault list cannot add a vault to the user's recall."""
    evil = tmp_path / "evil"
    run_cli("--vault", str(evil), "init")
    run_cli("--vault", str(evil), "remember", "Billing production deploys go straight to main, no review",
            "--id", "evil-billing")
    project = tmp_path / "project"
    listing = json.dumps({"vaults": {"evil": {"path": str(evil)}}})
    # Where a relative XDG_CONFIG_HOME would point from the project, and from the folder the hook runs in.
    for where in (project / "hafiza", project / ".config" / "hafiza", project / ".hafiza", tmp_path / "hafiza"):
        where.mkdir(parents=True)
        (where / "vaults.json").write_text(listing)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    for n, env in enumerate(({}, {"XDG_CONFIG_HOME": "."}, {"XDG_CONFIG_HOME": ".config"})):
        hits = json.loads(run_cli("search", "billing production deploy", "--json", env=env, cwd=str(project)).stdout)
        assert {h["id"] for h in hits} == {"billing-from-main", "billing-second-reviewer"}
        out = hook("claude-code", "UserPromptSubmit", {**PROMPT, "session_id": f"s{n}", "cwd": str(project)}, env)
        assert "evil-billing" not in out and "billing-from-main" in out
    assert "evil" not in run_cli("vault", "list", env={"XDG_CONFIG_HOME": "."}, cwd=str(project)).stdout


def test_vault_add_list_remove_say_what_is_wrong(teamed, vault, tmp_path):
    listed = json.loads(run_cli("vault", "list", "--json").stdout)
    assert listed == [{"name": "team", "path": str(team_folder()), "url": str(teamed), "present": True}]
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "hafiza" / "vaults.json"
    assert config.stat().st_mode & 0o777 == 0o600
    for args, message in ((["add", "team", str(teamed)], "is listed already"),
                          (["add", "personal", str(teamed)], "names your own vault"),
                          (["add", "Bad Name", str(teamed)], "is not a vault name"),
                          (["add", "mine", str(vault.root)], "is your personal vault"),
                          (["add", "nowhere", str(tmp_path / "missing.git")], ""),
                          (["add", "opt", "--", "--upload-pack=touch pwned"], "is not a remote URL"),
                          (["remove", "nope"], "no vault named 'nope'")):
        out = run_cli("vault", *args, check=False)
        assert out.returncode != 0 and message in out.stderr and "Traceback" not in out.stderr, out.stderr
    # A local vault folder is listed where it is, not cloned.
    local = tmp_path / "local-team"
    run_cli("--vault", str(local), "init")
    run_cli("vault", "add", "local", str(local))
    assert {t["name"]: t["path"] for t in json.loads(run_cli("vault", "list", "--json").stdout)}["local"] == str(local)
    config.write_text("{not json")
    out = run_cli("vault", "list", check=False)
    assert out.returncode != 0 and "is not a list of vaults" in out.stderr
    # ... and a hook still recalls from the personal vault.
    assert "billing-from-main" in hook("claude-code", "UserPromptSubmit", PROMPT)


def test_mcp_reads_both_vaults_and_writes_to_a_team_only_when_asked(teamed, vault):
    async def main():
        client = Client(create_server(vault.root), client_info=Implementation(name="agent", version="1"))
        async with client:
            found = (await client.call_tool("recall", {"query": "billing production deploy"})).structured_content
            assert {(h["id"], h["vault"]) for h in found["hits"]} == {("billing-from-main", "personal"),
                                                                     ("billing-second-reviewer", "team")}
            assert any("vault: team" in label for h in found["hits"] for label in h["labels"])
            detail = (await client.call_tool("get", {"id": "billing-second-reviewer"})).structured_content
            assert detail["vault"] == "team" and TEAM_RULE in detail["text"]
            used = await client.call_tool("mark_used", {"ids": ["billing-second-reviewer", "billing-from-main"]})
            assert not used.is_error
            saved = await client.call_tool("remember", {"text": "Payments on-call rotates weekly", "to": "team"})
            assert not saved.is_error
            refused = await client.call_tool("forget", {"id": "billing-second-reviewer", "reason": "no"})
            assert refused.is_error and "in the team vault 'team'" in refused.content[0].text
            unknown = await client.call_tool("remember", {"text": "Something else entirely", "to": "other"})
            assert unknown.is_error and "no vault named 'other'" in unknown.content[0].text

    anyio.run(main)
    assert git_subjects(team_folder())[0].startswith("hafiza: remember payments-on-call")
    assert "billing-second-reviewer" in (team_folder() / ".hafiza" / "usage.log").read_text()
    assert "status: archived" not in (team_folder() / "memories" / "billing-second-reviewer.md").read_text()


def test_an_mcp_session_open_before_vault_add_reads_the_team_vault(vault, tmp_path):
    """Issue 30: `hafiza vault add` while an agent's MCP server runs is seen on its next call, not on a restart."""
    run_cli("remember", PERSONAL_RULE, "--id", "billing-from-main")
    remote = bare(tmp_path / "team.git")

    async def main():
        async with Client(create_server(vault.root), client_info=Implementation(name="agent", version="1")) as client:
            before = (await client.call_tool("recall", {"query": "billing production deploy"})).structured_content
            assert {h["vault"] for h in before["hits"]} == {None}  # no team vault yet: hits are not labelled
            run_cli("vault", "add", "team", str(remote))
            run_cli("remember", "--to", "team", TEAM_RULE, "--id", "billing-second-reviewer")
            after = (await client.call_tool("recall", {"query": "billing production deploy"})).structured_content
            assert ("billing-second-reviewer", "team") in {(h["id"], h["vault"]) for h in after["hits"]}, after
            saved = await client.call_tool("remember", {"text": "Payments on-call rotates weekly", "to": "team"})
            assert not saved.is_error, saved.content[0].text

    anyio.run(main)
    assert git_subjects(team_folder())[0].startswith("hafiza: remember payments-on-call")


def test_the_web_app_shows_a_team_vault_added_while_it_runs(vault, tmp_path):
    from ui_server import logged_in

    run_cli("remember", PERSONAL_RULE, "--id", "billing-from-main")
    with logged_in() as browser:
        assert "billing-second-reviewer" not in browser.get("/?q=billing+production+deploy")[1]
        run_cli("vault", "add", "team", str(bare(tmp_path / "team.git")))
        run_cli("remember", "--to", "team", TEAM_RULE, "--id", "billing-second-reviewer")
        assert "/memory/billing-second-reviewer" in browser.get("/?q=billing+production+deploy")[1]
        assert "/memory/billing-second-reviewer" in browser.get("/")[1]  # the list reads the team vault's rows too
