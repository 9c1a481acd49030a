"""Passwords as people type them: on a command line (`docker login -p PW`, `mysql -pPW`, `curl -u user:PW`,
`sshpass -p PW`, `echo PW | docker login --password-stdin`), in `user:PW@host:5432` with no scheme, and as
a settings entry whose key is one attribute and the value the next (`<add key="DbPassword" value="PW"/>`).

An attack pass on the guard (issue 29) got 60 of 648 such pushes into git. A short flag like `-p` means a
password only after the command that reads it so (`docker run -p 8080:80` is a port), so each form is a
command and the option it takes the password with. A value the shell fills in (`"$DOCKER_PASSWORD"`,
`$(cat pw.txt)`), a placeholder (`<password>`, `***`) or nothing at all (`mysql -p` asks for it) is not a
password. Each pattern starts at a literal command or option and bounds its repeats, so a scan stays linear.
"""

import re
from typing import NamedTuple

from .tokens import Lazy, is_example_password, is_placeholder

# A shell word: single-quoted, double-quoted (an unclosed quote runs to the line end: a paste cut short is
# still a password), or bare.
_WORD = r"""(?:'(?P<single>[^'\n]{1,200})'?|"(?P<double>[^"\n]{1,200})"?|(?P<bare>[^\s'"`|;&<>()]{1,200}))"""
_SPACE = r"[ \t]{1,8}"
# The arguments between a command and its option: the same command only (not past a pipe, `;` or `&&`).
_ARGS = r"(?:[ \t][^\n|;&]{0,200}?)??"
_START = r"(?<![\w./\-])"


TYPED = "password on a command line"  # what the user is told was found


class _Form(NamedTuple):
    name: str
    needles: tuple[str, ...]  # the rule runs only when one of these is in the text
    pattern: Lazy
    after: str = ""  # the password starts after this character of the word (`user:PW`), else the word is it
    until: str = ""  # and ends before this one (`user/PW@db`)


def _command(name: str, commands: str, option: str, needles: tuple[str, ...], *, attached: bool = False,
             separate: bool = True, after: str = "", until: str = "") -> _Form:
    """`commands` ... `option` VALUE: separated by spaces or `=` (`separate`), or glued to it (`attached`)."""
    joins = ([rf"(?:{_SPACE}|=)"] if separate else []) + ([""] if attached else [])
    value = "|".join(f"(?:{join})" for join in joins)
    source = rf"{_START}(?:{commands})(?![\w\-]){_ARGS}[ \t](?:{option})(?:{value}){_WORD}"
    return _Form(name, needles, Lazy(source), after, until)


_LOGIN = (r"(?:docker|podman|nerdctl|buildah|skopeo|oras|finch|helm[ \t]{1,8}registry|crane[ \t]{1,8}auth"
          r"|az(?:[ \t]{1,8}acr)?|oc|cf|argocd|jfrog[ \t]{1,8}rt)[ \t]{1,8}login")
