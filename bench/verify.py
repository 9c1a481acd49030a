"""How accurate are the probes and the claim extraction on the labelled set, and how fast is a run?

The verifier's evaluation: accuracy per probe and the confusion between outcomes on bench/verify/,
extraction precision and recall, and the speed of 1,000 claims without network.

    python bench/verify.py [--save]

Claims are probed as a run probes them (one Context per project), at the fixture project's HEAD, once
offline and once with --network against bench/verify/server.py on 127.0.0.1 (allow_private: the test
server is on loopback). `@<key>` shas and `@server` URLs are substituted as bench/verify/README.md says.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE / "verify")]

from common import median, python_pass, save  # noqa: E402

OUTCOMES = ("ok", "failed", "unknown", "invalid")


def _substitute(claim: dict, shas: dict, server: str) -> dict:
    args = dict(claim.get("args") or {})
    if isinstance(args.get("sha"), str) and args["sha"].startswith("@") and args["sha"][1:] in shas:
        args["sha"] = shas[args["sha"][1:]][:10]
    if isinstance(args.get("url"), str) and args["url"].startswith("@server"):
        args["url"] = server + args["url"][len("@server"):]
    return {**claim, "args": args}


def _expected(expect, network: bool) -> str:
    return expect[("network" if network else "offline")] if isinstance(expect, dict) else expect


def probe_all(items: list[dict], places: dict, shas: dict, server: str, network: bool) -> dict:
    from hafiza.vault.store.projects import folder
    from hafiza.verifier.probes import Context, check

    contexts: dict = {}
    confusion: dict[str, dict[str, int]] = {}
    per_probe: dict[str, list[int]] = {}
    wrong = []
    for item in items:
        root = folder(item["scope"], places)
        ctx = contexts.setdefault(root, Context(project=root, network=network, allow_private=True, timeout=2.0))
        for claim, expect in zip(item["claims"], item["expect"]):
            want = _expected(expect, network)
            got = check(_substitute(claim, shas, server), ctx).status
            confusion.setdefault(want, {o: 0 for o in OUTCOMES})[got] += 1
            right = per_probe.setdefault(str(claim.get("probe")), [0, 0])
            right[0] += got == want
            right[1] += 1
            if got != want:
                wrong.append({"memory": item["id"], "claim": claim, "want": want, "got": got})
    return {"accuracy": {p: round(r / n, 3) for p, (r, n) in sorted(per_probe.items())},
            "right": sum(r for r, _ in per_probe.values()), "claims": sum(n for _, n in per_probe.values()),
            "confusion": confusion, "wrong": wrong,
            "failed_where_unreachable": sum(v.get("failed", 0) for k, v in confusion.items() if k == "unknown")}


def extraction(items: list[dict], places: dict) -> dict:
    from hafiza.vault.store.projects import folder
    from hafiza.verifier.extract import extract

    def key(claim):
        return claim["probe"], json.dumps(claim["args"], sort_keys=True)

    found = wanted = right = verbatim = 0
    misses, extras = [], []
    for item in items:
        text = f"{item['title']}\n{item['text']}"
        got = {key(c) for c in extract(text, folder(item["scope"], places))}
        want = {key(c) for c in item["expect_claims"]}
        found, wanted, right = found + len(got), wanted + len(want), right + len(got & want)
        verbatim += sum(all(v in text for v in json.loads(args).values()) for _, args in got)
        misses += [(item["id"], k) for k in want - got]
        extras += [(item["id"], k) for k in got - want]
    return {"proposed": found, "expected": wanted, "right": right,
            "precision": round(right / found, 3) if found else None, "recall": round(right / wanted, 3),
            "arguments_verbatim": f"{verbatim}/{found}", "missed": misses, "extra": extras}


def speed(n: int, runs: int) -> dict:
    """`n` claims of the in-repository kinds over one project, as `verify --all` probes them."""
    import project
    from hafiza.vault.format import model
    from hafiza.vault.store.vault import Vault
    from hafiza.verifier.run import verify

    kinds = [{"probe": "path", "args": {"path": "infra/deploy.sh"}}, {"probe": "path", "args": {"path": "gone.md"}},
             {"probe": "contains", "args": {"path": "Makefile", "text": "deploy:"}},
             {"probe": "script", "args": {"name": "deploy"}}, {"probe": "dependency", "args": {"name": "httpx"}},
             {"probe": "branch", "args": {"name": "release/2.x"}},
             {"probe": "symbol", "args": {"path": "pyproject.toml", "name": "x"}}]
    with tempfile.TemporaryDirectory() as tmp:
        root = project.build(Path(tmp))
        vault = Vault.init(Path(tmp) / "vault")
        per = 10
        for i in range(n // per):
            claims = [kinds[(i * per + j) % len(kinds)] for j in range(per)]
            memory = model.Memory(id=f"m{i}", title=f"note {i}", body=f"note {i}", scope="project:app", claims=claims)
            (vault.memories_dir / f"m{i}.md").write_text(model.dump(memory))
        with vault.transaction():
            pass
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            report = verify(vault, projects={"app": root}, force=True, dry_run=True)
            times.append(time.perf_counter() - started)
        baseline = median(python_pass() for _ in range(5))
    return {"claims": len(report.results), "runs": runs, "median_s": round(median(times), 2),
            "counts": report.counts(), "python_pass_ms": round(baseline * 1000, 1)}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--speed", type=int, default=1000, help="claims for the speed run (0: skip)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--save", action="store_true", help="write bench/results/verify-<date>.{json,md}")
    args = parser.parse_args(argv)

    import project
    import server as fixture_server

    items = [json.loads(line) for line in (HERE / "verify" / "memories.jsonl").read_text().splitlines() if line.strip()]
    extract_items = [json.loads(line) for line in (HERE / "verify" / "extract.jsonl").read_text().splitlines()
                     if line.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        root = project.build(Path(tmp))
        shas = json.loads((Path(tmp) / "app.shas.json").read_text())
        base, stop = fixture_server.start()
        try:
            places = {"app": root}
            result = {"date": dt.date.today().isoformat(), "memories": len(items),
                      "offline": probe_all(items, places, shas, base, network=False),
                      "network": probe_all(items, places, shas, base, network=True),
                      "extraction": extraction(extract_items, places)}
        finally:
            stop()
    if args.speed:
        result["speed"] = speed(args.speed, args.runs)
    print(json.dumps(result, indent=1, ensure_ascii=False, default=str))
    if args.save:
        save("verify", result["date"], result, markdown(result))


def markdown(r: dict) -> str:
    lines = [f"# Verifier evaluation, {r['date']} ({r['memories']} memories)", "",
             "`python bench/verify.py --save` on bench/verify/ (the fixture project at its HEAD).", ""]
    for mode in ("offline", "network"):
        m = r[mode]
        lines += [f"## {mode}: {m['right']}/{m['claims']} right", "", "| probe | accuracy |", "|---|---|"]
        lines += [f"| {p} | {a} |" for p, a in m["accuracy"].items()]
        lines += ["", "| expected \\ got | " + " | ".join(OUTCOMES) + " |", "|---|" + "---|" * len(OUTCOMES)]
        lines += [f"| {want} | " + " | ".join(str(row.get(o, 0)) for o in OUTCOMES) + " |"
                  for want, row in sorted(m["confusion"].items())]
        lines += ["", f"`failed` where the probe could not reach: {m['failed_where_unreachable']}.", ""]
    e = r["extraction"]
    lines += [f"Extraction: {e['proposed']} proposed, {e['right']} right of {e['expected']} expected: precision "
              f"{e['precision']}, recall {e['recall']}; arguments verbatim in the text {e['arguments_verbatim']}.", ""]
    if r.get("speed"):
        s = r["speed"]
        lines += [f"Speed: {s['claims']:,} claims probed in {s['median_s']} s (median of {s['runs']}, no network; "
                  f"`python -c pass` {s['python_pass_ms']} ms in the same run).", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
