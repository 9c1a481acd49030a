"""Capture: explicit statements in sessions become proposals in the inbox (a review branch), without a model."""

import json

import pytest

from conftest import git_subjects, run_cli
from hafiza.indexer.recall import Recall
from hafiza.skills import capture, implicit
from hafiza.skills.statements import find
from hafiza.skills.transcripts import Turn
from hafiza.vault.store import usage
from hafiza.vault.errors import GitError, HafizaError
from hafiza.vault.review import Review
from secrets_corpus import SECRETS
from test_sessions import home  # noqa: F401  (the fixture: a HOME with the recorded transcripts)

from statements_corpus import EXPLICIT, HELD_OUT_EXPLICIT, HELD_OUT_LOOKALIKES, LOOKALIKES


def turns(*texts, session="s-1", role="user"):
    return [Turn(f"k{i}", "claude-code", session, "webshop", role, f"2026-11-30T10:00:{i:02d}.000Z", i, text)
            for i, text in enumerate(texts)]


# ---- finding explicit statements

@pytest.mark.parametrize("explicit, lookalikes", [(EXPLICIT, LOOKALIKES), (HELD_OUT_EXPLICIT, HELD_OUT_LOOKALIKES)])
def test_precision_and_recall_on_statements_and_look_alikes(explicit, lookalikes):
    found = sum(bool(find(text)) for text, _ in explicit)
    wrong = [text for text in lookalikes if find(text)]
    assert found / len(explicit) >= 0.8                 # the targets
    assert found / (found + len(wrong)) >= 0.9
    assert sum(bool(f) and f[0].type == kind for f, (_, kind) in
               ((find(t), (t, k)) for t, k in explicit)) / len(explicit) >= 0.9


def test_the_memory_text_drops_the_cue_and_keeps_the_users_words():
    assert find("Remember that the staging database resets every Monday at 06:00 UTC.")[0].text == \
        "The staging database resets every Monday at 06:00 UTC."
    assert find("Şunu unutma, fatura numaraları yıl bazında boşluksuz olmalı.")[0] == (
        "Fatura numaraları yıl bazında boşluksuz olmalı.", "rule",
        "Şunu unutma, fatura numaraları yıl bazında boşluksuz olmalı.")
    assert find('"Please remember: deploys go out on Thursdays only."')[0].text == "Deploys go out on Thursdays only."
    assert find("ok. Never push to main on Fridays. Thanks!")[0].text == "Never push to main on Fridays."
    assert find("never push to main on fridays?") == []  # a question asks


# ---- filing into the inbox

def test_statements_are_proposed_on_a_capture_branch_and_main_is_untouched(vault):
    before = git_subjects(vault.root)
    report = capture.file(vault, turns("ok go ahead", "From now on run the tests with pnpm, not npm.",
                                       "It's always the same error.", "Unutma: staging her pazartesi sıfırlanıyor.")
                          + turns("Always squash merge.", role="assistant"))
    assert report.proposed == ["from-now-on-run-the-tests-with-pnpm-not-npm", "staging-her-pazartesi-sifirlaniyor"]
    assert git_subjects(vault.root) == before and not list((vault.root / "memories").glob("*.md"))
    [(branch, first), (_, second)] = capture.inbox(vault)
    assert branch.name == report.branch and branch.name.startswith("capture/")
    assert first.action == "capture" and first.commit.trailers["Hafiza-Actor"] == "capture"
    assert first.to_json()["evidence"] == ('claude-code:s-1 2026-11-30T10:00:01.000Z: '
                                           '"From now on run the tests with pnpm, not npm."')
    assert Recall(vault.root).search("pnpm tests", mode="keyword") == []  # not in recall before it is accepted


