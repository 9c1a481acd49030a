"""The published token formats the secret guard knows, and what tells a real token from a documented
example or a placeholder. Stdlib only; `secrets` runs them.

Each entry of PATTERNS is (name shown to the user, needles, pattern, verdict). A pattern runs only when
one of its needles is in the text: a plain substring test is ~50x cheaper than the regex, which must
start with a lookbehind and so cannot skip ahead to a literal prefix.
"""

import base64
import binascii
import re
import string

class Lazy:
    """A regular expression compiled when it is first used. A write scans its text with the few patterns
    whose needles it holds (2 of the guard's 65 for a plain sentence); compiling them all when the module
    loaded cost every write 40-50 ms on a busy machine, against ~1 ms to scan."""

    __slots__ = ("source", "flags", "compiled")

    def __init__(self, source, flags: int = 0):
        self.source, self.flags, self.compiled = source, flags, None

    def __getattr__(self, name: str):  # search, finditer, match, groupindex...: those of the compiled pattern
        if self.compiled is None:
            self.compiled = re.compile(self.source, self.flags)
        return getattr(self.compiled, name)


# Not inside a longer run of token characters; but right after a percent-escape (`?token%3Dghp_…`) it starts one.
START = r"(?:(?<![A-Za-z0-9_\-])|(?<=%[0-9A-Fa-f]{2}))"
END = r"(?![A-Za-z0-9_\-])"


def token_pattern(body: str) -> Lazy:
    return Lazy(f"{START}(?:{body})")


# Documented example keys (AWS's AKIAIOSFODNN7EXAMPLE) and fill-ins (ghp_xxxx..., sk-...XXXX, <your-key>).
# Word markers are five letters or more: a random base62 token holds a given one with odds near 1e-6.
_MARKERS = ("example", "sample", "dummy", "placeholder", "redacted", "changeme", "replace", "insert", "notreal",
            "not_real", "your_", "your-", "yourapi", "yourkey", "yourtoken", "yoursecret", "xxxxx", "****", "...",
            "…", "<", ">")
_FILLER = "xX0*.•"
# Five characters in sequence (12345, abcde): fill-ins like ghp_1234567890abcdefghijklmnopqrstuvwxyz.
_SEQUENCE = Lazy("|".join(alphabet[i:i + 5] for alphabet in (string.digits, string.ascii_lowercase)
                                for i in range(len(alphabet) - 4)))


def is_example(token: str) -> bool:
    """A marker word, or mostly filler and sequences (an id such as 123456789012 alone is not)."""
    lowered = token.lower()
    if any(map(lowered.__contains__, _MARKERS)):
        return True
    sequences = len(_SEQUENCE.findall(lowered)) if "1234" in lowered or "abcd" in lowered else 0
    return sum(map(token.count, _FILLER)) + 5 * sequences >= 0.6 * len(token)


def is_example_password(value: str) -> bool:
    """A password's value a template shows: a marker word, filler, or one run alone (12345678, abcdef).

    Not `is_example`'s sequences inside it: a fake key is filled with 1234567890abcdef..., but people pick
    passwords like Abc12345! and Qwerty2024 (a new user's `password=Abc12345!` was kept as a placeholder)."""
    lowered = value.lower()
    if any(map(lowered.__contains__, _MARKERS)) or sum(map(value.count, _FILLER)) >= 0.6 * len(value):
        return True
    return len(value) >= 4 and (lowered in string.digits or lowered in string.ascii_lowercase)


def _verdict(m: re.Match) -> str | None:
    """'secret', 'example', or None when the match is not this kind of token after all."""
    return "example" if is_example(m[0]) else "secret"


def _mixed(m: re.Match) -> str | None:
    # `sk-` also starts prose (sk-learn-compatible-estimators); a generated key has all three classes.
    if is_example(m[0]):
        return "example"
    return "secret" if all(p.search(m[0]) for p in CLASS_PATTERNS) else None


def _discord(m: re.Match) -> str | None:
    # The first part is the bot's numeric id in base64: that is what tells it from any dotted triple.
    head = m[0].split(".")[0]
    try:
        decoded = base64.urlsafe_b64decode(head + "=" * (-len(head) % 4))
    except (binascii.Error, ValueError):
        return None
    return _verdict(m) if decoded.isdigit() else None


