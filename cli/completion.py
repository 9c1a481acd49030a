"""`hafiza completion SHELL`: a completion script for bash, zsh or fish, made from the commands' own
parsers, so it offers every command, subcommand, option and choice there is and cannot drift from them.

A command builds only its own parser when it runs (cli/app.py); the script needs all of them, so this is
the one place besides `hafiza --help` that imports every command module. The three scripts share one
description of the command line (`tree`) and the same way of finding where the cursor is: the words
before it name a command path (`review accept`), an option that takes a value swallows the next word.
Written here rather than with shtab, which has no fish and would still need a second generator.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass, field

from .app import MODULE_OF, cli, command
from .args import arg

SHELLS = ("bash", "zsh", "fish")


@dataclass
class Option:
    flags: tuple[str, ...]
    help: str
    takes_value: bool = False
    choices: tuple[str, ...] = ()
    kind: str = ""          # "file" or "dir": the shell completes paths for its value; "id": a memory's id


@dataclass
class Node:
    """One command path's completions: its subcommands, its options, what its positional arguments take."""

    subcommands: dict[str, str] = field(default_factory=dict)   # name -> one-line summary
    options: list[Option] = field(default_factory=list)
    arguments: tuple[str, ...] = ()                              # choices of its positionals
    argument_kind: str = ""                                      # "file" when a positional is a path, "id"...


HELP = Option(("-h", "--help"), "show this help message and exit")
# What an argument's type says the shell should offer. Ids come from `hafiza list --ids`, run as the user tabs:
# ~70 ms at 5,000 memories (a SQLite read of the manifest; no Whoosh, no model), quick enough for a Tab.
KINDS = {"folder": "dir", "binary_input": "file", "memory_id": "id", "any_memory_id": "id"}
PATH_METAVARS = {"SOURCE": "file", "URL|PATH": "file", "FILE": "file"}


def tree() -> dict[str, Node]:
    """Every command path ('' for `hafiza` itself) and what may follow it."""
    nodes = {"": Node(subcommands={name: command(name).summary for name in sorted(MODULE_OF)},
                      options=[HELP, Option(("--version",), "show the version and exit"),
                               Option(("--vault",), "the vault folder", takes_value=True, kind="dir")])}
    for name in sorted(MODULE_OF):
        _walk(command(name), name, nodes)
    return nodes


def _walk(found, path: str, nodes: dict[str, Node]) -> None:
    node = nodes[path] = Node(subcommands={name: sub.summary for name, sub in found.subcommands.items()},
                              options=[HELP])
    for names, options in found.params:
        kind = KINDS.get(getattr(options.get("type"), "__name__", ""), "")
        choices = tuple(options.get("choices") or ())
        if names[0].startswith("-"):
            node.options.append(_option(names, options, choices, kind))
        else:
            node.arguments += choices
            node.argument_kind = node.argument_kind or kind or PATH_METAVARS.get(options.get("metavar", ""), "")
    for name, sub in found.subcommands.items():
        _walk(sub, f"{path} {name}", nodes)


def _option(names: tuple, options: dict, choices: tuple, kind: str) -> Option:
    flags = tuple(names)
    if options.get("action") is argparse.BooleanOptionalAction:
        flags += tuple("--no-" + f[2:] for f in names if f.startswith("--"))
    takes_value = options.get("action") in (None, "append")
    return Option(flags, _first_sentence(options.get("help", "")), takes_value, choices, kind)


def _first_sentence(text: str) -> str:
    text = re.sub(r"\s*\[default: .*\]$", "", text.replace("\n", " "))
    return re.split(r"(?<=[.;:])\s", text, maxsplit=1)[0].rstrip(".;:")


# ---- the scripts. Each defines small lookup functions generated from the tree (case statements, so
# bash 3.2 on macOS needs no associative arrays), then one function that finds the command path.

def _sh(text: str) -> str:
    """`text` as one single-quoted shell word (bash, zsh and fish all read '...'\\'' ... the same way
    for the characters a help text holds, except fish, which gets _fish_quote)."""
    return "'" + text.replace("'", "'\\''") + "'"


