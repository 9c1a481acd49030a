"""A week of hafiza, lived (issue 30): the features one after another on two machines and a team vault, as a
person and their agents use them, with every channel read after every step. Each test is one step of the
same week, in order; after each, the invariants a user relies on:

- the step's effect is seen by the next read in every channel: `hafiza search`, the prompt hook, MCP
  `recall`, `show`, `list`, `log`, and the web UI (`hafiza ui`, issue 33);
- nothing decided is proposed again (review branches and the inbox);
- `doctor` is clean, or names exactly what is pending;
- `git fsck --full --strict` is clean in every repository;
- no traceback in any output (the rig checks every process);
- the same 20 prompts still recall what they should, and chit-chat stays silent.

A check that fails on main because of an issue-30 item not fixed yet sits under `known(item=N)`
(week_rig.Known): it must fail until that fix lands, then the marker goes.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from urllib.parse import quote

import pytest

import skill_sessions
from week_rig import SPENT, WEEK, Known, Machine, Ui, block_ids

known = Known()

# The prompts a person types all week, and the memory each should bring (None: silence). The week changes
# what some of them should bring (a supersede, a fact); `expect` follows.
PROMPTS = {
    "yarın canlıya çıkmak istiyorum, production deploy hangi branch?": "deploy-from-main",
    "paket yoneticisi olarak hangisini kullaniyoruz, npm mi?": "pnpm",
    "which staging server and port do we use?": "staging-server",
    "who is the backend lead?": "ayse-backend-lead",
    "can I push to main on friday afternoon?": "friday-push",
    "how do I run the database migrations?": "migrations",
    "müşteri toplantısı hangi gün ve saatte?": "client-meeting",
    "which python version do the backend services run on?": "python-version",
    "how many approvals does a pull request need before merge?": "pr-approvals",
    "billing postgres bağlantı havuzu ayarı nerede?": "billing-pgbouncer",
    "how long are application logs kept in loki?": "log-retention",
    "ruff lint kuralları nerede tanımlı?": "ruff-config",
    "the staging deploy failed, do we purge the cdn cache?": "cdn-purge",
    "which docker image do ci runners use?": "ci-image",
    "tamam devam et": None,
    "ok go ahead": None,
    "teşekkürler": None,
    "evet": None,
    "thanks, looks good": None,
    "[Request interrupted by user]": None,
}
expect = dict(PROMPTS)

# Day one's memories: (id, type, text, aliases), half through the command line, half through MCP.
BY_CLI = [
    ("deploy-from-main", "rule", "Production deploys only from main, after CI is green.", ["canlıya çıkmak"]),
    ("pnpm", "rule", "Frontend'de paket yöneticisi olarak pnpm kullanıyoruz; npm install çalıştırma.",
     ["package manager"]),
    ("staging-server", "knowledge", "The staging server is stg-ist-2 on port 8443; logs are in Loki.",
     ["test sunucusu"]),
    ("ayse-backend-lead", "identity", "Ayşe is the backend lead; she writes Python and Go.", ["backend lead"]),
    ("friday-push", "rule", "Never push to main on Fridays after 14:00.", ["cuma push yasağı"]),
    ("migrations", "rule", "Database migrations run with ./scripts/migrate.sh, never by hand on production.",
     ["veritabanı göçü"]),
    ("client-meeting", "knowledge", "Müşteri toplantıları her salı saat 10'da, Google Meet üzerinden.",
     ["client meeting"]),
]
BY_MCP = [
    ("python-version", "rule", "Backend services run on Python 3.12; do not use 3.13 features yet.",
     ["python sürümü"]),
    ("pr-approvals", "rule", "Every pull request needs one approval from the payments team before merge.",
     ["onay sayısı"]),
    ("billing-pgbouncer", "knowledge", "The billing service talks to Postgres through pgbouncer.",
     ["bağlantı havuzu", "connection pool"]),
    ("log-retention", "knowledge", "Application logs are kept 30 days in Loki, then deleted.", ["log saklama"]),
    ("ruff-config", "knowledge", "Ruff lint rules live in pyproject.toml under [tool.ruff].", ["lint kuralları"]),
    ("cdn-purge", "lesson", "The staging deploy needs the CDN cache purged first; it bit us twice.",
     ["önbellek temizliği"]),
    ("ci-image", "knowledge", "CI runners use the python:3.12-slim docker image.", ["runner imajı"]),
]


TITLES = {"python-version": "Python version", "pr-approvals": "PR approvals", "billing-pgbouncer": "Billing pgbouncer",
          "log-retention": "Log retention", "ruff-config": "Ruff config", "cdn-purge": "CDN purge",
          "ci-image": "CI image"}


class World:
    """The week's machines, remotes and what has been decided so far."""

    def __init__(self, top: Path):
        self.top = top
        self.a = Machine("a", top, warm=True, hour=9)    # the laptop: a warm process runs, as the hooks start it
        self.b = Machine("b", top, warm=False, hour=14)  # the desktop: no warm process, every read cold
        self.member = Machine("member", top, warm=False, hour=16)  # a teammate, who reviews team proposals
        self.remote = self.bare("remote.git")
        self.team = self.bare("team.git")
        self.shop = self.project()
        self.ui: Ui | None = None
        self.decided: dict[str, str] = {}         # proposal key -> its subject, once accepted or rejected
        self.pending: dict[str, dict[str, str]] = {"a": {}, "b": {}}  # doctor check -> words it must say

    def bare(self, name: str) -> Path:
        path = self.top / name
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(path)], check=True, capture_output=True)
        return path

    def project(self) -> Path:
        """A real project repository, `shop`, that the week works in."""
        root = skill_sessions.project(self.top / "src" / "shop")
        (root / "infra").mkdir()
        (root / "infra" / "deploy.sh").write_text("#!/bin/sh\necho deploy\n")
        for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "start"]):
            self.a.git(*args, root=root)
        return root

    def machines(self) -> list[Machine]:
        return [m for m in (self.a, self.b) if (m.root / ".git").exists()]

    def stop(self) -> None:
        if self.ui is not None:
            self.ui.stop()
        for m in (self.a, self.b, self.member):
            m.stop()


