"""Memory ids: slugs that are stable, unique and safe as file names."""

import re
import unicodedata
from pathlib import Path

from hafiza.vault.files import read_regular
from .text import SPECIAL_LETTERS

_VALID = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,78}[a-z0-9])?$")
MAX_LEN = 60


def is_valid_id(value: str) -> bool:
    return bool(_VALID.match(value)) and "--" not in value


def transliterate(text: str) -> str:
    """ASCII approximation: `Şifre değişikliği` -> `Sifre degisikligi`."""
    text = "".join(SPECIAL_LETTERS.get(ch, ch) for ch in text)
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if ord(ch) < 128)


# A run of ten or more letters and digits mixed (hx7kq2lm9pzt) reads as a password or a key, not a word: a
# file name and a commit subject are made from the slug, and neither may carry one the guard did not know.
_TOKEN_LIKE = re.compile(r"(?=[a-z]*[0-9])(?=[0-9]*[a-z])[a-z0-9]{10,}")
# And the word after a password's label that is not a plain word (`pw: hunter2Xy!9zz`, `pin 4821`, `wifi şifre
# Kedi2024`), whatever the guard made of it: a new user's `pw: …` became the id pw-hunter2xy-9zz, and the guard
# lets some such values pass (an example, a label without a separator). Read on the transliterated title.
_AFTER_LABEL = re.compile(r"(?i)(?<![a-z0-9])(?:pw|pwd|passwd|password|pass|passphrase|parola[a-z]{0,4}|sifre[a-z]{0,4}"
                          r"|pin(?:[ _\-]?(?:code|kodu?))?)(?![a-z0-9])[ \t]{0,3}"
                          r"(?:[:=]{1,2}|(?:is|was|olarak)(?![a-z0-9]))?[ \t]{0,3}(?P<value>\S{1,200})")
_NOT_A_WORD = re.compile(r"[0-9!@#$%^&*+=?~|]")


def _without_values(title: str) -> str:
    """`title` with each value after a password's label cut out, unless it is a plain word (`pw reset flow`)."""
    def cut(m: re.Match) -> str:
        return m[0][:m.start("value") - m.start()] if _NOT_A_WORD.search(m["value"]) else m[0]
    return _AFTER_LABEL.sub(cut, title)


def slugify(title: str, max_len: int = MAX_LEN) -> str:
    """Kebab-case ASCII slug of `title`, cut at a word boundary, without token-like words or what follows a
    password's label; never empty."""
    plain = _without_values(transliterate(title))
    words = [word for word in re.findall(r"[a-z0-9]+", plain.lower()) if not _TOKEN_LIKE.fullmatch(word)]
    slug = ""
    for word in words:
        candidate = f"{slug}-{word}" if slug else word
        if len(candidate) > max_len:
            break
        slug = candidate
    if not slug and words:
        slug = words[0][:max_len]
    return slug or "memory"


def expand(typed: str, ids) -> str | None:
    """The one id of `ids` that starts with `typed` (`typed` itself when it is one of them); None when none or
    several do. A person's shortcut for a long slug (`hafiza show production-deploys`), taken only by the
    command line: an agent gives exact ids (docs/commands.md)."""
    starting = [i for i in ids if i.startswith(typed)]
    return typed if typed in starting else starting[0] if len(starting) == 1 else None


def near(typed: str, ids, n: int = 5) -> list[str]:
    """Ids someone who typed `typed` may have meant, likeliest first: those it starts (the shortest first),
    then those difflib finds close (a typo, a word left out). Typed as a title (`Production deploys`), it is
    matched as its slug."""
    import difflib

    key = typed if is_valid_id(typed) else slugify(typed) if typed.strip() else ""
    if not key:
        return []
    ids = list(ids)
    starting = sorted((i for i in ids if i.startswith(key)), key=lambda i: (len(i), i))
    return list(dict.fromkeys(starting + difflib.get_close_matches(key, ids, n, cutoff=0.6)))


def unique_id(base: str, taken) -> str:
    """`base`, or `base-2`, `base-3`... whichever is not in `taken`."""
    if base not in taken:
        return base
    n = 2
    while f"{base}-{n}" in taken:
        n += 1
    return f"{base}-{n}"


_ID_LINE = re.compile(r"^id:[ \t]*['\"]?([^'\"\s#]+)", re.MULTILINE)


def declared_id(path: Path) -> str | None:
    """The `id:` in a file's frontmatter, read cheaply (no YAML); None if there is none."""
    try:
        head = read_regular(path, head=4096).decode("utf-8", "replace")
    except OSError:
        return None
    if not head.lstrip().startswith("---"):
        return None
    header = head.lstrip()[3:].split("\n---", 1)[0]
    match = _ID_LINE.search(header)
    return match.group(1) if match else None
