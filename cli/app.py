"""The command line's top: `hafiza [--vault FOLDER] COMMAND ...`, what every command shares (the vault,
output, progress bars), and the one place errors become messages.

Heavy modules (PyYAML, numpy, Whoosh) are imported inside the
commands that need them, so `hafiza search` starts fast.
"""

from __future__ import annotations

import json
import sys
from functools import cached_property
from pathlib import Path

from hafiza.vault import __version__
from hafiza.vault.errors import HafizaError

from .args import Bar, Command, Parser, UsageError, err, folder

# Each command's module, imported only when that command runs: importing all of them (and what they
# import) cost every command ~40 ms before it did anything. tests/test_cli.py checks this map.
COMMANDS = {
    "admin": ("demo", "doctor", "init", "reindex"),
    "agents": ("daemon", "hook", "profile"),
    "completion": ("completion",),
    "curate": ("curate", "review"),
    "facts": ("fact",),
    "inbox": ("inbox",),
    "read": ("list", "log", "search", "show", "stats"),
    "serve": ("mcp", "token"),
    "sessions": ("sessions",),
    "skills": ("skills",),
    "setup": ("install", "uninstall"),
    "sync": ("remote", "resolve", "sync"),
    "teams": ("promote", "vault"),
    "ui": ("ui",),
    "verify": ("verify",),
    "write": ("alias", "edit", "fold", "forget", "import", "remember", "restore", "supersede", "undo", "used"),
}
MODULE_OF = {command: module for module, commands in COMMANDS.items() for command in commands}


def _top():  # only its docstring is used: the top help's description
    """hafiza: long-term memory for AI coding agents, in a git-backed markdown vault."""


cli = Command(_top, "hafiza")  # every command module registers its commands here when it is imported


class Context:
    """What a command is given: the vault folder, the settings, and the vaults it opened (whose warnings
    are printed when it ends)."""

    def __init__(self, root: Path):
        self.root = root
        self.vaults: list = []

    @cached_property
    def settings(self):
        """The environment, read here and passed on (hafiza.indexer.config)."""
        from hafiza.indexer.config import settings

        return settings()

    @cached_property
    def teams(self) -> dict[str, Path]:
        """The team vaults you read, name -> folder: those your config lists (never a project) that are there."""
        from hafiza.vault.sync.teams import readable

        return readable(Path(self.settings.config) if self.settings.config else None)

    def memory_id(self, typed: str, teams: bool = False) -> str:
        """The id `typed` stands for: itself when a memory of yours, or of a team vault you read, has it;
        else the one id of your vault it is the start of, or with `teams` (a command that takes a team
        vault's memories too: args.any_memory_id) the one id of your vault and those team vaults. Anything
        else is left as typed, and the vault's error names the ids near it (MemoryNotFound). MCP tools take
        exact ids only (docs/commands.md)."""
        import os

        from hafiza.vault.format.ids import expand, is_valid_id
        from hafiza.vault.format.layout import existing
        from hafiza.vault.format.paths import MEMORIES, is_vault

        if not is_valid_id(typed) or not is_vault(self.root) \
                or os.path.isfile(existing(self.root / MEMORIES, typed) or ""):  # its file: one stat, no index
            return typed
        from hafiza.vault.sync.teams import PERSONAL, owner

        if owner(self.root, self.teams, typed) != PERSONAL:
            return typed  # a team vault's memory, by its whole id
        from hafiza.indexer.index import Index

        roots = [self.root, *(self.teams.values() if teams else ())]
        # Each id once: a memory promoted to a team is in both vaults by the same id, and is not two.
        ids = dict.fromkeys(row[0] for root in roots for row in Index(root, notice=lambda _: None).catalog(lines=True))
        return expand(typed, ids) or typed


def command(name: str) -> Command:
    """The command `name`, its module imported."""
    import importlib

    importlib.import_module(f"hafiza.cli.{MODULE_OF[name]}")
    return cli.subcommands[name]


def find(words: list[str]) -> tuple[Command | None, list[str]]:
    """(the command or subcommand that `hafiza WORDS...` names, the words left for it); None for no command."""
    if not words or words[0] not in MODULE_OF:
        return None, words
    found, rest = command(words[0]), words[1:]
    while rest and rest[0] in found.subcommands:
        found, rest = found.subcommands[rest[0]], rest[1:]
    return found, rest


def parse(words: list[str]):
    """`words` (a command, its subcommands, their arguments) parsed by the parser of the command they name,
    which is the only one built. A command's options and arguments may come in any order (`import
    claude-code --scope global shop`), as they could with click, which argparse's plain parse does not do."""
    found, rest = find(words)
    prog = " ".join(["hafiza", *words[:len(words) - len(rest)]])
    parser = found.parser(prog)
    if found.subcommands or "--" in rest:  # Python 3.11's intermixed parse reads what follows `--` as options
        return parser.parse_args(rest)
    return parser.parse_intermixed_args(rest)


