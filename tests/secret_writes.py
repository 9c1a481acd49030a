"""Every way text reaches a vault's git, as one shape: `write(vault, texts)` tries each text on a fresh try and
says, per text, whether the guard refused it. tests/test_secret_paths.py and bench/secret_guard.py drive the
secrets corpora through all of them; what reached git is then read back from `git log -p`.

The paths (issue 29, item 1): remember and update (what the CLI's `remember`, `update` and the web page
call), edit (a person's whole-file edit), import, the MCP `remember` and `update` tools through the real SDK
client, a hand edit picked up as "record manual edits", an episode's lesson, a fact's value, and capture
(a statement said in a session, filed and auto-accepted); and since the new-user trial (a `pw: …` kept):
aliases (what `hafiza alias` and the web page's box call) and the MCP `add_aliases` and `set_fact` tools.
"""

from __future__ import annotations

import datetime as dt
import itertools
import subprocess

import anyio
from mcp import Client
from mcp_types import Implementation

from hafiza.hooks.mcp import create_server
from hafiza.skills import capture
from hafiza.skills.transcripts import Turn
from hafiza.vault import episodes
from hafiza.vault.errors import HafizaError, SecretRefused
from hafiza.vault.format import model


def history(root) -> str:
    return subprocess.run(["git", "-C", str(root), "log", "-p", "--all", "--format=%B"], capture_output=True,
                          text=True, errors="replace", check=True).stdout


def _each(vault, texts, write) -> list[bool]:
    refused = []
    for text in texts:
        try:
            write(vault, text)
        except SecretRefused:
            refused.append(True)
        else:
            refused.append(False)
    return refused


def _target(vault) -> str:
    """An ordinary memory to update or edit."""
    if not vault.path_of("target").exists():
        vault.remember("Staging runs on port 8080.", id="target")
    return "target"


def remember(vault, texts):
    return _each(vault, texts, lambda v, text: v.remember(text))


def update(vault, texts):
    return _each(vault, texts, lambda v, text: v.update(_target(v), text))


def edit(vault, texts):
    def write(v, text):
        memory = v.get(_target(v))
        v.rewrite(memory.id, model.dump(memory.evolve(body=text)))
    return _each(vault, texts, write)


def import_(vault, texts):
    return _each(vault, texts, lambda v, text: v.import_many(
        [{"text": "A note from the old wiki.", "title": "Wiki note", "source": "wiki"}, {"text": text}],
        source="import:corpus.jsonl"))


_EDITS = itertools.count(1)


def write_by_hand(vault, text) -> None:
    """A file written by hand, then any write: it is recorded as "record manual edits" first."""
    path = vault.memories_dir / "hand-written.md"
    path.write_text(f"---\nid: hand-written\ntitle: Written by hand\n---\n{text}\n", encoding="utf-8")
    try:
        vault.remember(f"A memory written after hand edit number {next(_EDITS)}.")  # a repeat is refused
    finally:
        path.unlink(missing_ok=True)  # refused: the person removes it, as the error asks


def hand_edit(vault, texts):
    return _each(vault, texts, write_by_hand)


def episode(vault, texts):
    return _each(vault, texts, lambda v, text: episodes.record(v, "Rotate the staging credentials", "success",
                                                               "Rotated them.", lesson=text))


def _pieces(text: str, most: int = 300) -> list[str]:
    """`text` in runs of whole lines of at most `most` characters (a fact's value is at most 300)."""
    pieces = [""]
    for line in text.splitlines(keepends=True):
        if pieces[-1] and len(pieces[-1]) + len(line) > most:
            pieces.append("")
        pieces[-1] += line[:most]
    return [piece for piece in pieces if piece.strip()]


def fact(vault, texts):
    """The text as a fact's value (the fact code folds its line breaks), in pieces of at most 300 characters
    set one after another: a long paste is refused for its length otherwise, whatever it holds."""
    def write(v, text):
        for i, piece in enumerate(_pieces(text), 1):
            v.set_fact("staging", f"note {i}", piece)
    return _each(vault, texts, write)


def _phrases(text: str, most: int = 100) -> list[str]:
    """`text` as aliases: a phrase per line (as the web page's alias box sends them), a long line in runs of whole
    words of at most `most` characters; a longer word alone (the guard reads it, then it is too long)."""
    phrases = []
    for line in text.splitlines():
        words = line.split()
        while words:
            phrases.append(words.pop(0))
            while words and len(phrases[-1]) + len(words[0]) < most:
                phrases[-1] += " " + words.pop(0)
    return phrases


_TARGETS = itertools.count(1)


def _alias_targets(vault, text) -> list[tuple[str, list[str]]]:
    """(a fresh memory, at most 16 phrases for it) for each run of `text`'s phrases: a memory holds 16."""
    runs = []
    phrases = _phrases(text)
    for i in range(0, len(phrases), 16):
        target = f"alias-target-{next(_TARGETS)}"
        vault.remember(f"Alias target number {target}.", id=target)
        runs.append((target, phrases[i:i + 16]))
    return runs


TOO_LONG = "characters; at most"  # an alias past MAX_ALIAS_CHARS: refused after the guard, nothing written


def alias(vault, texts):
    def write(v, text):
        for target, phrases in _alias_targets(v, text):
            try:
                v.add_aliases(target, phrases)
            except SecretRefused:
                raise
            except HafizaError as exc:
                if TOO_LONG not in exc.message:
                    raise
    return _each(vault, texts, write)


def capture_(vault, texts):
    refused = []
    for i, text in enumerate(texts):
        turn = Turn(f"k{i}", "claude-code", f"s-{i}", "webshop", "user", "2026-12-07T10:00:00.000Z", i,
                    f"Remember this: {text}")
        report = capture.file(vault, [turn], auto=True, now=dt.datetime(2026, 12, 7, 10, 0, i % 60))
        refused.append(report.skipped > 0 and not report.accepted)
    return refused


def _calls(vault, tool: str, text: str) -> list[dict]:
    """The arguments of the calls of `tool` that write `text`."""
    if tool == "remember":
        return [{"text": text}]
    if tool == "update":
        return [{"id": _target(vault), "text": text}]
    if tool == "add_aliases":
        return [{"id": target, "aliases": phrases} for target, phrases in _alias_targets(vault, text)]
    # set_fact: the pieces `fact` sets, as an agent sends them (the value's line breaks are folded after the guard
    # has read it; folded before, a wrapped key is two words no rule joins, as typed with a space inside).
    return [{"entity": "staging", "attribute": f"note {i}", "value": piece} for i, piece in enumerate(_pieces(text), 1)]


def _mcp(tool: str):
    def write(vault, texts):
        async def main():
            out = []
            async with Client(create_server(vault.root), client_info=Implementation(name="agent", version="1")) as c:
                for text in texts:
                    refused = False
                    for args in _calls(vault, tool, text):
                        result = await c.call_tool(tool, args)
                        message = result.content[0].text if result.content else ""
                        if result.is_error and "secret" not in message and TOO_LONG not in message:
                            raise HafizaError(f"MCP {tool}: {message}")
                        refused = refused or (result.is_error and "secret" in message)
                    out.append(refused)
            return out
        return anyio.run(main)
    return write


PATHS = {"remember": remember, "update": update, "edit": edit, "import": import_, "mcp remember": _mcp("remember"),
         "mcp update": _mcp("update"), "hand edit": hand_edit, "episode": episode, "fact": fact, "capture": capture_,
         "alias": alias, "mcp add_aliases": _mcp("add_aliases"), "mcp set_fact": _mcp("set_fact")}
