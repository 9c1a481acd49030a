"""`hafiza doctor`'s check of the hooks' own log: a hook fails open, so a prompt that got nothing because of an
error (a payload it could not read, a warm process that took the request and did not answer in time) is
otherwise only a line in .hafiza/hooks.log that nobody reads."""

from __future__ import annotations

import datetime as dt

RECENT_DAYS = 7
TAIL_BYTES = 256 << 10  # the log rotates at 1 MB (hafiza_hook.LOG_MAX_BYTES); its end holds the recent lines
TROUBLE = ("failed open", "could not start the warm process")


def adapter_checks() -> tuple:
    """The checks of the agent adapters that `hafiza doctor` and the web app's health screen pass to
    hafiza.indexer.doctor.run_checks: Claude Code's MEMORY.md cliff, the installed clients, this log."""
    from .claude import check_memory
    from .install import check_clients

    return check_memory, check_clients, check_hook_log


def check_hook_log(vault):
    """Warn when hooks failed in the last RECENT_DAYS days, naming how many and the latest."""
    from hafiza.indexer.doctor import Check
    from hafiza.vault.format.text import plural

    path = vault.root / ".hafiza" / "hooks.log"
    failed = [line for line in _tail(path) if any(t in line for t in TROUBLE) and _recent(line)]
    if not failed:
        return Check("hooks", "ok", f"no hook failed in the last {RECENT_DAYS} days")
    return Check("hooks", "warn", f"{plural(len(failed), 'hook call')} failed in the last {RECENT_DAYS} days and "
                 f"injected nothing; the latest: {failed[-1]}", [f"all of them in {path}"])


def _tail(path) -> list[str]:
    try:
        with open(path, "rb") as fh:
            fh.seek(max(0, fh.seek(0, 2) - TAIL_BYTES))
            return fh.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return []


def _recent(line: str) -> bool:
    """Whether the line's local timestamp (as hafiza_hook.log writes it) is within RECENT_DAYS."""
    try:
        when = dt.datetime.strptime(line[:19], "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        return False
    return dt.datetime.now() - when < dt.timedelta(days=RECENT_DAYS)
