"""Offline work a person reviews: `hafiza curate` proposes, `hafiza review` shows, accepts and rejects."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from hafiza.vault.errors import HafizaError
from hafiza.vault.format.text import plural

from .app import cli, emit, open_vault, progress_factory
from .args import arg, err, flag, many, ranged

PASSES = ("duplicates", "paths", "decay", "profile", "conflicts", "aliases")
SHOWN_NOTES = 20  # report-only lines printed; a large vault can list thousands of related pairs
# Options of the commands that may ask a model and check paths in projects (curate, skills draft).
MODEL = arg("--model", dest="model_spec", help="Model provider for this run: none, command:ARGV, openai:MODEL@URL or "
            "anthropic:MODEL@URL (default: $HAFIZA_MODEL, git config hafiza.model).")
PROJECTS = many("--project", dest="project_dirs", metavar="NAME=FOLDER",
                help="Where project NAME lives on this machine, for path checks; repeatable.")


def provider_of(ctx, vault, spec: str | None, budget: int | None):
    """The model provider: --model, else HAFIZA_MODEL, else the vault's `git config hafiza.model`; none by
    default. The key only ever comes from HAFIZA_MODEL_KEY (never a file that syncs)."""
    from hafiza.vault.offline.provider import Budget, make_provider

    found = ctx.settings
    spec = spec or found.model or vault.git.config("hafiza", "model")
    return Budget(make_provider(spec, api_key=found.model_key), budget)


def projects_of(vault, given) -> dict:
    from hafiza.vault.store import projects

    projects.record(vault.sidecar, Path.cwd())  # where we stand now is one of them
    known = projects.known(vault.sidecar)
    for item in given:
        name, sep, folder = item.partition("=")
        if not sep or not name or not Path(folder).expanduser().is_dir():
            raise HafizaError(f"--project takes NAME=FOLDER with an existing folder, not {item!r}", field="project")
        known[name] = Path(folder).expanduser().resolve()
    return known


@cli.command(
    flag("--dry-run", help="Print what would be proposed; write nothing."),
    flag("--apply", "apply_",
         help="Write exact duplicates (same text but for spacing) straight to main; the rest still goes to a "
              "review branch."),
    arg("--max-actions", default=25, type=ranged(1, 1000),
        help="Propose at most this many actions; the rest waits for the next run."),
    many("--pass", dest="passes", choices=PASSES, help="Run only this pass; repeatable (default: all)."),
    MODEL,
    arg("--budget", default=50, type=ranged(0, 100_000), help="At most this many model calls."),
    PROJECTS,
    flag("--push", help="Push the review branch to the vault's remote and print a PR body."),
    arg("--remote", default="origin", help="The remote --push uses."),
    arg("--pr-body", help="Write the pull request body to this file (with or without --push)."),
    flag("--open-pr", help="Open the pull request with the GitHub CLI (gh); implies --push."),
    flag("--json", "as_json", help="Print the run's report as JSON."),
)
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
    settings = ctx.settings
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
    print(f"curate: {counts} ({report.seconds:.1f} s)")
    for finding, sha in report.applied:
        print(f"  applied to main  {finding.kind:<16} {' <- '.join(finding.ids):<40} {sha[:10]}")
    if done:
        print(f"{where} {plural(len(done), 'action')}" + (f" on {report.branch}:" if report.branch else ":"))
        for n, (finding, _) in enumerate(done, 1):
            print(f"  {n:>3}  {finding.kind:<16} {' <- '.join(finding.ids)}")
            print(f"       {finding.reason}")
            print(f"       evidence: {finding.evidence}; confidence {finding.confidence:.2f}")
    notes = [f for f in report.findings if not f.proposable]
    if notes:
        print("for a person to look at (not changed):")
        for finding in notes[:SHOWN_NOTES]:
            print(f"  {finding.kind:<9} {' / '.join(finding.ids)}: {finding.reason}")
        if len(notes) > SHOWN_NOTES:
            print(f"  ... and {len(notes) - SHOWN_NOTES} more (--json lists them all)")
    skipped = {"rejected before": report.ruled, "already open on a branch": report.waiting,
               "left for the next run": report.deferred}
    if any(skipped.values()):
        print("skipped: " + ", ".join(f"{v} {k}" for k, v in skipped.items() if v))
    model = f"model: {report.model}, {plural(report.calls, 'call')}, {report.tokens[0]}+{report.tokens[1]} tokens"
    print(model + "".join(f"; {n}" for n in report.model_notes[:5]))
    if report.branch:
        print(f"next: hafiza review show {report.branch}   then   hafiza review accept|reject "
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
        err(f"pushed {name} to {remote} ({url})")
    if body_file:
        Path(body_file).write_text(body, encoding="utf-8")
    elif not quiet:
        print(body)
    if open_pr:
        _open_pr(vault, branch, body, url)


def _open_pr(vault, branch, body: str, url: str) -> None:
    if shutil.which("gh") is None:
        raise HafizaError("--open-pr needs the GitHub CLI `gh` (https://cli.github.com); the branch is pushed: "
                          "open the pull request on the server")
    if "github.com" not in url:
        raise HafizaError(f"the remote {url} is not on GitHub; the branch is pushed: open the pull request there")
    proc = subprocess.run(["gh", "pr", "create", "--head", branch.name, "--base", "main", "--title",
                           f"hafiza: {plural(len(branch.open), 'proposed change')} from {branch.name}", "--body", body],
                          cwd=vault.root, capture_output=True, text=True)
    if proc.returncode != 0:
        raise HafizaError(f"gh pr create failed: {(proc.stderr or proc.stdout).strip()[-300:]}")
    print(proc.stdout.strip())


@cli.group(
    flag("--json", "as_json", help="Print the branches and their actions as JSON."),
    bare=True,
)
def review(ctx, as_json):
    """List open review branches and their actions; see `review show`, `review accept`, `review reject`."""
    from hafiza.vault.review import Review

    branches = Review(open_vault(ctx)).branches()
    if as_json:
        emit([b.to_json() for b in branches])
        return
    from hafiza.vault.format.text import one_line

    if not branches:
        print("no review branches; `hafiza curate` proposes changes on one")
    for b in branches:
        print(f"{b.name}: {len(b.open)} open of {len(b.proposals)}")
        for p in b.proposals:
            subject = one_line(p.commit.subject.removeprefix("hafiza: "))
            print(f"  {p.number:>3}  {p.state:<8}  {p.action:<16} {subject}")


@review.command(
    arg("branch", nargs="?"),
    many("--only", type=int, metavar="N", help="Only action N; repeatable."),
    name="show",
)
def review_show(ctx, branch, only):
    """Print each action's message and diff (BRANCH: the newest with open actions)."""
    from hafiza.vault.review import Review
    from hafiza.vault.format.text import visible

    rv = Review(open_vault(ctx))
    print(visible(rv.diff(rv.branch(branch), only)), end="")