def _parser(with_commands: bool = False) -> Parser:
    parser = Parser(prog="hafiza", description=cli.help, add_help=False,
                    usage="hafiza [-h] [--version] [--vault FOLDER] COMMAND ...",
                    epilog=_commands_help() if with_commands else None)
    parser.add_argument("-h", "--help", action="store_true", help="show this help message and exit")
    parser.add_argument("--version", action="version", version=f"%(prog)s, version {__version__}",
                        help="show the version and exit")
    parser.add_argument("--vault", type=folder, metavar="FOLDER",
                        help="Vault folder (default: $HAFIZA_VAULT, then ~/.local/share/hafiza/vault).")
    parser.add_argument("command", nargs="?", metavar="COMMAND", help="one of the commands below")
    return parser


def _split(argv: list[str]) -> int:
    """Where the command starts: after hafiza's own options (`--vault FOLDER`, `--vault=FOLDER`, -h...). The
    rest goes to the command's parser untouched; argparse's REMAINDER would drop a `--` the command needs."""
    at = 0
    while at < len(argv) and argv[at].startswith("-"):
        at += 2 if argv[at] == "--vault" else 1
    return at


def _commands_help() -> str:
    """Every command with its summary: the one time all command modules are imported."""
    import shutil
    import textwrap

    width = max(shutil.get_terminal_size().columns, 60) - 2
    lines = ["commands (`hafiza COMMAND -h` for each one's help):"]
    for name in sorted(MODULE_OF):
        lines.append(textwrap.fill(command(name).summary, width, initial_indent=f"  {name:<11} ",
                                   subsequent_indent=" " * 14))
    return "\n".join(lines)


def run(argv: list[str]) -> None:
    """Parse `argv`, run the command, and turn every HafizaError, and an OS failure such as a full disk,
    into one `Error: ...` line and an exit code; no tracebacks."""
    at = _split(argv)
    top = _parser().parse_args(argv[:at + 1])
    if top.help or top.command is None:
        _parser(with_commands=True).print_help(sys.stdout if top.help else sys.stderr)
        sys.exit(0 if top.help else 2)
    if top.command not in MODULE_OF:
        _parser().error(f"no such command {top.command!r}")
    parsed = parse(argv[at:])
    from hafiza.vault.format.paths import resolve_vault

    ctx = Context(resolve_vault(top.vault))
    message, code = None, 1
    try:
        parsed.command.call(ctx, parsed)
        sys.stdout.flush()
    except UsageError as exc:
        parsed.parser.error(str(exc))
    except HafizaError as exc:
        message, code = exc.message, exc.exit_code
    except BrokenPipeError:  # `hafiza list | head`: the reader has gone; nothing to say to it
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
    except OSError as exc:
        message = os_message(exc)
    except KeyboardInterrupt:
        message = "interrupted"
    finally:  # what the command's writes noticed: a placeholder key kept, a symlink skipped, the index
        for vault in ctx.vaults:
            for line in vault.warnings:
                err(f"warning: {line}")
    if message is not None:
        err(f"Error: {message}")
        sys.exit(code)


def os_message(exc: OSError) -> str:
    """One line for a failure of the machine rather than of the input; the library has rolled back."""
    import errno

    where = f" ({exc.filename})" if exc.filename else ""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"the disk is full{where}; nothing was changed. Free some space and try again."
    if exc.errno == errno.EROFS:
        return f"the file system is read-only{where}; nothing was changed."
    return f"{exc.strerror or exc}{where}; nothing was changed."


def vault_root(ctx: Context) -> Path:
    """The vault folder, checked without importing the write path (fast for read commands)."""
    from hafiza.vault.format.paths import check_sidecar, is_vault, no_vault

    if not is_vault(ctx.root):
        raise no_vault(ctx.root)
    check_sidecar(ctx.root)
    return ctx.root


def team_root(ctx: Context, name: str) -> Path:
    """The folder of the team vault `name`, from the user's config (never from a project)."""
    from hafiza.vault.sync.teams import resolve

    return resolve(Path(ctx.settings.config), name).path


def open_vault(ctx: Context, actor: str = "cli", to: str | None = None):
    """The vault, opened the one way writers open it: each write also brings the index and vectors up to
    the files (hafiza.indexer.refresh.writable), and its warnings are printed when the command ends.
    `to` names a team vault (`hafiza vault list`) instead of the personal one."""
    from hafiza.indexer.refresh import writable

    root = team_root(ctx, to) if to else ctx.root
    vault = writable(root, actor, embedder=ctx.settings, progress=progress_factory()).require()
    ctx.vaults.append(vault)
    return vault


def reading_vault(ctx: Context, root: Path | None = None):
    """The vault for a command that only reads (`show`, `log`): yours, or the one at `root` (a team vault's
    folder, `Context.teams`); no index or model code is imported, and a write through it is refused."""
    from hafiza.vault.store.vault import reader

    return reader(root or vault_root(ctx))


def emit(data) -> None:
    """Pretty JSON on stdout; bidi, zero-width and C1 characters as \\u escapes, which json.dumps leaves raw."""
    from hafiza.vault.format.text import visible

    print(visible(json.dumps(data, ensure_ascii=False, indent=2, default=str), as_json=True))


def progress_factory():
    """A callable(done, total, label) that draws a progress bar on stderr once there is enough work to
    show (any embedding: the model's load alone takes seconds), and only on a terminal."""
    bars: dict[str, Bar] = {}

    def update(done: int, total: int, label: str = "indexing") -> None:
        if (total >= 50 or label == "embedding") and sys.stderr.isatty():
            bars.setdefault(label, Bar(label, total)).update(done)

    return update
