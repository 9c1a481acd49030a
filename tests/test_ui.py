"""`hafiza ui` over HTTP: a real server on 127.0.0.1, spoken to as a browser would (the browser itself drives
it in tests/e2e/test_ui_browser.py). Who may talk to it, what every page escapes, and that each change is
the one commit the command line makes."""

from __future__ import annotations

import re
import subprocess

import pytest

from fence_corpus import HOSTILE
from ui_server import Client, Server, conflicted, logged_in


@pytest.fixture
def server(vault):
    started = Server(env={"HAFIZA_DAEMON": "0"})
    yield started
    started.stop()


@pytest.fixture
def client(server):
    c = Client(server)
    c.login()
    return c


def last_commit(root, fmt="%B") -> str:
    return subprocess.run(["git", "-C", str(root), "log", "-1", f"--format={fmt}"], capture_output=True, text=True,
                          check=True).stdout


# ---- who may talk to it

def test_the_first_line_is_the_address_on_127_0_0_1_with_a_one_time_token(server):
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/\?token=[\w-]{40,}", server.url)


def test_without_the_token_or_its_cookie_every_request_is_refused(server):
    c = Client(server)
    for path in ("/", "/memory/x", "/static/hafiza.css", "/review", "/health"):
        response, text = c.get(path)
        assert response.status == 401, path
        assert "hafiza ui" in text and "<" not in text  # a plain sentence, no page


def test_a_wrong_token_is_refused_and_the_right_one_works_once(server):
    c = Client(server)
    response, _ = c.get("/?token=" + "x" * 43)
    assert response.status == 403 and response.getheader("Set-Cookie") is None
    response, cookie = c.login()
    assert response.status == 303 and response.getheader("Location") == "/"
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and server.token not in cookie
    assert c.get("/")[0].status == 200
    again = Client(server)
    response, _ = again.login()  # the same token a second time: spent
    assert response.status == 403 and again.get("/")[0].status == 401
    response, _ = c.get(f"/?token={server.token}")  # the signed-in browser reloading the printed address
    assert response.status == 303 and response.getheader("Set-Cookie") is None


def test_a_wrong_cookie_is_refused(server, client):
    forged = Client(server)
    forged.cookie = "hafiza_ui=" + "A" * 43
    assert forged.get("/")[0].status == 401


@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "127.0.0.1.nip.io:{port}",
                                  "localhost:1", "", "[::1]:{port}"])
def test_a_foreign_host_is_refused_even_with_the_cookie(server, client, host):
    """DNS rebinding: a page of another site pointed at 127.0.0.1 sends its own host name."""
    foreign = Client(server, host=host.format(port=server.port))
    foreign.cookie = client.cookie
    assert foreign.get("/")[0].status == 403
    foreign.cookie = None
    assert foreign.get(f"/?token={server.token}")[0].status == 403


def test_localhost_is_a_local_host(server, client):
    local = Client(server, host=f"localhost:{server.port}")
    local.cookie = client.cookie
    assert local.get("/")[0].status == 200


def test_a_post_without_its_csrf_field_or_with_a_wrong_one_changes_nothing(server, client, vault):
    vault.remember("Deploys go through make ship.", id="ship")
    client.get("/memory/ship")
    head = last_commit(vault.root, "%H")
    text = (vault.root / "memories" / "ship.md").read_text().replace("make ship", "make deploy")
    response, _ = client.post("/memory/ship/edit", {"text": text}, csrf=False)
    assert response.status == 403
    response, _ = client.post("/memory/ship/edit", [("text", text), ("csrf", "wrong")], csrf=False)
    assert response.status == 403
    response, _ = client.request("POST", "/memory/ship/edit", [("text", text), ("csrf", client.csrf)],
                                 headers={"Origin": "http://evil.example"})
    assert response.status == 403
    assert last_commit(vault.root, "%H") == head and "make ship" in (vault.root / "memories" / "ship.md").read_text()


