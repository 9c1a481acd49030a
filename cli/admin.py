"""Commands that set up and look after a vault: init, reindex, doctor, demo."""

from __future__ import annotations

import sys

from hafiza.vault.format.text import plural

from .app import cli, emit, open_vault, progress_factory
from .args import arg, err, flag, folder, style


@cli.command(
    arg("--from", dest="url", metavar="URL",
        help="Start from an existing vault's remote: clone it, register the merge driver, build the index."),
    flag("--json", "as_json", help="Print the vault's folder, the commit that made it (none when it was there) and, "
                                   "with --from, what was indexed, as JSON."),
)
def init(ctx, url, as_json):
    """Create a vault (a git repository with memories/) at the vault path. Safe to repeat."""
    from hafiza.indexer.config import embedder
    from hafiza.indexer.refresh import rebuild_all
    from hafiza.vault.store.vault import Vault
    from hafiza.vault.sync.machines import clone

    if url:
        clone(url, ctx.root)
    vault = Vault.init(ctx.root)
    report = None
    if url:
        report = rebuild_all(vault.root, progress=progress_factory(), embedder=embedder(ctx.settings))
    if as_json:
        emit({"path": str(vault.root), "commit": vault.last_commit, "from": url, "indexed": None, "skipped": {},
              **(indexed(report) if report else {})})
        return
    if report:
        print(f"cloned {url}: {plural(report.added, 'memory')} indexed")
        tell_skipped(report)  # a memory holding a secret came with the clone: quarantined, and named
    print(f"vault ready at {vault.root}")


@cli.command(flag("--json", "as_json", help="Print how many memories were indexed and the files left out as JSON."))
def reindex(ctx, as_json):
    """Rebuild the index (and vectors) from the files, from scratch."""
    from hafiza.indexer.config import embedder
    from hafiza.indexer.refresh import rebuild_all

    vault = open_vault(ctx)
    report = rebuild_all(vault.root, progress=progress_factory(), embedder=embedder(ctx.settings))
    if as_json:
        emit(indexed(report))
        return
    skipped = f"; {plural(len(report.errors), 'file')} skipped" if report.errors else ""
    print(f"indexed {plural(report.added, 'memory')}{skipped}")
    tell_skipped(report)


def _skipped(report) -> dict[str, str]:
    """Each file an index build left out (unparsable, a link, quarantined for a secret), by its path in the
    vault: why."""
    return {name if name.startswith("facts/") else f"memories/{name}": reason
            for name, reason in sorted(report.errors.items())}


def indexed(report) -> dict:
    """An index build as `--json` prints it: memories indexed, files left out and why."""
    return {"indexed": report.added, "skipped": _skipped(report)}


def tell_skipped(report) -> None:
    """Each file an index build left out, and why, on stderr."""
    for path, reason in _skipped(report).items():
        err(f"  skipped {path}: {reason}")


@cli.command(flag("--json", "as_json", help="JSON report."))
def doctor(ctx, as_json):
    """Check the vault: index against files, unparsable files, vectors, lock, git state, pending usage,
    memories without aliases, Claude Code's MEMORY.md load cliff, installed clients, hook calls that failed
    open in the last 7 days, memories labelled unverified, proposals waiting for review, what merges from
    other machines left (an unfinished merge, conflict markers, memories holding two texts)."""
    from hafiza.hooks.health import adapter_checks
    from hafiza.indexer.doctor import run_checks

    checks = run_checks(open_vault(ctx), ctx.settings, adapters=adapter_checks())
    if as_json:
        emit([c.__dict__ for c in checks])
    else:
        for c in checks:
            mark = {"ok": style("ok  ", fg="green"), "warn": style("warn", fg="yellow"),
                    "fail": style("FAIL", fg="red")}[c.level]
            print(f"{mark}  {c.name}: {c.summary}")
            for line in c.details:
                print(f"        {line}")
    if any(c.level == "fail" for c in checks):
        sys.exit(1)


@cli.command(arg("--keep", type=folder, help="Build the demo vault here and keep it."))
def demo(ctx, keep):
    """Build a demo vault from bundled memories and show recall at work."""
    from .demo import run_demo

    run_demo(keep, ctx.settings)
