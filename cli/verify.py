"""`hafiza verify`: probe the claims memories make against the projects they are about."""

from __future__ import annotations

from hafiza.vault.errors import HafizaError
from hafiza.vault.format.text import plural

from .app import cli, emit, open_vault
from .args import arg, flag, many, memory_id, ranged
from .curate import projects_of, provider_of


@cli.command(
    arg("ids", nargs="*", type=memory_id),
    flag("--all", "force", help="Probe every claim now, even those checked recently."),
    flag("--network", help="Also run url and pr probes (off by default)."),
    flag("--allow-private",
         help="Let url probes reach loopback, private and link-local addresses (an intranet, a test server)."),
    many("--project", dest="project_dirs", metavar="NAME=FOLDER",
         help="Where project NAME lives on this machine; repeatable."),
    flag("--extract", help="Propose claims for memories that have none (a review branch)."),
    flag("--apply", "apply_", help="With --extract: write the claims straight to main."),
    arg("--model", dest="model_spec",
        help="With --extract: a model provider to suggest more claims (arguments are kept only if they appear "
             "verbatim in the text)."),
    arg("--budget", default=50, type=ranged(0, 100_000),
        help="With --extract and a model: at most this many model calls."),
    flag("--dry-run", help="Probe and print; write nothing."),
    flag("--json", "as_json", help="Print the results as JSON."),
)
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
            print(f"  {mark} {r.memory} [{r.probe}] {r.outcome.detail}" + ("" if r.probed else " (recent)"))
    counts = ", ".join(f"{n} {s}" for s, n in sorted(report.counts().items())) or "no claims"
    where = f"; committed {report.commit[:10]}" if report.commit else ("; nothing changed" if not dry_run else "")
    print(f"verify: {counts} in {report.seconds:.1f} s; {plural(len(report.changed), 'memory')} relabelled{where}")


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
        print(f"  {memory_id}: " + ", ".join(f"{c['probe']} {next(iter(c['args'].values()))}" for c in claims))
        for why in dropped:
            print(f"      dropped: {why}")
    if not done:
        print("no claims found to propose")
    elif branch:
        print(f"proposed claims for {plural(len(done), 'memory')} on {branch}; `hafiza review show {branch}`")
    else:
        print(f"added claims to {plural(len(done), 'memory')} on main")
