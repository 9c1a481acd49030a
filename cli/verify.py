"""`hafiza verify`: probe the claims memories make against the projects they are about."""

from __future__ import annotations

import click

from hafiza.vault.errors import HafizaError

from .app import cli, emit, open_vault
from .curate import projects_of, provider_of


@cli.command()
@click.argument("ids", nargs=-1)
@click.option("--all", "force", is_flag=True, help="Probe every claim now, even those checked recently.")
@click.option("--network", is_flag=True, help="Also run url and pr probes (off by default).")
@click.option("--allow-private", is_flag=True,
              help="Let url probes reach loopback, private and link-local addresses (an intranet, a test server).")
@click.option("--project", "project_dirs", multiple=True, metavar="NAME=FOLDER",
              help="Where project NAME lives on this machine; repeatable.")
@click.option("--extract", is_flag=True, help="Propose claims for memories that have none (a review branch).")
@click.option("--apply", "apply_", is_flag=True, help="With --extract: write the claims straight to main.")
@click.option("--model", "model_spec", help="With --extract: a model provider to suggest more claims "
                                            "(arguments are kept only if they appear verbatim in the text).")
@click.option("--budget", default=50, show_default=True, type=click.IntRange(0, 100_000),
              help="With --extract and a model: at most this many model calls.")
@click.option("--dry-run", is_flag=True, help="Probe and print; write nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@click.pass_context
def verify(ctx, ids, force, network, allow_private, project_dirs, extract, apply_, model_spec, budget, dry_run,
           as_json):
    """Check the claims memories make (a path exists, a script is defined, a branch is there...).

    A failed claim labels the memory in recall ("unverified since ...") and lowers it; nothing is
    archived or deleted. Results land in the memories' frontmatter as one commit, so `hafiza undo`
    reverts a run. Only evidence from the project's own files and git history says `failed`; what
    cannot be reached from here is `unknown`."""
    vault = open_vault(ctx)
    places = projects_of(vault, project_dirs)
    if extract:
        return _extract(ctx, vault, ids, places, model_spec, budget, apply_, as_json)
    if apply_ or model_spec:
        raise HafizaError("--apply and --model go with --extract")
    from hafiza.verifier.run import verify as run

    report = run(vault, ids=ids or None, projects=places, network=network, allow_private=allow_private,
                 force=force, dry_run=dry_run)
    if as_json:
        emit(report.to_json())
        return
    for r in report.results:
        if r.outcome.status != "ok" or r.probed:
            mark = {"ok": "ok     ", "failed": "FAILED ", "unknown": "unknown", "invalid": "invalid"}[r.outcome.status]
            click.echo(f"  {mark} {r.memory} [{r.probe}] {r.outcome.detail}" + ("" if r.probed else " (recent)"))
    counts = ", ".join(f"{n} {s}" for s, n in sorted(report.counts().items())) or "no claims"
    where = f"; committed {report.commit[:10]}" if report.commit else ("; nothing changed" if not dry_run else "")
    click.echo(f"verify: {counts} in {report.seconds:.1f} s; {len(report.changed)} memories relabelled{where}")


def _extract(ctx, vault, ids, places, model_spec, budget, apply_, as_json):
    from hafiza.verifier.extract import propose

    memories = [vault.get(i) for i in ids] if ids else vault.load_all()[0]
    provider = provider_of(ctx, vault, model_spec, budget)
    branch, done = propose(vault, memories, places, provider=provider, apply=apply_)
    if as_json:
        emit({"branch": branch, "memories": [{"id": i, "claims": c, "dropped": d, "commit": sha}
                                             for i, c, d, sha in done]})
        return
    for memory_id, claims, dropped, _ in done:
        click.echo(f"  {memory_id}: " + ", ".join(f"{c['probe']} {next(iter(c['args'].values()))}" for c in claims))
        for why in dropped:
            click.echo(f"      dropped: {why}")
    if not done:
        click.echo("no claims found to propose")
    elif branch:
        click.echo(f"proposed claims for {len(done)} memories on {branch}; `hafiza review show {branch}`")
    else:
        click.echo(f"added claims to {len(done)} memories on main")