def _takes(nodes: dict[str, Node]) -> list[str]:
    """`path|--option` for every option that takes a value."""
    return [f"{path}|{flag}" for path, node in nodes.items() for o in node.options if o.takes_value for flag in o.flags]


def _takes_function(nodes: dict[str, Node]) -> str:
    """`_hafiza_takes 'path|--option'`: whether that option takes a value (the same in bash and zsh)."""
    patterns = "|".join(_sh(t) for t in _takes(nodes))
    return f"_hafiza_takes() {{\n    case \"$1\" in\n        {patterns}) return 0 ;;\n    esac\n    return 1\n}}\n"


def _values(nodes: dict[str, Node]) -> dict[str, str]:
    """`path|--option` -> its choices as words, or @file / @dir."""
    out = {}
    for path, node in nodes.items():
        for o in node.options:
            if o.takes_value and (o.choices or o.kind):
                for flag in o.flags:
                    out[f"{path}|{flag}"] = " ".join(o.choices) if o.choices else "@" + o.kind
    return out


def bash(nodes: dict[str, Node]) -> str:
    def cases(pairs) -> str:
        return "\n".join(f"        {_sh(key)}) echo {_sh(value)} ;;" for key, value in pairs if value)

    return f"""# bash completion for hafiza: eval "$(hafiza completion bash)" in ~/.bashrc
_hafiza_subs() {{
    case "$1" in
{cases((p, " ".join(n.subcommands)) for p, n in nodes.items())}
    esac
}}
_hafiza_opts() {{
    case "$1" in
{cases((p, " ".join(f for o in n.options for f in o.flags)) for p, n in nodes.items())}
    esac
}}
_hafiza_args() {{
    case "$1" in
{cases((p, " ".join(n.arguments) or ("@" + n.argument_kind if n.argument_kind else "")) for p, n in nodes.items())}
    esac
}}
_hafiza_values() {{
    case "$1" in
{cases(_values(nodes).items())}
    esac
}}
{_takes_function(nodes)}_hafiza_ids() {{
    [[ "$vault" == "~"* ]] && vault="$HOME${{vault#\\~}}"
    if [ -n "$vault" ]; then hafiza --vault "$vault" list --ids --status all 2>/dev/null
    else hafiza list --ids --status all 2>/dev/null; fi
}}
_hafiza_words() {{
    case "$1" in
        @file) compgen -f -- "$2" ;;
        @dir) compgen -d -- "$2" ;;
        @id) compgen -W "$(_hafiza_ids)" -- "$2" ;;
        *) compgen -W "$1" -- "$2" ;;
    esac
}}
_hafiza() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}" cmdpath="" vault="" i=1 w
    while [ "$i" -lt "$COMP_CWORD" ]; do
        w="${{COMP_WORDS[i]}}"
        if [[ "$w" == -* ]]; then
            [ -z "$cmdpath" ] && [[ "$w" == --vault=* ]] && vault="${{w#--vault=}}"
            [ -z "$cmdpath" ] && [ "$w" = --vault ] && vault="${{COMP_WORDS[i+1]}}"
            [ "$vault" = "=" ] && vault="${{COMP_WORDS[i+2]}}"  # `--vault=DIR`, split at the = by readline
            if [[ "$w" != *=* ]] && _hafiza_takes "$cmdpath|$w"; then i=$((i + 1)); fi
        elif [[ " $(_hafiza_subs "$cmdpath") " == *" $w "* ]]; then
            cmdpath="${{cmdpath:+$cmdpath }}$w"
        fi
        i=$((i + 1))
    done
    local prev="${{COMP_WORDS[COMP_CWORD-1]}}" words
    COMPREPLY=()
    if [ "$COMP_CWORD" -gt 1 ] && [[ "$prev" == -* ]] && _hafiza_takes "$cmdpath|$prev"; then
        words="$(_hafiza_values "$cmdpath|$prev")"
        [ -n "$words" ] && COMPREPLY=($(_hafiza_words "$words" "$cur"))
        return 0
    fi
    if [[ "$cur" == -* ]]; then
        words="$(_hafiza_opts "$cmdpath")"
    else
        words="$(_hafiza_subs "$cmdpath")"
        [ -z "$words" ] && words="$(_hafiza_args "$cmdpath")"
    fi
    [ -n "$words" ] && COMPREPLY=($(_hafiza_words "$words" "$cur"))
    return 0
}}
complete -F _hafiza hafiza
"""


