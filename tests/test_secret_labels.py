"""Passwords and PINs after a short label (a new user's trial): `hafiza remember "pw: …"` was kept, its id and
commit subject carrying the password, and `password=Abc12345!` was kept as "a placeholder". Each is refused
on every write path before anything is written: no commit, no file, nothing under .hafiza/; the prose and
placeholders around such labels pass as they did (tests/secrets_labels.py).
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess

import pytest

import secret_writes
import secrets_labels as labels
from conftest import git_subjects, run_cli
from hafiza.vault.errors import SecretRefused
from hafiza.vault.format.ids import slugify
from hafiza.vault.guard.secrets import Scan, mask, scan
from ui_server import Client, Server

TRIAL = dict((name, (text, value)) for name, text, value in labels.SECRETS)
PW_TEXT, PW = TRIAL["trial-pw-colon"]


@pytest.mark.parametrize("name, text, value", labels.SECRETS, ids=[name for name, _, _ in labels.SECRETS])
def test_a_labelled_password_is_refused_and_masked(name, text, value):
    assert value in text and scan(text).secrets
    assert value not in mask(text)


@pytest.mark.parametrize("name, text", labels.LOOKALIKES, ids=[name for name, _ in labels.LOOKALIKES])
def test_prose_and_placeholders_around_a_label_pass_without_a_warning(name, text):
    assert scan(text) == Scan([], [])


@pytest.mark.parametrize("name, text", labels.EXAMPLES, ids=[name for name, _ in labels.EXAMPLES])
def test_a_templates_value_passes_with_a_warning(name, text):
    found = scan(text)
    assert found.secrets == [] and len(found.examples) == 1


def test_a_password_with_a_run_of_digits_is_no_placeholder():
    """`is_example` reads 12345 inside a token as a fill-in (ghp_1234567890abcdef...); a password is not one."""
    text, value = TRIAL["trial-password-sequence"]
    assert scan(text).secrets == ["assigned password"]
    assert scan("password=12345678").secrets == []  # the run alone is what a template says


# ---- nothing is written: not the memory, not its id, not a line under .hafiza/

def _state(root) -> dict[str, str]:
    """Every file of the vault but git's own, by content; the writer lock holds only the last writer's pid."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(root).parts and p.name != "write.lock"}


def _in_a_slug(value: str) -> str:
    """The longest piece of `value` an id made from it would hold (hunter2xy of hunter2Xy!9zz)."""
    return max(re.findall(r"[a-z0-9]+", value.lower()), key=len)


def _history(root) -> str:
    return subprocess.run(["git", "-C", str(root), "log", "--all", "-p", "--format=%H %s%n%b"], capture_output=True,
                          text=True, check=True).stdout


COMMANDS = {
    "remember": ["remember", PW_TEXT],
    "remember --title": ["remember", "The router in the office", "--title", PW_TEXT],
    "remember --alias": ["remember", "The router in the office", "--alias", PW_TEXT],
    "remember --tag": ["remember", "The router in the office", "--tag", PW_TEXT],
    "edit --text": ["edit", "target", "--text", f"Staging runs on port 8080; {PW_TEXT}"],
    "alias": ["alias", "target", PW_TEXT],
    "fact set": ["fact", "set", "router", "pw", PW],
    "import": ["import", "items.jsonl"],
}


@pytest.mark.parametrize("command", COMMANDS)
def test_the_cli_refuses_it_and_writes_nothing(vault, tmp_path, command):
    (tmp_path / "items.jsonl").write_text(json.dumps({"title": PW_TEXT, "text": "The router in the office"}) + "\n")
    run_cli("remember", "Staging runs on port 8080.", "--id", "target")
    subjects, state = git_subjects(vault.root), _state(vault.root)
    proc = run_cli(*COMMANDS[command], check=False)
    assert proc.returncode == 4 and "looks like a secret" in proc.stderr
    assert PW not in proc.stdout + proc.stderr
    assert git_subjects(vault.root) == subjects and _state(vault.root) == state
    assert PW not in _history(vault.root) and _in_a_slug(PW) not in _history(vault.root)