@pytest.fixture(autouse=True)
def _known_per_step():
    known.failed.clear()
    known.fixed.clear()


@pytest.fixture(scope="module")
def week(tmp_path_factory):
    world = World(tmp_path_factory.mktemp("week"))
    yield world
    world.stop()
    if os.environ.get("HAFIZA_WEEK_TIMES"):
        for kind, times in sorted(SPENT.items(), key=lambda kv: -sum(kv[1])):
            print(f"{kind:>10} {len(times):4d} x {sum(times) / len(times):.3f}s = {sum(times):6.1f}s")


# ---- the invariants, after every step

def invariants(w: World) -> None:
    for m in w.machines():
        fsck(m, m.root)
        doctor(m, w.pending[m.name])
        nothing_decided_is_proposed(m, w.decided)
    for remote in (w.remote, w.team):
        fsck(w.a, remote)
    assert w.a.json("search", "tamam devam et", "--floor") == []  # item 1: no hit, warm process up, no traceback
    twenty_prompts(w.a)


def fsck(m: Machine, root: Path) -> None:
    proc = subprocess.run(["git", "-C", str(root), "fsck", "--full", "--strict", "--no-progress",
                           "--no-dangling"],
                          env=m.env(tick=False), capture_output=True, text=True)
    assert proc.returncode == 0 and not proc.stdout.strip(), f"fsck {root}: {proc.stdout}{proc.stderr}"


def doctor(m: Machine, pending: dict[str, str]) -> None:
    """Every check ok but those pending, and each of those says what is pending (its words)."""
    checks = {c["name"]: c for c in m.json("doctor")}
    raised = {name: f"{c['summary']} {' '.join(c['details'])}" for name, c in checks.items() if c["level"] != "ok"}
    for name in sorted(set(raised) | set(pending)):
        said, words = raised.get(name), pending.get(name)
        assert (said is None) == (words is None), f"doctor on {m.name}, {name}: {said!r}, expected {words!r}"
        assert said is None or words in said, f"doctor on {m.name}, {name}: {said!r} lacks {words!r}"


def nothing_decided_is_proposed(m: Machine, decided: dict[str, str]) -> None:
    """No open proposal on any review branch is one decided before: by its key, or by its subject."""
    open_keys = {p["key"]: p["subject"] for b in m.json("review") for p in b["proposals"] if p["state"] == "open"}
    again = {k: s for k, s in open_keys.items() if k in decided or s in decided.values()
             or s.startswith(("reject ", "accept "))}
    assert not again, f"proposed again on {m.name} after being decided: {again}"


def twenty_prompts(m: Machine) -> None:
    """The 20 prompts through the prompt hook: each brings its memory; chit-chat brings nothing. The agent
    then marks what answered the prompt as used, as it does (MCP `mark_used`): shown often and never used, a
    memory's usefulness falls and, rightly, with it its rank (seen here: the README's own prompt went silent
    by Saturday while nothing but these checks was recording impressions)."""
    wrong, helped = {}, set()
    for prompt, want in expect.items():
        block = m.prompt(prompt)
        ids = block_ids(block)
        if (want is None and block) or (want is not None and want not in ids):
            searched = [h["id"] for h in m.json("search", prompt, "--floor")]  # what the command line finds
            wrong[prompt] = {"want": want, "hook": ids, "search --floor": searched}
        elif want is not None:
            helped.add(want)
    if helped:
        m.mcp.ok("mark_used", ids=sorted(helped))
    assert not wrong, f"prompts that no longer recall what they should: {wrong}"


