"""Keyword recall read from hafiza's own files (indexer/cold.py) against the same recall through Whoosh:
the same hits, in the same order, with the same scores and evidence, for every prompt.

    .venv/bin/python bench/cold_identical.py                            # bench/recall's vault and prompts
    .venv/bin/python bench/cold_identical.py --vault DIR --prompts FILE # a vault of bench/scale.py; FILE is
                                                                        # JSON [[prompt, cwd, transcript], ...]

Each prompt is searched as the hook asks (its floor, 8 hits, the project of its folder, its recent turns)
and as `hafiza search` lists (no floor, 50 hits), in the prompt's project, in every scope, and with
superseded and archived memories too. Exits 1 on any difference.
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
    """How many searches were compared, how many hits they returned, and the ones that differed."""
    from hafiza.indexer.recall import Recall

    whoosh, files = Recall(root), Recall(root, files=True)
    compared, hits, differ = 0, 0, []
    for text, options in cases(prompts):
        want = [h.to_json(explain=True) for h in whoosh.search(text, mode="keyword", **options)]
        got = [h.to_json(explain=True) for h in files.search(text, mode="keyword", **options)]
        if files._view is None or files._view.ix is not None:
            raise SystemExit(f"{root}: the files were not used (Whoosh answered): are they built?")
        compared += 1
        hits += len(want)
        if not same(want, got, tolerance):
            differ.append({"query": text, "options": {k: v for k, v in options.items() if k != "floor"},
                           "whoosh": [(h["id"], h["score"]) for h in want],
                           "files": [(h["id"], h["score"]) for h in got]})
    return {"vault": str(root), "searches": compared, "hits": hits, "differ": differ}


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
    args = parser.parse_args(argv)
    if args.vault:
        from hafiza.hooks.entry import recent_turns
        from hafiza.vault.paths import project_of

        root = args.vault
        prompts = [(p, project_of(Path(cwd)), recent_turns(script, p))
                   for p, cwd, script in json.loads(args.prompts.read_text())]
    else:
        root, prompts = recall_set()
    report = compare(root, prompts)
    print(json.dumps({**report, "differ": report["differ"][:5], "differing": len(report["differ"])}, indent=1,
                     ensure_ascii=False))
    sys.exit(1 if report["differ"] else 0)


if __name__ == "__main__":
    main()
