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
    ("OpenAI API key", re.compile(r"\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_\-]{20,}")),
    ("Google API key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b")),
    ("Stripe secret key", re.compile(r"\b[rs]k_live_[0-9A-Za-z]{20,}")),
    ("private key", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")),
    ("JSON web token", re.compile(r"\beyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}")),
    ("password in a URL", re.compile(r"\b[a-z][a-z0-9+.\-]*://[^/\s:@]+:[^/\s:@]{3,}@")),
]
# Long runs of token characters; checked for entropy below.
_CANDIDATE = re.compile(r"[A-Za-z0-9+/=_\-]{32,}")
ENTROPY_BITS = 4.3  # per character; hex (git shas, hashes) tops out at 4.0, English words far lower


def _entropy(s: str) -> float:
    counts = Counter(s)
    return -sum(n / len(s) * math.log2(n / len(s)) for n in counts.values())


def _looks_random(s: str) -> bool:
    classes = sum(bool(re.search(p, s)) for p in (r"[a-z]", r"[A-Z]", r"[0-9]"))
    return classes == 3 and _entropy(s) >= ENTROPY_BITS


def find_secrets(text: str) -> list[str]:
    """Names of the kinds of secret found in `text` (empty when clean)."""
    found = [name for name, pattern in PATTERNS if pattern.search(text)]
    if any(_looks_random(m.group()) for m in _CANDIDATE.finditer(text)):
        found.append("long high-entropy string")
    return list(dict.fromkeys(found))


def check(text: str, where: str = "text") -> None:
    """Raise SecretRefused naming what was found; nothing is written by the caller."""
    found = find_secrets(text)
    if found:
        raise SecretRefused(
            f"refused to write {where}: it contains what looks like a secret "
            f"({', '.join(found)}). Remove it and store a pointer to where the secret lives instead.",
            field="text",
        )
