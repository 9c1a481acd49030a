"""The secrets corpus through every way bytes reach git: nothing secret is ever committed, and the
look-alikes are committed untouched (hardening issue: "the secrets corpus through all five write paths
with `git log -p` checked for every secret").

The five paths: `remember` (what the CLI calls), `import`, the MCP `remember` tool with a real client,
a hand edit committed as "record manual edits", and the episode log with its lesson.
"""

from __future__ import annotations

import json

import anyio
import pytest
from mcp import Client
from mcp_types import Implementation

from conftest import git_subjects, run_cli
from hafiza.hooks.mcp import create_server
from hafiza.vault import episodes
from hafiza.vault.errors import HafizaError, SecretRefused
import secret_writes
import secrets_heldout as heldout
from secrets_corpus import LOOKALIKES, SECRET_VALUES, SECRETS


history = secret_writes.history


def leaked(root) -> list[str]:
    """Names of corpus secrets whose value is anywhere in the vault's history."""
    log = history(root)
    return [name for name, value in SECRET_VALUES.items() if value in log]


def through_remember(vault, text) -> None:
    vault.remember(text)


def through_import(vault, text) -> None:
    vault.import_many([{"text": "A note from the old wiki.", "title": "Wiki note", "source": "wiki"},
                       {"text": text}], source="import:corpus.jsonl")


def through_hand_edit(vault, text) -> None:
    secret_writes.write_by_hand(vault, text)


def through_episode(vault, text) -> None:
    episodes.record(vault, "Rotate the staging credentials", "success", "Rotated them.", lesson=text)


PATHS = [through_remember, through_import, through_hand_edit, through_episode]


@pytest.mark.parametrize("write", PATHS, ids=lambda f: f.__name__)
def test_no_corpus_secret_reaches_git(vault, write):
    refused = []
    for name, text in SECRETS:
        head = git_subjects(vault.root)
        try:
            write(vault, text)
        except SecretRefused:
            refused.append(name)
        assert git_subjects(vault.root) == head, name  # refused whole: not even the rest of the write
    assert sorted(refused) == sorted(name for name, _ in SECRETS)
    assert leaked(vault.root) == []


def test_no_corpus_secret_reaches_git_through_mcp(vault):
    async def main():
        async with Client(create_server(vault.root), client_info=Implementation(name="agent", version="1")) as c:
            for name, text in SECRETS:
                result = await c.call_tool("remember", {"text": text})
                assert result.is_error and "secret" in result.content[0].text, name
            for name, text in LOOKALIKES:
                result = await c.call_tool("remember", {"text": text, "title": f"Look-alike {name}"})
                assert not result.is_error, (name, result.content[0].text)

    anyio.run(main)
    assert leaked(vault.root) == []
    assert len(git_subjects(vault.root)) == 1 + len(LOOKALIKES)


@pytest.mark.parametrize("write", [through_remember, through_import, through_hand_edit], ids=lambda f: f.__name__)
def test_look_alikes_are_committed_as_written(vault, write):
    for name, text in LOOKALIKES:
        try:
            write(vault, text)
        except HafizaError as exc:
            pytest.fail(f"{name}: {exc.message}")
        assert not vault.warnings, (name, vault.warnings)
    log = history(vault.root)
    if write is not through_hand_edit:  # the hand-edited file is removed again after each write
        missing = [name for name, text in LOOKALIKES if text.splitlines()[0][:60] not in log]
        assert missing == []


def test_a_secret_in_a_cli_import_file_refuses_the_whole_import(vault, tmp_path):
    source = tmp_path / "corpus.jsonl"
    source.write_text("".join(json.dumps({"text": text}) + "\n" for _, text in SECRETS[:10]), encoding="utf-8")
    proc = run_cli("import", str(source), check=False)
    assert proc.returncode == 4 and "secret" in proc.stderr
    proc = run_cli("import", str(source), "--skip-invalid", check=False)
    assert proc.returncode == 0 and proc.stderr.count("skipped:") == 10
    assert leaked(vault.root) == []


# Issue 29: the typed-password corpus through every write path (tests/secret_writes.py), the MCP tools
# through the real SDK client. What is not refused must be a known miss, and nothing else reaches git.


@pytest.mark.parametrize("path", list(secret_writes.PATHS))
def test_typed_passwords_are_refused_on_every_write_path(vault, path):
    write = secret_writes.PATHS[path]
    refused = write(vault, [text for _, text, _ in heldout.SECRETS])
    log = secret_writes.history(vault.root)
    leaked = [name for name, _, value in heldout.SECRETS if value in log]
    if path == "capture":  # a capture only sees what reads as a statement; the rest never reaches git at all
        assert set(leaked) <= set(heldout.KNOWN_MISSES)
    else:
        assert leaked == list(heldout.KNOWN_MISSES)
        assert [name for (name, _, _), no in zip(heldout.SECRETS, refused) if not no] == list(heldout.KNOWN_MISSES)
    passed = write(vault, [text for _, text in heldout.LOOKALIKES])
    assert [name for (name, _), no in zip(heldout.LOOKALIKES, passed) if no] == []
