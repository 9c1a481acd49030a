#!/usr/bin/env python3
"""Build `app`, the fixture project of the verifier set, as a real git repository with a history.

    python3 bench/verify/project.py DEST   # creates DEST/app and DEST/app.shas.json; DEST/app must not exist

The history is deterministic: fixed author, committer and dates, no user or system git config, so every
build has the same commit ids. `build()` also writes `DEST/app.shas.json`, mapping each commit's key (a
short name for its message, see COMMITS) to its full sha; the labels name commits as `@<key>` and the
bench substitutes the first 10 characters of that sha.

What the history does, so that every claim of memories.jsonl has an answer in the repository:
- files added, moved with `git mv` (one of them twice), deleted with `git rm`, one deleted and restored;
- package.json's scripts change (`test:e2e` becomes `e2e`) and its dependencies (axios -> ky, moment ->
  date-fns); pyproject.toml's dependencies (requests -> httpx) and [project.scripts] (app-worker ->
  app-jobs); requirements-dev.txt (nose -> pytest-cov); the Makefile's targets (docker-build goes, seed
  comes); the justfile's recipes (db-reset -> db-fresh); go.mod (gorilla/mux -> chi) and Cargo.toml
  (structopt -> clap). Every manifest lives at the project root: the probes look there and nowhere else;
- definitions are removed or renamed in Python, TypeScript, Go and Rust files, and some removed names stay
  behind in a comment (a probe that greps instead of parsing says "defined" where it is not);
- branches: `release/2.x` (with a commit of its own that main does not have), `feature/search`; deleted:
  `release/1.x` and `feature/old-checkout` (whose only commit is left dangling, unreachable from HEAD);
  a lightweight tag `v1.0` (a tag, not a branch).
The work tree ends on `main` at the last commit, clean. Stdlib only.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import fixture  # noqa: E402  (bench/fixture.py)

AUTHOR = ("Elif Kaya", "elif@kuzeykahve.example")


def _json(data: dict) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


PACKAGE = {
    "name": "kuzey-app",
    "private": True,
    "packageManager": "pnpm@9.12.0",
    "scripts": {
        "dev": "next dev web",
        "build": "next build web",
        "lint": "eslint web",
        "typecheck": "tsc --noEmit",
        "test": "vitest run",
        "test:e2e": "playwright test",
    },
    "dependencies": {
        "axios": "^1.7.2",
        "moment": "^2.30.1",
        "next": "14.2.5",
        "react": "18.3.1",
        "react-dom": "18.3.1",
        "zod": "^3.23.8",
    },
    "devDependencies": {
        "@playwright/test": "^1.45.0",
        "eslint": "^8.57.0",
        "typescript": "^5.5.3",
        "vitest": "^2.0.0",
    },
}


def _package_v2() -> dict:
    data = json.loads(json.dumps(PACKAGE))
    scripts = data["scripts"]
    scripts["e2e"] = scripts.pop("test:e2e")
    deps = data["dependencies"]
    del deps["axios"], deps["moment"]
    deps["date-fns"] = "^3.6.0"
    deps["ky"] = "^1.7.2"
    data["dependencies"] = dict(sorted(deps.items()))
    return data


PYPROJECT = """\
[project]
name = "kuzey-app"
version = "1.4.0"
requires-python = ">=3.11"
dependencies = [
    "fastapi>=0.110",
    "requests>=2.31",
    "pydantic>=2.7",
    "SQLAlchemy[asyncio]>=2.0",
]

[project.optional-dependencies]
dev = ["pytest>=8.2", "ruff>=0.5"]

[project.scripts]
app-admin = "app.cli:main"
app-worker = "app.jobs:run"

[tool.ruff]
line-length = 110
"""

PYPROJECT_HTTPX = PYPROJECT.replace(
    '    "requests>=2.31",\n',
    '    # requests was replaced by httpx in March 2026 (async client, HTTP/2)\n    "httpx>=0.27",\n')

REQUIREMENTS_DEV = "# dev tools that are not in pyproject's extras\n-e .\nnose==1.3.7\nfreezegun==1.5.1\n"

MAKEFILE = """\
.PHONY: test lint deploy docker-build migrate

