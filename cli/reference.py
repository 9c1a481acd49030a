"""The CLI reference page (docs/cli.md), made from the commands' own parsers so it cannot drift from them:
`python -m hafiza.cli.reference > docs/cli.md` (`make docs` runs it; tests/test_docs.py fails when the
committed page differs from what this prints).

Rendered from each command's declared arguments rather than from argparse's help text, whose layout
changes between Python versions (3.13 writes `-n, --limit LIMIT` where 3.11 writes `-n LIMIT, --limit
LIMIT`), so the page is the same whichever interpreter makes it.
"""

from __future__ import annotations

import argparse
import re

from .app import MODULE_OF, command

HEADER = """# CLI reference

Every command, subcommand, argument and option of `hafiza`, made from the parsers the commands run with
(`python -m hafiza.cli.reference > docs/cli.md`; a test fails when this page is out of date). Each
command prints the same with `--help`. [Commands](commands.md) is the overview.

`hafiza [--vault FOLDER] COMMAND ...`: `--vault` (before the command) names the vault for this command,
else `$HAFIZA_VAULT`, else `~/.local/share/hafiza/vault`; `hafiza --version` prints the version.
"""


def page() -> str:
    parts = [HEADER]
    for name in sorted(MODULE_OF):
        parts += _command(command(name), f"hafiza {name}", 2)
    return "\n".join(parts).rstrip() + "\n"


def _command(found, prog: str, level: int) -> list[str]:
    out = [f"{'#' * level} {prog}\n", _usage(found, prog) + "\n"]
    help_text = found.help
    if help_text:
        out.append("```text\n" + help_text + "\n```\n")
    arguments = [(names, options) for names, options in found.params if not names[0].startswith("-")]
    options = [(names, options) for names, options in found.params if names[0].startswith("-")]
    if arguments:
        out.append("| argument | |\n| --- | --- |")
        out += [f"| `{_metavar(names, o)}` | {_cell(_help(o))} |" for names, o in arguments]
        out.append("")
    if options:
        out.append("| option | |\n| --- | --- |")
        out += [f"| {_flags(names, o)} | {_cell(_help(o))} |" for names, o in options]
        out.append("")
    if found.subcommands:
        out.append("| command | |\n| --- | --- |")
        out += [f"| [`{sub}`](#{_anchor(f'{prog} {sub}')}) | {_cell(s.summary)} |" for sub, s in found.subcommands.items()]
        out.append("")
        for sub_name, sub in found.subcommands.items():
            out += _command(sub, f"{prog} {sub_name}", level + 1)
    return out


def _usage(found, prog: str) -> str:
    words = [prog]
    if found.subcommands:
        words.append("COMMAND" if not found.bare else "[COMMAND]")
    for names, options in found.params:
        if not names[0].startswith("-"):
            metavar, nargs = _metavar(names, options), options.get("nargs")
            words.append({"?": f"[{metavar}]", "*": f"[{metavar} ...]", "+": f"{metavar} [{metavar} ...]"}
                         .get(nargs, metavar))
    if any(names[0].startswith("-") for names, _ in found.params):
        words.append("[options]")
    return "`" + " ".join(words) + "`"


def _metavar(names: tuple, options: dict) -> str:
    if options.get("choices"):
        return "{" + ",".join(options["choices"]) + "}"
    metavar = options.get("metavar") or names[0].upper()
    return metavar.strip("[]")


def _flags(names: tuple, options: dict) -> str:
    action = options.get("action")
    if action is argparse.BooleanOptionalAction:
        shown = [f for n in names for f in (n, "--no-" + n[2:])]
    else:
        shown = list(names)
    value = "" if action not in (None, "append") else " " + _metavar(names, options)
    text = ", ".join(f"`{flag}{value}`" for flag in shown)
    return text + (" (repeatable)" if action == "append" else "")


def _help(options: dict) -> str:
    return re.sub(r"\s+", " ", options.get("help") or "").strip()


def _cell(text: str) -> str:
    """Text for a table cell: `|` and what Markdown would take for HTML or emphasis escaped."""
    return re.sub(r"([|<>*\\])", r"\\\1", text)


def _anchor(title: str) -> str:
    """The anchor MkDocs (Python-Markdown's toc) gives a heading."""
    return re.sub(r"[\s]+", "-", re.sub(r"[^\w\s-]", "", title).strip().lower())


def main() -> None:
    print(page(), end="")


if __name__ == "__main__":
    main()