@pytest.mark.parametrize("path", list(secret_writes.PATHS))
def test_every_write_path_keeps_them_out_of_git_the_files_and_the_sidecar(vault, path):
    """The library and the MCP tools through the real client (tests/secret_writes.py); what each leaves on disk
    is searched for the value and for the slug an id would make of it."""
    write = secret_writes.PATHS[path]
    refused = write(vault, [text for _, text, _ in labels.SECRETS])
    if path != "capture":  # capture files only what reads as a statement; the rest is never written at all
        assert [name for (name, _, _), no in zip(labels.SECRETS, refused) if not no] == []
    history = _history(vault.root)
    on_disk = "\n".join([*_state(vault.root), *(p.read_text("utf-8", "replace") for p in vault.root.rglob("*")
                                                 if p.is_file() and ".git" not in p.relative_to(vault.root).parts)])
    for name, _, value in labels.SECRETS:
        for form in (value, _in_a_slug(value)):
            # As a word: a PIN's four digits are inside some sha or nanosecond mtime by chance.
            alone = re.compile(rf"(?<![0-9A-Za-z]){re.escape(form)}(?![0-9A-Za-z])")
            assert not alone.search(history) and not alone.search(on_disk), (name, form)
    passed = write(vault, [text for _, text in labels.LOOKALIKES])
    assert [name for (name, _), no in zip(labels.LOOKALIKES, passed) if no] == []


def test_prose_around_a_label_is_remembered_without_a_warning(vault):
    for name, text in labels.LOOKALIKES:
        vault.remember(text, title=f"Look-alike {name}")
        assert vault.warnings == [], name


# ---- ids: made from the text after the guard has read it, never carrying what follows a label


def test_the_trials_memory_would_have_had_the_password_as_its_id():
    assert slugify("pw: hunter2" + "Xy!9zz") == "pw"  # it was pw-hunter2xy-9zz


@pytest.mark.parametrize("text, memory_id", [
    ("wifi pw Kedi2024x for the guests", "wifi-pw-for-the-guests"),  # no separator: not refused
    ("pin 4821 for the office door", "pin-for-the-office-door"),
    ("password: Example123! in the demo template", "password-in-the-demo-template"),  # kept, with a warning
    ("Pin Node 20 in CI", "pin-node-20-in-ci"),
    ("pw reset flow lives in auth", "pw-reset-flow-lives-in-auth"),
    ("Şifre sıfırlama linki 30 dakika geçerli", "sifre-sifirlama-linki-30-dakika-gecerli"),
])
def test_an_id_made_from_the_text_leaves_out_what_follows_a_label(vault, text, memory_id):
    memory = vault.remember(text)
    assert memory.id == memory_id and memory.path.name == f"{memory_id}.md"
    assert git_subjects(vault.root)[0] == f"hafiza: remember {memory_id}"


def test_a_refused_write_with_an_id_of_its_own_names_no_file(vault):
    with pytest.raises(SecretRefused):
        vault.remember("The office router", id="office-router", aliases=[PW_TEXT])
    assert not vault.path_of("office-router").exists() and git_subjects(vault.root) == ["hafiza: init vault"]


# ---- the web page: the edit box and the alias box


@pytest.fixture
def client(vault):
    server = Server(env={"HAFIZA_DAEMON": "0"})
    c = Client(server)
    c.login()
    yield c
    server.stop()


def test_the_web_page_refuses_it_in_an_edit_and_an_alias(client, vault):
    vault.remember("Deploys go through make ship.", id="ship")
    subjects = git_subjects(vault.root)
    client.get("/memory/ship")
    text = (vault.root / "memories" / "ship.md").read_text() + f"\n{PW_TEXT}\n"
    response, html = client.post("/memory/ship/edit", {"text": text})
    assert response.status == 422 and "looks like a secret" in html
    drafts = list((vault.root / ".hafiza" / "drafts").glob("ship-*.md"))
    assert len(drafts) == 1 and PW not in drafts[0].read_text()  # the edit is kept, masked
    client.get("/memory/ship")
    _, html = client.post("/memory/ship/alias", {"phrases": f"router\n{TRIAL['pin-colon'][0]}"})
    assert "looks like a secret" in html
    assert git_subjects(vault.root) == subjects
    assert PW not in _history(vault.root) and TRIAL["pin-colon"][1] not in _history(vault.root)