def _url_password(m: re.Match) -> str | None:
    password = m["secret"]
    if len(password) < 3 or is_placeholder(password):
        return None
    return "example" if password == m["user"] or is_example_password(password) else "secret"


_GITLAB_KINDS = ("pat", "dt", "rt", "ptt", "ft", "imt", "oas", "cbt", "soat", "agent", "wt", "ffct")
# (name shown to the user, needles, pattern, verdict). Patterns follow the published token formats; a group
# named `secret` marks the part to mask when the match carries context (`AccountKey=`, a URL's scheme and
# user). A pattern runs only when one of its needles is in the text: a plain substring test is ~50x cheaper
# than the regex, which must start with a lookbehind and so cannot skip ahead to a literal prefix.
PATTERNS = [
    ("AWS access key id", ("AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "APKA", "ABIA", "ACCA"),
     Lazy(r"(?:(?<![A-Za-z0-9])|(?<=%[0-9A-Fa-f]{2}))(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|APKA|ABIA|ACCA)[0-9A-Z]{16}(?![A-Za-z0-9])"),
     _verdict),
    ("GitHub token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
     token_pattern(r"gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{60,}"), _verdict),
    ("GitLab token", tuple(f"gl{kind}-" for kind in _GITLAB_KINDS),
     token_pattern(rf"gl(?:{'|'.join(_GITLAB_KINDS)})-[A-Za-z0-9_\-]{{20,}}"), _verdict),
    ("Slack token", ("xox", "xapp-"), token_pattern(r"xox[abposre]-[A-Za-z0-9\-]{10,}|xapp-[0-9]-[A-Za-z0-9\-]{20,}"),
     _verdict),
    ("Slack webhook", ("hooks.slack.com",),
     Lazy(r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/\-]{20,}"), _verdict),
    ("Discord webhook", ("/api/webhooks/",),
     Lazy(r"discord(?:app)?\.com/api/webhooks/[0-9]{5,30}/[A-Za-z0-9_\-]{30,}"), _verdict),
    ("Anthropic API key", ("sk-ant-",), token_pattern(r"sk-ant-[A-Za-z0-9_\-]{20,}"), _verdict),
    ("OpenAI API key", ("sk-",), token_pattern(r"sk-(?!ant-)[A-Za-z0-9_\-]{20,}"), _mixed),
    ("Google API key", ("AIza",), token_pattern(r"AIza[A-Za-z0-9_\-]{35}" + END), _verdict),
    # Azure AD (Entra) client secrets: three characters, a digit, `Q~`, then 31-34 more.
    ("Azure AD client secret", ("Q~",),
     Lazy(r"(?<![A-Za-z0-9_~.\-])[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.\-]{31,34}(?![A-Za-z0-9_~.\-])"), _verdict),
    ("Google OAuth secret", ("GOCSPX-", "ya29."), token_pattern(r"GOCSPX-[A-Za-z0-9_\-]{28}|ya29\.[A-Za-z0-9_\-]{20,}"),
     _verdict),
    ("Stripe secret key", ("k_live_", "k_test_", "whsec_"),
     token_pattern(r"[rs]k_(?:live|test)_[A-Za-z0-9]{20,}|whsec_[A-Za-z0-9]{32,}"), _verdict),
    ("Twilio API key", ("SK",), Lazy(r"(?<![A-Za-z0-9])SK[0-9a-f]{32}(?![A-Za-z0-9])"), _verdict),
    ("SendGrid API key", ("SG.",), token_pattern(r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}" + END), _verdict),
    ("npm token", ("npm_",), token_pattern(r"npm_[A-Za-z0-9]{36}" + END), _verdict),
    ("PyPI token", ("pypi-AgE",), token_pattern(r"pypi-AgE[A-Za-z0-9_\-]{50,}"), _verdict),
    ("Hugging Face token", ("hf_", "api_org_"), token_pattern(r"(?:hf_|api_org_)[A-Za-z0-9]{30,}" + END), _verdict),
    ("DigitalOcean token", ("_v1_",), token_pattern(r"do[opr]_v1_[a-f0-9]{64}" + END), _verdict),
    ("Shopify token", ("shp",), token_pattern(r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}" + END), _verdict),
    ("Mailgun API key", ("key-",), token_pattern(r"key-[0-9a-f]{32}" + END), _verdict),
    # The first part is base64 of the bot's numeric id, so it starts MT, Mj, ... OT.
    ("Discord bot token", ("MT", "Mj", "Mz", "ND", "NT", "Nj", "Nz", "OD", "OT"),
     Lazy(r"(?<![A-Za-z0-9_\-.])[MNO][A-Za-z0-9_\-]{23,27}\.[A-Za-z0-9_\-]{6,7}\.[A-Za-z0-9_\-]{27,40}"
                r"(?![A-Za-z0-9_\-.])"), _discord),
    ("Telegram bot token", (":AA",), Lazy(r"(?<![0-9])[0-9]{8,10}:AA[A-Za-z0-9_\-]{33}" + END), _verdict),
    ("Azure storage key", ("AccountKey=", "SharedAccessKey="),
     Lazy(r"(?:AccountKey|SharedAccessKey)=(?P<secret>[A-Za-z0-9+/]{20,}={0,2})"), _verdict),
    ("JSON web token", ("eyJ",), token_pattern(r"eyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}"),
     _verdict),
    ("bearer token", ("uthorization",), Lazy(r"[Aa]uthorization[\"']?:[ \t]{0,4}(?i:bearer|basic|token)"
                                                   r"[ \t]{1,4}(?P<secret>[A-Za-z0-9._~+/\-]{16,}=*)"), _verdict),
    # An empty user (redis://:pw@host) counts too; the scheme run is bounded so `a-a-a-...` stays linear.
    ("password in a URL", ("://",), Lazy(r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]{0,30}://"
                                               r"(?P<user>[^\s/:@]{0,256}):(?P<secret>[^\s/@]{1,256})@"),
     _url_password),
]
NEEDLES = tuple(sorted({needle for _, needles, _, _ in PATTERNS for needle in needles}))
# A known prefix followed by fill-in text (sk-...XXXX, ghp_<your-token>): a placeholder, kept with a warning.
PREFIXES = ("sk-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "gldt-", "glrt-", "xox",
             "AKIA", "AIza", "npm_", "hf_", "pypi-", "SG.", "k_live_", "dop_v1_", "shpat_")
PREFIXED = token_pattern(r"(?:sk-|gh[pousr]_|github_pat_|gl(?:pat|dt|rt)-|xox[abposre]-|AKIA|AIza|npm_|hf_|pypi-|SG\."
                   r"|[rs]k_live_|dop_v1_|shpat_)[A-Za-z0-9_\-.*…<>•]{6,120}")

# Twilio: an account SID is an id; with a 32-hex auth token in the same text the pair is a credential.
TWILIO_SID = Lazy(r"(?<![A-Za-z0-9])AC[0-9a-f]{32}(?![A-Za-z0-9])")
HEX32 = Lazy(r"(?<![A-Za-z0-9])[0-9a-f]{32}(?![A-Za-z0-9])")

CLASS_PATTERNS = [Lazy(p) for p in (r"[a-z]", r"[A-Z]", r"[0-9]")]

# Values that are not a credential: templates, fill-ins, booleans, and pointers to where the secret lives.
_PLACEHOLDER = Lazy(r"""(?ix)
    <|\$[{(A-Za-z_]|\#[0-9a-f]{3,8}$|\{[{A-Za-z_]|%\(|%s$|%[A-Za-z_]\w*%$|\[|[x*•.\-_\#0]+$|\S*?(?:\.\.\.|…)
    |(?:your|my|the|insert|enter|replace|put|some|change)[_\-.]
    |(?:changeme|redacted|removed|hidden|none|null|nil|undefined|empty|true|false|yes|no|on|off|todo|tbd|fixme
       |secret|password|passwd|pass|pwd|pw|token|placeholder|example|sample|dummy|test|foo|bar|foobar|gizli|yok)$
    |(?:op|vault|ref\+\w+|ssm|sm|gcpsm|azure|keyring|keychain|env|arn|file|k8s|secretref)[:/]
    |[/~\\]|\.{1,2}/
""")
_POINTER_WORDS = {"1password", "onepassword", "bitwarden", "lastpass", "keepass", "keepassxc", "passbolt"}

def is_placeholder(value: str, key: str = "") -> bool:
    return (not value or bool(_PLACEHOLDER.match(value)) or value.lower() in _POINTER_WORDS
            or (key and value.lower() == key.lower()))