def test_accept_and_reject_and_a_rejected_statement_is_not_proposed_again(vault):
    said = turns("Never push to main on Fridays.", "I prefer small commits with one change each.")
    branch = capture.file(vault, said).branch
    [accepted] = capture.decide(vault, [2], accept=True)
    assert (accepted.number, accepted.branch, accepted.result) == (2, branch, accepted.commit)
    assert accepted.commit == vault.git.head()
    memory = vault.get("i-prefer-small-commits-with-one-change-each")
    assert (memory.type, memory.source) == ("preference", "session:s-1")
    [rejected] = capture.decide(vault, [], accept=False, why="not a rule")
    assert (rejected.number, rejected.result, rejected.commit) == (1, "rejected", vault.git.head())
    assert capture.inbox(vault) == []
    assert git_subjects(vault.root)[:2] == [f"hafiza: reject 1 proposal of {branch}",
                                            "hafiza: capture i-prefer-small-commits-with-one-change-each"]
    again = capture.file(vault, said, recall=Recall(vault.root))  # one ruled out, one already a memory
    assert again.proposed == [] and again.skipped == 1 and again.used == [memory.id]
    with pytest.raises(HafizaError, match="the inbox is empty"):
        capture.decide(vault, [1], accept=True)


def test_a_restatement_records_a_use_and_a_change_is_proposed_as_a_supersede(vault):
    old = vault.remember("We use yarn for the frontend packages.", type="preference")
    rule = vault.remember("Never push to main on Fridays.", type="rule")
    recall = Recall(vault.root)
    report = capture.file(vault, turns("Never push to main on Fridays!", "No, we use pnpm for the frontend packages, not yarn."),
                          recall=recall)
    assert report.used == [rule.id] and usage.pending(vault.sidecar)[rule.id].used == 1
    [(_, proposal)] = capture.inbox(vault)
    assert proposal.ids == [report.proposed[0], old.id]
    capture.decide(vault, [1], accept=True)
    assert vault.get(old.id).superseded_by == report.proposed[0]


def test_auto_accepts_the_explicit_statements(vault):
    report = capture.file(vault, turns("Bundan sonra testleri pnpm ile çalıştır.", "Asla main'e doğrudan push etme."),
                          auto=True)
    assert len(report.accepted) == 2 and capture.inbox(vault) == []
    assert git_subjects(vault.root)[:2] == ["hafiza: capture asla-main-e-dogrudan-push-etme",
                                            "hafiza: capture bundan-sonra-testleri-pnpm-ile-calistir"]


def two_branches(vault) -> tuple[str, str]:
    """Two capture branches of two proposals each: inbox items 1-2 and 3-4."""
    first = capture.file(vault, turns("Never push to main on Fridays.", "I prefer small commits, one change each."))
    second = capture.file(vault, turns("Always run the linter before pushing.", "From now on use pnpm, not npm.",
                                       session="s-2"))
    assert first.branch != second.branch
    return first.branch, second.branch


def test_decisions_carry_the_inbox_numbers_and_a_ruling_commit_per_branch(vault):
    first, second = two_branches(vault)
    rejected = capture.decide(vault, [1, 3, 4], accept=False, why="not now")
    assert [(d.number, d.branch, d.proposal.number, d.result) for d in rejected] == [
        (1, first, 1, "rejected"), (3, second, 1, "rejected"), (4, second, 2, "rejected")]
    rulings = [c.sha for c in vault.git.log(2)]  # one commit a branch: the newest is the second branch's
    assert [d.commit for d in rejected] == [rulings[1], rulings[0], rulings[0]]
    assert git_subjects(vault.root)[:2] == [f"hafiza: reject 2 proposals of {second}",
                                            f"hafiza: reject 1 proposal of {first}"]
    [left] = capture.decide(vault, [], accept=True)
    assert (left.number, left.branch, left.commit) == (2, first, vault.git.head())


def test_a_statement_holding_a_secret_is_never_proposed(vault):
    token = dict(SECRETS)["github-classic"]
    report = capture.file(vault, turns(f"Remember that {token}"))
    assert report.proposed == [] and report.skipped == 1