@review.command(
    arg("branch", nargs="?"),
    many("--only", type=int, metavar="N", help="Only action N; repeatable (default: every open one)."),
    flag("--json", "as_json", help="Print the outcome as JSON."),
    name="accept",
)
def review_accept(ctx, branch, only, as_json):
    """Bring actions onto main, one commit each, so `hafiza undo` reverts one."""
    from hafiza.vault.review import Review

    rv = Review(open_vault(ctx))
    results = rv.accept(rv.branch(branch), only)
    if as_json:
        emit([{"number": p.number, "action": p.action, "result": r} for p, r in results])
        return
    for p, result in results:
        print(f"  {p.number:>3}  {p.action:<16} " + (f"accepted as {result[:10]}" if len(result) == 40 else result))
    if any(len(r) != 40 for _, r in results):
        raise HafizaError("some actions were not applied (listed above); they stay open")


@review.command(
    arg("branch", nargs="?"),
    many("--only", type=int, metavar="N", help="Only action N; repeatable (default: every open one)."),
    arg("--why", help="Why, kept with the ruling."),
    flag("--json", "as_json", help="Print the branch, the actions rejected and the commit as JSON."),
    name="reject",
)
def review_reject(ctx, branch, only, why, as_json):
    """Drop actions and record a ruling in rulings.jsonl, so they are never proposed again."""
    from hafiza.vault.review import Review

    vault = open_vault(ctx)
    rv = Review(vault)
    found = rv.branch(branch)
    done = rv.reject(found, only, why)
    if as_json:
        emit({"branch": found.name, "rejected": [p.number for p in done], "commit": vault.last_commit})
    else:
        print(f"rejected {plural(len(done), 'action')}; recorded in rulings.jsonl")


@review.command(
    arg("branch", nargs="?"),
    arg("--remote", default="origin", help="The vault's git remote to push to."),
    arg("--pr-body", help="Write the pull request body to this file."),
    flag("--open-pr", help="Open the pull request with the GitHub CLI (gh)."),
    name="push",
)
def review_push(ctx, branch, remote, pr_body, open_pr):
    """Push a review branch to the vault's remote, to review it as a pull request."""
    from hafiza.vault.review import Review

    vault = open_vault(ctx)
    _publish(vault, Review(vault).branch(branch).name, remote, pr_body, open_pr)
