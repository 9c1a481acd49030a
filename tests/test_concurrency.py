"""Concurrent agents never lose a write: real processes, one writer lock, readers never blocked."""

import json
import os
import subprocess
import sys

from conftest import git_subjects, run_cli
from hafiza.vault.store import usage

WRITERS = 8


def git(root, *args) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout


def start(*args):
    return subprocess.Popen([sys.executable, "-m", "hafiza.cli.main", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=os.environ.copy())


def finish(procs):
    results = [p.communicate(timeout=120) for p in procs]
    for proc, (out, err) in zip(procs, results):
        assert proc.returncode == 0, err
    return results


def test_concurrent_remembers_all_land(vault):
    procs = [start("remember", f"Concurrent note number {n}: agent {n} learned fact {n}.",
                   "--title", f"Agent note {n}") for n in range(WRITERS)]
    finish(procs)

    assert sorted(p.name for p in vault.paths()) == sorted(f"agent-note-{n}.md" for n in range(WRITERS))
    subjects = git_subjects(vault.root)
    assert sorted(subjects[:WRITERS]) == sorted(f"hafiza: remember agent-note-{n}" for n in range(WRITERS))
    assert subjects[WRITERS:] == ["hafiza: init vault"]
    assert git(vault.root, "rev-list", "--merges", "HEAD") == ""  # linear
    assert git(vault.root, "status", "--porcelain") == ""  # nothing left behind
    git(vault.root, "fsck", "--strict")
    for n in range(WRITERS):  # each commit holds exactly its own file
        sha = git(vault.root, "log", "--format=%H", f"--grep=remember agent-note-{n}$").split()[0]
        assert git(vault.root, "show", "--name-only", "--format=", sha).split() == [f"memories/agent-note-{n}.md"]
    hits = json.loads(run_cli("search", "--json", "--mode", "keyword", "--limit", "20", "concurrent note").stdout)
    assert sorted(h["id"] for h in hits) == sorted(f"agent-note-{n}" for n in range(WRITERS))


def test_concurrent_writers_with_the_same_title_get_distinct_ids(vault):
    finish([start("remember", f"Same title, body {n}.", "--title", "Shared title") for n in range(4)])
    assert sorted(p.stem for p in vault.paths()) == ["shared-title", "shared-title-2", "shared-title-3",
                                                     "shared-title-4"]
    assert sorted(vault.get(p.stem).body for p in vault.paths()) == [f"Same title, body {n}." for n in range(4)]


def test_concurrent_mixed_writes_and_reads(vault):
    vault.import_many([{"id": f"seed-{n}", "text": f"Seed memory {n} about redis."} for n in range(5)],
                      source="import:test")
    procs = [start("remember", f"Writer {n} says redis runs on port 63{n}0.", "--id", f"writer-{n}") for n in range(4)]
    procs += [start("supersede", "seed-0", "seed-1"), start("forget", "seed-2")]
    procs += [start("search", "--json", "--mode", "keyword", "redis") for _ in range(4)]
    results = finish(procs)
    for out, _ in results[-4:]:
        assert all(h["id"].startswith(("seed-", "writer-")) for h in json.loads(out))
    assert len(git_subjects(vault.root)) == 2 + 4 + 2
    assert vault.get("seed-0").status == "superseded" and vault.get("seed-2").status == "archived"
    assert {f"writer-{n}" for n in range(4)} <= {p.stem for p in vault.paths()}
    assert git(vault.root, "status", "--porcelain") == ""


USES = 50


def test_concurrent_usage_appends_lose_nothing(vault):
    vault.import_many([{"id": f"m{n}", "text": f"memory {n}"} for n in range(4)], source="import:test")
    script = ("import sys\nfrom pathlib import Path\nfrom hafiza.vault.store import usage\n"
              f"for _ in range({USES}):\n    usage.append(Path(sys.argv[1]), sys.argv[2], sys.argv[3:])\n")
    procs = [subprocess.Popen([sys.executable, "-c", script, str(vault.sidecar), event, "m0", "m1", "m2", "m3"])
             for event in ("shown", "shown", "used", "shown")]
    assert [p.wait(timeout=60) for p in procs] == [0, 0, 0, 0]
    pending = usage.pending(vault.sidecar)
    assert {k: (v.shown, v.used) for k, v in pending.items()} == {f"m{n}": (3 * USES, USES) for n in range(4)}
    vault.fold()
    assert [(vault.get(f"m{n}").shown, vault.get(f"m{n}").used) for n in range(4)] == [(3 * USES, USES)] * 4