def test_every_answer_carries_a_policy_that_allows_only_this_origin(client):
    response, _ = client.get("/")
    csp = response.getheader("Content-Security-Policy")
    assert "default-src 'none'" in csp and "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert "unsafe-inline" not in csp and "http" not in csp
    assert response.getheader("X-Frame-Options") == "DENY" and response.getheader("Referrer-Policy") == "same-origin"


def test_pages_load_nothing_from_another_host(client, vault):
    vault.remember("Links in a memory https://example.com stay text.", id="links")
    for path in ("/", "/memory/links"):
        _, html = client.get(path)
        assert not re.search(r'(src|href)="(https?:)?//', html), path


# ---- what every page escapes

def test_hostile_memory_text_is_escaped_everywhere(client, vault):
    texts = [text for text, _ in HOSTILE if "\0" not in text] + ["<script>alert(1)</script> and </textarea><script>alert(2)</script>",
                                             "<img src=x onerror=alert(3)>", "\u202etxt.exe ok"]
    for n, text in enumerate(texts):
        vault.remember(f"hostile {n}: {text}", id=f"hostile-{n}", title=f"t{n} {text[:40]}")
    _, listing = client.get("/?status=all&sort=id")
    assert listing.count('<tr class="status-') == len(texts)
    for n in range(len(texts)):
        _, html = client.get(f"/memory/hostile-{n}")
        assert "<script>alert" not in html and "<img src=x" not in html, n
        assert html.count("<textarea") == html.count("</textarea>") == 2  # the editor and the aliases box
        assert "\u202e" not in html  # shown as a code point, in the editor as a marker
    for page in (listing,):
        assert "<script>alert" not in page and "\u202e" not in page


def test_bidi_and_control_characters_are_shown_as_code_points(client, vault):
    vault.remember("invoice\u202efdp.exe and bell\x07", id="bidi")
    _, html = client.get("/memory/bidi")
    assert 'U+202E</span>fdp.exe' in html and "U+0007" in html
    assert re.search(r"holds ([2-9]|\d\d+) hidden characters", html)
    assert "\u202e" not in html and "\x07" not in html  # not even in the editor, where it would turn the line
    box = re.search(r'<textarea id="text"[^>]*>(.*?)</textarea>', html, re.S).group(1)
    assert "invoice\u27e6U+202E\u27e7fdp.exe" in box
    import html as html_lib

    client.post("/memory/bidi/edit", {"text": html_lib.unescape(box).replace("bell", "the bell")})
    saved = (vault.root / "memories" / "bidi.md").read_text()
    assert "invoice\u202efdp.exe and the bell\x07" in saved  # the markers left in place are the characters again


# ---- the memories screen

def test_the_list_is_paged_and_filtered(client, vault):
    vault.import_many([{"text": f"Note number {n} about caching", "id": f"note-{n:03}", "tags": ["cache"] if n % 2 else []}
                       for n in range(120)], source="test")
    _, html = client.get("/?sort=id")
    assert "120 memories, page 1 of 3" in html and html.count('<tr class="status-') == 50
    _, html = client.get("/?sort=id&page=3")
    assert html.count('<tr class="status-') == 20 and "note-119" in html and "note-000" not in html
    _, html = client.get("/?tag=cache")
    assert "60 memories" in html
    _, html = client.get("/?label=never-recalled&type=knowledge")
    assert "120 memories" in html
    _, html = client.get("/?label=unverified")
    assert "0 memories" in html