def test_a_branch_written_by_another_run_meanwhile_is_refused(vault):
    review = Review(vault, actor="capture")
    actions = [capture._action(vault, find("Never push to main on Fridays.")[0], turns("x")[0], "k", vault.taken(),
                               [], None)]
    name = review.start("capture")
    review.propose_all(name, actions)
    with pytest.raises(GitError, match="moved"):
        vault.git.commit_chain(name, vault.git.head(), [(actions[0].files, "x")])


# ---- the command line

def test_inbox_commands(vault, home):  # noqa: F811
    env = {"HOME": str(home)}
    run_cli("sessions", "import", env=env)
    out = run_cli("inbox", "file").stdout
    assert out.startswith("9 sessions: 4 proposed on capture/")
    listed = json.loads(run_cli("inbox", "--json").stdout)
    assert [p["number"] for p in listed] == [1, 2, 3, 4]
    assert {p["subject"] for p in listed} >= {"capture our-ci-runs-on-buildkite"}
    assert "rejected" in run_cli("inbox", "reject", "1", "--why", "a test").stdout
    # the numbers stay with their items while the inbox is worked through
    assert [p["number"] for p in json.loads(run_cli("inbox", "--json").stdout)] == [2, 3, 4]
    assert run_cli("inbox", "accept", "2", "4").stdout.count("accepted as") == 2
    assert run_cli("inbox").stdout.startswith("  3  ")
    missing = run_cli("inbox", "accept", "1", check=False)
    assert missing.returncode == 1 and missing.stderr.strip() == "Error: the inbox has no item 1; it has 3"
    assert run_cli("inbox", "file").stdout.startswith("0 sessions: 0 proposed")
    assert "Usage: hafiza inbox file" in run_cli("inbox", "file", "--help").stdout


def test_inbox_accept_and_reject_json_name_each_item_as_listed_and_its_commit(vault):
    first, second = two_branches(vault)
    listed = {p["number"]: p for p in json.loads(run_cli("inbox", "--json").stdout)}
    accepted = json.loads(run_cli("inbox", "accept", "2", "3", "--json").stdout)
    shas = [c.sha for c in vault.git.log(2)][::-1]  # one commit each, in the order decided
    assert accepted == [
        {"number": 2, "branch": first, "action": "capture", "memories": listed[2]["memories"],
         "result": shas[0], "commit": shas[0]},
        {"number": 3, "branch": second, "action": "capture", "memories": listed[3]["memories"],
         "result": shas[1], "commit": shas[1]}]
    assert all(vault.get(item["memories"][0]).status == "active" for item in accepted)
    rejected = json.loads(run_cli("inbox", "reject", "--why", "not now", "--json").stdout)
    rulings = [c.sha for c in vault.git.log(2)][::-1]  # a ruling a branch
    assert rejected == [
        {"number": 1, "branch": first, "action": "capture", "memories": listed[1]["memories"],
         "result": "rejected", "commit": rulings[0]},
        {"number": 4, "branch": second, "action": "capture", "memories": listed[4]["memories"],
         "result": "rejected", "commit": rulings[1]}]
    assert json.loads(run_cli("inbox", "--json").stdout) == []
    before = vault.git.head()
    missing = run_cli("inbox", "reject", "1", "--json", check=False)  # a failure: one Error line, stdout empty
    assert (missing.returncode, missing.stdout, missing.stderr) == (1, "", "Error: the inbox is empty\n")
    assert vault.git.head() == before


def test_a_growing_session_is_filed_from_where_it_stopped(vault, home):  # noqa: F811
    from hafiza.skills import sources
    from hafiza.skills.conversations import Conversations
    from test_sessions import CLAUDE, user_line, where

    conversations = Conversations(vault.root)
    conversations.ingest(sources.files(where(home)))
    count, first = capture.file_sessions(vault, conversations, recall=Recall(vault.root), auto=True)
    assert count == 9 and len(first.accepted) == len(first.proposed) == 4
    with open(home / CLAUDE, "a", encoding="utf-8") as fh:  # the session goes on, and ends again
        fh.write(user_line("231c160a-4a98-48bf-a1dd-879920902d70", "From now on write the changelog in English."))
    conversations.ingest(sources.files(where(home)))
    count, second = capture.file_sessions(vault, conversations, recall=Recall(vault.root),
                                          only=sorted(conversations.touched))
    assert count == 1 and second.proposed == ["from-now-on-write-the-changelog-in-english"]
    assert second.used == []  # what was filed before is not taken for a restatement of itself


