"""Offline work a person reviews: `hafiza curate` proposes, `hafiza review` shows, accepts and rejects."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import click

from hafiza.vault.errors import HafizaError

from .app import cli, emit, open_vault, progress_factory, settings_of

PASSES = ("duplicates", "paths", "decay", "profile", "conflicts", "aliases")
SHOWN_NOTES = 20  # report-only lines printed; a large vault can list thousands of related pairs


def provider_of(ctx, vault, spec: str | None, budget: int | None):
    """The model provider: --model, else HAFIZA_MODEL, else the vault's `git config hafiza.model`; none by
    default. The key only ever comes from HAFIZA_MODEL_KEY (never a file that syncs)."""
    from hafiza.vault.provider import Budget, make_provider

    found = settings_of(ctx)
    spec = spec or found.model or vault.git.config("hafiza", "model")
    return Budget(make_provider(spec, api_key=found.model_key), budget)


def projects_of(vault, given) -> dict:
    from hafiza.vault import projects

    projects.record(vault.sidecar, Path.cwd())  # where we stand now is one of them
    known = projects.known(vault.sidecar)
    for item in given:
        name, sep, folder = item.partition("=")
        if not sep or not name or not Path(folder).expanduser().is_dir():
            raise HafizaError(f"--project takes NAME=FOLDER with an existing folder, not {item!r}", field="project")
        known[name] = Path(folder).expanduser().resolve()
    return known


@cli.command()
@click.option("--dry-run", is_flag=True, help="Print what would be proposed; write nothing.")
@click.option("--apply", "apply_", is_flag=True,
              help="Write exact duplicates (same text but for spacing) straight to main; the rest still goes "
                   "to a review branch.")
@click.option("--max-actions", default=25, show_default=True, type=click.IntRange(1, 1000),
              help="Propose at most this many actions; the rest waits for the next run.")
@click.option("--pass", "passes", multiple=True, type=click.Choice(PASSES),
              help="Run only this pass; repeatable (default: all).")
@click.option("--model", "model_spec", help="Model provider for this run: none, command:ARGV, openai:MODEL@URL or "
                                            "anthropic:MODEL@URL (default: $HAFIZA_MODEL, git config hafiza.model).")
@click.option("--budget", default=50, show_default=True, type=click.IntRange(0, 100_000),
              help="At most this many model calls.")
@click.option("--project", "project_dirs", multiple=True, metavar="NAME=FOLDER",
              help="Where project NAME lives on this machine, for path checks; repeatable.")
@click.option("--push", is_flag=True, help="Push the review branch to the vault's remote and print a PR body.")
@click.option("--remote", default="origin", show_default=True, help="The remote --push uses.")
@click.option("--pr-body", type=click.Path(dir_okay=False),
              help="Write the pull request body to this file (with or without --push).")
@click.option("--open-pr", is_flag=True, help="Open the pull request with the GitHub CLI (gh); implies --push.")
@click.option("--json", "as_json", is_flag=True, help="Print the run's report as JSON.")
@click.pass_context
def curate(ctx, dry_run, apply_, max_actions, passes, model_spec, budget, project_dirs, push, remote, pr_body,
           open_pr, as_json):
    """Find duplicates, dead paths, decayed and conflicting memories; propose fixes on a review branch.

    Each proposal is one commit on a branch `curate/<date-time>`; main is not touched until you
    `hafiza review accept`. Nothing is ever deleted: duplicates are superseded, dead paths labelled
    stale, unused memories archived."""
    from hafiza.curator.run import run
    from hafiza.indexer.config import embedder

    if dry_run and (apply_ or push or open_pr):
        raise HafizaError("--dry-run writes nothing; leave out --apply, --push and --open-pr")
    vault = open_vault(ctx)
    settings = settings_of(ctx)
    report = run(vault, embedder=embedder(settings), provider=provider_of(ctx, vault, model_spec, budget),
                 projects=projects_of(vault, project_dirs), profile_cap=settings.profile_chars,
                 progress=progress_factory(), dry_run=dry_run, apply=apply_, max_actions=max_actions,
                 passes=passes or PASSES)
    if as_json:
        emit({**report.to_json(), "dry_run": dry_run})
    else:
        _print_report(report, dry_run)
    if (push or open_pr or pr_body) and report.branch:
        _publish(vault, report.branch, remote, pr_body, open_pr, quiet=as_json, push=push or open_pr)


def _print_report(report, dry_run: bool) -> None:
    counts = ", ".join(f"{k} {v}" for k, v in sorted(report.counts().items())) or "nothing found"
    where = "would propose" if dry_run else "proposed"
    done = report.proposed if not dry_run else [(f, "") for f in report.selected]
    click.echo(f"curate: {counts} ({report.seconds:.1f} s)")
    for finding, sha in report.applied:
        click.echo(f"  applied to main  {finding.kind:<16} {' <- '.join(finding.ids):<40} {sha[:10]}")
    if done:
        click.echo(f"{where} {len(done)} action(s)" + (f" on {report.branch}:" if report.branch else ":"))
        for n, (finding, _) in enumerate(done, 1):
            click.echo(f"  {n:>3}  {finding.kind:<16} {' <- '.join(finding.ids)}")
            click.echo(f"       {finding.reason}")
            click.echo(f"       evidence: {finding.evidence}; confidence {finding.confidence:.2f}")
    notes = [f for f in report.findings if not f.proposable]
    if notes:
        click.echo("for a person to look at (not changed):")
        for finding in notes[:SHOWN_NOTES]:
            click.echo(f"  {finding.kind:<9} {' / '.join(finding.ids)}: {finding.reason}")
        if len(notes) > SHOWN_NOTES:
            click.echo(f"  ... and {len(notes) - SHOWN_NOTES} more (--json lists them all)")
    skipped = {"rejected before": report.ruled, "already open on a branch": report.waiting,
               "left for the next run": report.deferred}
    if any(skipped.values()):
        click.echo("skipped: " + ", ".join(f"{v} {k}" for k, v in skipped.items() if v))
    model = f"model: {report.model}, {report.calls} call(s), {report.tokens[0]}+{report.tokens[1]} tokens"
    click.echo(model + "".join(f"; {n}" for n in report.model_notes[:5]))
    if report.branch:
        click.echo(f"next: hafiza review show {report.branch}   then   hafiza review accept|reject "
                   f"{report.branch} [--only N]")


def _publish(vault, name: str, remote: str, body_file, open_pr: bool, quiet: bool = False,
             push: bool = True) -> None:
    """Push the branch (unless only its PR body is wanted) and write or print the body."""
    from hafiza.vault.review import Review, pr_body

    review = Review(vault)
    branch = review.branch(name)
    body = pr_body(branch)
    url = review.push(branch, remote) if push else ""
    if push and not quiet:
        click.echo(f"pushed {name} to {remote} ({url})", err=True)
    if body_file:
        Path(body_file).write_text(body, encoding="utf-8")
    elif not quiet:
        click.echo(body)
    if open_pr:
        _open_pr(vault, branch, body, url)


def _open_pr(vault, branch, body: str, url: str) -> None:
    if shutil.which("gh") is None:
        raise HafizaError("--open-pr needs the GitHub CLI `gh` (https://cli.github.com); the branch is pushed: "
                          "open the pull request on the server")
    if "github.com" not in url:
        raise HafizaError(f"the remote {url} is not on GitHub; the branch is pushed: open the pull request there")
    proc = subprocess.run(["gh", "pr", "create", "--head", branch.name, "--base", "main", "--title",
                           f"hafiza: {len(branch.open)} proposed change(s) from {branch.name}", "--body", body],
                          cwd=vault.root, capture_output=True, text=True)
    if proc.returncode != 0:
        raise HafizaError(f"gh pr create failed: {(proc.stderr or proc.stdout).strip()[-300:]}")
    click.echo(proc.stdout.strip())


@cli.group(invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Print the branches and their actions as JSON.")
@click.pass_context
def review(ctx, as_json):
    """List open review branches and their actions; see `review show`, `review accept`, `review reject`."""
    if ctx.invoked_subcommand is not None:
        return
    from hafiza.vault.review import Review

    branches = Review(open_vault(ctx)).branches()
    if as_json:
        emit([b.to_json() for b in branches])
        return
    if not branches:
        click.echo("no review branches; `hafiza curate` proposes changes on one")
    for b in branches:
        click.echo(f"{b.name}: {len(b.open)} open of {len(b.proposals)}")
        for p in b.proposals:
            click.echo(f"  {p.number:>3}  {p.state:<8}  {p.action:<16} {p.commit.subject.removeprefix('hafiza: ')}")


@review.command("show")
@click.argument("branch", required=False)
@click.option("--only", multiple=True, type=int, help="Only action N; repeatable.")
@click.pass_context
def review_show(ctx, branch, only):
    """Print each action's message and diff (BRANCH: the newest with open actions)."""
    from hafiza.vault.review import Review
    from hafiza.vault.text import visible

    rv = Review(open_vault(ctx))
    click.echo(visible(rv.diff(rv.branch(branch), only)), nl=False)


