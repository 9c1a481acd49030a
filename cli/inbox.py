"""`hafiza inbox`: memories proposed from the agents' sessions, waiting for a person to accept or reject."""

from __future__ import annotations

from collections import Counter

from hafiza.vault.errors import HafizaError
from hafiza.vault.format.text import plural

from .app import cli, emit, open_vault, vault_root
from .args import arg, date_value, err, flag, ranged


@cli.group(
    flag("--json", "as_json", help="The open proposals as JSON."),
    bare=True,
)
def inbox(ctx, as_json):
    """List memories proposed from sessions (explicit statements the user made); see `inbox file`,
    `inbox accept`, `inbox reject`."""
    from hafiza.skills.capture import numbered

    found = numbered(open_vault(ctx))
    if as_json:
        emit([{**p.to_json(), "number": n, "branch": b.name} for n, (b, p) in found.items()])
        return
    if not found:
        print("the inbox is empty; `hafiza inbox file` proposes memories from imported sessions")
    from hafiza.vault.format.text import one_line

    for n, (_, p) in found.items():
        t = p.to_json()  # the user's own words: shown as written, their escapes too, never acted on
        print(f"{n:>3}  {one_line(t['subject'].removeprefix('capture '))}\n       {one_line(t['evidence'])}")


@inbox.command(
    arg("sessions", nargs="*"),
    arg("--since", type=date_value, metavar="DATE", help="Only sessions with turns from DATE (YYYY-MM-DD) on."),
    flag("--auto",
         help="Accept the explicit statements at once, one commit each; what a model nominated still waits for a "
              "person."),
    arg("--model", dest="model_spec",
        help="A model provider that also nominates what the user said without a cue (none, command:ARGV, "
             "openai:MODEL@URL, anthropic:MODEL@URL); default HAFIZA_MODEL, else the vault's `git config "
             "hafiza.model`, else none."),
    arg("--budget", default=20, type=ranged(0, 100_000), help="With a model: at most this many model calls."),
    flag("--json", "as_json", help="What was proposed, as JSON."),
    name="file",
)
def file_(ctx, sessions, since, auto, model_spec, budget, as_json):
    """Propose memories from what the user said in imported sessions (SESSIONS: ids; default: every
    session with turns not filed yet): the explicit statements, found without a model, and with a model
    provider the implicit ones it nominates and code checks. Run `hafiza sessions import` first."""
    from hafiza.indexer.vaults import open_recall
    from hafiza.skills.capture import file_sessions
    from hafiza.skills.conversations import Conversations
    from hafiza.skills.implicit import nominator

    from .curate import provider_of

    root = vault_root(ctx)
    vault = open_vault(ctx, actor="capture")
    provider = provider_of(ctx, vault, model_spec, budget)
    recall, _ = open_recall(root, "keyword", embedder=ctx.settings)
    count, report = file_sessions(vault, Conversations(root), sessions, since, recall=recall, auto=auto,
                                  nominate=nominator(provider))
    if as_json:
        model = {"name": provider.name, "calls": provider.calls, "tokens": [provider.tokens_in, provider.tokens_out],
                 "discarded_answers": provider.invalid}
        emit({"sessions": count, "branch": report.branch, "proposed": report.proposed,
              "by_model": report.implicit, "accepted": report.accepted, "restated": report.used,
              "skipped": report.skipped, "dropped": [d._asdict() for d in report.dropped], "model": model})
        return
    print(f"{plural(count, 'session')}: {len(report.proposed)} proposed"
          + (f" ({len(report.implicit)} by the model)" if report.implicit else "")
          + (f" on {report.branch}" if report.branch else "")
          + (f", {len(report.accepted)} accepted" if auto else "")
          + (f", {len(report.used)} restated an existing memory (recorded as a use)" if report.used else ""))
    if provider.available:
        why = Counter(d.why for d in report.dropped)
        print(f"model: {provider.name}, {plural(provider.calls, 'call')}, {provider.tokens_in}+{provider.tokens_out} "
              f"tokens; {plural(len(report.dropped), 'nomination')} refused by code"
              + (f" ({', '.join(f'{n} {w}' for w, n in why.most_common())})" if why else "")
              + (f"; {plural(provider.invalid, 'answer')} discarded" if provider.invalid else ""))
        if provider.spent:
            err(f"the model budget of {plural(budget, 'call')} was spent before every session was read; the rest "
                "were filed without it (`hafiza inbox file SESSION --model ...` reads one again)")


def _decide(ctx, numbers, accept, why=None, as_json=False):
    from hafiza.skills.capture import decide

    decided = decide(open_vault(ctx), numbers, accept, why)
    if as_json:  # review accept's shape, with the inbox's number and branch and the commit on main
        emit([{"number": d.number, "branch": d.branch, "action": d.proposal.action, "memories": d.proposal.ids,
               "result": d.result, "commit": d.commit} for d in decided])
        return
    for d in decided:
        done = "accepted as " + d.result[:10] if d.commit and accept else d.result
        print(f"  {d.proposal.commit.subject.removeprefix('hafiza: capture ')}: {done}")
    if accept and any(d.commit is None for d in decided):
        raise HafizaError("some proposals were not applied (listed above); they stay in the inbox")


@inbox.command(
    arg("numbers", nargs="*", type=int),
    flag("--json", "as_json", help="Print each item's number, branch, memories, result and commit as JSON."),
    name="accept",
)
def accept(ctx, numbers, as_json):
    """Turn proposals NUMBERS (as `hafiza inbox` lists them; default: all) into memories, one commit each."""
    _decide(ctx, numbers, True, as_json=as_json)


@inbox.command(
    arg("numbers", nargs="*", type=int),
    arg("--why", help="Why, kept with the ruling."),
    flag("--json", "as_json", help="Print each item's number, branch, memories and the ruling's commit as JSON."),
    name="reject",
)
def reject(ctx, numbers, why, as_json):
    """Drop proposals NUMBERS (default: all) and record a ruling, so they are never proposed again."""
    _decide(ctx, numbers, False, why, as_json)
