"""`hafiza demo`: a vault built from bundled memories, and searches that show what recall does."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

DATA = Path(__file__).parent / "demo" / "memories.jsonl"

# (what it shows, query, options)
SEARCHES = [
    ("Turkish folding: typed without diacritics", "sifre sifirlama", {}),
    ("Turkish folding: dotless I and ğ in capitals", "IGDIR", {}),
    ("Mixed Turkish/English prompt", "deploy'dan once CI yesil mi", {}),
    ("Meaning: no word in common with the memory", "paket yöneticisi olarak hangisini kurayım", {}),
    ("Cross-language: an English prompt, a Turkish memory", "can I ship to production on friday evening?", {}),
    ("Decay: the recent staging note outranks the 2025 one", "staging server port", {"explain": True}),
    ("Supersession: npm was replaced by pnpm", "npm install", {}),
    # By keywords: it says "npm install" in so many words, so it is there whatever the model ranks near them
    # (with the model, two pnpm memories pushed it out of the three shown).
    ("... the old memory is kept, labelled, and out of recall", "npm install",
     {"include_inactive": True, "mode": "keyword"}),
    ("Silence: with the hooks' floor, chitchat gets nothing", "peki, sonra bakarız", {"floor": True}),
]
HOOK_PROMPT = "yarın canlıya çıkacağız, hangi branch'ten deploy ediyorduk?"


def run_demo(keep: str | None, settings) -> None:
    """Build the demo vault (in `keep`, kept; else in a temporary folder, removed at the end) and show it."""
    root = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="hafiza-demo-"))
    try:
        _run(root, keep, settings)
    finally:
        if not keep:  # every run left its vault (~2 MB) in the temporary folder
            shutil.rmtree(root, ignore_errors=True)


def _run(root: Path, keep: str | None, settings) -> None:
    from hafiza.indexer.recall import FLOOR, SEARCH_FLOOR
    from hafiza.indexer.vaults import open_recall
    from hafiza.indexer.refresh import writable
    from hafiza.cli.importer import read_jsonl
    from hafiza.vault.store.vault import Vault

    from .app import progress_factory
    from .args import style

    Vault.init(root, actor="demo")
    vault = writable(root, "demo", embedder=settings, progress=progress_factory(), embed_now=True)
    items, _ = read_jsonl(DATA)
    if not vault.taken_ids():
        vault.import_many(items, source="import:demo")
    recall, mode = open_recall(root, embedder=settings)
    print(f"demo vault: {root}  ({len(items)} memories, one import commit, search mode: {mode})\n")
    for title, query, options in SEARCHES:
        options = dict(options)
        explain, floor = options.pop("explain", False), options.pop("floor", False)
        channels = options.pop("mode", mode)
        hits = recall.search(query, limit=3, mode=channels, all_scopes=True, floor=FLOOR if floor else SEARCH_FLOOR,
                             **options)
        flags = [f for f, on in (("--include-inactive", options.get("include_inactive")), ("--explain", explain),
                                 ("--floor", floor), (f"--mode {channels}", channels != mode)) if on]
        print(style(f"# {title}", fg="cyan"))
        print(f"$ hafiza search {json.dumps(query, ensure_ascii=False)} {' '.join(flags)}".rstrip())
        if not hits:
            print("  no memories match")
        for hit in hits:
            label = "" if hit.status == "active" else style(f" [{hit.status} by {hit.superseded_by}]", fg="yellow")
            print(f"  {hit.score:7.3f}  {hit.id}{label}  {hit.title}")
            if explain:
                print("           strength={strength:.2f} usefulness={usefulness:.2f}".format(**hit.parts))
        print()
    show_hook(root)
    print("history (`hafiza log`):")
    for commit in vault.git.log(5):
        print(f"  {commit.sha[:10]}  {commit.subject}")
    if keep:
        print(f"\nTry it: HAFIZA_VAULT={root} hafiza search 'paket yöneticisi'")
    else:
        print("\nThe demo vault is removed now; `hafiza demo --keep DIR` builds one to try.")


def show_hook(root: Path) -> None:
    """The main job: what Claude Code's UserPromptSubmit hook injects for one prompt."""
    payload = {"session_id": "demo", "cwd": str(root), "hook_event_name": "UserPromptSubmit", "prompt": HOOK_PROMPT}
    env = {**os.environ, "HAFIZA_VAULT": str(root), "HAFIZA_DAEMON": "0"}
    from hafiza.hooks.clients import hook_argv

    from .args import style

    out = subprocess.run(hook_argv(sys.executable, "claude-code", "UserPromptSubmit"),
                         input=json.dumps(payload), capture_output=True, text=True, env=env, timeout=60).stdout
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"] if out else "(nothing injected)"
    print(style("# On every prompt: what the Claude Code hook injects (cold path: keywords only)", fg="cyan"))
    print(f"$ echo '{{\"prompt\": \"{HOOK_PROMPT}\", ...}}' | hafiza hook claude-code UserPromptSubmit")
    print(context + "\n")