ENV ?= staging

test:
\tpytest -q

lint:
\truff check src tests
\tpnpm lint

deploy:
\t./infra/deploy.sh $(ENV)

docker-build:
\tdocker build -t kuzey/app .

migrate:
\tpsql "$$DATABASE_URL" -f migrations/0001_init.sql
"""

MAKEFILE_V2 = """\
.PHONY: test lint deploy migrate seed

ENV ?= staging

test:
\tpytest -q

lint:
\truff check src tests
\tpnpm lint

deploy:
\t./infra/deploy.sh $(ENV)

# docker-build moved to CI (.github/workflows/ci.yml)

migrate:
\tfor f in migrations/*.sql; do psql "$$DATABASE_URL" -f "$$f"; done

seed:
\tpython scripts/db/seed.py --small
"""

JUSTFILE = """\
# local chores; `just --list` shows them
default:
    @just --list

bootstrap:
    pnpm install
    pip install -e '.[dev]'

fmt:
    ruff format src tests

db-reset:
    dropdb --if-exists app && createdb app

release version:
    git tag -a v{{version}} -m "release {{version}}"
"""

GO_MOD = """\
module github.com/kuzeykahve/app

go 1.22

require (
\tgithub.com/gorilla/mux v1.8.1
\tgithub.com/prometheus/client_golang v1.19.1
)
"""

CARGO = """\
[package]
name = "thumbs"
version = "0.2.0"
edition = "2021"

[lib]
path = "rust/thumbs.rs"

[dependencies]
image = "0.25"
serde = { version = "1", features = ["derive"] }
structopt = "0.3"
"""

HEALTHD = """\
// Command healthd answers the load balancer's health checks.
package main

import (
\t"fmt"
\t"net/http"

\t"github.com/gorilla/mux"
)

const DefaultPort = 8081

type Server struct {
\tRouter *mux.Router
}

func healthHandler(w http.ResponseWriter, r *http.Request) {
\tfmt.Fprintln(w, "ok")
}

func legacyPing(w http.ResponseWriter, r *http.Request) {
\tfmt.Fprintln(w, "pong")
}

func main() {
\ts := Server{Router: mux.NewRouter()}
\ts.Router.HandleFunc("/health", healthHandler)
\ts.Router.HandleFunc("/ping", legacyPing)
\thttp.ListenAndServe(fmt.Sprintf(":%d", DefaultPort), s.Router)
}
"""

HEALTHD_CHI = """\
// Command healthd answers the load balancer's health checks.
package main

import (
\t"fmt"
\t"net/http"

\t"github.com/go-chi/chi/v5"
)

const DefaultPort = 8081

type Server struct {
\tRouter chi.Router
}

func healthHandler(w http.ResponseWriter, r *http.Request) {
\tfmt.Fprintln(w, "ok")
}

// legacyPing and /ping are gone: the load balancer only asks /health.

func main() {
\ts := Server{Router: chi.NewRouter()}
\ts.Router.Get("/health", healthHandler)
\thttp.ListenAndServe(fmt.Sprintf(":%d", DefaultPort), s.Router)
}
"""

QUEUE = """\
// Package queue is the in-process job queue of healthd.
package queue

const MaxRetries = 5

type Queue struct {
\titems []string
}

func NewQueue() *Queue {
\treturn &Queue{}
}

func (q *Queue) Push(item string) {
\tq.items = append(q.items, item)
}

func Drain(q *Queue) []string {
\titems := q.items
\tq.items = nil
\treturn items
}
"""

QUEUE_V2 = QUEUE[:QUEUE.index("func Drain")] + "// Drain was removed: workers pop one job at a time now.\n"

THUMBS = """\
//! rust/thumbs.rs: product image thumbnails for the storefront.
pub const MAX_EDGE: u32 = 1200;

pub struct Thumbnail {
    pub width: u32,
    pub height: u32,
}

// crop() lives in the CDN now; we only resize.
pub fn resize(_img: &[u8], edge: u32) -> Thumbnail {
    Thumbnail { width: edge.min(MAX_EDGE), height: edge.min(MAX_EDGE) }
}
"""

CART_TS = """\
// web/src/lib/cart.ts: the storefront cart, kept in localStorage
export interface CartItem {
  sku: string;
  qty: number;
}

export type CartId = string;

export const CART_TTL_SECONDS = 900;

export class CartStore {
  items: CartItem[] = [];
}

export function addToCart(store: CartStore, item: CartItem): void {
  store.items.push(item);
}

export function removeFromCart(store: CartStore, sku: string): void {
  store.items = store.items.filter((i) => i.sku !== sku);
}
"""

CART_TS_V2 = CART_TS[:CART_TS.index("export function removeFromCart")] + """\
// dropFromCart replaces removeFromCart (2026-09): same behaviour, arrow function
export const dropFromCart = (store: CartStore, sku: string): void => {
  store.items = store.items.filter((i) => i.sku !== sku);
};
"""

CHECKOUT_TSX = """\
// web/src/components/Checkout.tsx: the three-step checkout
const STEP_COUNT = 3;

export default function Checkout() {
  return <ol data-steps={STEP_COUNT} />;
}
"""

CART_ACTIVITY = """\
package com.kuzeykahve.app;

import android.app.Activity;
import android.os.Bundle;

public class CartActivity extends Activity {
    static final int MAX_BADGE = 99;

    @Override
    protected void onCreate(Bundle state) {
        super.onCreate(state);
    }
}
"""

SETTINGS_PY = '''\
"""Settings read from the environment, with local defaults."""
import os

DEFAULT_TIMEOUT = 10
RETRY_LIMIT: int = 3
DATABASE_URL = os.environ.get("DATABASE_URL", "postgresql://app@localhost/app")


def load_settings() -> dict:
    return {"timeout": DEFAULT_TIMEOUT, "retries": RETRY_LIMIT, "database_url": DATABASE_URL}
'''

API_PY = '''\
"""HTTP API of the app."""
from fastapi import FastAPI
from pydantic import BaseModel

app = FastAPI()

MAX_ITEMS = 50


class OrderRequest(BaseModel):
    sku: str
    qty: int


def create_order(req: OrderRequest) -> dict:
    if req.qty > MAX_ITEMS:
        raise ValueError("too many items")
    return {"sku": req.sku, "qty": req.qty}


def cancel_order(order_id: int) -> None:
    ...


def legacy_checkout(cart: dict) -> dict:
    return create_order(OrderRequest(**cart))


async def refund_order(order_id: int, amount_kurus: int | None = None) -> None:
    ...
'''

API_PY_V2 = (API_PY
             .replace("def cancel_order(", "def void_order(")
             .replace("def legacy_checkout(cart: dict) -> dict:\n    return create_order(OrderRequest(**cart))\n",
                      "# legacy_checkout() was removed in August 2026: the v1 app is gone, use create_order.\n"))

INVOICE_PY = '''\
"""Invoices: numbered, rendered, mailed."""

INVOICE_PREFIX = "KK"


class InvoiceBuilder:
    def __init__(self, order):
        self.order = order


def render_pdf(invoice) -> bytes:
    ...
'''

INVOICE_PY_V2 = INVOICE_PY.replace("def render_pdf(invoice) -> bytes:", "def render_html(invoice) -> str:")

ORDER_MAIL = ("<!-- src/app/emails/templates/order_confirmation.html -->\n"
              "<p>Merhaba {{ ad }}, siparişin alındı.</p>\n<p>İade için 7 gün içinde bize yaz.</p>\n")

README = """\
# kuzey-app

Storefront (Next.js, in `web/`), API (FastAPI, in `src/app/`), health daemon (Go, `cmd/healthd/`),
thumbnails (Rust, `rust/`).

Local setup: `just bootstrap`, then `pnpm dev`. End-to-end tests: `npm run test:e2e`.
"""

RUNBOOK = "# Runbook\n\nWho to call, where the dashboards are.\n\nRollback: redeploy the previous tag with `./infra/deploy.sh prod --confirm`.\n"

CI = """\
name: ci
on: [push, pull_request]
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - run: make test
      - run: pnpm e2e
"""

FILES = {
    "README.md": README,
    ".gitignore": "node_modules/\n.next/\ntarget/\n__pycache__/\n.venv/\n*.log\n.env\n.env.local\n",
    "package.json": _json(PACKAGE),
    "pyproject.toml": PYPROJECT,
    "requirements-dev.txt": REQUIREMENTS_DEV,
    "Makefile": MAKEFILE,
    "justfile": JUSTFILE,
    "go.mod": GO_MOD,
    "Cargo.toml": CARGO,
    ".github/workflows/ci.yml": CI.replace("      - run: pnpm e2e\n", "      - run: npm run test:e2e\n"),
    "infra/deploy.sh": ("#!/bin/sh\n# infra/deploy.sh ENV [--confirm]: build, migrate, switch\nset -eu\nenv=\"$1\"\n"
                        "if [ \"$env\" = prod ] && [ \"${2:-}\" != --confirm ]; then echo 'prod needs --confirm' >&2; exit 1; fi\n"
                        "docker compose -f \"infra/compose.$env.yml\" up -d --build\n"),
    "infra/backup.sh": ("#!/bin/sh\n# infra/backup.sh ENV: nightly pg_dump to the backup bucket\nset -eu\n"
                        "pg_dump \"$DATABASE_URL\" | gzip > \"/var/backups/app-$1.sql.gz\"\n"),
    "docs/runbook.md": RUNBOOK,
    "docs/deploy.md": "# Deploying\n\n1. CI green on main.\n2. `make deploy ENV=staging`, check /health.\n3. `make deploy ENV=prod`.\n",
    "docs/adr/0001-monorepo.md": "# ADR 0001: one repository for web, API, healthd and thumbs\n\nAccepted, 2026-01.\n",
    "src/app/__init__.py": '"""Kuzey Kahve app backend."""\n',
    "src/app/settings.py": SETTINGS_PY,
    "src/app/api.py": API_PY,
    "src/app/billing/__init__.py": "",
    "src/app/billing/invoice.py": INVOICE_PY,
    "src/app/legacy/__init__.py": "",
    "src/app/legacy/cart_v1.py": '"""src/app/legacy/cart_v1.py: the cart of the v1 mobile app."""\n\n\ndef add_item(cart, sku, qty):\n    ...\n',
    "src/app/emails/templates/order_confirmation.html": ORDER_MAIL,
    "scripts/seed.py": '#!/usr/bin/env python3\n"""scripts/seed.py [--small]: a local database with products and test customers."""\n',
    "tests/test_api.py": '"""tests/test_api.py"""\nfrom app.api import MAX_ITEMS\n\n\ndef test_max_items():\n    assert MAX_ITEMS == 50\n',
    "migrations/0001_init.sql": "-- migrations/0001_init.sql\nCREATE TABLE orders (id serial PRIMARY KEY, sku text NOT NULL, qty int NOT NULL);\n",
    "web/src/lib/cart.ts": CART_TS,
    "web/src/components/Checkout.tsx": CHECKOUT_TSX,
    "web/src/pages/legacy-cart.tsx": "// web/src/pages/legacy-cart.tsx: the v1 app's webview cart\nexport default function LegacyCart() {\n  return null;\n}\n",
    "cmd/healthd/main.go": HEALTHD,
    "internal/queue/queue.go": QUEUE,
    "rust/thumbs.rs": THUMBS,
    "android/app/src/main/java/com/kuzeykahve/app/CartActivity.java": CART_ACTIVITY,
}

# Commits, in order. (key, date, subject, operations, branch). key names the commit in app.shas.json and in
# the labels (`@key`). An operation is ("mv", old, new), ("rm", path), ("write", path, text), or one of the
# ref operations ("branch", name) [a branch at the current commit], ("checkout", name), ("delete-branch",
# name), ("tag", name). Ref operations run before the commit's file operations; a commit without file
# operations is not made (its key is not recorded).
FIRST = ("first-commit", "2026-01-08T10:00:00+03:00", "Initial import of the app repository")
COMMITS = [
    ("move-settings", "2026-02-10T11:30:00+03:00", "Move settings into config.py and the seed script under scripts/db", [
        ("branch", "release/1.x"),
        ("mv", "src/app/settings.py", "src/app/config.py"),
        ("mv", "scripts/seed.py", "scripts/db/seed.py"),
    ]),
    ("old-checkout-wip", "2026-02-24T17:45:00+03:00", "WIP: old checkout flow", [
        ("checkout-new", "feature/old-checkout"),
        ("write", "web/src/pages/old-checkout.tsx", "// WIP, never merged\nexport default function OldCheckout() {\n  return null;\n}\n"),
    ]),
    ("httpx", "2026-03-16T09:10:00+03:00", "Replace requests with httpx; nose gives way to pytest-cov", [
        ("checkout", "main"),
        ("write", "pyproject.toml", PYPROJECT_HTTPX),
        ("write", "requirements-dev.txt", REQUIREMENTS_DEV.replace("nose==1.3.7", "pytest-cov==5.0.0")),
    ]),
    ("drop-cart-v1", "2026-04-20T15:00:00+03:00", "Delete cart v1 and the backup script; runbook moves to the wiki; deploy docs under docs/ops", [
        ("rm", "src/app/legacy/cart_v1.py"),
        ("rm", "src/app/legacy/__init__.py"),
        ("rm", "web/src/pages/legacy-cart.tsx"),
        ("rm", "infra/backup.sh"),
        ("rm", "docs/runbook.md"),
        ("mv", "docs/deploy.md", "docs/ops/deploy.md"),
    ]),
    ("release-2x-hotfix", "2026-05-04T12:00:00+03:00", "Hotfix on release/2.x: pin zod to 3.22", [
        ("checkout-new", "release/2.x"),
        ("write", "package.json", FILES["package.json"].replace('"zod": "^3.23.8"', '"zod": "3.22.4"')),
    ]),
    ("rename-e2e", "2026-06-01T10:20:00+03:00", "Rename test:e2e to e2e; ky instead of axios, date-fns instead of moment", [
        ("checkout", "main"),
        ("write", "package.json", _json(_package_v2())),
        ("write", "README.md", README.replace("npm run test:e2e", "npm run e2e")),
        ("write", ".github/workflows/ci.yml", CI),
    ]),
    ("chi-clap", "2026-07-13T14:40:00+03:00", "Go: chi instead of gorilla/mux, no more legacyPing or Drain; Rust: clap instead of structopt", [
        ("write", "go.mod", GO_MOD.replace("github.com/gorilla/mux v1.8.1", "github.com/go-chi/chi/v5 v5.1.0")),
        ("write", "cmd/healthd/main.go", HEALTHD_CHI),
        ("write", "internal/queue/queue.go", QUEUE_V2),
        ("write", "Cargo.toml", CARGO.replace('structopt = "0.3"', 'clap = { version = "4", features = ["derive"] }')),
    ]),
    ("void-order", "2026-08-24T16:15:00+03:00", "API: cancel_order becomes void_order, legacy_checkout goes, invoices render HTML; returns within 14 days", [
        ("write", "src/app/api.py", API_PY_V2),
        ("write", "src/app/billing/invoice.py", INVOICE_PY_V2),
        ("write", "src/app/emails/templates/order_confirmation.html", ORDER_MAIL.replace("7 gün", "14 gün")),
    ]),
    ("tooling", "2026-09-21T10:00:00+03:00", "Tooling: make seed replaces docker-build, just db-fresh, app-jobs, dropFromCart", [
        ("delete-branch", "release/1.x"),
        ("delete-branch", "feature/old-checkout"),
        ("write", "Makefile", MAKEFILE_V2),
        ("write", "justfile", JUSTFILE.replace("db-reset:", "db-fresh:")),
        ("write", "pyproject.toml", PYPROJECT_HTTPX.replace('app-worker = "app.jobs:run"', 'app-jobs = "app.jobs:run"')),
        ("write", "web/src/lib/cart.ts", CART_TS_V2),
    ]),
    ("runbook-back", "2026-10-05T09:30:00+03:00", "The runbook is back from the wiki; deploy docs renamed to deploying.md", [
        ("write", "docs/runbook.md", RUNBOOK),
        ("mv", "docs/ops/deploy.md", "docs/ops/deploying.md"),
    ]),
    ("invoice-prefix", "2026-11-09T13:05:00+03:00", "Add the invoice prefix migration", [
        ("branch", "feature/search"),
        ("write", "migrations/0002_invoice_prefix.sql",
         "-- migrations/0002_invoice_prefix.sql: KK-<year>- prefix on invoice numbers\nALTER TABLE orders ADD COLUMN invoice_no text;\n"),
    ]),
]
TAGS = {"v1.0": "first-commit"}  # lightweight tags: name -> commit key


def _git(repo: Path, *args: str, date: str = FIRST[1]) -> str:
    return fixture.git(repo, *args, date=date, author=AUTHOR)


_write = fixture.write


def build(dest: Path) -> Path:
    """Create `dest/app` as a git repository with the fixture history and `dest/app.shas.json`; returns
    the repository's path."""
    repo = fixture.start(dest, "app", FILES, FIRST[2], FIRST[1], AUTHOR)
    shas = {FIRST[0]: _git(repo, "rev-parse", "HEAD").strip()}
    for key, date, subject, operations in COMMITS:
        files = False
        for op, *args in operations:
            if op == "branch":
                _git(repo, "branch", args[0], date=date)
            elif op == "checkout-new":
                _git(repo, "checkout", "-q", "-b", args[0], date=date)
            elif op == "checkout":
                _git(repo, "checkout", "-q", args[0], date=date)
            elif op == "delete-branch":
                _git(repo, "branch", "-q", "-D", args[0], date=date)
            elif op == "mv":
                (repo / args[1]).parent.mkdir(parents=True, exist_ok=True)
                _git(repo, "mv", args[0], args[1], date=date)
                files = True
            elif op == "rm":
                _git(repo, "rm", "-q", args[0], date=date)
                files = True
            else:
                _write(repo, args[0], args[1])
                _git(repo, "add", args[0], date=date)
                files = True
        if files:
            _git(repo, "commit", "-q", "-m", subject, date=date)
            shas[key] = _git(repo, "rev-parse", "HEAD").strip()
    for name, key in TAGS.items():
        _git(repo, "tag", name, shas[key])
    if _git(repo, "symbolic-ref", "--short", "HEAD").strip() != "main" or _git(repo, "status", "--porcelain"):
        raise RuntimeError("the fixture must end on a clean main")
    (Path(dest) / "app.shas.json").write_text(json.dumps(shas, indent=2) + "\n", encoding="utf-8")
    return repo


def shas(dest: Path) -> dict[str, str]:
    """The key -> full sha map that build() wrote next to the repository."""
    return json.loads((Path(dest) / "app.shas.json").read_text(encoding="utf-8"))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: project.py DEST   (creates DEST/app and DEST/app.shas.json)")
    built = build(Path(sys.argv[1]))
    print(f"{built}  HEAD {_git(built, 'rev-parse', 'HEAD').strip()}")
    print(json.dumps(shas(Path(sys.argv[1])), indent=2))
