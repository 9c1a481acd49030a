"""`hafiza ui` in a real browser: Debian's chromium, headless, driven by Playwright (`make e2e` installs both;
Playwright never downloads a browser here). The flows a person goes through, the keyboard, hostile memory text
rendered (no script runs, the layout holds), and a screenshot of each screen.

Screenshots go to .cache/e2e/ui/ on every run; with HAFIZA_UI_SCREENSHOTS=docs/images they replace the set the
docs show (docs/ui.md)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from conftest import git, run_cli  # noqa: E402
from fence_corpus import HOSTILE  # noqa: E402
from ui_server import Server, conflicted  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run", "--disable-sync",
        "--host-resolver-rules=MAP rebound.example 127.0.0.1"]  # a DNS rebinding: a foreign name, this machine
SHOTS = ROOT / ".cache" / "e2e" / "ui"


def _why_not() -> str | None:
    if os.environ.get("HAFIZA_E2E") != "1":
        return "browser tests of hafiza ui run with `make e2e` (HAFIZA_E2E=1)"
    if not Path(CHROMIUM).exists():
        return f"no {CHROMIUM}: `apt-get install chromium` (make e2e does, as root)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright is not installed: `pip install -e '.[e2e]'` (make e2e does)"
    return None


pytestmark = pytest.mark.skipif(_why_not() is not None, reason=_why_not() or "")


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield launched
        launched.close()


@pytest.fixture
def server(vault):
    started = Server(env={"HAFIZA_DAEMON": "0"})
    yield started
    started.stop()


@pytest.fixture
def page(browser, server):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    opened.dialogs = []
    opened.on("dialog", lambda d: (opened.dialogs.append(d.message), d.dismiss()))
    opened.errors = []
    opened.on("pageerror", lambda e: opened.errors.append(str(e)))
    opened.on("console", lambda m: opened.errors.append(m.text) if m.type == "error" else None)
    requests = []
    opened.on("request", lambda r: requests.append(r.url))
    opened.requests = requests
    opened.goto(server.url)
    yield opened
    assert all(url.startswith(server.base) for url in requests), [u for u in requests if not u.startswith(server.base)]
    context.close()


def shot(page, name: str) -> None:
    """Save a screenshot of the screen; copy it to the docs' set when HAFIZA_UI_SCREENSHOTS names a folder."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"ui-{name}.png"
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(path), full_page=False)
    keep = os.environ.get("HAFIZA_UI_SCREENSHOTS")
    if keep:
        folder = ROOT / keep  # relative to the checkout: each test runs in a folder of its own
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, folder / path.name)


def subjects(root: Path, since: str) -> list[str]:
    return git(root, "log", "--format=%s", f"{since}..HEAD").splitlines()


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


def seed(vault) -> None:
    vault.remember("Deploys go through make ship; never deploy on a Friday afternoon.", id="deploy-rule",
                   type="rule", tags=["deploy"], aliases=["yayına alma"])
    vault.remember("The staging database listens on port 5433 behind pgbouncer.", id="staging-db", tags=["db"])
    vault.remember("Ayşe owns the billing service; ask her before changing invoices.", id="billing-owner",
                   type="knowledge", tags=["people"])
    vault.import_many([{"text": f"Background note {n} about {w}", "id": f"note-{n}"}
                       for n, w in enumerate(["tea", "cats", "jazz", "maps", "rain", "chess"] * 3)], source="seed")


def test_search_open_edit_see_the_commit_and_undo_it(page, server, vault):
    seed(vault)
    page.reload()
    shot(page, "memories")
    page.fill("input[name=q]", "staging database port")
    page.wait_for_selector("p.count:has-text('match')")  # htmx swapped the results in as the words were typed
    assert page.locator("table.memories tbody tr").first.locator("a[href='/memory/staging-db']").count() == 1
    shot(page, "search")
    page.click("a[href='/memory/staging-db']")
    page.wait_for_selector("h1")
    before = head(vault.root)
    text = page.input_value("#text")
    page.fill("#text", text.replace("port 5433", "port 6543"))
    page.fill("#edit input[name=reason]", "the port moved")
    page.click("#edit button[type=submit]")
    page.wait_for_load_state()
    assert page.url.endswith("/memory/staging-db#history"), (page.url, page.content()[:3000])
    assert subjects(vault.root, before) == ["hafiza: edit staging-db"]
    assert "Hafiza-Actor: ui" in git(vault.root, "log", "-1", "--format=%B")
    first = page.locator("ol.history li.commit").first
    assert "edit staging-db" in first.inner_text() and "+The staging database listens on port 6543" in first.inner_text()
    shot(page, "memory")
    edited = head(vault.root)
    first.locator("button", has_text="Undo").click()
    page.wait_for_url("**/memory/staging-db#history")
    assert subjects(vault.root, edited) == ["hafiza: undo edit staging-db"]
    assert "port 5433" in (vault.root / "memories" / "staging-db.md").read_text()
    assert "port 5433" in page.locator(".body").inner_text()
    assert page.dialogs == [] and page.errors == []


