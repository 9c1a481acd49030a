"""Parsing the command line with the standard library's argparse: each command states its arguments next
to its function, and a parser is built only for the command that runs.

click cost every command ~40-60 ms of imports before it did anything (2.2x a bare `python -c pass`,
issue 16); argparse costs ~3 ms. What click gave beyond parsing is here, kept small: the `Error: ...`
line and exit status 2 of a usage error, defaults shown in the help, a group's list of subcommands with
one-line summaries, colour only on a terminal, an editor for `hafiza edit`, a progress bar on stderr.
"""

from __future__ import annotations

import argparse
import os
import sys


class UsageError(Exception):
    """A command line the command cannot run: shown with its usage, exit status 2 (as argparse's own)."""


def arg(*names: str, **options) -> tuple:
    """One argument, as `ArgumentParser.add_argument` takes it. A positional is shown in capitals (QUERY),
    an option's default at the end of its help."""
    takes_value = options.get("action") in (None, "append")
    if not names[0].startswith("-"):
        options.setdefault("metavar", names[0].upper())
    elif takes_value and "choices" not in options:  # named after the option: `--id ID`, not the dest's `ID_`
        long = next((n for n in names if n.startswith("--")), names[0])
        options.setdefault("metavar", long.lstrip("-").upper().replace("-", "_"))
    default = options.get("default")
    if options.get("help") and default not in (None, False, [], ()) and "action" not in options:
        options["help"] += f" [default: {default}]"
    return names, options


def flag(*names: str, help: str) -> tuple:
    """An on/off option, off unless given."""
    dest = names[-1] if not names[-1].startswith("-") else None
    names = names[:-1] if dest else names
    return arg(*names, **({"dest": dest} if dest else {}), action="store_true", help=help)


def many(*names: str, **options) -> tuple:
    """An option that may be given several times; the values in order, [] when not given."""
    return arg(*names, action="append", default=[], **options)


def switch(name: str, help: str) -> tuple:
    """`--NAME` and `--no-NAME`: True, False, or None when neither is given."""
    return arg(name, action=argparse.BooleanOptionalAction, default=None, help=help)


def ranged(low: int, high: int | None = None):
    """An argument type: a whole number from low to high."""
    def number(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"{value} is not in the range {low} to {high}" if high is not None
                                             else f"{value} is smaller than {low}")
        return value

    return number


def scope(text: str) -> str:
    """An argument type: a memory's scope, global or project:<name>."""
    import re

    from hafiza.vault.format.kinds import SCOPE_PATTERN

    if not re.match(SCOPE_PATTERN, text):
        raise argparse.ArgumentTypeError(f"{text!r} is not 'global' or 'project:<name>'")
    return text


def lower(text: str) -> str:
    """An argument type for case-insensitive choices: `--type Rule` is `--type rule`."""
    return text.lower()


def memory_id(text: str) -> str:
    """An argument type: a memory's id as a person types it. The command is given the whole id when the text
    starts just one (`Command.call`, through `Context.memory_id` in cli/app.py), and the shell completes it
    (cli/completion.py)."""
    return text


def any_memory_id(text: str) -> str:
    """An argument type: the id of a memory of yours or of a team vault you read (`used`), as a person types
    it; its start stands for the one id of all those vaults it starts, as `memory_id`'s does in yours."""
    return text


def date_value(text: str):
    """An argument type: YYYY-MM-DD to a date."""
    import datetime as dt

    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date (YYYY-MM-DD)") from None


def folder(text: str) -> str:
    """An argument type: a path that is not a file (it may not exist yet)."""
    if os.path.isfile(text):
        raise argparse.ArgumentTypeError(f"{text!r} is a file, not a folder")
    return text


def binary_input(text: str):
    """An argument type: a file opened for reading bytes; `-` is stdin."""
    if text == "-":
        return sys.stdin.buffer
    try:
        return open(text, "rb")  # noqa: SIM115 - read until the command ends, closed with the process
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot open {text!r}: {exc.strerror}") from None


class Formatter(argparse.RawDescriptionHelpFormatter):
    """argparse's help, with the docstrings' line breaks kept and `Usage:` capitalised as it always was."""

    def add_usage(self, usage, actions, groups, prefix=None):
        super().add_usage(usage, actions, groups, "Usage: " if prefix is None else prefix)


class Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, formatter_class=Formatter, allow_abbrev=False, **kwargs)

    def _get_formatter(self):
        """argparse makes a formatter for every argument it adds (to check its metavar) and for the usage of
        every parse; each asks shutil for the terminal's width, and importing shutil (its archive formats
        load bz2 and lzma) cost every command ~3 ms."""
        return self.formatter_class(prog=self.prog, width=_columns() - 2)

    def error(self, message: str):
        """Usage, a hint, and one `Error: ...` line on stderr; exit status 2."""
        self.print_usage(sys.stderr)
        sys.stderr.write(f"Try '{self.prog} -h' for help.\n\nError: {message}\n")
        sys.exit(2)