def sees(w: World, m: Machine, id: str, query: str, text: str | None = None, status: str = "active",
         ui: bool = True) -> None:
    """Memory `id` as every channel shows it right after the step: found for `query` when active, left
    out of recall when not; its text and status in `show`, `list` and the UI's page."""
    found = status == "active"
    searched = [h["id"] for h in m.json("search", query, "-n", "10")]
    assert (id in searched) == found, f"hafiza search {query!r} on {m.name}: {searched}"
    hooked = block_ids(m.prompt(query))
    assert (id in hooked) == found, f"the prompt hook for {query!r} on {m.name}: {hooked}"
    recalled = m.mcp.recall(query)
    assert (id in recalled) == found, f"MCP recall {query!r} on {m.name}: {recalled}"
    shown = m.json("show", id)
    assert shown["status"] == status and (text is None or text in shown["body"]), shown
    listed = {e["id"]: e["status"] for e in m.json("list", "--status", "all")}
    assert listed.get(id) == status, f"list on {m.name}: {listed.get(id)}"
    if ui and m is w.a:
        listed = re.findall(r'href="/memory/([^"?#/]+)"', w.ui.page(f"/?q={quote(query)}"))
        assert (id in listed) == found, f"UI search {query!r}: {id} {'missing' if found else 'listed'}"
        page = html_text(w.ui.page(f"/memory/{id}"))
        assert text is None or text in page, f"UI page of {id} lacks {text!r}"
        assert status in page


def html_text(page: str) -> str:
    import html

    return html.unescape(page)


def logged(m: Machine, action: str, id: str | None = None) -> dict:
    """The newest commit (of `id`'s history) is `action`, dated on the machine's simulated day."""
    entries = m.json("log", *([id] if id else []), "-n", "5")
    assert entries and entries[0]["action"] == action, f"log on {m.name}: {[e['action'] for e in entries]}"
    assert entries[0]["date"].startswith(m.day.isoformat()), entries[0]
    return entries[0]


# ---- Monday: a vault, memories through the command line and through the agent

def test_monday_remember_and_alias(week):
    a = week.a
    a.day = WEEK[0]
    a.run("init")
    a.run("remote", "set", str(week.remote))
    a.run("daemon", "start")
    a.next_day(WEEK[0])
    week.ui = Ui(a)
    for id, type, text, aliases in BY_CLI:
        a.run("remember", text, "--id", id, "--type", type, *[f"--alias={x}" for x in aliases[:1]])
    for id, type, text, aliases in BY_MCP:
        made = a.mcp.ok("remember", text=text, title=TITLES[id], type=type, aliases=aliases[:1])
        assert made["id"] == id
    a.run("alias", "billing-pgbouncer", "connection pool", "--reason", "the English words for it")
    logged(a, "alias", "billing-pgbouncer")
    a.mcp.ok("add_aliases", id="staging-server", aliases=["staging sunucusu"])
    sees(week, a, "staging-server", "staging sunucusu hangisi?", "stg-ist-2")
    sees(week, a, "billing-pgbouncer", "connection pool settings", "pgbouncer")
    a.run("sync")
    invariants(week)
    known.settle()


# ---- Tuesday: hand edits (one by an editor that rewrites frontmatter as Obsidian does), an edit, supersedes

def obsidian(path: Path, extra: dict[str, str]) -> None:
    """Rewrite `path`'s frontmatter the way Obsidian's properties editor saves it: keys in its own order,
    strings double-quoted, lists in block style, a property of its own added; the body as it was."""
    import yaml

    _, head, body = path.read_text(encoding="utf-8").split("---\n", 2)
    meta = yaml.safe_load(head)
    order = ["title", "aliases", "tags", *sorted(k for k in meta if k not in ("title", "aliases", "tags"))]
    lines = []
    for key in order:
        value = meta[key]
        if isinstance(value, list):
            lines.append(f"{key}:" if value else f"{key}: []")
            lines += [f'  - "{v}"' for v in value]
        elif isinstance(value, str):
            lines.append(f'{key}: "{value}"')
        else:
            lines.append(f"{key}: {value}")
    lines += [f"{k}: {v}" for k, v in extra.items()]
    path.write_text("---\n" + "\n".join(lines) + "\n---\n" + body, encoding="utf-8")