def test_every_count_on_every_screen_agrees_with_its_number(client, vault):
    """The list said "1 memories" (and a search "1 match"es nowhere: "3 match"); each count a screen prints is
    `vault/format/text.plural`'s, as the commands print it."""
    import datetime as dt

    old = (dt.date.today() - dt.timedelta(days=200)).isoformat()
    (vault.memories_dir / "broken.md").write_text("---\ntitle: [unclosed\n---\nbody\n")
    vault.import_many([{"text": "Deploy with make ship\u200b, never on Fridays.", "id": "ship", "title": "Make ship",
                        "created": old}], source="test")
    pages = {path: client.get(path)[1] for path in ("/", "/?q=make+ship", "/memory/ship", "/health")}
    assert "1 memory<" in pages["/"] and "1 match<" in pages["/?q=make+ship"]
    assert "1 file left out of the list" in pages["/"] and "holds 1 hidden character (" in pages["/memory/ship"]
    health = pages["/health"]
    assert "1 memory (1 active) · 3 commits" in health and "— 1 active memory older than 90 days" in health
    assert "<summary>1 detail</summary>" in health  # the file that does not parse
    vault.remember("Ship again on Mondays.", id="ship-monday")
    assert "2 matches<" in client.get("/?q=ship")[1] and "2 memories<" in client.get("/")[1]
    for path, page in pages.items():
        assert not re.search(r"\b1 (memories|matches|files|texts|commits|details|hidden characters)\b", page), path


def test_labels_and_sorts_follow_the_files(client, vault):
    vault.remember("Old way to deploy", id="old")
    vault.remember("New way to deploy", id="new", supersedes=["old"])
    vault.record_use(["new", "new"])
    _, html = client.get("/?label=superseded&status=all")
    assert "1 memory<" in html and "/memory/old" in html
    _, html = client.get("/?sort=most-used")
    assert html.index("/memory/new") < html.index("</tbody>")
    assert re.search(r"0 · 2</td>", html)  # used twice, from the log not yet folded


def test_search_uses_the_hooks_recall_and_the_filters(client, vault):
    vault.remember("Deploys go through make ship, never on Friday.", id="ship", type="rule")
    vault.remember("The cat is called Tekir.", id="cat")
    _, html = client.get("/?q=deploy+friday")
    assert "/memory/ship" in html and "/memory/cat" not in html and "1 match" in html
    _, html = client.get("/?q=deploy+friday&type=knowledge")
    assert "0 match" in html
    _, part = client.request("GET", "/?q=tekir", headers={"HX-Request": "true", "HX-Target": "results"})
    assert "/memory/cat" in part and "<html" not in part  # htmx gets the results alone


# ---- a memory: edit, undo, aliases, history

def test_an_edit_is_one_commit_by_the_ui_and_the_index_follows(client, vault):
    vault.remember("Deploys go through make ship.", id="ship")
    client.get("/memory/ship")
    text = (vault.root / "memories" / "ship.md").read_text().replace("make ship", "make deploy-prod")
    response, _ = client.post("/memory/ship/edit", {"text": text, "reason": "renamed target"})
    assert response.status == 303 and response.getheader("Location") == "/memory/ship#history"
    message = last_commit(vault.root)
    assert message.startswith("hafiza: edit ship") and "Hafiza-Actor: ui" in message
    assert "Hafiza-Reason: renamed target" in message
    _, html = client.get("/?q=deploy-prod")
    assert "/memory/ship" in html
    _, page = client.get("/memory/ship")
    assert "edit ship" in page and "+Deploys go through make deploy-prod." in page


def test_a_refused_edit_is_kept_in_the_box_and_as_a_draft(client, vault):
    from secrets_corpus import SECRETS

    vault.remember("Deploys go through make ship.", id="ship")
    client.get("/memory/ship")
    head = last_commit(vault.root, "%H")
    secret_text = dict(SECRETS)[next(iter(dict(SECRETS)))]
    text = (vault.root / "memories" / "ship.md").read_text() + "\n" + secret_text + "\n"
    response, html = client.post("/memory/ship/edit", {"text": text})
    assert response.status == 422 and "looks like a secret" in html and "your edit is saved" in html
    assert last_commit(vault.root, "%H") == head
    drafts = list((vault.root / ".hafiza" / "drafts").glob("ship-*.md"))
    assert len(drafts) == 1
    broken = (vault.root / "memories" / "ship.md").read_text().replace("type: knowledge", "type: memo")
    response, html = client.post("/memory/ship/edit", {"text": broken})
    assert response.status == 422 and "type: memo" in html  # the typing stays in the box
    assert len(list((vault.root / ".hafiza" / "drafts").glob("ship-*.md"))) >= 1


