"""`hafiza demo`: a vault built from bundled memories, and searches that show what recall does."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import click

DATA = Path(__file__).parent / "demo" / "memories.jsonl"

# (what it shows, query, options)
SEARCHES = [
    ("Turkish folding: typed without diacritics", "sifre sifirlama", {}),
    ("Turkish folding: dotless I and ğ in capitals", "IGDIR", {}),
    ("Turkish folding: İ in İzmir", "izmir musteri", {}),
    ("Mixed Turkish/English prompt", "deploy'dan once CI yesil mi", {}),
    ("Decay: the recent staging note outranks the 2025 one", "staging server port", {"explain": True}),
    ("Supersession: npm was replaced by pnpm", "npm install", {}),
    ("... the old memory is kept, labelled, and out of recall", "npm install", {"include_inactive": True}),
]


def run_demo(keep: str | None) -> None:
    from hafiza.indexer.recall import open_recall
    from hafiza.vault.importer import read_jsonl
    from hafiza.vault.store import Vault

    root = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="hafiza-demo-"))
    vault = Vault.init(root, actor="demo")
    items, _ = read_jsonl(DATA)
    if not vault.taken_ids():
        vault.import_many(items, source="import:demo")
    recall, mode = open_recall(root)
    recall.index.sync()
    click.echo(f"demo vault: {root}  ({len(items)} memories, one import commit, search mode: {mode})\n")
    for title, query, options in SEARCHES:
        explain = options.pop("explain", False)
        hits = recall.search(query, limit=3, mode=mode, all_scopes=True, **options)
        click.secho(f"# {title}", fg="cyan")
        click.echo(f"$ hafiza search {json.dumps(query, ensure_ascii=False)}"
                   + (" --include-inactive" if options.get("include_inactive") else "")
                   + (" --explain" if explain else ""))
        for hit in hits:
            label = "" if hit.status == "active" else click.style(f" [{hit.status} by {hit.superseded_by}]", fg="yellow")
            click.echo(f"  {hit.score:7.2f}  {hit.id}{label}  {hit.title}")
            if explain:
                click.echo("           strength={strength:.2f} usefulness={usefulness:.2f}".format(**hit.parts))
        click.echo()
    click.echo("history (`hafiza log`):")
    for commit in vault.git.log(5):
        click.echo(f"  {commit.sha[:10]}  {commit.subject}")
    if not keep:
        click.echo(f"\nTry it: HAFIZA_VAULT={root} hafiza search 'paket yöneticisi'")