_FORMS = [
    _command(TYPED, _LOGIN, r"-p|--password", ("login",), attached=True),
    _command(TYPED, "sshpass", "-p", ("sshpass",), attached=True),
    # mysql reads `-p PW` as "ask me, then use database PW": only the glued form carries the password.
    _command(TYPED, r"(?:mysql|mariadb)[\w\-]{0,12}", "-p", ("mysql", "mariadb"),
             attached=True, separate=False),
    _command(TYPED, r"mongo[\w]{0,10}", r"-p|--password", ("mongo",)),
    _command(TYPED, "redis-cli", r"-a|--pass|AUTH|auth", ("redis-cli",)),
    _command(TYPED, r"sqlcmd|bcp|osql", "-P", ("sqlcmd", "bcp", "osql"), attached=True),
    _command(TYPED, r"ldap[a-z]{2,10}", "-w", ("ldap",)),
    _command(TYPED, "zip", "-P", ("zip",)),
    _command(TYPED, r"7z[ar]?|unrar|rar", "-p", ("7z", "rar"), attached=True,
             separate=False),
    _command(TYPED, "ssh-keygen", r"-N|-P", ("ssh-keygen",)),
    _command(TYPED, r"curl|wget|http|https|xh", r"-u|--user|-a|--auth", ("curl", "wget", "http", "xh"), after=":"),
    _command(TYPED, r"smbclient|rpcclient|smbmap|smbget", r"-U|--user", ("smb", "rpcclient"),
             after="%"),
    _command(TYPED, "lftp", "-u", ("lftp",), after=","),
    # Options that mean a password whatever the command: keytool, jarsigner, gpg, openssl's `pass:PW`.
    _Form(TYPED, ("pass",),
          Lazy(rf"(?<![\w\-])(?:-(?:src|dest)?(?:store|key)pass|--passphrase|--requirepass|--masterauth){_SPACE}{_WORD}")),
    _Form(TYPED, ("-pass",), Lazy(rf"(?<![\w\-])-pass(?:in|out){_SPACE}pass:{_WORD}")),
    # Oracle: `sqlplus scott/tiger@orcl`.
    _Form(TYPED, ("sqlplus", "rman", "expdp", "impdp", "sqlldr", "dgmgrl"),
          Lazy(rf"{_START}(?:sqlplus|rman|expdp|impdp|sqlldr|dgmgrl)(?:{_SPACE}-\w{{1,20}}){{0,3}}{_SPACE}{_WORD}"),
          after="/", until="@"),
    # rabbitmqctl add_user NAME PW, change_password NAME PW.
    _Form(TYPED, ("rabbitmqctl",),
          Lazy(rf"{_START}rabbitmqctl(?:{_SPACE}-\S{{1,40}}){{0,4}}{_SPACE}(?:add_user|change_password){_SPACE}"
               rf"\S{{1,200}}{_SPACE}{_WORD}")),
    # MinIO's client: mc alias set NAME URL ACCESS_KEY SECRET_KEY (and the older `mc config host add`).
    _Form(TYPED, ("mc alias", "mc config"),
          Lazy(rf"{_START}mc{_SPACE}(?:alias{_SPACE}set|config{_SPACE}host{_SPACE}add)(?:{_SPACE}\S{{1,200}}){{3}}"
               rf"{_SPACE}{_WORD}")),
    # Windows: net use [Z:] \\server\share PW /user:NAME.
    _Form(TYPED, ("net use",),
          Lazy(rf"(?i){_START}net{_SPACE}use(?:{_SPACE}[a-z]:)?{_SPACE}\\\\\S{{1,200}}{_SPACE}{_WORD}")),
    # htpasswd -b[c] FILE USER PW, htpasswd -nb USER PW.
    _Form(TYPED, ("htpasswd",),
          Lazy(rf"{_START}htpasswd{_SPACE}-[a-mo-zB]{{0,8}}b[a-zB]{{0,8}}{_SPACE}\S{{1,200}}{_SPACE}\S{{1,200}}{_SPACE}{_WORD}")),
    _Form(TYPED, ("htpasswd",),
          Lazy(rf"{_START}htpasswd{_SPACE}-[a-zB]{{0,8}}n[a-zB]{{0,8}}{_SPACE}\S{{1,200}}{_SPACE}{_WORD}")),
    # Piped in: `echo PW | docker login --password-stdin`, `echo PW | sudo -S`.
    _Form(TYPED, ("-stdin", "sudo"),
          Lazy(rf"{_START}(?:echo|printf)(?:{_SPACE}-[neE]{{1,3}})?{_SPACE}{_WORD}[ \t]{{0,8}}\|[^\n;&|]{{0,200}}?"
               r"(?:--password-stdin|sudo[ \t]{1,8}-S)")),
]
# `user:PW@host:5432` or `user:PW@host/db` with no scheme (with one, tokens.py's URL pattern has it). Not an
# image digest (`node:20@sha256:…`) and not `mailto:`.
_USERINFO = Lazy(r"(?<![\w.:/@%+\-])(?P<user>[A-Za-z_][\w.+\-]{0,63}):(?P<secret>[^\s:/@'\"`]{3,128})"
                 r"@(?P<host>[A-Za-z0-9][A-Za-z0-9.\-]{0,253})(?::[0-9]{1,5}(?![\w.])|/)")