def test_undo_from_the_history_reverts_that_commit(client, vault):
    vault.remember("Deploys go through make ship.", id="ship")
    vault.add_aliases("ship", ["gemi"])
    _, page = client.get("/memory/ship")
    sha = re.search(r'data-sha="([0-9a-f]{40})"', page).group(1)  # the newest: the alias
    response, _ = client.post("/memory/ship/undo", {"commit": sha})
    assert response.status == 303
    assert last_commit(vault.root, "%s") == "hafiza: undo alias ship\n"
    assert "Hafiza-Actor: ui" in last_commit(vault.root)
    assert "gemi" not in (vault.root / "memories" / "ship.md").read_text()


def test_aliases_forget_and_restore_from_the_page(client, vault):
    vault.remember("Deploys go through make ship.", id="ship")
    client.get("/memory/ship")
    client.post("/memory/ship/alias", {"phrases": "gemi\nsevkiyat"})
    assert last_commit(vault.root, "%s") == "hafiza: alias ship\n"
    client.post("/memory/ship/forget", {"reason": "not used"})
    assert "status: archived" in (vault.root / "memories" / "ship.md").read_text()
    client.post("/memory/ship/restore", {})
    assert "status: active" in (vault.root / "memories" / "ship.md").read_text()


def test_the_supersede_chain_shows_both_ways(client, vault):
    vault.remember("v1 of the deploy rule", id="v1")
    vault.remember("v2 of the deploy rule", id="v2", supersedes=["v1"])
    vault.remember("v3 of the deploy rule", id="v3", supersedes=["v2"])
    _, page = client.get("/memory/v2")
    chain = page.split('id="chain"')[1].split("</section>")[0]
    assert "Replaced by:" in chain and "/memory/v3" in chain and "Replaces:" in chain and "/memory/v1" in chain
    _, page = client.get("/memory/v1")
    assert "/memory/v2" in page and "/memory/v3" in page.split('id="chain"')[1].split("</section>")[0]


def test_a_missing_memory_is_a_404_page(client):
    response, html = client.get("/memory/nope")
    assert response.status == 404 and "no memory with id" in html


# ---- review: branches, related pairs, sync conflicts

def _archive(vault, memory_id: str):
    from hafiza.vault.format import model
    from hafiza.vault.review import Action

    memory = vault.get(memory_id).evolve(status="archived", archived_reason="unused")
    return Action("archive", f"archive {memory_id}", f"archive:{memory_id}",
                  {f"memories/{memory_id}.md": model.dump(memory).encode()}, "never recalled in 90 days",
                  evidence="shown 0 times", confidence=0.9, ids=(memory_id,))