def _columns() -> int:
    """The terminal's width as shutil.get_terminal_size finds it: $COLUMNS, else stdout's terminal, else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", 0))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


class Command:
    """A command: its function, its arguments and, for a group, its subcommands.

    The function is called as `function(ctx, **arguments)`. A group runs its own function only when no
    subcommand is given (`hafiza review` lists, `hafiza review show` shows); a group without a function of
    its own prints its help then.
    """

    def __init__(self, function, name: str | None, params=(), bare: bool = True):
        self.function, self.params = function, tuple(params)
        self.name = name or function.__name__.rstrip("_")
        self.bare = bare  # whether the function runs when no subcommand is given
        self.subcommands: dict[str, Command] = {}

    @property
    def help(self) -> str:
        first, _, rest = (self.function.__doc__ or "").strip().partition("\n")
        lines = rest.splitlines()  # dedented here: importing textwrap cost every command ~1 ms
        indent = min((len(line) - len(line.lstrip()) for line in lines if line.strip()), default=0)
        return (first + "\n" + "\n".join(line[indent:] if line.strip() else "" for line in lines)).strip()

    @property
    def summary(self) -> str:
        """The help's first sentence (cut at a word near 90 characters), for a group's list of commands."""
        import re

        first = self.help.split("\n\n")[0].replace("\n", " ")
        sentence = re.split(r"(?<!\be\.g)(?<!\bi\.e)\.(?:\s|$)", first, maxsplit=1)[0] + "."
        return sentence if len(sentence) <= 90 else sentence[:88].rsplit(" ", 1)[0] + " ..."

    def command(self, *params, name: str | None = None):
        """Register the decorated function as a subcommand, named `name` or after the function (`list_`: list)."""
        def register(function):
            found = Command(function, name, params)
            self.subcommands[found.name] = found
            return function

        return register

    def group(self, *params, name: str | None = None, bare: bool = False):
        """Register the decorated function as a group of subcommands; `bare`: it runs when none is given."""
        def register(function):
            found = Command(function, name, params, bare)
            self.subcommands[found.name] = found
            return found

        return register

    def parser(self, prog: str, parser: Parser | None = None) -> Parser:
        """This command's parser (a group's with its subcommands'); each fills in `command` and `parser`."""
        parser = parser or Parser(prog=prog, description=self.help)
        for names, options in self.params:
            parser.add_argument(*names, **options)
        parser.set_defaults(command=self, parser=parser)
        if self.subcommands:
            subs = parser.add_subparsers(title="commands", metavar="COMMAND")
            for name, sub in self.subcommands.items():
                sub.parser(f"{prog} {name}", subs.add_parser(name, help=sub.summary, description=sub.help))
        return parser

    def call(self, ctx, parsed: argparse.Namespace):
        """Run the function with the arguments it declared, as parsed."""
        if self.subcommands and not self.bare:
            parsed.parser.print_help(sys.stderr)
            sys.exit(2)
        values = {}
        for names, options in self.params:
            name = options.get("dest") or _dest(names)
            value = values[name] = getattr(parsed, name)
            if options.get("type") in (memory_id, any_memory_id) and value:  # the one place a typed id becomes whole
                teams = options["type"] is any_memory_id
                values[name] = [ctx.memory_id(v, teams) for v in value] if isinstance(value, list) \
                    else ctx.memory_id(value, teams)
        return self.function(ctx, **values)


def _dest(names: tuple) -> str:
    long = next((n for n in names if n.startswith("--")), names[0])
    return long.lstrip("-").replace("-", "_")


# ---- output: colour, an editor, a progress bar

COLOURS = {"red": 31, "green": 32, "yellow": 33, "cyan": 36}


def style(text: str, fg: str | None = None, bold: bool = False, stream=None) -> str:
    """`text` in a colour (or bold) on a terminal; plain in a pipe, a file, or with NO_COLOR set."""
    stream = stream or sys.stdout
    if os.environ.get("NO_COLOR") or not stream.isatty():
        return text
    codes = ([str(COLOURS[fg])] if fg else []) + (["1"] if bold else [])
    return f"\x1b[{';'.join(codes)}m{text}\x1b[0m" if codes else text


def err(text: str = "") -> None:
    """A line on stderr."""
    print(text, file=sys.stderr)


def edit(text: str, extension: str = ".txt") -> str | None:
    """`text` edited in $VISUAL or $EDITOR (else vi), through a temporary file; None when the editor did not
    save (as click.edit with require_save)."""
    import shlex
    import subprocess
    import tempfile

    from hafiza.vault.errors import HafizaError

    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    fd, name = tempfile.mkstemp(prefix="editor-", suffix=extension)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text if not text or text.endswith("\n") else text + "\n")
        # Set the time back: a file system with 1-2 s resolution and a fast editor would look unsaved.
        os.utime(name, (os.path.getatime(name), os.path.getmtime(name) - 2))
        before = os.path.getmtime(name)
        try:
            status = subprocess.call([*shlex.split(editor), name])
        except OSError as exc:
            raise HafizaError(f"{editor}: editing failed: {exc}") from None
        if status != 0:
            raise HafizaError(f"{editor}: editing failed (exit status {status})")
        if os.path.getmtime(name) == before:
            return None
        with open(name, encoding="utf-8-sig") as f:
            return f.read()
    finally:
        os.unlink(name)


class Bar:
    """A progress bar on stderr, drawn in place: `label [#####-----]  50%  500/1000`."""

    WIDTH = 36

    def __init__(self, label: str, total: int):
        self.label, self.total, self.shown = label, total, -1

    def update(self, done: int) -> None:
        percent = 100 * done // self.total
        if percent == self.shown:
            return  # a redraw per percent, not per memory
        self.shown, filled = percent, self.WIDTH * done // self.total
        sys.stderr.write(f"\r{self.label} [{'#' * filled}{'-' * (self.WIDTH - filled)}] "
                         f"{percent:3d}%  {done}/{self.total}")
        if done >= self.total:
            sys.stderr.write("\n")
        sys.stderr.flush()