def test_tuesday_hand_edits_and_an_obsidian_save(week):
    from conftest import edit_in_place

    a = week.a
    a.next_day(WEEK[1])
    edit_in_place(a.root / "memories" / "staging-server.md", "port 8443", "port 9443")
    obsidian(a.root / "memories" / "ayse-backend-lead.md", {"cssclasses": "[]"})
    sees(week, a, "staging-server", "which staging server and port do we use?", "port 9443")
    sees(week, a, "ayse-backend-lead", "who is the backend lead?", "Python and Go")
    assert a.json("show", "ayse-backend-lead")["aliases"] == ["backend lead"]
    a.run("edit", "pnpm", "--text", "Frontend'de paket yöneticisi olarak pnpm kullanıyoruz; npm install ve yarn "
          "çalıştırma.")
    logged(a, "update", "pnpm")
    sees(week, a, "pnpm", "yarn mı kullanıyoruz?", "yarn")
    a.run("alias", "ayse-backend-lead", "Ayşe Hanım")  # a write to the file Obsidian saved
    saved = (a.root / "memories" / "ayse-backend-lead.md").read_text(encoding="utf-8")
    assert "cssclasses" in saved and "Ayşe Hanım" in saved  # the editor's own property is kept
    a.run("sync")  # commits the hand edits
    history = a.json("log", "staging-server")
    assert "manual-edits" in [e["action"] for e in history[:3]], history  # the user's own commit
    invariants(week)
    known.settle()


def test_tuesday_supersede_through_the_agent_and_the_command_line(week):
    a = week.a
    a.minute += 5
    new = a.mcp.ok("remember", text="Billing reaches Postgres directly since the 2026 move; pgbouncer is gone.",
                   title="Billing direct Postgres", type="knowledge", supersedes=["billing-pgbouncer"])
    assert new["id"] == "billing-direct-postgres"
    recalled = a.mcp.recall("billing Postgres directly pgbouncer gone")  # at once, in the same process
    assert recalled[:1] == ["billing-direct-postgres"], recalled  # item 2
    logged(a, "remember", "billing-pgbouncer")
    sees(week, a, "billing-pgbouncer", "billing pgbouncer postgres", "pgbouncer", status="superseded")
    sees(week, a, "billing-direct-postgres", "billing postgres directly", "directly")
    expect["billing postgres bağlantı havuzu ayarı nerede?"] = "billing-direct-postgres"
    assert "bağlantı havuzu" in a.json("show", "billing-direct-postgres").get("aliases", [])  # item 7

    a.run("remember", "Database migrations run through the pipeline with make migrate; never by hand.",
          "--id", "migrations-pipeline", "--type", "rule", "--alias", "migration pipeline")
    a.run("supersede", "migrations", "migrations-pipeline", "--reason", "the pipeline runs them now")
    logged(a, "supersede", "migrations")
    sees(week, a, "migrations", "migrate.sh by hand", "migrate.sh", status="superseded")
    expect["how do I run the database migrations?"] = "migrations-pipeline"
    invariants(week)
    known.settle()


def test_tuesday_undo_and_redo(week):
    a = week.a
    a.run("undo")
    logged(a, "undo")
    sees(week, a, "migrations", "migrate.sh by hand", "migrate.sh", status="active")
    a.run("undo", "--redo")
    logged(a, "redo")
    sees(week, a, "migrations", "migrate.sh by hand", "migrate.sh", status="superseded")
    invariants(week)
    known.settle()


# ---- Wednesday: the curator's proposals reviewed; a claim checked after a rename in the project

def cosines(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"cosine (-?[0-9.]+)", text)]