def _zsh_item(name: str, summary: str) -> str:
    return _sh(name.replace(":", "\\:") + ":" + summary)


def zsh(nodes: dict[str, Node]) -> str:
    def cases(pairs) -> str:
        return "\n".join(f"        {_sh(key)}) reply=({' '.join(items)}) ;;" for key, items in pairs if items)

    subs = ((p, [_zsh_item(k, v) for k, v in n.subcommands.items()]) for p, n in nodes.items())
    opts = ((p, [_zsh_item(f, o.help) for o in n.options for f in o.flags]) for p, n in nodes.items())
    args = ((p, [_sh(a) for a in n.arguments] or ([_sh("@" + n.argument_kind)] if n.argument_kind else []))
            for p, n in nodes.items())
    values = ((k, [_sh(w) for w in v.split()]) for k, v in _values(nodes).items())
    return f"""#compdef hafiza
# zsh completion for hafiza: eval "$(hafiza completion zsh)" in ~/.zshrc (after compinit),
# or save it as _hafiza in a folder on $fpath
_hafiza_subs() {{
    reply=()
    case "$1" in
{cases(subs)}
    esac
}}
_hafiza_opts() {{
    reply=()
    case "$1" in
{cases(opts)}
    esac
}}
_hafiza_args() {{
    reply=()
    case "$1" in
{cases(args)}
    esac
}}
_hafiza_values() {{
    reply=()
    case "$1" in
{cases(values)}
    esac
}}
{_takes_function(nodes)}_hafiza_ids() {{
    [[ "$vault" == "~"* ]] && vault="$HOME${{vault#\\~}}"
    if [[ -n "$vault" ]]; then hafiza --vault "$vault" list --ids --status all 2>/dev/null
    else hafiza list --ids --status all 2>/dev/null; fi
}}
_hafiza_offer() {{
    case "${{reply[1]}}" in
        @file) _files ;;
        @dir) _files -/ ;;
        @id) compadd -- ${{(f)"$(_hafiza_ids)"}} ;;
        *) compadd -- "${{reply[@]}}" ;;
    esac
}}
_hafiza() {{
    local cmdpath="" vault="" i w
    local -a reply names
    for (( i = 2; i < CURRENT; i++ )); do
        w="${{words[i]}}"
        if [[ "$w" == -* ]]; then
            [[ -z "$cmdpath" && "$w" == --vault=* ]] && vault="${{w#--vault=}}"
            [[ -z "$cmdpath" && "$w" == --vault ]] && vault="${{words[i+1]}}"
            if [[ "$w" != *=* ]] && _hafiza_takes "$cmdpath|$w"; then (( i++ )); fi
        else
            _hafiza_subs "$cmdpath"
            names=("${{reply[@]%%:*}}")
            if (( ${{names[(Ie)$w]}} )); then cmdpath="${{cmdpath:+$cmdpath }}$w"; fi
        fi
    done
    local prev="${{words[CURRENT-1]}}"
    if (( CURRENT > 2 )) && [[ "$prev" == -* ]] && _hafiza_takes "$cmdpath|$prev"; then
        _hafiza_values "$cmdpath|$prev"
        (( ${{#reply}} )) && _hafiza_offer
        return 0
    fi
    if [[ "${{words[CURRENT]}}" == -* ]]; then
        _hafiza_opts "$cmdpath"
        _describe -t options 'option' reply
        return 0
    fi
    _hafiza_subs "$cmdpath"
    if (( ${{#reply}} )); then
        _describe -t commands 'command' reply
        return 0
    fi
    _hafiza_args "$cmdpath"
    (( ${{#reply}} )) && _hafiza_offer
    return 0
}}
if [[ "${{zsh_eval_context[-1]}}" == loadautofunc ]]; then
    _hafiza "$@"
else
    compdef _hafiza hafiza
fi
"""


