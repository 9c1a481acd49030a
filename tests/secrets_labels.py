"""A third corpus for the secret guard: passwords and PINs after a short label, from a new user's trial
(`hafiza remember "pw: hunter2Xy!9zz"` was kept, its id pw-hunter2xy-9zz; `password=Abc12345!` was kept as a
"placeholder"), and the prose and placeholders around such labels that must keep passing.

Written with the change that catches them, so unlike tests/secrets_heldout.py it is not held out: it pins
what the guard now does. bench/secret_guard.py drives it through every write path with the other two.

- SECRETS: (name, text, value): `value` is the piece of `text` that must never reach git.
- LOOKALIKES: (name, text): written as they are, with no refusal and no warning.
- EXAMPLES: (name, text): a template's value, written with a warning.
"""

import random
import string

_rng = random.Random(20261208)


def _pw() -> str:
    """A password people choose: a capitalised word, digits, a symbol, letters."""
    word = _rng.choice(["Kedi", "Deniz", "Hunter", "Summer", "Lale", "Simit", "Ankara", "Falcon"])
    return word + "".join(_rng.choices(string.digits, k=4)) + _rng.choice("!#%+") + "".join(
        _rng.choices(string.ascii_lowercase, k=2))


def _pin(n: int = 4) -> str:
    while True:
        pin = "".join(_rng.choices(string.digits, k=n))
        if pin not in string.digits and len(set(pin)) > 1:  # not 1234 or 0000: those are examples
            return pin


# (name, text with {v} where the value goes, the value; None: a password `_pw` makes).
_FORMS: list[tuple[str, str, str | None]] = [
    # The trial's two, as typed.
    ("trial-pw-colon", "pw: {v}", "hunter2" + "Xy!9zz"),
    ("trial-password-sequence", "password={v}", "Abc12345" + "!"),
    # Short English labels, each separator.
    ("pw-equals", "wifi pw={v}", None),
    ("pw-is", "The guest wifi PW is {v}", None),
    ("pw-env", "DB_PW={v}", None),
    ("pw-camel", "routerPw: {v}", None),
    ("pwd-colon", "pwd: {v}", None),
    ("passwd-colon", "passwd: {v}", None),
    ("pass-colon", "NAS pass: {v}", None),
    ("passphrase-is", "The ssh key's passphrase is {v}", None),
    ("password-was", "the admin password was {v} until the audit", None),
    ("password-is-colon", "The router password is: {v}", None),
    ("password-short", "db password: {v}", "s3cr" + "3t!"),
    ("password-word-digits", "password={v}", "Password" + "123"),
    ("password-leet", "password: {v}", "Passw" + "0rd!"),
    ("password-digits-after-colon", "bank card password: {v}", _pin(6)),
    # Turkish.
    ("sifre-olarak", "Sunucuya şifre olarak {v} kullan", None),
    ("parolasi-olarak", "Modem parolası olarak {v} belirlendi", None),
    ("sifresi-colon", "Kart şifresi: {v}", _pin(6)),
    ("sifre-noun", "wifi şifresi {v}", None),
    ("parola-is-tr", "VPN parolası {v} idi, değiştirdik", None),
    # PINs: the digits alone, after a label and a separator.
    ("pin-colon", "pin: {v}", _pin()),
    ("pin-is", "The office door PIN is {v}", _pin()),
    ("pin-far", "the PIN for the alarm panel is {v}", _pin(6)),
    ("pin-code-equals", "pin code = {v}", _pin(8)),
    ("pin-kodu", "SIM kartın PIN kodu: {v}", _pin()),
    ("pin-kodu-noun", "PIN kodu {v}", _pin()),
    ("pin-olarak", "Kasa için pin olarak {v} verildi", _pin()),
    ("pin-env", "WIFI_PIN={v}", _pin(8)),
    # Where the guard read `is_example`'s sequences as a placeholder: a command line and a URL.
    ("typed-sequence", "docker login -u ci -p {v} registry.local", "Abc12345"),
    ("url-sequence", "DATABASE_URL=postgres://app:{v}@db.internal/shop", "Qwerty" + "12345"),
]
SECRETS: list[tuple[str, str, str]] = [(name, template.format(v=value), value)
                                       for name, template, given in _FORMS for value in [given or _pw()]]

