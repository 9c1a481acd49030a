"""One exception root; the CLI turns it into `Error: <message>` in one place."""


class HafizaError(Exception):
    """A failure a user can act on. `exit_code` is what the CLI exits with."""

    exit_code = 1

    def __init__(self, message: str, *, field: str | None = None):
        super().__init__(message)
        self.message = message
        self.field = field  # the input field at fault, for structured (MCP) errors


class VaultNotFound(HafizaError):
    exit_code = 2


class MemoryNotFound(HafizaError):
    """No memory by the id given; `near`, the ids it may have meant (vault/format/ids.near), end the message
    as `; did you mean: a, b, c?`, for a person and an agent alike."""

    exit_code = 3
    SHOWN = 5  # ids named at most; a start that many ids share says how many more there are

    def __init__(self, message: str, *, field: str | None = None, near=()):
        self.near = list(near)
        if self.near:
            more = len(self.near) - self.SHOWN
            shown = ", ".join(self.near[:self.SHOWN])
            message += f"; did you mean: {shown}" + (f" (or {more} more)?" if more > 0 else "?")
        super().__init__(message, field=field)


class FrontmatterError(HafizaError):
    """A memory file that does not parse or validate; names the path and reason."""

    def __init__(self, path, reason: str, line: int | None = None):
        where = f"{path}:{line}" if line else str(path)
        super().__init__(f"{where}: {reason}")
        self.path = path
        self.reason = reason
        self.line = line


class Quarantined(FrontmatterError):
    """A vault file that holds what looks like a secret (merged from a remote, or edited by hand): kept as it
    is, never indexed, recalled, shown or put in the profile (vault/guard/quarantine.py)."""

    def __init__(self, path, kinds: list[str]):
        super().__init__(path, f"quarantined: it holds what looks like a secret ({', '.join(kinds)}), so hafiza "
                               "never indexes, recalls or shows it; `hafiza doctor` says how to remove it")
        self.kinds = kinds


class SecretRefused(HafizaError):
    exit_code = 4


class VaultLocked(HafizaError):
    exit_code = 5


class AlreadyRemembered(HafizaError):
    """A new memory whose text (spacing and case aside) and scope an active memory already has: nothing is
    written. `existing` is that memory's id; `hafiza remember` says so and exits 0 (docs/commands.md)."""

    def __init__(self, existing: str):
        super().__init__(f"already remembered as {existing} (the same text and scope); nothing written",
                         field="text")
        self.existing = existing


class GitError(HafizaError):
    def __init__(self, message: str, *, field: str | None = None, disk_full: bool = False):
        super().__init__(message, field=field)
        self.disk_full = disk_full  # git found no room: nothing else is wrong