def _fish_quote(text: str) -> str:
    """`text` as one fish word: in fish's single quotes only \\\\ and \\' are escapes."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def fish(nodes: dict[str, Node]) -> str:
    q = _fish_quote

    def cases(pairs) -> str:
        return "\n".join(f"        case {q(key)}\n            echo {q(value)}" for key, value in pairs if value)

    lines = [
        "# fish completion for hafiza: hafiza completion fish > ~/.config/fish/completions/hafiza.fish",
        "function __hafiza_subs",
        "    switch $argv[1]",
        cases((p, " ".join(n.subcommands)) for p, n in nodes.items()),
        "    end",
        "end",
        "function __hafiza_takes",
        "    switch $argv[1]",
        "        case " + " ".join(q(t) for t in _takes(nodes)),
        "            return 0",
        "    end",
        "    return 1",
        "end",
        "function __hafiza_path --description 'the hafiza command path before the cursor'",
        "    set -l path ''",
        "    set -l skip 0",
        "    for w in (commandline -opc)[2..-1]",
        "        if test $skip = 1",
        "            set skip 0",
        "        else if string match -q -- '-*' $w",
        "            if not string match -q -- '*=*' $w; and __hafiza_takes \"$path|$w\"",
        "                set skip 1",
        "            end",
        "        else if contains -- $w (string split ' ' -- (__hafiza_subs $path))",
        "            set path (string trim -- \"$path $w\")",
        "        end",
        "    end",
        "    echo $path",
        "end",
        "function __hafiza_at",
        "    test (__hafiza_path) = \"$argv[1]\"",
        "end",
        "function __hafiza_ids --description 'the memory ids of the vault the command line names'",
        "    set -l vault",
        "    set -l words (commandline -opc)[2..-1]",
        "    for i in (seq (count $words))",
        "        if test \"$words[$i]\" = --vault; and test $i -lt (count $words)",
        "            set vault $words[(math $i + 1)]",
        "        else if string match -q -- '--vault=*' $words[$i]",
        "            set vault (string replace -- '--vault=' '' $words[$i])",
        "        end",
        "    end",
        "    if test -n \"$vault\"",
        "        hafiza --vault (string replace -r '^~' $HOME -- $vault) list --ids --status all 2>/dev/null",
        "    else",
        "        hafiza list --ids --status all 2>/dev/null",
        "    end",
        "end",
        "complete -c hafiza -f",
    ]
    for path, node in nodes.items():
        at = f"-n {q('__hafiza_at ' + q(path))}"
        for name, summary in node.subcommands.items():
            lines.append(f"complete -c hafiza {at} -a {q(name)} -d {q(summary)}")
        for o in node.options:
            spec = " ".join(f"-l {f[2:]}" if f.startswith("--") else f"-s {f[1:]}" for f in o.flags)
            value = (f" -x -a {q(' '.join(o.choices))}" if o.choices else " -r -F" if o.kind == "file"
                     else " -x -a '(__fish_complete_directories)'" if o.kind == "dir"
                     else " -x -a '(__hafiza_ids)'" if o.kind == "id" else " -x" if o.takes_value else "")
            lines.append(f"complete -c hafiza {at} {spec} -d {q(o.help)}{value}")
        if node.arguments:
            lines.append(f"complete -c hafiza {at} -a {q(' '.join(node.arguments))}")
        elif node.argument_kind == "id":
            lines.append(f"complete -c hafiza {at} -a '(__hafiza_ids)'")
        elif node.argument_kind:
            lines.append(f"complete -c hafiza {at} -F")
    return "\n".join(lines) + "\n"


@cli.command(arg("shell", choices=SHELLS, help="bash, zsh or fish."))
def completion(ctx, shell):
    """Print the completion script for SHELL (bash, zsh or fish).

    bash: eval "$(hafiza completion bash)" in ~/.bashrc
    zsh:  eval "$(hafiza completion zsh)" in ~/.zshrc, after compinit
    fish: hafiza completion fish > ~/.config/fish/completions/hafiza.fish
    """
    print({"bash": bash, "zsh": zsh, "fish": fish}[shell](tree()), end="")
