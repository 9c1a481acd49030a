"""The secret guard: credentials are refused at the write boundary and nothing is written.

Every fake secret is assembled at run time, so no file in this repository
holds one literally (and no scanner flags the repository itself).
"""

import json
import random
import string
import subprocess

import pytest

from conftest import git_subjects, run_cli
from hafiza.vault import model
from hafiza.vault.errors import SecretRefused
from hafiza.vault.secrets import find_secrets

_rng = random.Random(20261130)


def _random(n, alphabet=string.ascii_letters + string.digits):
    return "".join(_rng.choice(alphabet) for _ in range(n))


UPPER_DIGITS = string.ascii_uppercase + string.digits
PEM = "-----BEGIN " + "RSA PRIVATE KEY-----\nMIIEow" + _random(60) + "\n-----END " + "RSA PRIVATE KEY-----"

SECRETS = {
    "AWS access key id": "AKIA" + _random(16, UPPER_DIGITS),
    "GitHub token": "gh" + "p_" + _random(36),
    "GitHub fine-grained token": "github" + "_pat_" + _random(82, string.ascii_letters + string.digits + "_"),
    "Slack token": "xo" + "xb-" + "123456789012-" + "123456789012-" + _random(24),
    "OpenAI API key": "sk" + "-proj-" + _random(48),
    "OpenAI legacy key": "sk" + "-" + _random(48),
    "Anthropic API key": "sk" + "-ant-api03-" + _random(80, string.ascii_letters + string.digits + "-_"),
    "private key": PEM,
    "long high-entropy string": _random(40),
}
# The name each should be reported under.
REPORTED = {"GitHub fine-grained token": "GitHub token", "OpenAI legacy key": "OpenAI API key"}


def _git(root, *args):
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize("kind", SECRETS)
def test_each_kind_of_secret_is_found_by_name(kind):
    found = find_secrets(f"config for the deploy: {SECRETS[kind]} (do not share)")
    assert found == [REPORTED.get(kind, kind)]


@pytest.mark.parametrize("kind", SECRETS)
def test_the_vault_refuses_a_secret_and_writes_nothing(vault, kind):
    before = git_subjects(vault.root)
    with pytest.raises(SecretRefused) as err:
        vault.remember(f"Deploy key for staging is {SECRETS[kind]} keep it safe", title="Staging key")
    assert f"({REPORTED.get(kind, kind)})" in err.value.message
    assert err.value.exit_code == 4 and err.value.field == "text"
    assert vault.paths() == [] and git_subjects(vault.root) == before and not vault.git.dirty()


@pytest.mark.parametrize("kind", ["AWS access key id", "private key", "long high-entropy string"])
def test_remember_refuses_a_secret_and_writes_nothing(vault, kind):
    secret = SECRETS[kind]
    before = git_subjects(vault.root)
    proc = run_cli("remember", f"Deploy key for staging is {secret} keep it safe", "--title", "Staging key",
                   check=False)
    assert proc.returncode == 4
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: refused to write text")
    assert f"({REPORTED.get(kind, kind)})" in lines[0]
    assert secret.splitlines()[0] not in proc.stderr + proc.stdout  # the secret is not echoed back
    assert vault.paths() == []
    assert git_subjects(vault.root) == before
    assert _git(vault.root, "status", "--porcelain") == ""


@pytest.mark.parametrize("field", ["title", "tags", "aliases"])
def test_a_secret_in_any_field_is_refused(vault, field):
    value = SECRETS["GitHub token"]
    kwargs = {"title": value} if field == "title" else {field: ["ok", value]}
    with pytest.raises(SecretRefused, match=f"refused to write {field}.*GitHub token"):
        vault.remember("Harmless text.", **kwargs)
    assert vault.paths() == []


def test_an_edit_that_adds_a_secret_is_refused(vault):
    vault.remember("Staging is on port 8080.", id="staging")
    head = vault.git.head()
    text = vault.get("staging").path.read_text().replace("8080.", "8080, token " + SECRETS["Slack token"])
    with pytest.raises(SecretRefused, match="Slack token"):
        vault.rewrite("staging", text)
    assert vault.get("staging").body == "Staging is on port 8080."
    assert vault.git.head() == head


def test_a_secret_in_a_user_key_is_refused_on_edit(vault):
    vault.remember("Staging is on port 8080.", id="staging")
    memory = vault.get("staging")
    text = model.dump(memory.evolve(extra={"api_key": SECRETS["OpenAI API key"]}))
    with pytest.raises(SecretRefused, match="OpenAI API key"):
        vault.rewrite("staging", text)


def test_one_secret_refuses_the_whole_import(vault, tmp_path):
    source = tmp_path / "in.jsonl"
    rows = [{"text": "We use pnpm."}, {"text": "aws key " + SECRETS["AWS access key id"]}, {"text": "Deploy from main."}]
    source.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    before = git_subjects(vault.root)
    proc = run_cli("import", str(source), check=False)
    assert proc.returncode == 4
    assert "AWS access key id" in proc.stderr and "item in.jsonl:2" in proc.stderr
    assert vault.paths() == [] and git_subjects(vault.root) == before


def test_skip_invalid_leaves_the_secret_out(vault, tmp_path):
    source = tmp_path / "in.jsonl"
    rows = [{"text": "We use pnpm."}, {"text": "key " + SECRETS["Anthropic API key"]}]
    source.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    proc = run_cli("import", str(source), "--skip-invalid")
    assert "Anthropic API key" in proc.stderr
    assert [p.name for p in vault.paths()] == ["we-use-pnpm.md"]
    assert SECRETS["Anthropic API key"] not in _git(vault.root, "log", "-p")


ORDINARY = [
    "Fixed in commit 3f786850e387550fdab836ed7e6dc881de23001b, see also a94a8fe5ccb19ba61c4c0873d391e987982fbbd3.",
    "Image digest sha256:" + "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "Run id 123e4567-e89b-12d3-a456-426614174000 and 2b35b812-378d-43ac-b85a-f60e8a0d585b failed.",
    "The config lives in /home/ayse/projects/shop-backend/src/main/resources/application-production.yml",
    "src/components/UserProfileCard2/__tests__/UserProfileCard2.integration.test.tsx is flaky",
    "Çekoslovakyalılaştıramadıklarımızdanmışsınız ve muvaffakiyetsizleştiricileştiriveremeyebileceklerimizdenmişsinizcesine",
    "pnpm fails with ERR_PNPM_OUTDATED_LOCKFILE_BECAUSE_OF_WORKSPACE_PROTOCOL after the upgrade",
    "Rename getUserProfileByAccountId2FactorAuth and TestUserProfileService2Handler_shouldReturn404WhenMissing",
    "See https://github.com/anthropics/claude-code/issues/25006#issuecomment-2876543210 for the details",
    "Use AKIA... style keys only through the vault; the secret is in 1Password under 'aws-prod'.",
    "Tag v2.3.0-rc.1+build.20261130 and the sk-learn model sk-classifier are fine.",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_not_refused(text):
    assert find_secrets(text) == []


def test_ordinary_text_is_remembered(vault):
    for n, text in enumerate(ORDINARY):
        vault.remember(text, id=f"ordinary-{n}")
    assert len(vault.paths()) == len(ORDINARY)