def test_a_curate_branch_accept_one_reject_another_by_keyboard(page, server, vault):
    for n, text in enumerate(["Use ruff for linting Python code.", "Run the tests with pytest -q before pushing."]):
        vault.remember(text, id=f"orig-{n}")
        vault.remember(text.replace(" ", "  ", 1), id=f"copy-{n}")  # the same text but for spacing
    run_cli("curate", "--pass", "duplicates")
    branch = git(vault.root, "branch", "--list", "curate/*", "--format=%(refname:short)").split()[0]
    before = head(vault.root)
    page.goto(f"{server.base}/review")
    actions = page.locator(".queue .action.open")
    assert actions.count() == 2
    assert page.locator(".queue .action.current").count() == 1  # the first one, selected for the keyboard
    shot(page, "review")
    page.keyboard.press("a")  # accept the first
    page.wait_for_selector(".notice")
    assert page.locator(".queue .action.open").count() == 1
    page.locator(".queue .action.open input[name=why]").fill("two separate notes on purpose")
    page.locator("body").click(position={"x": 5, "y": 5})  # leave the reason box: keys drive the queue again
    page.keyboard.press("j")
    page.keyboard.press("r")
    page.wait_for_selector(".notice >> text=never proposed again")
    log = subjects(vault.root, before)
    assert log[0] == f"hafiza: reject 1 proposal of {branch}" and log[1].startswith("hafiza: merge duplicate")
    assert len(log) == 2  # one commit for the accepted action, one ruling for the rejected one
    ruling = json.loads((vault.root / "rulings.jsonl").read_text().splitlines()[-1])
    assert ruling["why"] == "two separate notes on purpose" and ruling["by"] == "ui"
    assert page.locator(".queue .action.open").count() == 0
    assert page.dialogs == [] and page.errors == []


def test_a_sync_conflict_is_resolved_from_the_page(browser, tmp_path, vault):
    conflicted(tmp_path, vault, "release-notes", ("Release notes go\nto the wiki\nevery Monday.",
               "Release notes go\nto the team channel\nevery Monday.",
               "Release notes go\nto the changelog file\nevery Monday."), title="Release notes")
    server = Server(env={"HAFIZA_DAEMON": "0"})
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.goto(server.url)
        page.goto(f"{server.base}/memory/release-notes")  # while open: both texts apart, labelled, not the fence
        sides = page.locator("section.text .sides > div")
        assert sides.count() == 2 and "in conflict" in page.locator("section.text").inner_text()
        assert "team channel" in sides.nth(0).inner_text() and "changelog file" in sides.nth(1).inner_text()
        assert "hafiza-conflict" not in page.locator("section.text").inner_text()
        page.click("section.text a:has-text('Settle it')")
        page.wait_for_url("**/review#conflict-release-notes")
        box = page.locator("#conflict-release-notes")
        assert "team channel" in box.inner_text() and "changelog file" in box.inner_text()
        box.locator("button", has_text="Keep theirs").click()
        page.wait_for_selector(".notice")
        assert git(vault.root, "log", "-1", "--format=%s").strip() == "hafiza: resolve release-notes (keep theirs)"
        body = vault.get("release-notes").body
        assert "hafiza-conflict" not in body and ("changelog file" in body) != ("team channel" in body)
        assert page.locator("#conflict-release-notes").count() == 0
    finally:
        context.close()
        server.stop()


