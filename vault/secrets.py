"""The secret guard at the write boundary: text with credentials is refused, never written."""

import math
import re
from collections import Counter

from .errors import SecretRefused

# (name shown to the user, pattern). Patterns follow the published token formats.
PATTERNS = [
    ("AWS access key id", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b")),
    ("GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{60,})\b")),
    ("Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("Anthropic API key", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{20,}")),
    ("OpenAI API key", re.compile(r"\bsk-(?!ant-)(?:proj-|svcacct-)?[A-Za-z0-9_\-]{20,}")),
    ("Google API key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b")),
    ("Stripe secret key", re.compile(r"\b[rs]k_live_[0-9A-Za-z]{20,}")),
    # The whole block where it is closed, so its base64 body is not reported again as high-entropy.
    ("private key", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
                               r"(?:[A-Za-z0-9+/=\s:,\-]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----)?")),
    ("JSON web token", re.compile(r"\beyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}")),
    ("password in a URL", re.compile(r"\b[a-z][a-z0-9+.\-]*://[^/\s:@]+:[^/\s:@]{3,}@")),
]
# Long runs of token characters; checked for entropy below.
_CANDIDATE = re.compile(r"[A-Za-z0-9+/=_\-]{32,}")
ENTROPY_BITS = 4.3  # per character; hex (git shas, hashes) tops out at 4.0, English words far lower
# camelCase identifiers (getUserProfileById2Fa...) have three character classes and high entropy too,
# but nearly all of their characters sit in word-like runs; in 6,000 random base62 strings of 32-64
# characters at most 78% did, in long identifiers 85% and more.
_WORDLIKE = re.compile(r"[A-Z]?[a-z]{3,}")
WORDLIKE_SHARE = 0.8


def _entropy(s: str) -> float:
    counts = Counter(s)
    return -sum(n / len(s) * math.log2(n / len(s)) for n in counts.values())


def _looks_random(s: str) -> bool:
    classes = sum(bool(re.search(p, s)) for p in (r"[a-z]", r"[A-Z]", r"[0-9]"))
    if classes < 3 or _entropy(s) < ENTROPY_BITS:
        return False
    return sum(map(len, _WORDLIKE.findall(s))) < WORDLIKE_SHARE * len(s)


def find_secrets(text: str) -> list[str]:
    """Names of the kinds of secret found in `text` (empty when clean)."""
    found, spans = [], []
    for name, pattern in PATTERNS:
        for match in pattern.finditer(text):
            found.append(name)
            spans.append(match.span())
    # A token already named above is not reported a second time as "high-entropy".
    for m in _CANDIDATE.finditer(text):
        if not any(m.start() < end and start < m.end() for start, end in spans) and _looks_random(m.group()):
            found.append("long high-entropy string")
            break
    return list(dict.fromkeys(found))


def check(text: str, where: str = "text", field: str | None = None) -> None:
    """Raise SecretRefused naming what was found and the input field; nothing is written by the caller."""
    found = find_secrets(text)
    if found:
        raise SecretRefused(
            f"refused to write {where}: it contains what looks like a secret "
            f"({', '.join(found)}). Remove it and store a pointer to where the secret lives instead.",
            field=field or where,
        )
