#!/usr/bin/env python3
"""Build `shop`, the fixture project of the curator set, as a real git repository with a history.

    python3 bench/curate/project.py DEST      # creates DEST/shop; DEST/shop must not exist yet

The history is deterministic: fixed author, committer and dates, no user or system git config, so
every build has the same commit ids. The first commit creates every file a memory names (those that
still exist, those later deleted, those later renamed); later commits delete some with `git rm` and
move some with `git mv`, so `git log --follow -M` finds each rename. One file (`docs/runbook.md`) is
deleted and later restored: it exists, whatever its history says. Build output and disposable paths
(`node_modules/`, `dist/`, `.next/`, `target/`, `.venv/`, `*.log`) are git-ignored and are NOT created:
a checker that only tests existence would flag them, which is the point. Stdlib only.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import fixture  # noqa: E402  (bench/fixture.py)

AUTHOR = ("Deniz Aksoy", "deniz@kuzeykahve.example")

GITIGNORE = """\
# build output and local state: never committed, never memory material
node_modules/
dist/
build/
.next/
target/
.venv/
__pycache__/
*.log
.env
"""

# Files of the first commit. Each body is distinct (it names its own path), so git's rename detection
# pairs every moved file with its old path and no two files look alike.
FILES = {
    "README.md": "# shop\n\nKuzey Kahve's online shop: FastAPI backend, Next.js storefront, Celery workers.\n",
    ".gitignore": GITIGNORE,
    ".env.example": "SHOP_ENV=dev\nDATABASE_URL=postgresql://shop@localhost:5432/shop\nREDIS_URL=redis://localhost:6379/0\n",
    "pyproject.toml": '[project]\nname = "shop"\nversion = "0.9.0"\nrequires-python = ">=3.11"\n',
    "Makefile": "test:\n\tSHOP_ENV=test pytest -q\n\nlint:\n\truff check src tests\n\ndeploy:\n\tinfra/deploy.sh $(ENV)\n",
    "docker-compose.yml": "services:\n  postgres:\n    image: postgres:16\n  redis:\n    image: redis:7\n  mailpit:\n    image: axllent/mailpit\n",
    "Jenkinsfile": "pipeline {\n  agent any\n  environment { CACHE_BUST = '3' }\n  stages {\n    stage('docker build') { steps { sh 'docker build -t shop .' } }\n    stage('test') { steps { sh 'make test' } }\n  }\n}\n",
    ".github/workflows/ci.yml": "name: ci\non: [push, pull_request]\njobs:\n  lint:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n      - run: make lint\n",
    "docker/Dockerfile.worker": "FROM python:3.11-slim\nRUN apt-get update && apt-get install -y wkhtmltopdf\nCOPY . /app\nCMD [\"celery\", \"-A\", \"shop.worker\", \"worker\"]\n",
    "infra/deploy.sh": "#!/bin/sh\n# infra/deploy.sh ENV [--confirm]: build, migrate, switch\nset -eu\nenv=\"$1\"\nif [ -n \"$(git status --porcelain)\" ]; then echo 'uncommitted changes' >&2; exit 1; fi\nif [ \"$env\" = prod ] && [ \"${2:-}\" != --confirm ]; then echo 'prod needs --confirm' >&2; exit 1; fi\ndocker compose -f \"infra/compose.$env.yml\" up -d --build\n",
    "infra/backup_db.sh": "#!/bin/sh\n# infra/backup_db.sh ENV: pg_dump to the backup bucket, print the object name\nset -eu\nstamp=$(date +%Y%m%d%H%M)\npg_dump \"$DATABASE_URL\" | gzip | s3cmd put - \"s3://kk-backups/$1/shop-$stamp.sql.gz\"\necho \"shop-$stamp.sql.gz\"\n",
    "infra/nginx/shop.conf": "limit_req_zone $binary_remote_addr zone=api:10m rate=10r/s;\nserver {\n  server_name kuzeykahve.example;\n  location /api/ { limit_req zone=api burst=20; proxy_pass http://app:8000; }\n}\n",
    "infra/terraform/main.tf": 'provider "hcloud" {}\n\nresource "hcloud_server" "app" {\n  count       = 2\n  name        = "app-${count.index + 1}"\n  server_type = "cx32"\n}\n',
    "infra/terraform/variables.tf": 'variable "env" {\n  type = string\n}\n',
    "src/shop/__init__.py": '"""Kuzey Kahve shop backend."""\n',
    "src/shop/settings.py": '"""src/shop/settings.py: every setting comes from the environment, with a local default."""\nimport os\n\nENV = os.environ.get("SHOP_ENV", "dev")\nDATABASE_URL = os.environ.get("DATABASE_URL", "postgresql://shop@localhost:5432/shop")\nREDIS_URL = os.environ.get("REDIS_URL", "redis://localhost:6379/0")\n',
    "src/shop/api/__init__.py": "",
    "src/shop/api/routes.py": '"""src/shop/api/routes.py: every router of the API, alphabetical per router."""\nfrom fastapi import APIRouter\n\ncart = APIRouter(prefix="/api/v2/cart")\norders = APIRouter(prefix="/api/v2/orders")\nproducts = APIRouter(prefix="/api/v2/products")\n',
    "src/shop/api/auth.py": '"""src/shop/api/auth.py: login and JWT checks."""\n' + "\n" * 80 + "LEEWAY_SECONDS = 30  # clock drift on the workers\n\n\ndef check_expiry(claims, now):\n    return claims[\"exp\"] + LEEWAY_SECONDS >= now\n",
    "src/shop/api/webhooks.py": '"""src/shop/api/webhooks.py: iyzico callbacks; the signature check is not optional."""\n\n\ndef iyzico_callback(request):\n    verify_signature(request)\n    return handle(request.json())\n',
    "src/shop/payments/__init__.py": "",
    "src/shop/payments/iyzico.py": '"""src/shop/payments/iyzico.py: iyzico client."""\n\nINSTALLMENTS = (1, 3, 6)  # 9 only in campaign periods\n\n\ndef pay(order, card):\n    ...\n',
    "src/shop/payments/stripe_client.py": '"""src/shop/payments/stripe_client.py: Stripe charges and refunds."""\n\n\ndef refund(charge_id, amount_kurus=None):\n    ...\n',
    "src/shop/orders/__init__.py": "",
    "src/shop/orders/models.py": '"""src/shop/orders/models.py: orders and their status machine."""\n\n\nclass Order:\n    def can_transition(self, new_status):\n        ...\n',
    "src/shop/orders/tasks.py": '"""src/shop/orders/tasks.py: Celery tasks for orders."""\n\n\ndef release_stock(order_id):\n    """Give the stock of a cancelled order back."""\n\n\ndef send_order_email(order_id):\n    ...\n',
    "src/shop/search/__init__.py": "",
    "src/shop/search/indexer.py": '"""src/shop/search/indexer.py: what goes into the search index."""\n\nSEARCHABLE_FIELDS = ("name", "origin", "tasting_notes", "sku")\n',
    "src/shop/legacy/__init__.py": "",
    "src/shop/legacy/cart_v1.py": '"""src/shop/legacy/cart_v1.py: the cart of the v1 mobile app."""\n\n\ndef add_item(cart, sku, qty):\n    ...\n',
    "src/shop/emails/templates/order_confirmation.html": "<!-- src/shop/emails/templates/order_confirmation.html -->\n<p>Merhaba {{ customer.first_name }}, siparişin alındı.</p>\n",
    "scripts/seed_db.py": '#!/usr/bin/env python3\n"""scripts/seed_db.py [--small]: a local database with products and test customers."""\n',
    "scripts/export_products.py": '#!/usr/bin/env python3\n"""scripts/export_products.py --channel NAME: product CSV for a marketplace."""\n',
    "scripts/reindex.sh": "#!/bin/sh\n# scripts/reindex.sh: rebuild the product search index from the database\nset -eu\npython -m shop.search.rebuild --all\n",
    "tests/conftest.py": '"""tests/conftest.py: shared fixtures (db session, logged-in client)."""\nimport pytest\n\n\n@pytest.fixture\ndef db():\n    ...\n',
    "tests/test_checkout.py": '"""tests/test_checkout.py: checkout flow, including a failed payment."""\n\n\ndef test_failed_payment_keeps_cart(client):\n    ...\n',
    "tests/fixtures/products.json": '[\n  {"sku": "KK-ETH-250", "name": "Ethiopia Guji", "price_kurus": 42000},\n  {"sku": "KK-COL-500", "name": "Colombia Huila", "price_kurus": 61000}\n]\n',
    "frontend/package.json": '{\n  "name": "storefront",\n  "private": true,\n  "packageManager": "pnpm@9.12.0",\n  "scripts": {"dev": "next dev", "build": "next build", "lint": "eslint ."}\n}\n',
    "frontend/pnpm-lock.yaml": "lockfileVersion: '9.0'\n",
    "frontend/next.config.js": "// frontend/next.config.js\nmodule.exports = {\n  images: { remotePatterns: [{ hostname: 'cdn.kuzeykahve.example' }] },\n};\n",
    "frontend/babel.config.js": "// frontend/babel.config.js: styled-components class names must match under SSR\nmodule.exports = {\n  presets: ['next/babel'],\n  plugins: [['styled-components', { ssr: true }]],\n};\n",
    "frontend/src/components/CartDrawer.tsx": "// frontend/src/components/CartDrawer.tsx\nimport useSWR from 'swr';\n\nexport function CartDrawer() {\n  const { data: cart } = useSWR('/api/v2/cart');\n  return null;\n}\n",
    "frontend/src/pages/checkout.tsx": "// the checkout page: client-only, iyzico's form script breaks under SSR\nimport dynamic from 'next/dynamic';\n\nconst IyzicoForm = dynamic(() => import('../components/IyzicoForm'), { ssr: false });\n\nexport default function Checkout() {\n  return <IyzicoForm />;\n}\n",
    "migrations/versions/0007_add_invoice_no.py": '"""migrations/versions/0007_add_invoice_no.py: invoice numbers, with a slow backfill."""\n\n\ndef upgrade():\n    ...\n\n\ndef downgrade():\n    ...\n',
    "docs/runbook.md": "# Runbook\n\nWho to call, how to roll back a deploy, where the dashboards are.\n",
    "tools/thumbnailer/Cargo.toml": '[package]\nname = "thumbnailer"\nversion = "0.3.0"\nedition = "2021"\n\n[dependencies]\nimage = "=0.24.9"\n',
    "tools/thumbnailer/src/main.rs": "// tools/thumbnailer/src/main.rs\nfn main() {\n    println!(\"thumbnailer\");\n}\n",
}

# Later commits: (date, subject, operations). An operation is ("mv", old, new), ("rm", path),
# or ("write", path, text).
HISTORY = [
    ("2026-02-16T11:20:00+03:00", "Move the deploy script under infra/scripts and settings into a config package", [
        ("mv", "infra/deploy.sh", "infra/scripts/deploy.sh"),
        ("write", "src/shop/config/__init__.py", ""),
        ("mv", "src/shop/settings.py", "src/shop/config/settings.py"),
        ("write", "Makefile", FILES["Makefile"].replace("infra/deploy.sh", "infra/scripts/deploy.sh")),
    ]),
    ("2026-03-23T16:05:00+03:00", "Drop Stripe; backups are the provider's job now; runbook moves to the wiki", [
        ("rm", "src/shop/payments/stripe_client.py"),
        ("rm", "infra/backup_db.sh"),
        ("rm", "docs/runbook.md"),
    ]),
    ("2026-05-11T10:40:00+03:00", "Order tasks become jobs, webhooks move to payments, CI moves to GitHub Actions", [
        ("mv", "src/shop/orders/tasks.py", "src/shop/orders/jobs.py"),
        ("mv", "src/shop/api/webhooks.py", "src/shop/payments/webhooks.py"),
        ("mv", "scripts/reindex.sh", "scripts/search/reindex.sh"),
        ("rm", "Jenkinsfile"),
        ("write", ".github/workflows/ci.yml", FILES[".github/workflows/ci.yml"]
         + "  test:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n      - run: make test\n"),
    ]),
    ("2026-07-06T09:15:00+03:00", "Remove cart v1, the export script, babel config and the worker Dockerfile; runbook is back", [
        ("rm", "src/shop/legacy/cart_v1.py"),
        ("rm", "src/shop/legacy/__init__.py"),
        ("rm", "scripts/export_products.py"),
        ("rm", "frontend/babel.config.js"),
        ("rm", "docker/Dockerfile.worker"),
        ("write", "docs/runbook.md", "# Runbook\n\nThe wiki did not work out; the runbook lives here again.\n"
                                     "Who to call, how to roll back a deploy, where the dashboards are.\n"),
    ]),
    ("2026-09-14T14:30:00+03:00", "Checkout page becomes a folder; fixtures by domain; clearer reindex script name", [
        ("mv", "frontend/src/pages/checkout.tsx", "frontend/src/pages/checkout/index.tsx"),
        # moved and edited in one commit (R<100): the import path is one level deeper now
        ("write", "frontend/src/pages/checkout/index.tsx",
         FILES["frontend/src/pages/checkout.tsx"].replace("'../components/", "'../../components/")),
        ("write", "frontend/src/pages/checkout/Summary.tsx", "export function Summary() {\n  return null;\n}\n"),
        ("mv", "tests/fixtures/products.json", "tests/fixtures/catalog/products.json"),
        ("mv", "scripts/search/reindex.sh", "scripts/search/rebuild_index.sh"),
    ]),
    ("2026-11-02T18:00:00+03:00", "Invoice numbers get a yearly prefix", [
        ("write", "migrations/versions/0008_invoice_prefix.py",
         '"""migrations/versions/0008_invoice_prefix.py: KK-<year>- prefix on invoice numbers."""\n'),
    ]),
]
FIRST = ("2026-01-12T10:00:00+03:00", "Initial import of the shop repository")


def _git(repo: Path, *args: str, date: str = FIRST[0]) -> str:
    return fixture.git(repo, *args, date=date, author=AUTHOR)


_write = fixture.write


def build(dest: Path) -> Path:
    """Create `dest/shop` as a git repository with the fixture history; returns its path."""
    repo = fixture.start(dest, "shop", FILES, FIRST[1], FIRST[0], AUTHOR)
    for date, subject, operations in HISTORY:
        for op, *args in operations:
            if op == "mv":
                (repo / args[1]).parent.mkdir(parents=True, exist_ok=True)
                _git(repo, "mv", args[0], args[1])
            elif op == "rm":
                _git(repo, "rm", "-q", args[0])
            else:
                _write(repo, args[0], args[1])
                _git(repo, "add", args[0])
        _git(repo, "commit", "-q", "-m", subject, date=date)
    return repo


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: project.py DEST   (creates DEST/shop)")
    built = build(Path(sys.argv[1]))
    print(f"{built}  HEAD {_git(built, 'rev-parse', 'HEAD').strip()}")