def test_what_the_agent_sees_equals_the_hooks_output(page, server, vault, tmp_path):
    seed(vault)
    project = tmp_path / "shop"
    project.mkdir()
    prompt = "can I deploy with make ship on a friday?"
    page.goto(f"{server.base}/agent")
    page.fill("input[name=prompt]", prompt)
    page.select_option("select[name=client]", "claude-code")
    page.fill("input[name=project]", str(project))
    page.click("button:has-text('See')")
    page.wait_for_selector("#injected")
    shot(page, "agent")
    page.click("summary:has-text('Exactly as printed')")
    shown = page.locator("#hook-output").inner_text()
    payload = json.dumps({"session_id": "browser-1", "prompt": prompt, "cwd": str(project),
                          "hook_event_name": "UserPromptSubmit"})
    hook = subprocess.run([sys.executable, "-m", "hafiza.cli.main", "hook", "claude-code", "UserPromptSubmit"],
                          input=payload, capture_output=True, text=True, check=True,
                          env={**os.environ, "HAFIZA_DAEMON": "0"}).stdout
    assert shown == hook and "deploy-rule" in hook
    injected = json.loads(hook)["hookSpecificOutput"]["additionalContext"]
    assert page.locator("#injected").inner_text() == injected
    assert "injected" in page.locator("table.explain").inner_text()
    start = subprocess.run([sys.executable, "-m", "hafiza.cli.main", "hook", "claude-code", "SessionStart"],
                           input=json.dumps({"session_id": "browser-2", "cwd": str(project),
                                             "hook_event_name": "SessionStart", "source": "startup"}),
                           capture_output=True, text=True, check=True, env={**os.environ, "HAFIZA_DAEMON": "0"}).stdout
    profile = page.locator("#profile").inner_text()
    assert "deploy-rule" in profile or "Deploys go through make ship" in profile
    assert profile in json.loads(start)["hookSpecificOutput"]["additionalContext"]  # the session-start profile


def test_health_screen(page, server, vault):
    seed(vault)
    page.goto(f"{server.base}/health")
    page.wait_for_selector("#checks")
    assert page.locator("svg.chart").count() >= 1
    shot(page, "health")
    assert page.errors == []


@pytest.mark.parametrize("width", [1280, 420])
def test_hostile_text_runs_no_script_and_breaks_no_layout(browser, server, vault, width):
    corpus = [text for text, _ in HOSTILE if "\0" not in text]
    texts = corpus + [
        "<script>window.__pwned = 1; alert(1)</script>", "</textarea><img src=x onerror=\"window.__pwned=2\">",
        "\"><svg onload=\"window.__pwned=3\">", "javascript:window.__pwned=4", "<style>body{display:none}</style>",
        "x" * 3000, "\u202eevil-override " * 20]
    for n, text in enumerate(texts):
        vault.remember(f"hostile {n}: {text}", id=f"hostile-{n}", title=f"{text[:60]} #{n}", tags=[f"t{n % 3}"])
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(server.url)
    try:
        extra = len(corpus)  # the script, the </textarea>, the <svg>, ... written after the corpus
        for path in ["/?status=all&sort=id", "/?q=hostile", *[f"/memory/hostile-{extra + n}" for n in range(7)],
                     *[f"/memory/hostile-{n}" for n in range(0, len(texts), 5)], "/agent?prompt=hostile+script+textarea"]:
            page.goto(server.base + path)
            assert page.evaluate("window.__pwned") is None, path
            assert page.locator("script:not([src])").count() == 0, path
            wide = page.evaluate("document.documentElement.scrollWidth")
            assert wide <= width + 1, (path, wide)  # nothing pushes the page wider than the window
            assert page.locator("body").is_visible()
            if path.startswith("/memory/"):
                assert page.locator("textarea#text").count() == 1 and page.locator("form").count() >= 2
        if width == 1280:
            page.goto(server.base + "/memory/hostile-8")
            shot(page, "hostile")
        assert dialogs == []
    finally:
        context.close()


def test_narrow_window_is_readable(browser, server, vault):
    seed(vault)
    context = browser.new_context(viewport={"width": 420, "height": 860})
    page = context.new_page()
    page.goto(server.url)
    for path, name in (("/", "memories-narrow"), ("/memory/deploy-rule", "memory-narrow")):
        page.goto(server.base + path)
        assert page.evaluate("document.documentElement.scrollWidth") <= 421
        shot(page, name)
    context.close()


def test_a_browser_without_the_token_with_a_wrong_one_at_a_foreign_host_or_posting_without_csrf_is_refused(
        browser, server, vault):
    """The hostile cases as a browser meets them: no token, a wrong token, a name rebound to 127.0.0.1 (even
    carrying the right token, which it leaves unspent), and a POST from the signed-in page without its CSRF
    field; none of them changes the vault."""
    vault.remember("The staging database listens on port 5433.", id="staging-db")
    before = head(vault.root)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        for url, status in ((f"{server.base}/", 401), (f"{server.base}/memory/staging-db", 401),
                            (f"{server.base}/?token={'x' * 43}", 403),
                            (f"http://rebound.example:{server.port}/?token={server.token}", 403)):
            response = page.goto(url)
            assert response.status == status, url
            assert "5433" not in page.content() and page.locator("form").count() == 0, url
        assert context.cookies() == []
        assert page.goto(server.url).status == 200  # the printed address still signs in: the token was unspent
        assert {(c["httpOnly"], c["sameSite"]) for c in context.cookies()} == {(True, "Strict")}
        assert page.goto(f"http://rebound.example:{server.port}/memory/staging-db").status == 403
        page.goto(f"{server.base}/memory/staging-db")
        text = page.input_value("#text").replace("5433", "6543")
        forged = page.evaluate("""async (text) => {
            const r = await fetch('/memory/staging-db/edit', {method: 'POST', body: new URLSearchParams({text})});
            return [r.status, await r.text()];
        }""", text)
        assert forged[0] == 403 and "CSRF" in forged[1]
        assert head(vault.root) == before and "5433" in (vault.root / "memories" / "staging-db.md").read_text()
        page.fill("#text", text)  # the page's own form, which carries its token, is taken
        page.click("#edit button[type=submit]")
        page.wait_for_url("**/memory/staging-db#history")
        assert subjects(vault.root, before) == ["hafiza: edit staging-db"]
    finally:
        context.close()


