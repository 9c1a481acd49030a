"""The episode log: append-only JSON lines per month, a lesson memory in the same commit."""

import datetime as dt
import json
import subprocess

import pytest

from conftest import git_subjects
from hafiza.vault import episodes
from hafiza.vault.errors import HafizaError, SecretRefused
from hafiza.vault.store.vault import Vault

WHEN = dt.datetime(2026, 11, 30, 14, 5, 9).astimezone()


def clean(root) -> bool:
    return subprocess.run(["git", "-C", str(root), "status", "--porcelain"], capture_output=True,
                          text=True).stdout == ""


def test_an_episode_is_one_json_line_in_the_months_file_and_one_commit(vault):
    episode, lesson = episodes.record(vault, "Upgrade Node", "partial", "Tests pass; e2e still flaky.", now=WHEN)
    assert lesson is None
    path = vault.root / "episodes" / "2026-11.jsonl"
    line = json.loads(path.read_text(encoding="utf-8"))
    assert line == {"id": episode.id, "time": episode.time, "task": "Upgrade Node", "outcome": "partial",
                    "what_happened": "Tests pass; e2e still flaky.", "actor": "cli"}
    assert episode.id.startswith("ep-20261130-140509-")
    assert git_subjects(vault.root)[0] == f"hafiza: episode {episode.id} (partial)"
    assert vault.git.changed_paths(vault.git.head()) == ["episodes/2026-11.jsonl"]
    assert clean(vault.root)


def test_a_lesson_becomes_a_lesson_memory_in_the_same_commit(vault):
    vault.actor = "codex"
    episode, lesson = episodes.record(vault, "Migrate orders", "failure", "The migration locked the table.",
                                      "Add indexes concurrently on the orders table.", scope="project:billing-api")
    stored = vault.get(lesson.id)
    assert (stored.type, stored.scope, stored.source) == ("lesson", "project:billing-api", f"episode:{episode.id}")
    assert episode.lesson_id == lesson.id and episodes.read(vault.root)[0]["lesson_id"] == lesson.id
    head = vault.git.log(1)[0]
    assert head.subject == f"hafiza: episode {episode.id} (failure), lesson {lesson.id}"
    assert head.trailers["Hafiza-Actor"] == "codex" and head.trailers["Hafiza-Reason"] == "Migrate orders"
    assert sorted(vault.git.changed_paths(head.sha)) == [f"episodes/{episode.time[:7]}.jsonl",
                                                         f"memories/{lesson.id}.md"]


def test_episodes_append_and_read_back_in_order(vault):
    ids = [episodes.record(vault, f"Task {n}", "success", f"Done {n}.", now=WHEN)[0].id for n in range(3)]
    later = WHEN + dt.timedelta(days=2)  # December: a new file
    ids.append(episodes.record(vault, "Task 3", "success", "Done 3.", now=later)[0].id)
    assert [e["id"] for e in episodes.read(vault.root)] == ids
    assert [e["id"] for e in episodes.read(vault.root, "2026-11")] == ids[:3]
    assert len(git_subjects(vault.root)) == 1 + 4


@pytest.mark.parametrize("args, field", [
    (("", "success", "x"), "task"),
    (("t", "success", "  "), "what_happened"),
    (("t", "meh", "x"), "outcome"),
    (("t", "success", "x", "   "), None),  # an empty lesson is no lesson
])
def test_invalid_input_names_the_field_and_writes_nothing(vault, args, field):
    before = git_subjects(vault.root)
    if field is None:
        assert episodes.record(vault, *args)[1] is None
        return
    with pytest.raises(HafizaError) as info:
        episodes.record(vault, *args)
    assert info.value.field == field
    assert git_subjects(vault.root) == before and not (vault.root / "episodes").exists()


@pytest.mark.parametrize("where", ["task", "what_happened", "lesson"])
def test_a_secret_anywhere_is_refused_before_anything_is_written(vault, where):
    key = "sk-" + "ant-" + "api03-" + "Xy7Kq2Lm9Np4Rs6Tv8Wz1Bc3"  # built at run time; not a real key
    fields = {"task": "Rotate keys", "what_happened": "Rotated them.", "lesson": "Use the vault."}
    fields[where] = f"The key was {key}."
    with pytest.raises(SecretRefused) as info:
        episodes.record(vault, fields["task"], "success", fields["what_happened"], fields["lesson"])
    assert info.value.field == where and "Anthropic API key" in info.value.message
    assert len(git_subjects(vault.root)) == 1 and not (vault.root / "episodes").exists()
    assert list(vault.memories_dir.glob("*.md")) == []


def test_a_failed_commit_takes_the_episode_and_lesson_back(vault):
    episodes.record(vault, "First", "success", "Fine.", now=WHEN)
    log = vault.root / "episodes" / "2026-11.jsonl"
    before = log.read_bytes()

    class Broken(Vault):
        def commit(self, *args, **kwargs):
            raise HafizaError("git commit failed")

    broken = Broken(vault.root)
    with pytest.raises(HafizaError):
        episodes.record(broken, "Second", "failure", "Oops.", "A lesson that must not stay.", now=WHEN)
    assert log.read_bytes() == before and list(vault.memories_dir.glob("*.md")) == []


def test_a_hand_edited_log_without_a_final_newline_stays_line_per_episode(vault):
    episodes.record(vault, "First", "success", "Fine.", now=WHEN)
    log = vault.root / "episodes" / "2026-11.jsonl"
    log.write_text(log.read_text().rstrip("\n") + "\nnot json", encoding="utf-8")
    episodes.record(vault, "Second", "success", "Also fine.", now=WHEN)
    assert [e["task"] for e in episodes.read(vault.root)] == ["First", "Second"]
    subjects = git_subjects(vault.root)
    assert subjects[1] == "hafiza: record manual edits" and subjects[0].startswith("hafiza: episode")
