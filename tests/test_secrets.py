"""The secret guard: credentials are refused at the write boundary and nothing is written.

Every fake secret is assembled at run time, so no file in this repository
holds one literally (and no scanner flags the repository itself).
"""

import base64
import codecs
import json
import random
import re
import string
import subprocess

import pytest

import secrets_corpus as corpus
from conftest import git_subjects, run_cli
from hafiza.vault.format import model
from hafiza.vault.errors import SecretRefused
from hafiza.vault.guard.secrets import Scan, check, find_secrets, mask, scan, scan_bytes, text_for_scan

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


# The corpus (tests/secrets_corpus.py): every secret refused in every encoding and masked; look-alikes pass
# silently; documented example keys and placeholders pass with a warning.

def _encoded(text: str, encoding: str) -> bytes:
    if encoding == "utf-16-le-bom":
        return codecs.BOM_UTF16_LE + text.encode("utf-16-le")
    return text.encode(encoding)


def _encodable(text: str, encoding: str) -> bool:
    try:
        _encoded(text, encoding)
    except UnicodeEncodeError:
        return False
    return True


ENCODINGS = ["utf-8", "latin-1", "cp1254", "utf-16-le", "utf-16-le-bom", "utf-16-be"]
ENCODED = [pytest.param(text, encoding, id=f"{name}-{encoding}")
           for name, text in corpus.SECRETS for encoding in ENCODINGS if _encodable(text, encoding)]


def test_the_corpus_is_large_and_consistent():
    assert len(corpus.SECRETS) >= 55 and len(corpus.LOOKALIKES) >= 40 and len(corpus.EXAMPLES) >= 6
    names = [name for name, _ in corpus.SECRETS + corpus.LOOKALIKES + corpus.EXAMPLES]
    assert len(names) == len(set(names))
    assert all(corpus.SECRET_VALUES[name] in text for name, text in corpus.SECRETS)
    assert any(not text.isascii() for _, text in corpus.SECRETS)  # Turkish and invisible characters are in it


@pytest.mark.parametrize("name, text", corpus.SECRETS, ids=[name for name, _ in corpus.SECRETS])
def test_each_corpus_secret_is_refused_without_echoing_it(name, text):
    with pytest.raises(SecretRefused) as err:
        check(text, "text")
    assert err.value.message.startswith("refused to write text: it contains what looks like a secret (")
    assert corpus.SECRET_VALUES[name] not in err.value.message


@pytest.mark.parametrize("text, encoding", ENCODED)
def test_each_corpus_secret_is_found_in_any_encoding(text, encoding):
    assert scan_bytes(_encoded(text, encoding)).secrets


@pytest.mark.parametrize("name, text", corpus.SECRETS, ids=[name for name, _ in corpus.SECRETS])
def test_mask_leaves_no_corpus_secret(name, text):
    masked = mask(text)
    assert "[secret removed: " in masked and scan(masked).secrets == []
    # Not even with line breaks, backslashes and invisible characters taken out.
    squeezed = re.sub(r"[\s\\\u00ad\u200b-\u200f\u2060\ufeff]", "", masked)
    assert corpus.SECRET_VALUES[name] not in squeezed


@pytest.mark.parametrize("name, text", corpus.LOOKALIKES, ids=[name for name, _ in corpus.LOOKALIKES])
def test_each_lookalike_passes_without_a_warning(name, text):
    assert scan(text) == Scan([], [])
    assert check(text) == []
    for encoding in ENCODINGS:  # the extra readings of bytes add no false alarm
        assert not _encodable(text, encoding) or scan_bytes(_encoded(text, encoding)).secrets == []


@pytest.mark.parametrize("name, text", corpus.EXAMPLES, ids=[name for name, _ in corpus.EXAMPLES])
def test_each_example_key_passes_with_a_warning(name, text):
    warnings = check(text, "text")
    assert warnings and all(w.startswith("text: kept ") and "example or a placeholder" in w for w in warnings)
    assert mask(text) == text


# What each new detection keys on, one case at a time.