# ---- with a model: implicit statements, nominated by the model and kept or refused by code

CHAT = (turns("the deploy failed again", session="s-2")
        + turns("Looks like the cache was warm. Clearing it fixed the deploy.", session="s-2", role="assistant")
        + turns("ok so the staging deploy needs the CDN cache purged first, that bit us twice now",
                "we moved billing to the eu-west-1 account last month",
                "Always squash merge.", session="s-2"))


def _item(text, quote, type="lesson", confidence=0.9):
    return {"text": text, "type": type, "quote": quote, "confidence": confidence}


def _with_model(vault, answers, said=CHAT, budget=10, **kw):
    from hafiza.vault.offline.provider import Budget, OpenAIProvider
    from model_server import ModelServer

    with ModelServer(answers) as server:
        provider = Budget(OpenAIProvider(server.url + "/v1", "scripted", backoff=0), budget)
        report = capture.file(vault, said, nominate=implicit.nominator(provider), **kw)
    return report, server.requests, provider


def test_a_model_nominates_what_the_user_said_without_a_cue_and_it_waits_in_the_inbox(vault):
    answer = {"memories": [
        _item("The staging deploy needs the CDN cache purged first.",
              "the staging deploy needs the CDN cache purged first, that bit us twice"),
        _item("Billing runs in the eu-west-1 account.", "we moved billing to the eu-west-1 account", "knowledge")]}
    report, requests, provider = _with_model(vault, [answer], auto=True)
    assert report.implicit == ["the-staging-deploy-needs-the-cdn-cache-purged-first",
                               "billing-runs-in-the-eu-west-1-account"]
    assert report.proposed == ["always-squash-merge", *report.implicit]
    # the model was shown the conversation, both sides, and asked for the user's words only
    assert "user: we moved billing" in requests[0].prompt and "assistant: Looks like the cache" in requests[0].prompt
    assert provider.calls == 1
    # --auto took the explicit statement; the model's nominations wait for a person
    assert len(report.accepted) == 1 and vault.get("always-squash-merge").type == "rule"
    [(_, first), (_, second)] = capture.inbox(vault)
    assert first.ids == ["the-staging-deploy-needs-the-cdn-cache-purged-first"]
    trailers = first.commit.trailers
    assert trailers["Hafiza-Confidence"] == "0.90" and "model-nominated" in trailers["Hafiza-Guards"]
    assert trailers["Hafiza-Reason"].startswith("a model read it in the user's words")
    assert "that bit us twice" in trailers["Hafiza-Evidence"]
    [accepted] = capture.decide(vault, [3], accept=True)  # item 1, accepted by --auto, keeps its number
    assert accepted.number == 3 and accepted.proposal.ids == ["billing-runs-in-the-eu-west-1-account"]
    assert vault.get("billing-runs-in-the-eu-west-1-account").source == "session:s-2"