def test_wednesday_curate_and_review(week):
    a = week.a
    a.next_day(WEEK[2])
    batch = week.top / "imported.jsonl"  # two notes from another tool
    batch.write_text("\n".join(json.dumps(item) for item in [
        {"id": "oncall-rota", "text": "The on-call rota changes every Monday at 10:00; swaps go in #oncall."},
        {"id": "feature-flags", "text": "Feature flags live in Unleash; remove a flag within two sprints."},
    ]) + "\n", encoding="utf-8")
    a.run("import", str(batch))
    logged(a, "import")
    sees(week, a, "feature-flags", "where do feature flags live?", "Unleash")
    for original in ("ci-image", "log-retention"):  # the editor's "duplicate note", then a stray space
        text = (a.root / "memories" / f"{original}.md").read_text(encoding="utf-8")
        copy = text.replace(f"id: {original}", f"id: {original}-copy").replace(" use the ", " use the  ")
        (a.root / "memories" / f"{original}-copy.md").write_text(copy.replace("kept 30", "kept  30"), encoding="utf-8")
    sees(week, a, "ci-image-copy", "ci runners docker image python slim", "python:3.12-slim")

    run = a.json("curate", "--pass", "duplicates", "--pass", "conflicts", "--project", f"shop={week.shop}")
    assert run["branch"] and len(run["proposed"]) == 2, run
    measured = cosines(json.dumps(run))  # item 4: the sidecar's rows scaled back
    assert all(-1.0 <= c <= 1.0 for c in measured), measured
    branch = next(b for b in a.json("review") if b["branch"] == run["branch"])
    first, second = branch["proposals"][:2]
    pending = len([p for b in a.json("review") for p in b["proposals"] if p["state"] == "open"])
    week.pending["a"]["review"] = f"{pending} "
    doctor(a, week.pending["a"])

    a.run("review", "accept", run["branch"], "--only", str(first["number"]))
    a.run("review", "reject", run["branch"], "--only", str(second["number"]), "--why", "kept apart on purpose")
    week.decided[first["key"]], week.decided[second["key"]] = first["subject"], second["subject"]
    week.pending["a"].pop("review", None)
    dropped, kept = re.fullmatch(r"merge duplicate (\S+) into (\S+)", first["subject"]).groups()
    sees(week, a, dropped, "ci runners docker image python slim" if "ci" in dropped else "logs kept 30 days loki",
         status="superseded")
    for prompt, want in expect.items():
        if want == dropped:
            expect[prompt] = kept
    again = a.json("curate", "--dry-run", "--pass", "duplicates", "--pass", "conflicts")
    assert not {f["key"] for f in again["selected"]} & set(week.decided), again["selected"]
    html = week.ui.page("/review")
    assert first["subject"] not in html and second["subject"] not in html
    invariants(week)
    known.settle()


def test_wednesday_verify_after_a_rename_in_the_project(week):
    a = week.a
    a.run("remember", "Deploy the shop with infra/deploy.sh from the repo root.", "--id", "shop-deploy",
          "--scope", "project:shop", "--type", "rule", "--alias", "dükkanı yayına almak")
    a.run("verify", "--extract", "--apply", "--project", f"shop={week.shop}")
    assert a.json("show", "shop-deploy").get("claims"), "no claim extracted from infra/deploy.sh"
    (week.shop / "ops").mkdir()
    a.git("mv", "infra/deploy.sh", "ops/deploy.sh", root=week.shop)
    a.git("commit", "-q", "-m", "move deploy.sh into ops/", root=week.shop)
    a.run("verify", "--all", "--project", f"shop={week.shop}")
    logged(a, "verify", "shop-deploy")
    shown = a.json("show", "shop-deploy")
    assert shown["verified"] == "failed" and "ops/deploy.sh" in shown["verified_note"], shown
    hit = next(h for h in a.json("search", "deploy the shop infra script", "--project", "shop")
               if h["id"] == "shop-deploy")
    assert hit["verified"] == "failed", hit  # at once
    block = a.prompt("how do I deploy the shop, which script?", cwd=week.shop)
    assert "shop-deploy" in block_ids(block) and "unverified since" in block and "ops/deploy.sh" in block, block
    # the project's own memory answers a short task typed in it; a reaction typed there gets nothing, by hook or MCP
    assert "shop-deploy" in block_ids(a.prompt("deploy it from the repo root", cwd=week.shop))
    assert block_ids(a.prompt("thanks, that fixed it", cwd=week.shop)) == []
    assert a.mcp.ok("recall", query="thanks, that fixed it", scope="shop")["hits"] == []
    # an agent's search of one word finds it too (the floor of such a search: tests/test_mcp.py)
    assert "shop-deploy" in [h["id"] for h in a.mcp.ok("recall", query="deploy", scope="shop")["hits"]]
    labels = {h["id"]: h["labels"] for h in a.mcp.ok("recall", query="deploy the shop script", scope="shop")["hits"]}
    assert any("unverified" in label for label in labels.get("shop-deploy", [])), labels
    listed = re.findall(r'href="/memory/([^"?#/]+)"', week.ui.page("/?label=unverified"))
    assert listed == ["shop-deploy"], listed
    week.pending["a"]["labels"] = "1 "
    invariants(week)
    known.settle()


# ---- Thursday: what the user said in sessions, filed to the inbox; facts that change

TOKEN = "gh" + "p_" + "Zq7Lm2Xc9Vb4Nk1Rt6Yw3Ps8Dh5Gf0Ja2Ue7"  # assembled at run time; not a real token


def session(m: Machine, cwd: Path, day, hour: int, said: str, steps=()) -> None:
    """One Claude Code session on `day`, in its real transcript format (tests/skill_sessions.py)."""
    sid = f"{day:%m%d}{hour:02d}00-{abs(hash(said)) % 10**4:04d}-4c3d-8e9f-{abs(hash(said)) % 10**12:012d}"
    skill_sessions.claude(m.home, cwd, sid, f"{day.isoformat()}T{hour:02d}:00", said, list(steps))


