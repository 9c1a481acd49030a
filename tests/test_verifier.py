"""The verifier: every probe against a real project repository with history, labels in recall, one commit a run."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from conftest import git, git_subjects, project_repo, run_cli
from model_server import ModelServer

from hafiza.vault.offline.provider import OpenAIProvider
from hafiza.verifier.extract import extract, from_model
from hafiza.verifier.probes import Context, check
from hafiza.verifier.run import verify


@pytest.fixture
def app(tmp_path):
    """A project whose history renames deploy.sh, deletes notes.md, drops a branch and a script."""
    root = tmp_path / "app"
    files = {
        "infra/deploy.sh": "#!/bin/sh\necho deploy\n",
        "notes.md": "notes\n",
        "src/api.py": "RATE_LIMIT = 10\n\nclass Orders:\n    pass\n\ndef create_order():\n    return 1\n",
        "web/cart.ts": "export function addItem(id: string) {}\nexport const MAX_ITEMS = 5\n",
        "svc/main.go": "package main\n\nfunc (s *Server) Handle() {}\ntype Config struct{}\n",
        "package.json": json.dumps({"scripts": {"test:e2e": "playwright test", "dev": "vite"},
                                    "dependencies": {"react": "^18"}, "devDependencies": {"vite": "^5"}}),
        "pyproject.toml": '[project]\nname = "app"\ndependencies = ["httpx>=0.27", "Django_Rest_Framework"]\n'
                          '[project.scripts]\napp-cli = "app:main"\n',
        "Makefile": "deploy: build\n\t./infra/deploy.sh\nbuild:\n\techo\n",
        "justfile": "lint:\n    ruff check\n",
        "go.mod": "module example.com/app\n\ngo 1.22\n\nrequire github.com/go-chi/chi/v5 v5.0.12\n",
    }
    project_repo(root, files)
    git(root, "branch", "release/2.x")
    git(root, "branch", "feature/gone")
    (root / "ops").mkdir()
    git(root, "mv", "infra/deploy.sh", "ops/deploy.sh")
    git(root, "rm", "-q", "notes.md")
    git(root, "commit", "-q", "-m", "move deploy, drop notes")
    git(root, "branch", "-D", "feature/gone")
    return root


def _first(root) -> str:
    return subprocess.run(["git", "-C", str(root), "rev-list", "--max-parents=0", "HEAD"], capture_output=True,
                          text=True).stdout.strip()


@pytest.mark.parametrize("probe, args, status, detail", [
    ("path", {"path": "ops/deploy.sh"}, "ok", "exists"),
    ("path", {"path": "infra/deploy.sh"}, "failed", "renamed to ops/deploy.sh"),
    ("path", {"path": "notes.md"}, "failed", "notes.md is gone"),
    ("contains", {"path": "Makefile", "text": "deploy:"}, "ok", "contains"),
    ("contains", {"path": "Makefile", "text": "release:"}, "failed", "no longer contains"),
    ("symbol", {"path": "src/api.py", "name": "create_order"}, "ok", "defined"),
    ("symbol", {"path": "src/api.py", "name": "RATE_LIMIT"}, "ok", "defined"),
    ("symbol", {"path": "src/api.py", "name": "cancel_order"}, "failed", "no longer defined"),
    ("symbol", {"path": "web/cart.ts", "name": "addItem"}, "ok", "defined"),
    ("symbol", {"path": "web/cart.ts", "name": "removeItem"}, "failed", "no longer"),
    ("symbol", {"path": "svc/main.go", "name": "Handle"}, "ok", "defined"),
    ("symbol", {"path": "svc/main.go", "name": "Config"}, "ok", "defined"),
    ("script", {"name": "test:e2e"}, "ok", "package.json"),
    ("script", {"name": "deploy"}, "ok", "Makefile"),
    ("script", {"name": "lint"}, "ok", "justfile"),
    ("script", {"name": "app-cli"}, "ok", "pyproject.toml"),
    ("script", {"name": "e2e"}, "failed", "not a script"),
    ("dependency", {"name": "react"}, "ok", "package.json"),
    ("dependency", {"name": "django-rest-framework"}, "ok", "pyproject.toml"),
    ("dependency", {"name": "github.com/go-chi/chi/v5"}, "ok", "go.mod"),
    ("dependency", {"name": "requests"}, "failed", "not declared"),
    ("branch", {"name": "release/2.x"}, "ok", "exists"),
    ("branch", {"name": "feature/gone"}, "failed", "no branch"),
    ("commit", {"sha": "FIRST"}, "ok", "history"),
    ("commit", {"sha": "0123456789abcdef"}, "failed", "no commit"),
    ("url", {"url": "https://example.com/"}, "unknown", "network probes are off"),
    ("pr", {"url": "https://github.com/o/r/pull/1"}, "unknown", "network probes are off"),
])
def test_probes_against_a_real_project(app, probe, args, status, detail):
    if args.get("sha") == "FIRST":
        args = {"sha": _first(app)[:10]}
    outcome = check({"probe": probe, "args": args}, Context(project=app))
    assert (outcome.status, detail in outcome.detail) == (status, True), outcome


def test_without_the_project_on_this_machine_everything_is_unknown():
    for claim in ({"probe": "path", "args": {"path": "a.py"}}, {"probe": "branch", "args": {"name": "main"}}):
        assert check(claim, Context(project=None)).status == "unknown"


class _Server(BaseHTTPRequestHandler):
    def do_HEAD(self):
        self.server.paths.append(self.path)
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def http_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Server)
    server.paths = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()


def test_url_probes_prove_life_only(http_server):
    base = f"http://127.0.0.1:{http_server.server_port}"
    ctx = Context(network=True, allow_private=True, timeout=2)
    assert check({"probe": "url", "args": {"url": base + "/health"}}, ctx).status == "ok"
    assert check({"probe": "url", "args": {"url": base + "/missing"}}, ctx).status == "unknown"  # never failed
    refused = check({"probe": "url", "args": {"url": base + "/health"}}, Context(network=True))
    assert refused.status == "invalid" and http_server.paths == ["/health", "/missing"]


def _claims_memory(vault, memory_id: str, claims: list, body: str = "Deploys run `infra/deploy.sh`.") -> None:
    from hafiza.vault.format import model

    memory = model.Memory(id=memory_id, title=body, body=body, scope="project:app", claims=claims)
    (vault.memories_dir / f"{memory_id}.md").write_text(model.dump(memory))


def test_a_run_labels_commits_once_and_undo_reverts_it(vault, app):
    _claims_memory(vault, "deploy", [{"probe": "path", "args": {"path": "infra/deploy.sh"}},
                                     {"probe": "branch", "args": {"name": "release/2.x"}}])
    report = verify(vault, projects={"app": app})
    assert report.commit and git_subjects(vault.root)[0] == "hafiza: verify 1 memory (1 failed)"
    memory = vault.get("deploy")
    assert memory.verified["status"] == "failed" and "renamed to ops/deploy.sh" in memory.verified["detail"]
    assert [r.outcome.status for r in report.results] == ["failed", "ok"]
    assert memory.status == "active"  # labelled, never archived
    again = verify(vault, projects={"app": app})
    assert again.commit is None and not any(r.probed for r in again.results)  # incremental: nothing re-probed
    run_cli("undo")
    assert vault.get("deploy").verified is None


def test_a_claim_that_passes_again_clears_the_label(vault, app):
    _claims_memory(vault, "deploy", [{"probe": "path", "args": {"path": "infra/deploy.sh"}}])
    verify(vault, projects={"app": app})
    (app / "infra").mkdir(exist_ok=True)
    (app / "infra" / "deploy.sh").write_text("back\n")
    git(app, "add", "-A")
    git(app, "commit", "-q", "-m", "restore deploy.sh")  # history touched the path: probed again
    verify(vault, projects={"app": app})
    assert vault.get("deploy").verified["status"] == "ok"


def test_an_unchanged_project_is_not_probed_again_until_the_interval_passes(vault, app):
    _claims_memory(vault, "deploy", [{"probe": "path", "args": {"path": "ops/deploy.sh"}}])
    verify(vault, projects={"app": app})
    later = dt.datetime.now() + dt.timedelta(days=2)
    assert [r.probed for r in verify(vault, projects={"app": app}).results] == [False]
    assert [r.probed for r in verify(vault, projects={"app": app}, now=later).results] == [True]
    assert [r.probed for r in verify(vault, projects={"app": app}, force=True).results] == [True]


def test_the_label_reaches_the_recalled_block(vault, app):
    from test_hooks import CLAUDE_PROMPT, context_of, hook

    vault.import_many([{"text": f"An unrelated note about {t}.", "id": f"n{i}", "scope": "project:app"}
                       for i, t in enumerate(["coffee", "lunch", "fonts", "wifi", "plants", "parking", "desks",
                                              "printers", "badges", "lockers"])], "test")
    _claims_memory(vault, "deploy", [{"probe": "path", "args": {"path": "infra/deploy.sh"}}],
                   body="Deploys run the infra deploy script infra/deploy.sh")
    verify(vault, projects={"app": app})
    run_cli("reindex")
    block = context_of(hook("claude-code", "UserPromptSubmit",
                            {**CLAUDE_PROMPT, "cwd": str(app), "prompt": "how do deploys run the deploy script?"}))
    today = dt.date.today().isoformat()
    assert f"unverified since {today}: infra/deploy.sh is gone (renamed to ops/deploy.sh" in block


def test_claims_changed_while_probing_are_not_overwritten(vault, app, monkeypatch):
    from hafiza.verifier import run as run_module

    _claims_memory(vault, "deploy", [{"probe": "path", "args": {"path": "infra/deploy.sh"}}])
    real = run_module.check

    def meanwhile(claim, ctx):  # a person edits the claims while the probe runs (a real edit, a real probe)
        _claims_memory(vault, "deploy", [{"probe": "path", "args": {"path": "ops/deploy.sh"}}])
        return real(claim, ctx)

    monkeypatch.setattr(run_module, "check", meanwhile)
    report = verify(vault, projects={"app": app})
    assert report.commit is None
    assert vault.get("deploy").claims == [{"probe": "path", "args": {"path": "ops/deploy.sh"}}]


def test_extraction_keeps_what_exists_and_what_the_project_defines(app):
    text = ("Run `pnpm test:e2e` before merging; deploy with `make deploy` from release/2.x. Config in "
            "src/api.py and `docs/missing.md`; see https://status.example.com/ and use Next.js and/or npm run nope")
    claims = extract(text, app)
    assert claims == [{"probe": "path", "args": {"path": "src/api.py"}},
                      {"probe": "script", "args": {"name": "test:e2e"}},
                      {"probe": "script", "args": {"name": "deploy"}},
                      {"probe": "branch", "args": {"name": "release/2.x"}},
                      {"probe": "url", "args": {"url": "https://status.example.com/"}}]


def test_a_model_cannot_invent_an_argument(app):
    text = "The checkout API lives in `src/api.py`; its entry point is create_order."
    answer = {"claims": [{"probe": "symbol", "args": {"path": "src/api.py", "name": "create_order"}},
                         {"probe": "path", "args": {"path": "src/payments.py"}},          # not in the text
                         {"probe": "path", "args": {"path": "../../etc/passwd"}}]}
    with ModelServer([answer]) as server:
        kept, dropped = from_model(OpenAIProvider(server.url + "/v1", "m", backoff=0), text, app)
    assert kept == [answer["claims"][0]] and len(dropped) == 2


def test_verify_extract_proposes_claims_on_a_review_branch(vault, app):
    vault.remember("Deploy with `make deploy` from release/2.x", id="deploy", scope="project:app")
    out = run_cli("verify", "--extract", "--project", f"app={app}").stdout
    assert "proposed claims for 1 memory on verify/" in out
    run_cli("review", "accept")
    assert vault.get("deploy").claims == [{"probe": "script", "args": {"name": "deploy"}},
                                          {"probe": "branch", "args": {"name": "release/2.x"}}]
    report = json.loads(run_cli("verify", "--json", "--project", f"app={app}").stdout)
    assert report["counts"] == {"ok": 2}


def test_an_agent_states_claims_through_mcp_and_bad_ones_are_refused(vault, app):
    import anyio
    from test_mcp import error, inproc, ok

    async def main():
        async with inproc(vault.root, project="app") as client:
            saved = await ok(client, "remember", text="Deploys run `infra/deploy.sh`.", scope="project",
                             claims=[{"probe": "path", "args": {"path": "infra/deploy.sh"}}])
            refused = await error(client, "remember", text="x y z", claims=[{"probe": "shell", "args": {"c": "ls"}}])
            return saved["id"], refused

    memory_id, refused = anyio.run(main)
    assert vault.get(memory_id).claims == [{"probe": "path", "args": {"path": "infra/deploy.sh"}}]
    assert "claims" in refused
    verify(vault, projects={"app": app})
    assert vault.get(memory_id).verified["status"] == "failed"


def test_imported_claims_are_kept_and_checked_for_shape(vault):
    from hafiza.vault.errors import HafizaError

    vault.import_many([{"text": "Lint runs with `just lint`", "id": "lint",
                        "claims": [{"probe": "script", "args": {"name": "lint"}}]}], "test")
    assert vault.get("lint").claims == [{"probe": "script", "args": {"name": "lint"}}]
    with pytest.raises(HafizaError, match="claims"):
        vault.import_many([{"text": "bad", "claims": [{"probe": "path", "args": {"path": ["a", "b"]}}]}], "test")


def test_doctor_lists_memories_labelled_unverified(vault, app):
    _claims_memory(vault, "deploy", [{"probe": "path", "args": {"path": "infra/deploy.sh"}}])
    verify(vault, projects={"app": app})
    checks = {c["name"]: c for c in json.loads(run_cli("doctor", "--json", check=False).stdout)}
    assert checks["labels"]["level"] == "warn" and "renamed to ops/deploy.sh" in checks["labels"]["details"][0]