def test_a_key_split_across_lines_is_named_by_its_format():
    token = "gh" + "p_" + _random(36)
    for text in (f"token:\n  {token[:18]}\n  {token[18:]}\n", f"export T={token[:25]} \\\n    {token[25:]}"):
        assert find_secrets(text) == ["GitHub token"]
        assert token[18:] not in mask(text) and token[25:] not in mask(text)


def test_a_token_ending_a_line_is_masked_without_the_next_line():
    token = "gh" + "p_" + _random(36)
    assert mask(f"token {token}\nNext line stays.") == "token [secret removed: GitHub token]\nNext line stays."


@pytest.mark.parametrize("mark", ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u180e"])
def test_an_invisible_character_inside_a_token_does_not_hide_it(mark):
    token = SECRETS["GitHub token"]
    text = f"release token {token[:9]}{mark}{token[9:]} (rotate monthly)"
    assert find_secrets(text) == ["GitHub token"]
    assert mask(text) == "release token [secret removed: GitHub token] (rotate monthly)"


def test_a_twilio_sid_alone_is_an_id_but_with_its_token_a_credential():
    sid, token = "A" + "C" + _random(32, "0123456789abcdef"), _random(32, "0123456789abcdef")
    assert find_secrets(f"Twilio account {sid} sends the OTP SMS.") == []
    assert find_secrets(f"Twilio account {sid}, auth token {token}") == ["Twilio auth token"]


# Generated like the tokens above; a digit and a lowercase letter make each a password, not a word.
PASSWORD, MIXED = "Tr0ub4dor&" + _random(2, string.digits), _random(10) + "4x"


@pytest.mark.parametrize("text", [
    "DB_PASSWORD=hunter2x", f'export API_TOKEN="{MIXED}"', "password: hunter2x", '{"password": "hunter2x"}',
    "şifre: Kedi2024!", "sifre=Kedi2024x", "parola Kedi2024!", "Veritabanı parolası: Gizli.2024",
    "PAROLASI: Gizli.2024", f"passwd: {PASSWORD}", f"pwd={PASSWORD}", f"client_secret: {MIXED}",
    f"auth_token = '{MIXED}'", f"api_key: {MIXED}", "--password=Kedi2024x", "The staging admin password is hunter2x",
    "**password**: hunter2x", "dbPassword: 'Kedi2024!'", "DB_PASSWORD=tavsanciksekiz",
])
def test_an_assigned_password_is_refused(text):
    assert find_secrets(text)


@pytest.mark.parametrize("text", [
    "password: stored in 1Password", "password: 1Password", "şifre: kasada", "the password is in the vault",
    "parola sıfırlama ekranı", "reset your password", "DB password lives in Vault at secret/db, path secret/db",
    "şifre değişikliği için IT'ye yaz", "use `--password-stdin`", "password: <password>",
    "DB_PASSWORD=${DB_PASSWORD}", "PASSWORD=$VAR", "secret: {{ secret }}", "dsn uses %(pw)s", "password=xxx",
    "password: ***", "password: changeme", "password: your-password-here", "password: ...", "password: REDACTED",
    "password: null", "PASSWORD=", "token=self.token", "connect(password=password)", 'password = os.environ["PW"]',
    "pass allow_yanked=False to keep them", "private_key: Ed25519PrivateKey", "MAX_TOKEN=4096",
    'AttributeOID.CHALLENGE_PASSWORD: "challengePassword"', 'publicKeyToken="1fc8b3b9a1e18e3b"',
    "Token: '#dcdccc'", "**No secret is written**: text with credentials is refused", "token budget 200000",
    "şifre sıfırlama maili noreply@firma.com.tr adresinden gelir", "parola 2FA ile korunuyor",
])
def test_password_prose_pointers_and_placeholders_pass(text):
    assert scan(text) == Scan([], [])


def test_urls_with_an_empty_user_or_a_placeholder_password():
    assert find_secrets(f"redis://:{MIXED}@cache:6379/0") == ["password in a URL"]
    assert find_secrets("postgres://app:${DB_PASSWORD}@db/shop and https://ayse@github.com/shop/app.git") == []
    assert scan("postgres://postgres:postgres@localhost/shop").examples == ["password in a URL (postgres)"]


def test_mask_keeps_the_text_around_each_secret():
    key, password = SECRETS["AWS access key id"], "Kedi2024!x"
    text = f"Key {key} for backups; DB_PASSWORD={password} (staging); see docs/aws.md."
    assert mask(text) == ("Key [secret removed: AWS access key id] for backups; "
                          "DB_PASSWORD=[secret removed: assigned password] (staging); see docs/aws.md.")


def test_bytes_in_any_encoding_are_read():
    token = SECRETS["GitHub token"]
    assert scan_bytes("şifre: Kedi2024!x".encode("cp1254")).secrets == ["assigned password"]
    assert scan_bytes(f"café token {token}".encode("latin-1")).secrets == ["GitHub token"]
    assert scan_bytes(codecs.BOM_UTF16_BE + f"token {token}".encode("utf-16-be")).secrets == ["GitHub token"]
    # A binary file with a UTF-16 string at an odd offset, the way resources sit in an executable.
    binary = bytes(range(256)) + b"\x01" + f"token={token}".encode("utf-16-le") + bytes(range(256))
    assert scan_bytes(binary).secrets == ["GitHub token"]
    assert token in text_for_scan(binary)


def test_random_binary_data_is_not_a_secret():
    assert scan_bytes(random.Random(7).randbytes(64_000)).secrets == []


# ReDoS: no timed test here (the megabyte timings are in bench/secret_guard.py). What keeps a scan linear is
# how each pattern is written, and that is checked on the patterns themselves: a repeat with no upper bound
# either ends its pattern (a run read once), or the pattern starts with a lookbehind (`(?<![...])`) so a
# failed attempt never starts again inside the run it failed on, or the pattern only ever matches a short
# value whole. The URL pattern that took 7 s on 100 KB of `a-a-...` (`[A-Za-z][A-Za-z0-9+.\-]*://`) broke
# the first two.
import re._constants as _sre  # noqa: E402
import re._parser as _sre_parse  # noqa: E402

from hafiza.vault.guard import assigned as assigned_module, secrets as secrets_module  # noqa: E402
from hafiza.vault.guard import tokens as tokens_module, typed as typed_module  # noqa: E402

# Patterns matched whole against one short value (fullmatch, match at a known place), never searched.
WHOLE_VALUE_ONLY = {"_IDENTIFIER", "_EMAIL", "_ATTRIBUTE", "_WORD_PART", "_PLACEHOLDER", "_PROSE", "_DIGEST",
                    "_WRAP_CONTINUED", "_PEM_BODY", "_SEPARATORS", "_WORDLIKE", "_INVISIBLE", "_CANDIDATE",
                    "_SEGMENT", "_UTF16_RUN", "_DATA_URI"}
# Patterns that start with a literal holding a character their run cannot (`AccountKey=`, `Authorization:`):
# a run never holds another start.
AFTER_A_DELIMITER = {"PATTERNS: Azure storage key", "PATTERNS: bearer token"}


def _guard_patterns():
    """(where, source, flags) of every regular expression the guard runs, from its four modules."""
    found = {}

    def add(where, obj):
        if isinstance(obj, tokens_module.Lazy):
            found.setdefault((obj.source, obj.flags), where)
        elif isinstance(obj, re.Pattern):
            found.setdefault((obj.pattern, obj.flags), where)
        elif isinstance(obj, (list, tuple)):
            named = f"{where}: {obj[0]}" if obj and isinstance(obj[0], str) else where  # PATTERNS' rows
            for item in obj:
                add(named, item)

    for module in (secrets_module, assigned_module, tokens_module, typed_module):
        for name, obj in vars(module).items():
            add(name, obj)
    return [(where, source, flags) for (source, flags), where in found.items()]


def _unbounded_then_more(source, flags) -> list[str]:
    """The unbounded repeats in a pattern that something able to fail follows."""
    found = []

    def walk(items):
        items = list(items)
        for i, (op, av) in enumerate(items):
            if op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT, _sre.POSSESSIVE_REPEAT):
                low, high, sub = av
                after = [o for o, _ in items[i + 1:] if o not in (_sre.ASSERT, _sre.ASSERT_NOT, _sre.AT)]
                if high == _sre.MAXREPEAT and after:
                    found.append(f"{{{low},}} before {after[0]}")
                walk(sub)
            elif op == _sre.SUBPATTERN:
                walk(av[-1])
            elif op == _sre.BRANCH:
                for branch in av[1]:
                    walk(branch)
            elif op in (_sre.ASSERT, _sre.ASSERT_NOT):
                walk(av[1])

    walk(_sre_parse.parse(source, flags))
    return found