def decided_again(proposals, decided: dict[str, str]) -> list[str]:
    return [p["subject"] for p in proposals if p["key"] in decided or p["subject"] in decided.values()]


def inbox_open(m: Machine) -> dict[str, dict]:
    return {p["subject"]: p for p in m.json("inbox")}


def test_thursday_capture_and_the_inbox(week):
    a = week.a
    a.next_day(WEEK[3])
    session(a, week.shop, WEEK[3], 10, "From now on run the end-to-end tests with playwright before each release.")
    session(a, week.shop, WEEK[3], 11, f"Remember that my GitHub token is {TOKEN}, use it for the release bot.")
    session(a, week.shop, WEEK[3], 12, "Never force-push to the shared staging branch.")
    a.run("sessions", "import")
    before = {e["id"] for e in a.json("list")}
    filed = a.json("inbox", "file")
    everything = a.run("inbox").stdout + " ".join(filed["proposed"])
    assert TOKEN not in everything
    assert "token" not in everything.lower() and "secret removed" not in everything, everything  # item 8
    listed = inbox_open(a)
    tests = next(p for s, p in listed.items() if "playwright" in s)
    force = next(p for s, p in listed.items() if "force-push" in s)
    a.run("inbox", "accept", str(tests["number"]))
    a.run("inbox", "reject", str(force["number"]), "--why", "we allow it with a lease")
    week.decided.update({p["key"]: p["subject"] for p in (tests, force)})
    [playwright] = {e["id"] for e in a.json("list")} - before
    sees(week, a, playwright, "when do we run the end-to-end tests with playwright?", "playwright")

    session(a, week.shop, WEEK[3], 15, "Always write commit messages in English.")  # the next session
    a.run("sessions", "import")
    again = a.json("inbox", "file")
    assert not decided_again(inbox_open(a).values(), week.decided), inbox_open(a)  # item 3
    still = [p for p in inbox_open(a).values() if not decided_again([p], week.decided)]
    assert any("English" in p["subject"] or "english" in p["subject"] for p in still), (again, still)
    week.pending["a"]["review"] = f"{len(still)} "
    invariants(week)
    a.run("inbox", "reject", "--why", "not this week")  # the rest, so the week goes on with an empty inbox
    week.decided.update({p["key"]: p["subject"] for p in still})
    week.pending["a"].pop("review")
    known.settle()


def test_thursday_facts(week):
    a = week.a
    a.run("fact", "set", "Ege Lojistik", "city", "İzmir", "--since", "2024", "--kind", "client")
    a.run("fact", "set", "Ege Lojistik", "city", "Ankara", "--since", WEEK[3].isoformat(), "--reason", "they moved")
    logged(a, "fact")
    note = a.json("fact", "show", "Ege Lojistik")
    assert "Ankara" in json.dumps(note, ensure_ascii=False), note
    history = a.run("fact", "history", "Ege Lojistik", "city").stdout
    assert history.index("Ankara") < history.index("İzmir")  # newest first, the old value kept
    block = a.prompt("Ege Lojistik hangi şehirde?")
    assert "Ankara" in block, block
    hits = a.json("search", "Ege Lojistik city")
    assert hits and hits[0]["path"].startswith("facts/") and "Ankara" in hits[0]["snippet"], hits
    got = a.mcp.ok("get_fact", entity="ege lojistik")
    assert "Ankara" in json.dumps(got, ensure_ascii=False), got
    fact_id = next(i for i in block_ids(block) if i.startswith("fact"))
    assert "Ankara" in a.run("show", fact_id).stdout  # item 10
    # The client's contact leaves and nobody replaces him: the agent removes the attribute; its value stays in
    # the note's history, and every channel stops offering it as current.
    a.run("fact", "set", "Ege Lojistik", "contact", "Murat Demir", "--since", "2025-03")
    assert "Murat Demir" in a.prompt("Ege Lojistik'te kiminle görüşüyoruz, contact kim?")
    gone = a.mcp.ok("remove_fact", entity="ege lojistik", attribute="contact", reason="Murat left, nobody yet")
    assert gone["changed"] and [x["name"] for x in gone["removed"]] == ["contact"], gone
    logged(a, "fact")
    assert "Murat" not in a.prompt("Ege Lojistik'te kiminle görüşüyoruz, contact kim?")
    assert "contact" not in a.run("fact", "show", "Ege Lojistik").stdout
    assert "Murat Demir" in a.run("fact", "history", "Ege Lojistik", "contact").stdout
    assert not [h for h in a.json("search", "Ege Lojistik contact") if h["id"].endswith("/contact")]
    invariants(week)
    known.settle()