def test_a_team_promotion_is_accepted_from_the_page(browser, vault, tmp_path):
    """A memory proposed to the team vault (`hafiza promote`) waits on the team vault's review branch; accepted
    on the page, the team vault's main holds it, as `hafiza review accept` makes it."""
    vault.remember("Billing deploys need two reviewers.", id="billing-reviewers", type="rule")
    remote = tmp_path / "team.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    run_cli("vault", "add", "team", str(remote))
    team = Path(next(v["path"] for v in json.loads(run_cli("vault", "list", "--json").stdout)
                     if v["name"] == "team"))
    run_cli("promote", "billing-reviewers", "--to", "team", "--no-push")
    before, mine = head(team), head(vault.root)
    server = Server(env={"HAFIZA_DAEMON": "0"})
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.goto(server.url)
        page.goto(f"{server.base}/review")
        action = page.locator(".queue .action.open", has_text="promote billing-reviewers")
        assert action.count() == 1 and "proposed for the team" in action.inner_text()
        assert "billing-reviewers.md as proposed" in action.inner_text()
        action.locator("button[data-decide=accept]").click()
        page.wait_for_selector(".notice")
        assert "accepted as" in page.locator(".notice").first.inner_text()
        assert subjects(team, before)[0].startswith("hafiza: promote billing-reviewers")
        assert "need two reviewers" in (team / "memories" / "billing-reviewers.md").read_text()
        assert head(vault.root) == mine and page.locator(".queue .action.open").count() == 0
        page.goto(f"{server.base}/memory/billing-reviewers?vault=team")
        assert "Billing deploys need two reviewers." in page.locator(".body").inner_text()
    finally:
        context.close()
        server.stop()


def test_a_memory_written_in_obsidian_reads_flat_and_its_links_open_the_memories_they_name(page, server, vault):
    """A memory as Obsidian's Properties view writes it (issue 32): flat `verified`, one-line claims, `[[id]]`
    links in `supersedes` (unquoted, as a person types them) and in the text; its page shows each as what it
    means, and each link opens the memory it names."""
    vault.remember("Deploys ran infra/old.sh by hand.", id="old-deploy", title="Old deploy")
    (vault.root / "memories" / "new-deploy.md").write_text(
        "---\nid: new-deploy\ntype: rule\ntitle: Deploy script\ncreated: 2026-12-01\ntags: [deploy]\n"
        "supersedes:\n  - [[old-deploy]]\nclaims:\n  - path infra/deploy.sh\nverified: failed\n"
        "verified_at: 2026-12-06\nverified_by: verifier\nverified_note: infra/deploy.sh is gone\n---\n"
        "Deploys run infra/deploy.sh; [[old-deploy|the old way]] is retired.\n")
    git(vault.root, "add", "-A")
    git(vault.root, "commit", "-qm", "written in Obsidian")
    page.goto(f"{server.base}/memory/new-deploy")
    assert "Last verification: failed" in page.locator("#claims").inner_text()
    assert "infra/deploy.sh is gone" in page.locator("#claims").inner_text()
    assert page.locator("#claims code").inner_text() == "path infra/deploy.sh"
    outside = page.locator("article > :not(#edit):not(#history)").all_inner_texts()
    assert not any("verified_at" in t or "{" in t for t in outside)
    page.locator("#chain a", has_text="old-deploy").click()
    page.wait_for_url("**/memory/old-deploy")
    assert page.locator("h1").inner_text() == "Old deploy"
    page.go_back()
    page.locator(".body a.wikilink").click()
    page.wait_for_url("**/memory/old-deploy")
    page.goto(f"{server.base}/?label=unverified")
    assert page.locator("table.memories a[href='/memory/new-deploy']").count() == 1
    assert page.errors == []