def _starts_after_a_lookbehind(source) -> bool:
    text = source if isinstance(source, str) else source.decode()
    return text.startswith(("(?<!", "(?:(?<!", tokens_module.START))


def test_every_guard_pattern_stays_linear():
    risky = [(where, repeats) for where, source, flags in _guard_patterns()
             if where not in WHOLE_VALUE_ONLY | AFTER_A_DELIMITER and (repeats := _unbounded_then_more(source, flags))
             and not _starts_after_a_lookbehind(source)]
    assert risky == []


def test_the_linear_check_catches_the_pattern_that_took_7_seconds():
    old = r"[A-Za-z][A-Za-z0-9+.\-]*://(?P<user>[^\s/:@]*):(?P<secret>[^\s/@]+)@"
    assert _unbounded_then_more(old, 0) and not _starts_after_a_lookbehind(old)


def test_the_command_line_forms_bound_every_repeat():
    """typed.py is new in issue 29: none of its patterns has an unbounded repeat at all."""
    unbounded = [where for where, source, flags in _guard_patterns()
                 if any(source == f.pattern.source for f in typed_module._FORMS)
                 and "MAXREPEAT" in repr(_sre_parse.parse(source, flags))]
    assert unbounded == []



# Issue 29, item 1: passwords as people type them (tests/secrets_heldout.py), and their look-alikes.
import secrets_heldout as heldout  # noqa: E402