def test_thursday_a_changed_fact_in_other_words(week):
    # Ruff's rules moved to ruff.toml, and the note that says so supersedes nothing and shares one title word with
    # the old one ("Ruff rules", "Ruff config"): both stay active, and the memories' vectors make them one subject
    # (issue 34, round six). Every channel that searches by meaning shows the newer first; the hook and MCP label
    # the older "possibly outdated".
    from conftest import edit_in_place

    a = week.a
    # The old note was written long before this week (its date set by hand, as a note brought from elsewhere):
    # the next write records the edit first.
    edit_in_place(a.root / "memories" / "ruff-config.md", f"created: {a.json('show', 'ruff-config')['created']}",
                  "created: 2025-06-02")
    a.run("remember", "Ruff lint rules live in ruff.toml at the repository root now, no longer in pyproject.toml "
          "under [tool.ruff].", "--id", "ruff-rules", "--type", "knowledge", "--title", "Ruff rules")
    logged(a, "remember", "ruff-rules")
    query, label = "where do the ruff lint rules live?", "possibly outdated: newer memory ruff-rules"

    def newer_first(ids: list[str], channel: str) -> None:
        assert "ruff-rules" in ids and ids.index("ruff-rules") < ids.index("ruff-config"), f"{channel}: {ids}"

    block = a.prompt(query)
    newer_first(block_ids(block), "the prompt hook")
    assert label in block, block
    hits = a.mcp.ok("recall", query=query)["hits"]
    newer_first([h["id"] for h in hits], "MCP recall")
    assert label in next(h for h in hits if h["id"] == "ruff-config")["labels"], hits
    newer_first([h["id"] for h in a.json("search", query)], "hafiza search")
    page = week.ui.page(f"/?q={quote(query)}&mode=hybrid")  # the UI's keyword search (its default) reads no vectors
    newer_first(re.findall(r'href="/memory/([^"?#/]+)"', page), "the UI's search")
    invariants(week)
    known.settle()


# ---- Friday: procedures repeated across sessions become skill drafts, promoted or rejected

def test_friday_skills_draft_promote_reject(week):
    a = week.a
    a.next_day(WEEK[4])
    for n, (day, hour) in enumerate([(WEEK[1], 16), (WEEK[2], 16), (WEEK[4], 9)], 1):
        session(a, week.shop, day, hour, "Please do the release work again", skill_sessions.steps_of("release", n))
        session(a, week.shop, day, hour + 1, "Please do the migration work again",
                skill_sessions.steps_of("migration", n))
    drafted = a.json("skills", "draft")
    assert sorted(drafted["drafted"]) == ["db-snapshot-migrate", "pull-changelog-tag"], drafted
    drafts = {p["subject"].split()[-1]: p for b in a.json("review") for p in b["proposals"]
              if b["branch"].startswith("skills/")}
    week.pending["a"]["review"] = "2 "
    doctor(a, week.pending["a"])
    promoted = a.run("skills", "promote", "pull-changelog-tag").stdout
    assert str(a.home / ".claude" / "skills" / "pull-changelog-tag" / "SKILL.md") in promoted
    a.run("skills", "reject", "db-snapshot-migrate", "--why", "CI runs the migrations now")
    week.decided.update({p["key"]: p["subject"] for p in drafts.values()})
    week.pending["a"].pop("review")
    listed = {(e["name"], e["state"]) for e in a.json("skills", "list")}
    assert listed == {("pull-changelog-tag", "active")}, listed
    assert a.json("skills", "draft")["drafted"] == []  # nothing decided is drafted again
    a.run("sessions", "import")
    a.run("inbox", "file")
    assert not decided_again(inbox_open(a).values(), week.decided), inbox_open(a)  # item 3
    invariants(week)
    known.settle()


# ---- Saturday: a second machine, the same memory edited on both, resolved; a memory promoted to the team

