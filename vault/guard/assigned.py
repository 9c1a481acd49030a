"""`key = value` forms that assign a credential: `DB_PASSWORD=…`, `password: …`, `"api_key": "…"`,
`şifre: …`, `parola …`, `the root password for the NAS is …`, `define('DB_PASSWORD', '…')`.

A key word (password, secret, token, şifre, parola…) at the end of a name, a separator, a value. What tells
a credential from prose or code is the value: a placeholder (`${VAR}`, `<password>`, `changeme`), a name
(`password=DB_PASSWORD`, `token=self.token`) or a lone word after a colon (`şifre: kasada`) is not one.
secrets.py runs `find` after the token formats and skips what they found.
"""

import re
import string
from typing import NamedTuple

from .tokens import Lazy, is_example, is_example_password, is_placeholder

# Assignment form: a secret-looking key as the last part of a name, a separator, a value. Matched on the
# lowercased text, one pattern per key word, so each starts with a literal the regex engine skips ahead to.
_SEP_NEAR = r"""(?P<sep>["'*]{0,2}[ \t]{0,3}(?::=|=>|=|:)[ \t]{0,3}
    |[ \t]{1,3}(?:(?:is|was|olarak)(?:[ \t]{0,3}:)?[ \t]{1,3})?
    |["'][ \t]{0,3},[ \t]{0,3}(?=["']))"""
# The last form: a call's first two arguments, `define('DB_PASSWORD', '…')`, `setenv("TOKEN", "…")`.
# `the root password for the NAS is PW`: a few words between (read as prose unless PW looks like a password).
_SEP_FAR = r"""(?P<sep>[ \t][^\n.:;=]{1,40}?[ \t](?:is|was|are|idi|olarak)[ \t]{1,3})"""
# `open`: a quote never closed (`KEY='abc…` pasted cut short) runs to the line end.
_VALUE = r"""(?:(?P<q>["'`])(?:(?P<quoted>[^"'`\n]{0,200})(?P=q)|(?P<open>[^"'`\r\n]{1,200})(?=\r?\n|\Z))
    |(?P<bare>[^\s"'`,;()\[\]]{1,200}))"""
# (the literal every match starts with, the key's forms): a pattern runs, and is compiled, only when its
# literal is in the text. `pw` and `pin` are whole words only (a new user's `pw: …` went into a file name);
# a PIN is its digits alone, so `pin: 3` (a GPIO pin) and `pin numpy to 1.26` are not one.
_KEY_FORMS = [("pass", r"pass(?:word|wd|wort|phrase)?"), ("pwd", "pwd"), ("pw", "pw"), ("secret", "secret"),
              ("token", "token"), ("pin", r"pin(?:[ \t_\-]?(?:code|kodu?|numaras[ıi]|number))?"),
              ("credential", r"credentials?"), ("key", "key"), ("anahtar", r"anahtar[ıi]?"),
              ("şifre", r"şifre(?:niz|nız|si|sı|yi|m|n)?"), ("sifre", r"sifre(?:niz|si|yi|m|n)?"),
              ("parola", r"parola(?:nız|niz|sı|si|yı|yi|m|n)?")]
_ASSIGNS = [(stem, Lazy(rf"(?P<key>{form})(?![\w\-]){sep}{_VALUE}", re.X))
            for sep in (_SEP_NEAR, _SEP_FAR) for stem, form in _KEY_FORMS]