TYPED = [(name, text, value) for name, text, value in heldout.SECRETS if name not in heldout.KNOWN_MISSES]


@pytest.mark.parametrize("name, text, value", TYPED, ids=[name for name, _, _ in TYPED])
def test_a_typed_password_is_found_and_masked(name, text, value):
    assert find_secrets(text)
    assert value not in mask(text)


@pytest.mark.parametrize("name, text", heldout.LOOKALIKES, ids=[name for name, _ in heldout.LOOKALIKES])
def test_a_typed_look_alike_passes_without_a_warning(name, text):
    assert scan(text) == Scan([], [])


def test_the_known_misses_are_still_missed():
    """When the guard learns one, it leaves KNOWN_MISSES (and docs/safety.md's list) with this test."""
    missed = [name for name, text, _ in heldout.SECRETS if not find_secrets(text)]
    assert missed == list(heldout.KNOWN_MISSES)


def test_a_token_like_word_the_guard_let_through_stays_out_of_the_id_and_the_subject(vault):
    password = "Hx7kq2Lm9" + "Pzt4"  # a word with no key before it: the guard cannot tell it is one
    memory = vault.remember(f"NAS login {password} for the backup box")
    assert memory.id == "nas-login-for-the-backup-box"
    assert git_subjects(vault.root)[0] == "hafiza: remember nas-login-for-the-backup-box"


def test_a_fact_whose_attribute_names_a_password_is_refused(vault):
    with pytest.raises(SecretRefused):
        vault.set_fact("staging db", "password", "Kedi2024!xq")
    assert git_subjects(vault.root) == ["hafiza: init vault"]


def test_a_fact_value_pasted_with_a_wrapped_key_is_refused_before_its_spaces_are_folded(vault):
    token = "gh" + "p_" + _random(36)
    with pytest.raises(SecretRefused, match="GitHub token"):
        vault.set_fact("ci", "release", f"bot token {token[:18]}\n    {token[18:]}")


def test_an_empty_env_entry_folded_onto_the_next_is_no_password():
    assert scan("DB_PASSWORD= API_TOKEN= SECRET_KEY=") == Scan([], [])