def test_saturday_sync_conflicting_edits_and_resolve(week):
    a, b = week.a, week.b
    a.next_day(WEEK[5])
    a.run("sync")
    b.day = WEEK[5]
    # B's agent starts before the vault is cloned: its MCP server must not make an empty vault where
    # HAFIZA_VAULT points (the agent would write there, unsynced); it names the folder and exits, the hook is
    # silent, and nothing is made but by `init`.
    started = b.run("mcp", input="", ok=False)
    assert started.returncode == 2 and f"`hafiza --vault {b.root} init`" in started.stderr, started.stderr
    assert b.prompt("which staging server and port do we use?") == "" and not b.root.exists()
    b.run("init", "--from", str(week.remote))
    b.next_day(WEEK[5])
    week.pending["b"] = dict(week.pending["a"])  # what waits on A came with the clone
    sees(week, b, "staging-server", "which staging server and port do we use?", "port 9443")
    a.run("edit", "friday-push", "--text", "Never push to main on Fridays after 15:00.")
    a.run("sync")
    b.run("edit", "friday-push", "--text", "Never push to main on Fridays after 16:00; ask in #release first.")
    b.run("sync")   # merges A's edit: both texts kept, pushed
    a.run("sync")   # fast-forwards to B's merge
    assert a.json("resolve") == {"friday-push": ["body"]}
    week.pending["a"]["sync"] = week.pending["b"]["sync"] = "friday-push"
    invariants(week)
    block = a.prompt("can I push to main on friday afternoon?")
    line = next((x for x in block.splitlines() if "] friday-push:" in x), "")  # item 6
    assert not line or ("conflict" in line and "15:00" in line and "16:00" in line), line
    a.run("resolve", "friday-push", "--keep", "ours")
    kept = a.json("show", "friday-push")
    assert "15:00" in kept["body"] and "16:00" not in kept["body"], kept["body"]  # item 5: ours is this machine's
    assert not any("Never push" in x for x in kept.get("aliases", [])), kept.get("aliases")  # a title is no alias
    week.pending["a"].pop("sync"), week.pending["b"].pop("sync")
    a.run("sync")
    b.run("sync")
    for m in (a, b):  # B reads cold, keywords only: asked in the memory's words
        sees(week, m, "friday-push", "never push to main on fridays", "15:00")
    invariants(week)
    known.settle()


def test_saturday_promote_to_the_team(week):
    a, member = week.a, week.member
    a.run("vault", "add", "team", str(week.team))
    a.run("remember", "--to", "team", "Billing production deploys need a second reviewer from the payments team.",
          "--id", "second-reviewer", "--alias", "ikinci onay")
    a.run("sync")
    done = a.json("promote", "pr-approvals", "--to", "team")
    assert done["branch"].startswith("promote/") and done["pushed_to"] == str(week.team), done
    member.day = WEEK[5]
    member.run("init", "--from", str(week.team))
    member.git("fetch", "-q", "origin", f"{done['branch']}:{done['branch']}")
    member.run("review", "accept", done["branch"])
    member.run("sync")
    a.run("sync")
    team = a.home / ".local" / "share" / "hafiza" / "teams" / "team"
    assert "payments team" in a.json("--vault", str(team), "show", "pr-approvals")["body"]  # pulled by A's sync
    hits = a.json("search", "billing production deploys second reviewer", "-n", "10")
    assert ("second-reviewer", "team") in {(h["id"], h.get("vault")) for h in hits}, hits
    block = a.prompt("second reviewer for billing production deploys?")
    assert "second-reviewer" in block_ids(block) and "vault: team" in block, block
    recalled = a.mcp.ok("recall", query="billing production deploys second reviewer")["hits"]
    assert any(h["id"] == "second-reviewer" and h["vault"] == "team" for h in recalled), recalled
    # Read whole where it lives, by the start of its id, as the agent's `get` reads it (`show` read only A's vault).
    shown = a.run("show", "second-rev")
    assert "second reviewer" in shown.stdout and "is in the team vault team" in shown.stderr, shown.stderr
    assert a.json("show", "second-rev")["vault"] == a.mcp.ok("get", id="second-reviewer")["vault"] == "team"
    # Its history is the team vault's: the commit that wrote it there, named the same way.
    history = a.json("log", "second-rev")
    assert history and {c["vault"] for c in history} == {"team"}, history
    assert "is in the team vault team" in a.run("log", "second-rev").stderr
    # The agent marks what helped, one id misspelt: the others count, each in its own vault, the typo is named.
    used = a.mcp.ok("mark_used", ids=["second-reviewer", "pr-aprovals", "deploy-from-main"])
    assert used["recorded"] == ["second-reviewer", "deploy-from-main"], used
    assert [(u["id"], u["near"][:1]) for u in used["unknown"]] == [("pr-aprovals", ["pr-approvals"])], used
    invariants(week)
    known.settle()


# ---- Sunday: the week read back

def test_sunday_the_week_read_back(week):
    a, b = week.a, week.b
    a.next_day(WEEK[6])
    days = {e["date"][:10] for e in a.json("log", "-n", "500")}
    assert days >= {d.isoformat() for d in WEEK[:6]}, days
    profile = a.session_start()
    assert "deploy-from-main" in profile or "Production deploys only from main" in profile, profile
    assert "migrate.sh" not in profile  # superseded on Tuesday
    health = html_text(week.ui.page("/health"))
    assert all(name in health for name in ("files", "index", "review")), health[:500]
    proposed = a.json("curate", "--dry-run", "--pass", "duplicates", "--pass", "conflicts")["selected"]
    assert not {f["key"] for f in proposed} & set(week.decided), proposed  # decided on Wednesday
    for m in (a, b):
        assert m.json("resolve") == {}
    invariants(week)
    known.settle()
