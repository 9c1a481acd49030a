"""Realistic, varied memories and queries (Turkish and English), for the tests and the benchmarks.

    python tests/gen.py 5000 > memories.jsonl
    python tests/gen.py 5000 --seed 7 --out memories.jsonl
    python tests/gen.py --queries 200 > queries.txt

Each memory is one line of `hafiza import` JSONL:
{title, text, type, tags, scope, created[, aliases, last_used]}. Turkish,
English and mixed technical notes (deploy rules, package managers, incidents,
clients and their cities, local setup, on-call...) are built from templates ×
vocabulary lists, so titles and bodies vary while the words stay the ones
people really type. Some Turkish notes are written without diacritics
("sifre" for "şifre"), as users do. Output is deterministic for a seed; dates
are spread over the two years before `--end`; text is 200-600 characters.

The same vocabulary builds the queries (`queries()`), 2-12 words, mixed
TR/EN, a few of them chatter that should find nothing.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import re
import sys

END = dt.date(2026, 11, 30)
SPAN_DAYS = 730
TEXT_MIN, TEXT_MAX = 200, 600

# --------------------------------------------------------------------------- vocabulary

V = {
    "service": ["billing", "auth", "gateway", "notifications", "search", "payments", "invoice-worker",
                "reporting", "checkout", "user-service", "odeme-servisi", "kargo-takip", "stok-api",
                "media-upload", "scheduler", "webhook-relay", "fatura", "sepet"],
    "pm": ["npm", "pnpm", "yarn", "poetry", "uv", "pip-tools", "bun"],
    "lang": ["Python", "Go", "TypeScript", "Rust", "Kotlin", "Swift", "PHP"],
    "framework": ["Django", "FastAPI", "Flask", "React", "Next.js", "Vue", "Gin", "Celery", "SQLAlchemy",
                  "Laravel", "Svelte", "NestJS"],
    "test_tool": ["pytest", "Jest", "Vitest", "Playwright", "Cypress", "go test", "unittest", "k6"],
    "db": ["PostgreSQL", "Redis", "MySQL", "ClickHouse", "SQLite", "Elasticsearch", "MongoDB", "Kafka",
           "RabbitMQ", "DynamoDB"],
    "infra": ["Docker", "Kubernetes", "Terraform", "Helm", "Ansible", "nginx", "ArgoCD", "Traefik",
              "Cloudflare", "Hetzner", "AWS ECS"],
    "ci": ["GitHub Actions", "GitLab CI", "Jenkins", "CircleCI", "Buildkite", "Drone"],
    "obs": ["Sentry", "Grafana", "Prometheus", "Datadog", "Loki", "OpenTelemetry", "Kibana"],
    "file": ["infra/deploy.sh", "docker-compose.yml", "Makefile", ".env.local", "alembic.ini",
             "pyproject.toml", "package.json", "helm/values-prod.yaml", ".github/workflows/ci.yml",
             "scripts/seed_db.py", "src/config/settings.py", "tsconfig.json", "terraform/main.tf",
             "docs/runbook.md", "k8s/ingress.yaml", "Dockerfile", "scripts/backup.sh", "nginx/site.conf"],
    "error": ["ERR_PNPM_OUTDATED_LOCKFILE", "ECONNRESET", "OOMKilled", "CrashLoopBackOff",
              "504 Gateway Timeout", "ModuleNotFoundError", "deadlock detected", "too many connections",
              "CERTIFICATE_VERIFY_FAILED", "ETIMEDOUT", "no space left on device", "ImagePullBackOff",
              "MemoryError", "429 Too Many Requests", "connection refused", "segmentation fault",
              "ERR_OSSL_EVP_UNSUPPORTED", "Permission denied (publickey)", "disk quota exceeded"],
    "person": ["Ayşe", "Mehmet", "Işıl", "Çağrı", "Gökhan", "Zeynep", "Emre", "Elif", "Burak", "Özge",
               "Tolga", "Şule", "İlker", "Deniz", "Can", "Sarah", "Tom", "Priya", "Lukas", "Marta",
               "Serkan", "Ebru", "Oğuz", "Nazlı"],
    "role": ["backend lead", "frontend developer", "SRE", "data engineer", "CTO", "mobile developer",
             "QA engineer", "product manager", "full-stack developer", "platform engineer"],
    "client": ["Kuzey Yazılım", "Ege Lojistik", "Anadolu Sigorta", "Mavi Tekstil", "Karadeniz Gıda",
               "Nordlicht GmbH", "Harbor Analytics", "Atlas Retail", "Pera Finans", "Toros Enerji",
               "Çukurova Medikal", "Boğaziçi Turizm", "Lale Kozmetik", "Fjord Systems", "Marmara Yapı",
               "Orion Health", "Kapadokya Balon", "Yıldız Eğitim"],
    "city": ["İstanbul", "İzmir", "Ankara", "Bursa", "Trabzon", "Berlin", "Rotterdam", "London", "Adana",
             "Iğdır", "Eskişehir", "Antalya", "Gaziantep", "Amsterdam", "Münih", "Kayseri", "Diyarbakır",
             "Konya"],
    "env": ["staging", "production", "preprod", "dev", "test", "canlı", "demo"],
    "branch": ["main", "develop", "release/2.4", "hotfix/odeme-timeout", "master", "release/next"],
    "day": ["Friday", "Monday", "Thursday"],
    "gun": ["Cuma", "Pazartesi", "Perşembe", "Çarşamba"],
    "hour": ["15:00", "16:00", "17:30", "18:00", "14:00"],
    "month": ["January", "February", "March", "April", "May", "June", "July", "August", "September",
              "October", "November", "December"],
    "ay": ["Ocak", "Şubat", "Mart", "Nisan", "Mayıs", "Haziran", "Temmuz", "Ağustos", "Eylül", "Ekim",
           "Kasım", "Aralık"],
    "version": ["v2.3", "3.11", "16.4", "1.27", "v5.0.1", "18 LTS", "20.11", "8.2", "0.110", "4.1"],
    "cmd": ["make test", "pytest -x -q", "pnpm test --filter web", "go test ./...", "docker compose up -d",
            "npm run lint", "uv run pytest", "poetry run alembic upgrade head", "kubectl rollout undo",
            "terraform plan -out plan.tfout", "make migrate", "yarn e2e", "cargo test --workspace",
            "helm upgrade --install", "./scripts/backup.sh --full"],
    "ticket": ["BILL-1423", "OPS-221", "INC-88", "PAY-907", "WEB-3110", "DATA-57", "SEC-19", "MOB-640",
               "INFRA-302", "SUP-1288"],
    "n": ["2", "3", "4", "5", "10", "15", "20", "30", "45", "90"],
    "big": ["200", "300", "400", "500", "800", "1000"],
    "cause": ["a missing index on the orders table", "an expired TLS certificate", "a stale lock file",
              "the connection pool being too small", "a cron job running twice", "a wrong timezone (UTC vs Europe/Istanbul)",
              "an unpinned transitive dependency", "the disk filling up with logs", "a retry storm from the mobile app",
              "a race between two workers"],
    "sebep": ["orders tablosunda eksik index", "süresi dolmuş TLS sertifikası", "unutulmuş bir lock dosyası",
              "connection pool'un küçük olması", "iki kez çalışan cron job", "yanlış saat dilimi (UTC ile Europe/Istanbul)",
              "sabitlenmemiş bir alt bağımlılık", "logların diski doldurması", "mobil uygulamadan gelen retry fırtınası",
              "iki worker arasındaki race condition"],
    "style": ["small PRs under 300 lines", "squash merges", "conventional commit messages",
              "type hints everywhere", "early returns over nested ifs", "tabs over spaces in Go files only",
              "explicit error handling, no bare except", "short functions with docstrings",
              "feature flags instead of long-lived branches", "descriptive test names"],
    "tercih": ["300 satırı geçmeyen küçük PR'lar", "squash merge", "conventional commit mesajları",
               "her yerde type hint", "iç içe if yerine erken return", "açık hata yönetimi, çıplak except yok",
               "docstring'li kısa fonksiyonlar", "uzun ömürlü branch yerine feature flag",
               "açıklayıcı test isimleri", "Türkçe değil İngilizce değişken isimleri"],
}
PROJECTS = ["billing-api", "mobil-app", "data-pipeline", "hafiza-web", "kuzey-portal"]

# --------------------------------------------------------------------------- templates
# (type, lang, title, [main sentences], [tags], [aliases]); {slot}, {slot2} pick from V;
# {slot_de} is the Turkish locative ('da/'de/'ta/'te) of the same value.

T = [
    # ---- rules
    ("rule", "en", "Deploy {service} to production only from {branch}",
     ["Deploy the {service} service to production only from `{branch}`, after {ci} is green.",
      "Feature branches go to {env} first; nothing reaches production straight from a feature branch, not even a one-line hotfix."],
     ["deploy", "production", "git"], ["push to prod", "canlıya çıkmak", "release"]),
    ("rule", "tr", "{service} canlıya sadece {branch} branch'inden çıkar",
     ["{service} servisi canlıya yalnızca `{branch}` branch'inden deploy edilir; {ci} yeşil olmadan deploy yok.",
      "Feature branch'ler önce {env} ortamına gider, orada en az bir gün kalır."],
     ["deploy", "canlı", "git"], ["prod'a atmak", "deploy to production", "yayına almak"]),
    ("rule", "en", "Use {pm} for {lang} dependencies",
     ["Use {pm} for every {lang} dependency change and commit the lock file in the same PR.",
      "Do not mix package managers in one repo; CI fails with `{error}` when the lock file and the manifest disagree."],
     ["dependencies", "package-manager"], ["package manager", "paket yöneticisi", "lockfile"]),
    ("rule", "tr", "Paket yöneticisi olarak {pm} kullanılıyor",
     ["Bağımlılık eklerken ya da güncellerken sadece {pm} kullan; lock dosyası aynı PR'da commit edilir.",
      "Başka bir paket yöneticisiyle kurulum yapınca {ci} `{error}` ile kırılıyor."],
     ["bağımlılık", "package-manager"], ["paket yoneticisi", "package manager", "lock dosyası"]),
    ("rule", "en", "No production deploys after {hour} on {day}",
     ["No deploys to production after {hour} on {day}.",
      "An urgent fix needs written approval from {person} or {person2}, and someone stays on call for two hours after the deploy."],
     ["deploy", "production", "schedule"], ["deploy freeze", "weekend deploy"]),
    ("rule", "tr", "{gun} {hour}'dan sonra canlıya deploy yok",
     ["{gun} günü saat {hour}'dan sonra production'a deploy yapılmaz.",
      "Acil bir düzeltme gerekiyorsa {person} ya da {person2} yazılı onay verir ve deploy sonrası bir kişi nöbette kalır."],
     ["deploy", "takvim"], ["deploy yasağı", "hafta sonu deploy", "freeze"]),
    ("rule", "en", "{db} migrations must be backward compatible",
     ["Every {db} migration must work with the previous release of {service}: add columns as nullable, backfill, then enforce.",
      "Never rename or drop a column in the same release that stops using it; run `{cmd}` on {env} first."],
     ["database", "migration"], ["schema change", "db migration"]),
    ("rule", "tr", "{db} migration'ları geriye uyumlu olmalı",
     ["{db} üzerindeki her migration bir önceki {service} sürümüyle de çalışmalı: kolon önce nullable eklenir, doldurulur, sonra zorunlu yapılır.",
      "Kolon silme ya da yeniden adlandırma ayrı bir release'te yapılır."],
     ["veritabanı", "migration"], ["şema değişikliği", "db migration"]),
    ("rule", "mixed", "PR'lar {n} approval olmadan merge edilmez",
     ["{service} reposunda bir PR en az {n} approval almadan merge edilmez; {person} owner olarak her zaman reviewer'dır.",
      "Force push to `{branch}` is disabled, rebase yerine squash merge kullanıyoruz."],
     ["code-review", "git"], ["code review", "onay"]),
    ("rule", "en", "Secrets live in the vault, never in {file}",
     ["Passwords, API keys and certificates are never committed; `{file}` only holds placeholder names.",
      "Real values come from the team password manager and are injected by {ci} at deploy time."],
     ["security", "secrets"], ["credentials", "şifre", "parola"]),
    ("rule", "tr", "Şifreler repoya girmez, {file} içinde sadece isimler olur",
     ["Şifre, erişim anahtarı ya da sertifika hiçbir zaman repoya commit edilmez; `{file}` sadece değişken isimlerini tutar.",
      "Gerçek değerler parola yöneticisinden gelir, {ci} deploy sırasında enjekte eder."],
     ["güvenlik", "secrets"], ["sifre", "credentials", "gizli bilgi"]),
    ("rule", "mixed", "{service} için her bug fix'e regression test",
     ["{service} servisinde her bug fix bir regression test ile gelir; test önce kırmızı, fix sonrası yeşil olmalı.",
      "Testler {test_tool} ile yazılır ve `{cmd}` ile lokalde çalışır."],
     ["test", "bugfix"], ["regresyon testi", "regression"]),
    # ---- preferences
    ("preference", "en", "{person} prefers {style}",
     ["{person} prefers {style} in {service} and asks for the same in reviews.",
      "Follow it unless the change is generated code or a vendored file."],
     ["style", "review"], ["code style", "kod stili"]),
    ("preference", "tr", "Kod stilinde {tercih} tercih ediliyor",
     ["Ekipte {tercih} tercih ediliyor; {person} review'larda buna dikkat ediyor.",
      "Generated kod ve vendored dosyalar bunun dışında."],
     ["stil", "review"], ["kod stili", "code style"]),
    ("preference", "en", "Prefer {framework} for new {lang} services",
     ["For new {lang} services prefer {framework} over {framework2}; the team knows it and the templates in `{file}` assume it.",
      "Existing {framework2} services stay as they are until a rewrite is planned."],
     ["architecture", "framework"], ["stack seçimi", "tech stack"]),
    ("preference", "tr", "Testlerde {test_tool} tercih ediliyor",
     ["Yeni testler {test_tool} ile yazılsın; eski {test_tool2} testleri dokunulmadıkça taşınmaz.",
      "Lokal çalıştırma: `{cmd}`. Yavaş testler `slow` etiketiyle ayrılır."],
     ["test", "araçlar"], ["test framework", "test aracı"]),
    ("preference", "mixed", "Log'lar JSON formatında, {obs}'ta okunuyor",
     ["{service} log'ları düz metin değil JSON olarak yazılır; {obs} tarafında alanlara göre filtreleniyor.",
      "Request id her satırda olmalı, kişisel veri log'a yazılmaz."],
     ["logging", "observability"], ["log formatı", "structured logging"]),
    ("preference", "en", "Answer in Turkish, code comments in English",
     ["{person} wants explanations in Turkish but code, commit messages and comments in English.",
      "Keep answers short; show the diff first, then explain only what is not obvious."],
     ["language", "communication"], ["dil tercihi", "türkçe cevap"]),
    ("preference", "tr", "Commit mesajları kısa ve İngilizce",
     ["Commit mesajları İngilizce, ilk satır 72 karakteri geçmez; gövdede neden değiştiği yazılır.",
      "{ticket} gibi ticket numarası varsa sona eklenir. {person} bunu {service} reposunda özellikle istiyor."],
     ["git", "commit"], ["commit message", "commit mesajı"]),
    # ---- lessons
    ("lesson", "en", "{error} in {service} after upgrading {infra}",
     ["After upgrading {infra} to {version}, {service} started failing with `{error}` on {env}.",
      "Root cause was {cause}. We rolled back with `{cmd}` and pinned the version until the fix landed."],
     ["incident", "upgrade"], ["postmortem", "outage"]),
    ("lesson", "tr", "{service} servisinde {error} hatası",
     ["{ay} ayında {service} servisinde {env} ortamında `{error}` hatası aldık.",
      "Sebep {sebep} çıktı. Geri almak için `{cmd}` kullandık; kalıcı çözüm {ticket} ile takip ediliyor."],
     ["incident", "hata"], ["postmortem", "olay raporu"]),
    ("lesson", "mixed", "{db} connection pool taştı: {error}",
     ["Yük testinde {db} connection pool doldu ve {service} `{error}` verdi.",
      "Pool size'ı {n} yapmak yetmedi; asıl sebep {sebep}. Artık {obs} üzerinde pool doluluğu için alarm var."],
     ["database", "performance"], ["bağlantı havuzu", "connection pool"]),
    ("lesson", "en", "Do not run {cmd} on {env} without a backup",
     ["We once ran `{cmd}` on {env} without a fresh backup and lost {n} minutes of orders.",
      "Now `scripts/backup.sh --full` runs first, and {person} must confirm in the channel before anything destructive."],
     ["backup", "ops"], ["yedek", "data loss"]),
    ("lesson", "tr", "{infra} güncellemesinden sonra {service} çöktü",
     ["{infra} {version} sürümüne geçince {service} `{error}` ile açılmadı.",
      "Sorun {sebep} idi. Sürüm sabitlendi, yükseltme notları `{file}` içinde."],
     ["upgrade", "incident"], ["sürüm yükseltme", "upgrade"]),
    ("lesson", "en", "Flaky {test_tool} tests in {ci} came from shared state",
     ["{test_tool} tests for {service} failed one run in {n} on {ci}; locally they always passed.",
      "The cause was {cause}. Each test now gets its own {db} schema and the suite runs with random order."],
     ["test", "ci", "flaky"], ["flaky test", "kararsız test"]),
    ("lesson", "mixed", "Timezone bug: {service} raporları bir gün kayıyordu",
     ["{service} raporları gece yarısından sonra bir gün kayıyordu; sebep {sebep}.",
      "Veritabanına her zaman UTC yazılıyor, kullanıcıya gösterirken Europe/Istanbul'a çevriliyor."],
     ["timezone", "bug"], ["saat dilimi", "timezone"]),
    # ---- knowledge
    ("knowledge", "en", "Running {service} tests locally",
     ["To run the {service} tests locally start the dependencies with `docker compose up -d`, then run `{cmd}`.",
      "Tests need {db} {version}; the fixtures are loaded by `scripts/seed_db.py`."],
     ["test", "local-dev"], ["lokal test", "run tests"]),
    ("knowledge", "tr", "{service} lokalde nasıl çalıştırılır",
     ["{service} lokalde `docker compose up -d` ile bağımlılıklar kaldırıldıktan sonra `{cmd}` ile çalışır.",
      "Ayarlar `{file}` içinde; {db} bağlantısı için `.env.local` dosyasını örnekten kopyala."],
     ["local-dev", "kurulum"], ["lokal kurulum", "local setup"]),
    ("knowledge", "en", "{service} stores its data in {db}",
     ["{service} keeps its state in {db} {version}; reads go through a replica, writes to the primary.",
      "Connection settings are in `{file}`; the {obs} dashboard shows query latency per endpoint."],
     ["architecture", "database"], ["where is the data", "veri nerede"]),
    ("knowledge", "tr", "{service} dashboard'ları {obs} üzerinde",
     ["{service} için metrikler ve alarmlar {obs} üzerinde; ana panelde p95 gecikme, hata oranı ve kuyruk uzunluğu var.",
      "Alarm eşikleri `{file}` içinde tanımlı, değişiklik {person} onayıyla yapılır."],
     ["monitoring", "observability"], ["izleme", "dashboard"]),
    ("knowledge", "en", "How {service} is deployed with {infra}",
     ["{service} is packaged as a container and deployed with {infra}; the pipeline lives in `{file}`.",
      "Rollback is `{cmd}`; a deploy takes about {n} minutes end to end."],
     ["deploy", "infra"], ["deployment", "yayın süreci"]),
    ("knowledge", "mixed", "{service} release süreci ve {ci} pipeline'ı",
     ["{service} için {ci} pipeline'ı önce lint ve test, sonra image build, en son {env} deploy adımlarını çalıştırır.",
      "Manuel onay adımı production öncesinde; onaylayan kişi genelde {person}."],
     ["ci", "release"], ["pipeline", "release process"]),
    ("knowledge", "en", "API rate limits for {service}",
     ["The public API of {service} allows {big} requests per minute per token; above that it returns `429 Too Many Requests`.",
      "Internal callers use a separate pool configured in `{file}`."],
     ["api", "limits"], ["rate limit", "istek limiti"]),
    ("knowledge", "tr", "{client} entegrasyonu nasıl çalışıyor",
     ["{client} ile entegrasyon {service} üzerinden; siparişler webhook ile geliyor, günde yaklaşık {big} kayıt.",
      "Test ortamı bilgileri parola yöneticisinde '{client}' başlığı altında; teknik irtibat {person}."],
     ["integration", "client"], ["entegrasyon", "webhook"]),
    ("knowledge", "en", "Where the {service} runbook lives",
     ["The on-call runbook for {service} is `docs/runbook.md`; it covers restarts, {db} failover and the common `{error}` case.",
      "Update it in the same PR as any operational change."],
     ["runbook", "ops"], ["on-call guide", "nöbet dokümanı"]),
    ("knowledge", "tr", "{db} yedekleri ve geri dönüş",
     ["{db} yedekleri her gece 03:00'te alınıyor ve {n} gün saklanıyor; script `scripts/backup.sh`.",
      "Geri dönüş provası ayda bir {env} ortamında yapılıyor, son prova {ay} ayındaydı."],
     ["backup", "veritabanı"], ["yedekleme", "restore"]),
    ("knowledge", "mixed", "{lang} sürümü: {version}",
     ["{service} şu an {lang} {version} ile çalışıyor; CI image'ı ve Dockerfile aynı sürümü kullanmalı.",
      "Sürüm yükseltmesi {ticket} altında planlandı."],
     ["runtime", "version"], ["hangi sürüm", "runtime version"]),
    # ---- facts
    ("fact", "en", "{client} is based in {city}",
     ["{client} is based in {city}; their technical contact is {person}.",
      "Meetings are on {day} mornings, and invoices go through {service}."],
     ["client", "location"], ["müşteri", "customer"]),
    ("fact", "tr", "{client} merkezi {city_de}",
     ["{client} merkezi {city_de}; teknik irtibat kişisi {person}.",
      "Toplantılar genelde {gun} sabahları, faturalar {service} üzerinden kesiliyor."],
     ["müşteri", "lokasyon"], ["musteri", "client"]),
    ("fact", "en", "{person} is on call for {service} in {month}",
     ["{person} is the primary on-call for {service} in {month}, with {person2} as backup.",
      "Pages go through {obs}; escalate to the team lead after 30 minutes."],
     ["on-call", "team"], ["nöbet", "on call"]),
    ("fact", "tr", "{ay} nöbetçisi: {person}",
     ["{ay} ayında {service} için nöbetçi {person}, yedek {person2}.",
      "Alarmlar {obs} üzerinden geliyor; 30 dakikada çözülmezse ekip liderine eskale edilir."],
     ["nöbet", "ekip"], ["nobetci", "on-call"]),
    ("fact", "mixed", "{service} şu an {infra} üzerinde",
     ["{service} şu an {infra} üzerinde çalışıyor, {city} bölgesindeki sunucularda.",
      "Önceki altyapıdan geçiş {ay} ayında tamamlandı."],
     ["infra", "hosting"], ["hosting", "nerede çalışıyor"]),
    ("fact", "en", "{client} contract renews in {month}",
     ["The {client} support contract renews in {month}; {person} owns the relationship.",
      "The SLA is {n} hours for critical bugs in {service}."],
     ["client", "contract"], ["sözleşme", "SLA"]),
    # ---- identity
    ("identity", "en", "The user is {person}, {role} at {client}",
     ["The user is {person}, {role} at {client} in {city}.",
      "Works mostly in {lang} and {lang2}, owns the {service} service and reviews most of its PRs."],
     ["user", "team"], []),
    ("identity", "tr", "Kullanıcı {person}, {client} ekibinde {role}",
     ["Kullanıcı {person}; {client} ekibinde {role} olarak çalışıyor, {city_de} yaşıyor.",
      "Günlük olarak {lang} ve {lang2} yazıyor, {service} servisinin sahibi."],
     ["user", "ekip"], []),
]

TYPE_WEIGHTS = {"knowledge": 34, "rule": 15, "preference": 14, "lesson": 16, "fact": 18, "identity": 3}

DETAILS = {
    "en": ["This came up again in the {month} incident review.", "{person} confirmed it in the team channel.",
           "See `{file}` for the exact commands.", "The {ci} job checks this on every push.",
           "If unsure, ask {person} before changing it.", "It cost us about {n} hours the last time.",
           "Applies to {env} and {env2} as well.", "Related ticket: {ticket}.",
           "Written down after a long debugging session with {person2}.",
           "The {obs} alert for {service} links here.", "Double-check with `{cmd}` before merging.",
           "This matters most for the {service} service."],
    "tr": ["Bu konu {ay} ayındaki incident review'da tekrar konuşuldu.", "{person} ekip kanalında teyit etti.",
           "Komutların tam hali `{file}` içinde.", "{ci} her push'ta bunu kontrol ediyor.",
           "Emin değilsen değiştirmeden önce {person} ile konuş.", "Geçen sefer yaklaşık {n} saatimizi aldı.",
           "{env} ve {env2} ortamları için de geçerli.", "İlgili ticket: {ticket}.",
           "{person2} ile uzun bir debug oturumundan sonra not edildi.",
           "{service} için {obs} alarmı buraya link veriyor.", "Merge etmeden önce `{cmd}` ile kontrol et.",
           "Özellikle {service} servisi için önemli."],
}
DETAILS["mixed"] = DETAILS["tr"][:6] + DETAILS["en"][6:]

# --------------------------------------------------------------------------- queries

Q = [
    ("en", "how do I deploy {service} to {env}"), ("tr", "{service} {env} ortamına nasıl deploy edilir"),
    ("tr", "{service} canliya nasil cikilir"), ("en", "which package manager do we use for {lang}"),
    ("tr", "paket yoneticisi hangisi {pm} mi"), ("en", "{error} when installing dependencies"),
    ("tr", "{error} hatası alıyorum {service}"), ("en", "where is {client} based"),
    ("tr", "{client} nerede"), ("tr", "{client} hangi şehirde"), ("en", "who is on call for {service} this month"),
    ("tr", "bu ay nobetci kim"), ("en", "{db} connection pool too many connections"),
    ("tr", "migration geriye uyumlu olmalı mı {db}"), ("en", "fix flaky {test_tool} tests in {ci}"),
    ("tr", "lokalde {service} testleri nasil calistirilir"), ("en", "run {service} locally"),
    ("en", "can I deploy on {day} afternoon"), ("tr", "{gun} deploy yapabilir miyim"),
    ("tr", "sifre nerede tutuluyor"), ("en", "where do we keep passwords and api keys"),
    ("en", "rollback {service} after bad release"), ("tr", "{infra} guncellemesinden sonra {service} cokuyor"),
    ("en", "{service} dashboard in {obs}"), ("tr", "{service} loglari nerede"),
    ("en", "what {lang} version does {service} use"), ("tr", "{db} yedek ne zaman alınıyor"),
    ("en", "rate limit of the {service} api"), ("en", "commit message style"),
    ("tr", "commit mesajı türkçe mi ingilizce mi"), ("en", "prefer {framework} or {framework2} for a new service"),
    ("mixed", "{service} için {ci} pipeline adımları neler"), ("mixed", "{error} aldık {env} ortamında ne yapmalı"),
    ("en", "timezone bug in reports"), ("tr", "raporlar bir gün kayıyor saat dilimi"),
    ("en", "who owns {service}"), ("mixed", "{client} integration webhook limitleri"),
    ("en", "code review rules how many approvals"), ("tr", "PR merge için kaç onay lazım"),
    ("en", "backup before running {cmd} on {env}"), ("mixed", "{person} prefers what kind of PR"),
    ("en", "{infra} {version} upgrade notes for {service} and the {error} we saw on {env} last {month}"),
    ("tr", "geçen {ay} {service} servisinde {error} hatası neden olmuştu ve nasıl geri aldık"),
    ("en", "{error} fix"), ("tr", "{client} adresi"), ("en", "{service} runbook"), ("tr", "{pm} lockfile"),
    ("en", "ok go ahead"), ("tr", "tamam devam et"), ("en", "thanks, looks good"), ("tr", "evet aynen öyle yap"),
]

# --------------------------------------------------------------------------- helpers

_ASCII = str.maketrans("şŞğĞçÇöÖüÜıİ", "sSgGcCoOuUiI")
_VOWELS = "aeıioöuüAEIİOÖUÜ"
_HARD = "fstkçşhpFSTKÇŞHP"


def locative(word: str) -> str:
    """Turkish locative suffix with an apostrophe: İstanbul'da, Berlin'de, Münih'te, Iğdır'da."""
    vowel = next((c for c in reversed(word) if c in _VOWELS), "e")
    back = vowel in "aıouAIOU"
    first = "t" if word[-1] in _HARD else "d"
    return f"{word}'{first}{'a' if back else 'e'}"


def _pick(rng: random.Random) -> dict[str, str]:
    values = {}
    for key, options in V.items():
        a, b = rng.sample(options, 2)
        values[key], values[f"{key}2"] = a, b
    values["city_de"] = locative(values["city"])
    return values


def _slug(word: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", word.translate(_ASCII).lower()).strip("-")


def _fit(sentences: list[str], details: list[str], rng: random.Random) -> str:
    """The main sentences plus details until a random target length in [TEXT_MIN, TEXT_MAX]."""
    target = rng.randint(TEXT_MIN + 40, TEXT_MAX - 20)
    text = " ".join(sentences)
    pool = details[:]
    rng.shuffle(pool)
    while len(text) < target and pool:
        extra = pool.pop()
        if len(text) + 1 + len(extra) > TEXT_MAX:
            continue
        text += " " + extra
    if len(text) > TEXT_MAX:  # a long main text: cut at a sentence end
        cut = text.rfind(". ", 0, TEXT_MAX)
        text = text[:cut + 1] if cut >= TEXT_MIN else text[:TEXT_MAX]
    return text


def memory(rng: random.Random, end: dt.date = END) -> dict:
    """One memory as an import item."""
    kind = rng.choices(list(TYPE_WEIGHTS), weights=list(TYPE_WEIGHTS.values()))[0]
    type_, lang, title, sentences, tags, aliases = rng.choice([t for t in T if t[0] == kind])
    values = _pick(rng)
    fill = lambda s: s.format(**values)  # noqa: E731
    title = fill(title)
    details = [fill(d) for d in DETAILS[lang]]
    text = _fit([fill(s) for s in sentences], details, rng)
    if lang == "tr" and rng.random() < 0.2:  # typed without Turkish letters, as people do
        title, text = title.translate(_ASCII), text.translate(_ASCII)
    slot_tags = [_slug(values[k]) for k in ("service", "db", "pm", "infra", "client", "lang")
                 if "{" + k + "}" in "".join(sentences) + title]
    tag_list = list(dict.fromkeys(tags + rng.sample(slot_tags, min(len(slot_tags), rng.randint(0, 2)))))[:5]
    created = end - dt.timedelta(days=rng.randint(0, SPAN_DAYS))
    if kind == "identity":
        scope = "global"
    else:
        scope = "global" if rng.random() < 0.55 else f"project:{rng.choice(PROJECTS)}"
    item = {"title": title, "text": text, "type": type_, "tags": tag_list, "scope": scope,
            "created": created.isoformat()}
    if aliases and rng.random() < 0.3:
        item["aliases"] = rng.sample(aliases, min(len(aliases), rng.randint(1, 2)))
    if rng.random() < 0.3:
        item["last_used"] = (created + dt.timedelta(days=rng.randint(0, (end - created).days))).isoformat()
    return item


QUALIFIERS = [" ({ticket})", " ({env})", " [{project}]", " ({month})", " – {person}", " ({version})"]


def memories(n: int, seed: int = 1, end: dt.date = END) -> list[dict]:
    """`n` memories; a title already used gets a qualifier (ticket, env, project...) like people add."""
    rng = random.Random(seed)
    out, seen = [], set()
    for _ in range(n):
        item = memory(rng, end)
        base = item["title"]
        for _ in range(20):
            if item["title"] not in seen:
                break
            values = {**_pick(rng), "project": rng.choice(PROJECTS)}
            item["title"] = base + "".join(q.format(**values) for q in rng.sample(QUALIFIERS, rng.randint(1, 2)))
        seen.add(item["title"])
        out.append(item)
    return out


def queries(n: int = 200, seed: int = 2) -> list[str]:
    """Realistic prompts/queries, mixed TR/EN, 2-12 words each; about 8% chatter."""
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        _, template = rng.choice(Q)
        words = template.format(**_pick(rng)).split()
        if rng.random() < 0.15:
            words = [w.translate(_ASCII) for w in words]
        out.append(" ".join(words[:12]))
    return out


def write_jsonl(items: list[dict], fh) -> None:
    for item in items:
        fh.write(json.dumps(item, ensure_ascii=False) + "\n")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("n", type=int, nargs="?", default=1000, help="how many memories")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--end", type=dt.date.fromisoformat, default=END, help="latest created date (YYYY-MM-DD)")
    ap.add_argument("--out", help="file to write (default: stdout)")
    ap.add_argument("--queries", type=int, metavar="N", help="print N queries, one a line, instead")
    args = ap.parse_args(argv)
    if args.queries:
        print("\n".join(queries(args.queries, args.seed)))
        return
    items = memories(args.n, args.seed, args.end)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            write_jsonl(items, fh)
    else:
        write_jsonl(items, sys.stdout)


if __name__ == "__main__":
    main()