LOOKALIKES: list[tuple[str, str]] = [
    # Prose about passwords (the trial's three first).
    ("vault-pointer", "The password is in Vault under kv/db."),
    ("onepassword-tr", "şifre 1Password'de"),
    ("rotation", "Rotate the password every 90 days."),
    ("onepassword-item-tr", "Şifre 1Password'de, 'prod-db' kaydında."),
    ("fridge", "the wifi password is on the fridge"),
    ("reset-by", "password was changed by ayse@shop.com"),
    ("reset-date", "The password was reset on 2026-03-14 after the incident."),
    ("passphrase-pointer", "passphrase is in the team vault, item ssh-deploy"),
    ("staging-pointer", "the password for staging is in Vault at secret/stg/db"),
    ("test-users-pointer", "password for the test users: see kv/shared/staging-test-users"),
    ("policy-en", "password: min 12 characters, one digit"),
    ("policy-count", "password length is 12"),
    ("expiry", "password expiry was 90 days, now 180"),
    ("hash-algorithm", "The password hash is argon2id (was bcrypt)."),
    ("hash-scheme", "password hashing: pbkdf2-sha256"),
    ("sso-tr", "Şifre olarak SSO kullanılıyor, ayrı parola yok."),
    ("bitwarden-tr", "Parola olarak Bitwarden'daki kaydı kullan."),
    ("digits-rule-tr", "şifre 6 haneli olmalı"),
    ("year-tr", "Şifre değişikliği 2024'te zorunlu oldu."),
    # `pw` and `pass` as other words.
    ("pw-reset", "pw reset flow lives in auth/reset.ts"),
    ("pw-pointer", "pw: see 1Password 'wifi-office'"),
    ("pw-timeout", "PW_TIMEOUT=30000 for the Playwright runs"),
    ("pw-ids", "pw-i18n and pw-pnpm are the panel-web notes"),
    ("pw-version", "pw: v1.45.0"),
    ("playwright", "Playwright (pw) 1.45 runs the e2e suite"),
    ("pass-flag", "pass --verbose to see the headers"),
    ("pass-rate", "The pass rate was 98.5% after the fix."),
    ("tests-pass", "tests pass on node20 and node22"),
    # `pin` as other words, and a PIN not given.
    ("pin-version", "Pin the Xcode version on the build Mac."),
    ("pin-package", "pin numpy to 1.26.4 until the ABI fix"),
    ("gpio-pin", "GPIO pin: 17 drives the relay"),
    ("led-pin", "The LED is on pin 13."),
    ("pin-setting", "Pin: true in renovate.json keeps the digest"),
    ("pin-sensor", "pin = 3 for the valve sensor"),
    ("pin-firmware", "PIN pad firmware is 2.4.1"),
    ("pin-kasada", "PIN kodu kasada, müdürde."),
    ("pin-sms-tr", "Kartın PIN kodu SMS ile gelir."),
    ("pin-sms", "The PIN is sent by SMS; never store it here."),
    ("spin", "SPIN: 4000 rpm, MAX_SPIN=1200 on the test rig"),
    # Placeholders: what a template says.
    ("angle", "password=<password>"),
    ("env-braces", "password=${PASSWORD}"),
    ("changeme", "password=changeme in .env.example only"),
    ("x-filler", "password: xxxx"),
    ("stars", "password: ****"),
    ("your-password", "password=your-password"),
    ("example-word", "password: example"),
    ("dots", "password: ..."),
    ("pin-zeros", "pin: 0000"),
    ("pw-angle", "pw: <password>"),
    # Names of a value, not the value.
    ("names-env", "password=DB_PASSWORD"),
    ("names-camel", "password: dbPassword"),
    ("names-type", "private_key: Ed25519PrivateKey"),
]

EXAMPLES: list[tuple[str, str]] = [
    ("example-marker", "password: Example123!"),
    ("sequence-alone", "password=12345678"),
    ("pin-sequence", "pin: 1234"),
]