# .NET appSettings and the like: the key names a credential, the next attribute holds it.
_SETTING = Lazy(r"""(?i)(?<![\w\-])(?:key|name)[ \t]{0,3}=[ \t]{0,3}["'][\w.:\-]{0,60}(?:password|passwd|pwd|secret|token)"""
                r"""["'][ \t]{1,8}value[ \t]{0,3}=[ \t]{0,3}(?:"(?P<double>[^"\n]{1,200})"|'(?P<single>[^'\n]{1,200})')""")
_NOT_USERS = {"mailto", "sip", "tel", "xmpp", "urn", "data", "git", "ssh", "http", "https"}
_DIGEST = Lazy(r"(?i)sha[0-9]{1,3}|md5|blake[0-9a-z]{0,4}")
_PROSE = Lazy(r"[a-zçğıöşü]{1,200}")


class Hit(NamedTuple):
    name: str
    start: int
    end: int
    verdict: str


def _value(m: re.Match) -> tuple[int, int, str] | None:
    """(start, end, quote) of the word an option took."""
    for group, quote in (("single", "'"), ("double", '"'), ("bare", "")):
        if m[group] is not None:
            return *m.span(group), quote
    return None


def _verdict(value: str, quote: str, alone: bool = False) -> str | None:
    """'secret', 'example' or None (the shell fills it in, a placeholder, a word of prose). `alone`: the value
    is a whole word after a space, where prose can follow a flag too."""
    if quote != "'" and ("$" in value or "`" in value):
        return None  # "$DOCKER_PASSWORD", $(cat pw.txt): the shell puts it in at run time
    if len(value) < 3 or value.startswith("-") or is_placeholder(value):
        return None
    if alone and not quote and _PROSE.fullmatch(value) and len(value) < 8:
        return None  # "use -p then type it": a short lowercase word after the flag reads as prose
    return "example" if is_example_password(value) else "secret"


def _piece(text: str, start: int, end: int, after: str, until: str) -> tuple[int, int] | None:
    """The part of the word text[start:end] that is the password (`user:PW` -> PW)."""
    if after:
        at = text.find(after, start, end)
        if at < 0:
            return None  # `curl -u deploy` asks for the password
        start = at + 1
    if until:
        at = text.find(until, start, end)
        end = at if at >= 0 else end
    return (start, end) if end > start else None


def _forms(text: str, lowered: str):
    for form in _FORMS:
        if not any(needle in lowered for needle in form.needles):
            continue
        for m in form.pattern.finditer(text):
            start, end, quote = _value(m)
            piece = _piece(text, start, end, form.after, form.until)
            alone = not form.after and text[start - 1] in " \t"
            verdict = piece and _verdict(text[piece[0]:piece[1]], quote, alone)
            if verdict:
                yield Hit(form.name, *piece, verdict)


def _userinfo(text: str):
    if "@" not in text or ":" not in text:
        return
    for m in _USERINFO.finditer(text):
        user, password = m["user"], m["secret"]
        if user.lower() in _NOT_USERS or _DIGEST.fullmatch(m["host"]):
            continue
        verdict = _verdict(password, "")
        if verdict:
            yield Hit("password in a connection string", *m.span("secret"),
                      "example" if password == user else verdict)


def _settings(text: str, lowered: str):
    if "value" not in lowered:
        return
    for m in _SETTING.finditer(text):
        start, end, quote = _value(m)
        verdict = _verdict(text[start:end], quote)
        if verdict and " " not in text[start:end]:
            yield Hit("password in a setting", start, end, verdict)


def find(text: str) -> list[Hit]:
    """Every password typed on a command line, in a connection string without a scheme, or in a setting."""
    lowered = text.lower()
    return [*_forms(text, lowered), *_userinfo(text), *_settings(text, lowered)]
