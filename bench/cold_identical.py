"""Does keyword recall read from hafiza's own files give exactly what recall through Whoosh gives?

Keyword recall read from hafiza's own files (indexer/cold.py) against the same recall through Whoosh:
the same hits, in the same order, with the same scores and evidence, for every prompt; with the index in
step, and right after writes, which the files' recall ranks in memory (indexer/pending.py) and Whoosh's
commits first.

    .venv/bin/python bench/cold_identical.py                            # bench/recall's vault and prompts
    .venv/bin/python bench/cold_identical.py --vault DIR --prompts FILE # a vault of bench/scale.py; FILE is
                                                                        # JSON [[prompt, cwd, transcript], ...]

Each prompt is searched as the hook asks (its floor, 8 hits, the project of its folder, its recent turns)
and as `hafiza search` lists (no floor, 50 hits), in the prompt's project, in every scope, and with
superseded and archived memories too. Then, --rounds times: a few writes (new memories holding the prompts'
words, an edit, a forget, a supersede: they stay in the vault), the same searches from the files (with the
writes in memory, unless their commit would merge segments: then that search commits them first) and
through Whoosh (which commits them). Exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def cases(prompts: list[tuple[str, str | None, str]]):
    """(prompt, search options) as the hook and `hafiza search` ask."""
    from hafiza.indexer.recall import FLOOR, SEARCH_FLOOR

    for text, project, context in prompts:
        yield text, dict(limit=8, project=project, floor=FLOOR, context=context)
        yield text, dict(limit=50, project=project, floor=SEARCH_FLOOR)
        yield text, dict(limit=50, all_scopes=True, include_inactive=True)


def compare(root: Path, prompts, tolerance: float = 1e-9) -> dict:
    """How many searches were compared, how many hits they returned, and the ones that differed. The files
    are searched first: with writes not yet indexed, Whoosh's recall commits them."""
    from hafiza.indexer.recall import Recall

    files, whoosh = Recall(root, files=True), Recall(root)
    asked = list(cases(prompts))
    got = [[h.to_json(explain=True) for h in files.search(text, mode="keyword", **options)] for text, options in asked]
    if files._view is None or files._view.ix is not None:
        raise SystemExit(f"{root}: the files were not used (Whoosh answered): are they built?")
    pending = files._view.reader.segment(-1).sid == "pending" and files.index.opened is None
    compared, hits, differ = 0, 0, []
    for (text, options), found in zip(asked, got):
        want = [h.to_json(explain=True) for h in whoosh.search(text, mode="keyword", **options)]
        compared += 1
        hits += len(want)
        if not same(want, found, tolerance):
            differ.append({"query": text, "options": {k: v for k, v in options.items() if k != "floor"},
                           "whoosh": [(h["id"], h["score"]) for h in want],
                           "files": [(h["id"], h["score"]) for h in found]})
    return {"vault": str(root), "searches": compared, "hits": hits, "differ": differ, "writes_in_memory": pending}


def write(root: Path, prompts, round: int) -> None:
    """A few writes of every kind, as users make them between searches: new memories holding a prompt's
    words, an edit, a forget and a supersede of memories the prompts find."""
    from hafiza.indexer.recall import Recall
    from hafiza.vault.store.vault import Vault

    vault = Vault(root)
    found = [h.id for text, _, _ in prompts[round::7][:4]
             for h in Recall(root, files=True).search(text, mode="keyword", limit=3, all_scopes=True)]
    found = list(dict.fromkeys(found))
    for k, (text, _, _) in enumerate(prompts[round::11][:2]):
        vault.remember(f"{text} (note {round}.{k})", title=" ".join(text.split()[:6]), reason="cold_identical")
    if len(found) >= 3:
        vault.update(found[0], f"edited in round {round}: {prompts[round % len(prompts)][0]}")
        vault.forget(found[1], reason="cold_identical")
        vault.remember(f"replaces {found[2]}: {prompts[(round + 1) % len(prompts)][0]}", supersedes=[found[2]])


def same(a: list[dict], b: list[dict], tolerance: float) -> bool:
    if [h["id"] for h in a] != [h["id"] for h in b]:
        return False
    for x, y in zip(a, b):
        if x.keys() != y.keys() or x.get("parts", {}).keys() != y.get("parts", {}).keys():
            return False
        for key in x:
            if key == "parts":
                if any(not close(x[key][k], y[key][k], tolerance) for k in x[key]):
                    return False
            elif not close(x[key], y[key], tolerance):
                return False
    return True


def close(a, b, tolerance: float) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= tolerance * max(1.0, abs(a), abs(b))
    return a == b


def recall_set() -> tuple[Path, list]:
    """bench/recall's memories in a fresh keyword-only vault (kept in a temp folder), and its prompts."""
    import recall as bench

    from hafiza.indexer.index import Index

    root = Path(tempfile.mkdtemp(prefix="hafiza-cold-")) / "vault"
    bench.build_vault(root, None, aliases=bench.agent_aliases())
    Index(root, notice=lambda _: None).sync()  # as doctor leaves it: every segment's files written
    prompts = [(p["query"], None, "") for name in ("prompts.jsonl", bench.HELD_OUT) for p in bench.load(name)]
    return root, prompts


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vault", type=Path)
    parser.add_argument("--prompts", type=Path, help="JSON [[prompt, cwd, transcript], ...] (bench/scale.py's)")
    parser.add_argument("--rounds", type=int, default=6, help="Rounds of writes, each searched before it is indexed.")
    args = parser.parse_args(argv)
    if args.vault:
        from hafiza.hooks.entry import recent_turns
        from hafiza.vault.format.paths import project_of

        root = args.vault
        prompts = [(p, project_of(Path(cwd)), recent_turns(script, p))
                   for p, cwd, script in json.loads(args.prompts.read_text())]
    else:
        root, prompts = recall_set()
    reports = [compare(root, prompts)]
    for round in range(args.rounds):
        write(root, prompts, round)
        reports.append(compare(root, prompts))
    differing = sum(len(r["differ"]) for r in reports)
    print(json.dumps({"vault": str(root), "searches": sum(r["searches"] for r in reports),
                      "hits": sum(r["hits"] for r in reports), "differing": differing,
                      "rounds_after_writes": args.rounds,
                      "rounds_ranked_in_memory": sum(r["writes_in_memory"] for r in reports[1:]),
                      "differ": [d for r in reports for d in r["differ"]][:5]}, indent=1, ensure_ascii=False))
    sys.exit(1 if differing else 0)


if __name__ == "__main__":
    main()