@review.command("accept")
@click.argument("branch", required=False)
@click.option("--only", multiple=True, type=int, help="Only action N; repeatable (default: every open one).")
@click.option("--json", "as_json", is_flag=True, help="Print the outcome as JSON.")
@click.pass_context
def review_accept(ctx, branch, only, as_json):
    """Bring actions onto main, one commit each, so `hafiza undo` reverts one."""
    from hafiza.vault.review import Review

    rv = Review(open_vault(ctx))
    results = rv.accept(rv.branch(branch), only)
    if as_json:
        emit([{"number": p.number, "action": p.action, "result": r} for p, r in results])
        return
    for p, result in results:
        click.echo(f"  {p.number:>3}  {p.action:<16} " + (f"accepted as {result[:10]}" if len(result) == 40 else result))
    if any(len(r) != 40 for _, r in results):
        raise HafizaError("some actions were not applied (listed above); they stay open")


@review.command("reject")
@click.argument("branch", required=False)
@click.option("--only", multiple=True, type=int, help="Only action N; repeatable (default: every open one).")
@click.option("--why", help="Why, kept with the ruling.")
@click.pass_context
def review_reject(ctx, branch, only, why):
    """Drop actions and record a ruling in rulings.jsonl, so they are never proposed again."""
    from hafiza.vault.review import Review

    rv = Review(open_vault(ctx))
    done = rv.reject(rv.branch(branch), only, why)
    click.echo(f"rejected {len(done)} action(s); recorded in rulings.jsonl")


@review.command("push")
@click.argument("branch", required=False)
@click.option("--remote", default="origin", show_default=True, help="The vault's git remote to push to.")
@click.option("--pr-body", type=click.Path(dir_okay=False), help="Write the pull request body to this file.")
@click.option("--open-pr", is_flag=True, help="Open the pull request with the GitHub CLI (gh).")
@click.pass_context
def review_push(ctx, branch, remote, pr_body, open_pr):
    """Push a review branch to the vault's remote, to review it as a pull request."""
    from hafiza.vault.review import Review

    vault = open_vault(ctx)
    _publish(vault, Review(vault).branch(branch).name, remote, pr_body, open_pr)