@pytest.mark.parametrize("item, why", [
    (_item("Clear the CDN cache before a deploy.", "Clearing it fixed the deploy."), "from the agent"),
    (_item("Deploys need a manager's sign-off.", "deploys need a sign-off from a manager"), "not in the transcript"),
    (_item("Production runs on Kubernetes 1.29 in Frankfurt.", "we moved billing to the eu-west-1 account"),
     "not the user's"),
    (_item("Billing moved to eu-west-1.", "we moved billing to the eu-west-1 account", type="fact"), "type"),
    (_item("Billing moved to eu-west-1.", "we moved billing to the eu-west-1 account", type="banana"), "type"),
    (_item("Billing moved to eu-west-1 account.", "we moved billing to the eu-west-1 account", confidence=0.4),
     "confidence"),
    (_item("Always squash merge when merging.", "Always squash merge."), "explicit"),
    (_item("Billing deploys use the key ghp_8f2KcXq9LmN4vR7tY1wZ3aB6dE0gH5jK2pQs now.",
           "we moved billing to the eu-west-1 account"), "secret"),
])
def test_code_refuses_what_a_confidently_wrong_model_nominates(vault, item, why):
    report, _, _ = _with_model(vault, [{"memories": [item]}])
    assert report.implicit == [] and report.proposed == ["always-squash-merge"]
    [dropped] = report.dropped
    assert why in dropped.why


def test_a_model_answer_that_does_not_validate_is_discarded_and_the_explicit_ones_still_land(vault):
    report, _, provider = _with_model(vault, ["I think the user wants the cache purged.",
                                              {"memories": [{"text": "x"}]}],
                                      said=CHAT + turns("more words here", session="s-3"))
    assert provider.invalid == 2 and report.implicit == [] and report.proposed == ["always-squash-merge"]


def test_the_model_budget_bounds_the_calls(vault):
    said = CHAT + turns("the queue worker restarts at midnight because of the memory leak", session="s-3")
    report, requests, provider = _with_model(vault, [{"memories": []}] * 3, said=said, budget=1)
    assert len(requests) == 1 and provider.spent and report.proposed == ["always-squash-merge"]


def test_without_a_model_the_explicit_statements_are_all_there_is(vault):
    from hafiza.vault.offline.provider import Budget, NoProvider

    report = capture.file(vault, CHAT, nominate=implicit.nominator(Budget(NoProvider(), 10)))
    assert report.proposed == ["always-squash-merge"] and report.implicit == report.dropped == []


def test_inbox_file_with_a_model_on_the_command_line_and_no_transcript_secret_reaches_it(vault, home):  # noqa: F811
    from model_server import ModelServer
    from test_sessions import CLAUDE, user_line

    _, text = SECRETS[0]
    secret = "AKIA15ZTW4IFKYZIVCIR"
    assert secret in text
    with open(home / CLAUDE, "a", encoding="utf-8") as fh:
        fh.write(user_line("231c160a-4a98-48bf-a1dd-879920902d70", text))
    env = {"HOME": str(home)}
    run_cli("sessions", "import", env=env)
    with ModelServer(lambda prompt: {"memories": []}) as server:
        out = json.loads(run_cli("inbox", "file", "--model", f"openai:scripted@{server.url}/v1", "--json",
                                 env=env).stdout)
    assert out["model"]["calls"] == len(server.requests) >= 1 and out["sessions"] == 9
    assert len(out["proposed"]) == 4 and out["by_model"] == []
    assert all(secret not in json.dumps(r.body) for r in server.requests)
    plain = run_cli("inbox", "file", "--model", "none", env=env).stdout
    assert plain.startswith("0 sessions") and "model:" not in plain


@pytest.mark.parametrize("said", ["Remember that my GitHub token is {token}, use it for the release bot.",
                                  "Unutma: deploy token'ımız {token}, release botu için kullan."])
def test_a_statement_that_held_a_secret_is_not_proposed_masked(vault, said):
    """Issue 30, item 8: the conversation index holds turns with their secrets masked; a statement that
    held one is no memory, "[secret removed: ...]" in its place or not."""
    from hafiza.skills.conversations import document

    token = dict(SECRETS)["github-classic"]
    [turn] = turns(said.format(token=token))
    shown = document(turn, "claude-code")["shown"]  # what `inbox file` reads back from the index
    assert token not in shown and "[secret removed" in shown
    report = capture.file(vault, [turn._replace(text=shown)])
    assert report.proposed == [] and report.skipped == 1 and capture.inbox(vault) == []