def test_accept_one_action_and_reject_another_with_a_reason(client, vault):
    from hafiza.vault.review import Review

    for name in ("alpha", "beta"):
        vault.remember(f"{name} is an old note", id=name)
    rv = Review(vault, actor="curator")
    branch = rv.start("curate")
    rv.propose(branch, _archive(vault, "alpha"))
    rv.propose(branch, _archive(vault, "beta"))
    _, page = client.get("/review")
    assert page.count('class="action open"') == 2 and "never recalled in 90 days" in page and "0.90" in page
    assert "+status: archived" not in page and "status: archived" in page  # the proposed side of the diff
    head = last_commit(vault.root, "%H").strip()
    client.post("/review/decide", {"branch": branch, "only": "1", "decision": "accept"})
    client.post("/review/decide", {"branch": branch, "only": "2", "decision": "reject", "why": "still needed"})
    log = subprocess.run(["git", "-C", str(vault.root), "log", "--format=%s", f"{head}..HEAD"], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert log == [f"hafiza: reject 1 proposal of {branch}", "hafiza: archive alpha"]
    rulings = (vault.root / "rulings.jsonl").read_text()
    assert '"key": "archive:beta"' in rulings and '"why": "still needed"' in rulings and '"by": "ui"' in rulings
    assert "status: archived" in (vault.root / "memories" / "alpha.md").read_text()
    assert "status: active" in (vault.root / "memories" / "beta.md").read_text()
    _, page = client.get("/review")
    assert "accepted as" in page and "never proposed again" in page and 'class="action open"' not in page


def test_a_related_pair_judged_fine_is_never_listed_again(client, vault):
    from conftest import run_cli

    vault.remember("Staging database runs on port 5433 behind pgbouncer pooling", id="staging-db")
    vault.remember("Staging database port 5433 with pgbouncer pooling enabled", id="staging-pool")
    run_cli("curate", "--pass", "conflicts")
    _, page = client.get("/review")
    pair = page.split('id="related"')[1].split("</section>")[0]
    assert "/memory/staging-db" in pair and "/memory/staging-pool" in pair
    key = re.search(r'name="key" value="([^"]+)"', pair).group(1)
    older = re.search(r'name="older" value="([^"]+)"', pair).group(1)
    newer = re.search(r'name="newer" value="([^"]+)"', pair).group(1)
    client.post("/review/related", {"key": key, "older": older, "newer": newer, "verdict": "fine", "why": "different"})
    assert last_commit(vault.root, "%s").startswith(f"hafiza: judge {key} fine")
    _, page = client.get("/review")
    assert "/memory/staging-db" not in page.split('id="related"')[1].split("</section>")[0]
    report = run_cli("curate", "--pass", "conflicts", "--json").stdout
    assert "staging-db" not in report  # the curator does not list it again either


NOTE = ("line one\nline two\nline three", "line one\nfrom here\nline three", "line one\nfrom there\nline three")


def test_a_sync_conflict_is_resolved_from_the_page(tmp_path, vault):
    conflicted(tmp_path, vault, "note", NOTE, title="Note")
    with logged_in() as c:
        _, page = c.get("/review")
        part = page.split('id="conflicts"')[1]
        assert "/memory/note" in part and "from here" in part and "from there" in part
        assert part.index("from here") < part.index("from there")  # ours is this machine's, though b merged
        c.post("/review/resolve", {"id": "note", "keep": "both"})
        assert last_commit(vault.root, "%s") == "hafiza: resolve note (keep both)\n"
        assert "Hafiza-Actor: ui" in last_commit(vault.root)
        _, page = c.get("/review")
        assert "/memory/note" not in page.split('id="conflicts"')[1]


# ---- what the agent sees

def test_what_the_agent_sees_is_the_hooks_own_output(client, vault, tmp_path):
    import json
    import html as html_lib
    import os
    import sys

    vault.remember("Deploys go through make ship, never on a Friday.", id="ship", type="rule")
    vault.remember("The staging database listens on port 5433.", id="staging")
    vault.import_many([{"text": f"Filler note {n} about {word}", "id": f"filler-{n}"}
                       for n, word in enumerate(["cats", "tea", "chess", "rain", "maps", "jazz"] * 4)], source="test")
    prompt = "can I run make ship on a friday?"
    _, page = client.get("/agent?" + __import__("urllib.parse").parse.urlencode({"prompt": prompt, "client": "claude-code"}))
    found = re.search(r'<pre id="hook-output">(.*?)</pre>', page, re.S)
    assert found, page[page.find('<div id="seen">'):][:3000]
    shown = html_lib.unescape(found.group(1))
    payload = json.dumps({"session_id": "s-1", "prompt": prompt, "cwd": str(tmp_path),
                          "hook_event_name": "UserPromptSubmit"})
    hook = subprocess.run([sys.executable, "-m", "hafiza.cli.main", "hook", "claude-code", "UserPromptSubmit"],
                          input=payload, capture_output=True, text=True, env={**os.environ, "HAFIZA_DAEMON": "0"},
                          check=True).stdout
    assert shown == hook and "ship" in hook
    why = page.split("<h2>Why</h2>")[1]
    assert "injected" in why and "/memory/ship" in why
    # Nothing of the preview was recorded: the one impression is the hook's own
    assert (vault.root / ".hafiza" / "usage.log").read_text().count("\tshown\tship") == 1
    _, page = client.get("/agent?prompt=ok")
    assert "Silent" in page and "too short" in page


# ---- health

def test_health_shows_doctors_checks_growth_usage_and_the_quiet_ones(client, vault):
    import datetime as dt

    old = (dt.date.today() - dt.timedelta(days=200)).isoformat()
    vault.import_many([{"text": "An old note nobody asks about", "id": "old-quiet", "created": old},
                       {"text": "An old note that is used", "id": "old-used", "created": old}], source="test")
    vault.remember("A new note", id="fresh")
    from hafiza.vault.store import usage

    usage.append(vault.sidecar, "shown", ["old-used", "fresh"])
    usage.append(vault.sidecar, "used", ["old-used"])
    vault.fold()
    usage.append(vault.sidecar, "shown", ["fresh"])
    response, page = client.get("/health")
    assert response.status == 200
    checks = page.split('id="checks"')[1].split("</section>")[0]
    assert "index" in checks and "files" in checks and "review" in checks and "sync" in checks
    assert "3 shown, 1 used" in page
    quiet = page.split('id="quiet"')[1]
    assert "/memory/old-quiet" in quiet and "/memory/old-used" not in quiet and "/memory/fresh" not in quiet
    assert "<svg" in page and "<script" not in page.split("</head>")[1]


# ---- team vaults

def test_team_vaults_are_listed_searched_and_edited_in_their_own_vault(vault, tmp_path):
    from conftest import run_cli

    run_cli("remember", "Billing deploys need two reviewers.", "--id", "mine")
    remote = tmp_path / "team.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    run_cli("vault", "add", "team", str(remote))
    run_cli("remember", "--to", "team", "Billing deploys happen on Tuesdays.", "--id", "theirs")
    with logged_in() as c:
        _, html = c.get("/")
        assert "/memory/mine" in html and "/memory/theirs?vault=team" in html and "vault: team" in html
        _, html = c.get("/?vault=team")
        assert "/memory/theirs" in html and "/memory/mine" not in html
        _, html = c.get("/?q=billing+deploys")
        assert "/memory/mine" in html and "/memory/theirs?vault=team" in html
        _, page = c.get("/memory/theirs?vault=team")
        team_root = next(p for p in (tmp_path / "home").rglob("theirs.md")).parents[1]
        text = (team_root / "memories" / "theirs.md").read_text().replace("Tuesdays", "Wednesdays")
        response, _ = c.post("/memory/theirs/edit?vault=team", {"text": text})
        assert response.status == 303
        assert "Wednesdays" in (team_root / "memories" / "theirs.md").read_text()
        assert "Hafiza-Actor: ui" in last_commit(team_root)
        assert "edit" not in last_commit(vault.root, "%s")  # the personal vault is untouched


def test_the_list_follows_every_write_after_it_was_read(client, vault):
    """The rows are kept between pages and read again only where writes changed them: each change shows."""
    from conftest import run_cli

    vault.import_many([{"text": f"Kept note {n}", "id": f"kept-{n}"} for n in range(30)], source="test")
    _, html = client.get("/?sort=id")
    assert "30 memories" in html
    run_cli("remember", "A note from the command line", "--id", "from-cli")
    client.get("/memory/kept-3")
    text = (vault.root / "memories" / "kept-3.md").read_text().replace("title: Kept note 3", "title: Renamed three")
    client.post("/memory/kept-3/edit", {"text": text})
    run_cli("used", "kept-5")
    run_cli("used", "kept-5")
    run_cli("forget", "kept-7")
    _, html = client.get("/?sort=id")
    assert "30 memories" in html and "/memory/from-cli" in html and "Renamed three" in html
    assert "/memory/kept-7" not in html
    _, html = client.get("/?sort=most-used")
    first = html.split("<tbody>")[1].split("</tr>")[0]
    assert "/memory/kept-5" in first and "0 · 2" in first
    (vault.root / "memories" / "by-hand.md").write_text(
        "---\nid: by-hand\ntype: knowledge\ntitle: Written by hand\nscope: global\ncreated: 2026-12-01\n---\nBy hand.\n")
    run_cli("remember", "Another from the command line", "--id", "after-hand")  # records the hand edit first
    _, html = client.get("/?sort=id")
    assert "/memory/by-hand" in html and "/memory/after-hand" in html and "32 memories" in html


def test_ticked_actions_are_accepted_together_one_commit_each(client, vault):
    from hafiza.vault.review import Review

    for name in ("one", "two", "three"):
        vault.remember(f"{name} is an old note", id=name)
    rv = Review(vault, actor="curator")
    branch = rv.start("curate")
    for name in ("one", "two", "three"):
        rv.propose(branch, _archive(vault, name))
    client.get("/review")
    head = last_commit(vault.root, "%H").strip()
    client.post("/review/decide", [("branch", branch), ("only", "1"), ("only", "3"), ("decision", "accept")])
    log = subprocess.run(["git", "-C", str(vault.root), "log", "--format=%s", f"{head}..HEAD"], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert log == ["hafiza: archive three", "hafiza: archive one"]
    _, page = client.get("/review")
    assert page.count('class="action open"') == 1 and "#2 archive" in page


def test_a_related_pair_judged_duplicate_retires_the_older(client, vault):
    import json

    vault.remember("Staging runs on port 5433", id="older-one")
    vault.remember("Staging listens on port 5433", id="newer-one")
    (vault.root / ".hafiza" / "related.json").write_text(json.dumps({"pairs": [
        {"kind": "related", "memories": ["older-one", "newer-one"], "reason": "possible duplicate",
         "evidence": "shared: staging, 5433", "confidence": 0.5, "key": "related:newer-one+older-one"}]}))
    _, page = client.get("/review")
    assert "possible duplicate" in page
    client.post("/review/related", {"key": "related:newer-one+older-one", "older": "older-one",
                                    "newer": "newer-one", "verdict": "duplicate"})
    assert last_commit(vault.root, "%s") == "hafiza: supersede older-one with newer-one\n"
    assert vault.get("older-one").status == "superseded"
    rulings = (vault.root / "rulings.jsonl").read_text()
    assert '"verdict": "duplicate"' in rulings and '"by": "ui"' in rulings
    _, page = client.get("/review")
    assert "possible duplicate" not in page


def test_a_memorys_claims_read_as_its_file_holds_them(client, vault):
    """A claim is the one line the file holds (`path infra/deploy.sh`), not the mapping the verifier reads
    it into (issue 32)."""
    from hafiza.vault.format import model

    memory = model.Memory(id="claimed", title="Deploys", body="Deploys run `infra/deploy.sh`.",
                          claims=[{"probe": "path", "args": {"path": "infra/deploy.sh"}}])
    (vault.memories_dir / "claimed.md").write_text(model.dump(memory))
    response, body = client.get("/memory/claimed")
    assert response.status == 200
    assert "<code>path infra/deploy.sh</code>" in body and "probe" not in body


def test_a_memory_in_conflict_shows_both_texts_labelled_not_the_fence(tmp_path, vault):
    """While a sync conflict is open, the memory's page shows its two texts apart, each labelled, as recall
    does (issue 30, item 6), and points at where it is settled; never the fence's comment and JSON."""
    conflicted(tmp_path, vault, "note", NOTE, title="Note")
    with logged_in() as c:
        _, page = c.get("/memory/note")
        text = page.split('class="text"')[1].split("</section>")[0]
        assert "hafiza-conflict" not in text and "merged_on" not in text
        assert text.count('class="body"') == 2 and "in conflict" in text
        assert text.index("from here") < text.index("from there")  # this machine's text first
        assert 'href="/review#conflict-note"' in text


def test_a_conflict_whose_other_text_holds_a_secret_is_a_notice_on_the_review_page(tmp_path, vault):
    """A sync that brought a secret into a conflicted memory quarantines it (issue 29, item 4): the review page
    names it, without either text, and still shows everything else."""
    secret = "line one\ntoken ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8\nline three"
    conflicted(tmp_path, vault, "note", (NOTE[0], NOTE[1], secret), title="Note", by_hand=True)
    with logged_in() as c:
        response, page = c.get("/review")
        assert response.status == 200, page[:500]
        part = page.split('id="conflicts"')[1]
        assert "note" in part and "quarantined" in part.lower() and "ghp_" not in page and "from here" not in part
        response, page = c.get("/memory/note")
        assert response.status == 409 and "ghp_" not in page


def test_the_memories_screen_names_a_file_left_out_of_recall_without_its_text(client, vault):
    """A memory quarantined for a secret (a sync brought it, or a hand edit) or a file that does not parse is
    not in the list: the screen names it, with why and a link to its notice, never with its text."""
    from conftest import git

    vault.remember("The deploy key lives in the vault server.", id="deploy-key")
    path = vault.memories_dir / "deploy-key.md"
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    path.write_text(path.read_text().replace("lives in the vault server", f"is {token}"))
    git(vault.root, "commit", "-qam", "a teammate's hand edit")
    (vault.memories_dir / "broken.md").write_text("---\ntitle: [unclosed\n---\nbody\n")
    _, page = client.get("/")
    left = page.split('left-out')[1].split("</div>")[0]
    assert 'href="/memory/deploy-key"' in left and "quarantined" in left and "memories/broken.md" in left
    assert token not in page and "is ghp" not in page


def test_a_link_in_a_memorys_text_opens_the_memory_it_names(client, vault):
    """`[[id]]` in a memory's text, as Obsidian writes one (issue 32), is a link to that memory's page; a link
    to nothing in the vault stays text, and a hostile one stays escaped."""
    vault.remember("Deploys ran infra/old.sh.", id="old-deploy")
    vault.remember('Deploys run infra/deploy.sh; see [[old-deploy]], [[old-deploy|the old way]], [[nowhere]] '
                   'and [[x"><script>alert(1)</script>]].', id="new-deploy")
    _, page = client.get("/memory/new-deploy")
    body = page.split('<div class="body">')[1].split("</div>")[0]
    assert body.count('<a href="/memory/old-deploy" class="wikilink">') == 2
    assert "[[nowhere]]" in body and "/memory/nowhere" not in body
    assert "<script>" not in body and "&lt;script&gt;" in body


def test_a_memory_another_says_it_replaces_shows_that_one_though_its_own_file_does_not(client, vault):
    """`supersedes: [[old]]` written by hand in the newer memory (in Obsidian's Properties view), the older
    file untouched: the older one's page still shows what says it replaces it, so the chain reads both ways."""
    from conftest import git

    vault.remember("Deploys ran infra/old.sh.", id="old-deploy")
    vault.remember("Deploys run infra/deploy.sh.", id="new-deploy")
    path = vault.memories_dir / "new-deploy.md"
    path.write_text(path.read_text().replace("status: active", "supersedes:\n  - '[[old-deploy]]'\nstatus: active"))
    git(vault.root, "commit", "-qam", "written in Obsidian")
    _, page = client.get("/memory/old-deploy")
    chain = page.split('id="chain"')[1].split("</section>")[0]
    assert 'href="/memory/new-deploy"' in chain and "says it replaces this one" in chain