# `key` and `anahtar` alone are too common: api_key, secretKey, "API anahtarı" count; monkey, key: value do not.
_KEY_QUALIFIER = Lazy(r"(?:api|access|secret|private|signing|encryption|master|client|auth|gizli)[ _.\-]?$")
_PASSWORD_KEYS = Lazy(r"(?i)pass|pw|[şs]ifre|parola")
_KEYWORD = Lazy(r"(?i)pass|pwd|secret|token|key|[şs]ifre|parola|anahtar|credential")
_NAMED_KEYWORD = Lazy(r"Pass|PASS|Pwd|PWD|Secret|SECRET|Token|TOKEN|Key|KEY|Credential|CREDENTIAL")
_IDENTIFIER = Lazy(r"[\w.]+")
_NAME_PARTS = Lazy(r"[_.]|[a-z][A-Z]")
_CALL_BEFORE = Lazy(r"\([ \t]{0,3}[\"']$")  # `define('` before the key's name
_NOUN_KEYS = ("password", "passwd", "passphrase", "şifre", "sifre", "parola")
# Key words that end a longer name glued to them: PGPASSWORD, dbpassword, jwtsecret, csrftoken. Not `pass`
# (bypass, compass) and not after a digit (1Password).
_SUFFIX_KEYS = ("password", "passwd", "passphrase", "pwd", "secret", "token", "credential")
_NAME_CHARS = string.ascii_letters + string.digits + "_-.çğıöşüÇĞİÖŞÜ"
_EMAIL = Lazy(r"[\w.+\-]+@[\w\-]+\.[\w.\-]+")
_ATTRIBUTE = Lazy(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")  # settings.SECRET_KEY, self.token
_DIGIT_OR_SYMBOL = Lazy(r"[0-9!@#$%^&*+=?~|]")
_PIN = Lazy(r"[0-9]{4,12}")
_VERSION = Lazy(r"v?[0-9]{1,6}(?:\.[0-9]{1,6}){1,3}(?:[\-+][\w.]{1,40})?")
# What a note says a password is hashed or encrypted with: `the password hash is argon2id`.
_ALGORITHM = Lazy(r"(?i)(?:argon2(?:id|i|d)?|pbkdf2|sha-?(?:1|224|256|384|512|3)|md5|aes-?[0-9]{3}|[hre]s[0-9]{3}"
                  r"|ed25519|x25519|rsa-?[0-9]{3,4}|hmac|crc32)(?:[\-_][a-z0-9]{1,12}){0,3}")


def _password_like(value: str) -> bool:
    """A lone word after `password:` or `şifre` is prose (`şifre: kasada`); a password mixes letters with digits
    or symbols (`hunter2Xy!9zz`), and is none of the mixed words a note holds there (a version, an e-mail)."""
    if value.isdigit():
        return 6 <= len(value) <= 12  # `kart şifresi: 482133`; shorter is a count (`password: 12 characters`)
    return (len(value) >= 6 and any(c.isalpha() for c in value) and bool(_DIGIT_OR_SYMBOL.search(value))
            and not _EMAIL.fullmatch(value) and not _VERSION.fullmatch(value))


def _names_another(value: str) -> bool:
    """`password=DB_PASSWORD`, `private_key: Ed25519PrivateKey`: a name or a type, not the secret itself; and
    `DB_PASSWORD= API_TOKEN=`, an empty .env entry followed by the next one's name (lines folded into one)."""
    value = value.rstrip("=:")
    if not _IDENTIFIER.fullmatch(value):
        return False
    digits = any(map(str.isdigit, value))
    # A capitalised key word inside a random token has odds near 1e-6; a lowercase one without digits is a name.
    # With digits it is a name only in parts (DB_PASSWORD2, Ed25519PrivateKey): Password123 and Passw0rd are
    # what people pick.
    if _NAMED_KEYWORD.search(value):
        return not digits or bool(_NAME_PARTS.search(value))
    return not digits and bool(_KEYWORD.search(value))


def _attribute(value: str) -> bool:
    """`self.token`, `settings.SECRET_KEY`: code naming a value. `Deniz5920.tku` is a password with a dot."""
    return bool(_ATTRIBUTE.fullmatch(value)) and not any(map(str.isdigit, value.split(".", 1)[0]))


def _literal_after_equals(value: str, name: str, text: str, end: int) -> bool:
    """After `DB_PASSWORD=` or `--password=` the value is a literal; `password=pw`, `token=self.token` are code."""
    if text[end:end + 1] in ("(", "[") or _attribute(value):
        return False
    if value.isdigit():
        return len(value) >= 8  # MAX_TOKEN=4096 is a setting
    if name.isupper() or name.startswith("-"):
        return len(value) >= 4  # an environment variable or a command-line flag
    return len(value) >= 6 and not value.replace("_", "").isalpha()


class _Value(NamedTuple):
    start: int
    end: int
    text: str
    quoted: bool  # in quotes, closed or not


def _value_of(m: re.Match, text: str) -> _Value:
    """The assigned value, in `text`'s own case; a bare one without the punctuation that ends a sentence."""
    group = next(g for g in ("quoted", "open", "bare") if m[g] is not None)
    start, end = m.span(group)
    value = text[start:end] if group != "bare" else text[start:end].rstrip(".,:;!?*_")
    return _Value(start, start + len(value), value, group != "bare")


def _key_start(m: re.Match) -> int | None:
    """Where the key starts; `key` and `anahtar` count only after a qualifier (api_key, gizli anahtar)."""
    if not m["key"].startswith(("key", "anahtar")):
        return m.start()
    qualifier = _KEY_QUALIFIER.search(m.string, max(0, m.start() - 12), m.start())
    return qualifier.start() if qualifier else None


def _inside_word(text: str, key_start: int, key: str) -> bool:
    """compass, bypass, 1Password: the key word is part of another word. dbPassword (camelCase), PGPASSWORD,
    dbpassword and jwtsecret end in one: they name a credential."""
    before = text[key_start - 1:key_start]
    if not before.isalnum():
        return False
    camel_case = before.islower() and key[0].isupper()
    ends_a_name = key.lower().startswith(_SUFFIX_KEYS) and not before.isdigit()
    # SSHPASS, REDISPASS: an environment variable, not bypass; but SPIN and UPW are words of their own.
    shouted = key.isupper() and before.isupper() and not key.lower().startswith(("pin", "pw"))
    return not (camel_case or ends_a_name or shouted)


def _name_before(text: str, start: int) -> str:
    """The name characters right before `start` (at most 64): `DB_` of `DB_PASSWORD`."""
    window = text[max(0, start - 64):start]
    return window[len(window.rstrip(_NAME_CHARS)):]


def _assigned(m: re.Match, text: str) -> tuple[int, int, str] | None:
    """(start, end, verdict) of the value when this `key = value` (matched on lowercased text) assigns a credential."""
    value, sep, pin = _value_of(m, text), m["sep"], m["key"].startswith("pin")
    strong = "=" in sep or (value.quoted and (":" in sep or "," in sep))
    if pin and not _PIN.fullmatch(value.text):
        return None
    if not strong:
        if not (pin or _password_like(value.text)):
            return None  # prose: `password: stored in the vault`
        if not sep.strip(" \t") and not (m["key"].startswith(_NOUN_KEYS) or (pin and m["key"] != "pin")):
            return None  # only `password X`, `şifre X`, `parola X`, `PIN kodu X` read without a separator
    key_start = _key_start(m)
    if key_start is None:
        return None
    key = text[key_start:m.end("key")]
    if _inside_word(text, key_start, key):
        return None
    name_start = key_start - len(_name_before(text, key_start))
    name = text[name_start:m.end("key")]
    if "," in sep and not _CALL_BEFORE.search(text, max(0, name_start - 8), name_start):
        return None  # `("password", "token")` is a list of names; only a call's first argument names the second
    if pin:
        literal = True  # its digits, checked above
    elif strong and value.quoted:
        literal = " " not in value.text and len(value.text) >= 6 and not value.text.isalpha()
    elif strong:
        literal = _literal_after_equals(value.text, name, text, value.end)
    else:
        literal = True  # password-like, checked above
    # publicKeyToken, public_key: published on purpose
    if (not literal or "public" in name.lower() or _names_another(value.text) or is_placeholder(value.text, key)
            or _ALGORITHM.fullmatch(value.text)):
        return None
    password = bool(_PASSWORD_KEYS.match(m["key"])) or pin
    example = is_example_password(value.text) if password else is_example(value.text)
    return value.start, value.end, "example" if example else "secret"


def find(text: str):
    """(name, start, end, 'secret' or 'example') of each value a credential's key is assigned in `text`."""
    lowered = text.replace("\u0130", "i").lower()  # İ is the one letter whose lowercase is two characters
    for stem, pattern in _ASSIGNS:
        if stem not in lowered:
            continue
        for m in pattern.finditer(lowered):
            found = _assigned(m, text)
            if found:
                kind = ("PIN" if m["key"].startswith("pin") else "password" if _PASSWORD_KEYS.search(m["key"])
                        else "token" if m["key"] == "token" else "secret")
                yield (f"assigned {kind}", *found)
