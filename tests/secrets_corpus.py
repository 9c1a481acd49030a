"""A corpus for the secret guard: secrets to refuse, look-alikes to pass, example keys to pass with a warning.

Every secret is synthetic: generated from a fixed seed at import time in the
right shape (prefix, length, alphabet) but nobody's key. Prefixes are split
("gh" + "p_") so no file in the repository holds a token literally and
repository scanners stay quiet.

- SECRETS: (name, text) memory-like sentences, English, Turkish and mixed, one secret each.
- SECRET_VALUES: name -> a piece of that text which must never be written (not in `mask(text)`,
  not in `git log -p`); for a split or zero-width token it is the part after the split.
- LOOKALIKES: (name, text) that must pass with no refusal and no warning.
- EXAMPLES: (name, text) that pass with a warning (documented example keys, placeholders).
"""

import base64
import json
import random
import string

_rng = random.Random(20261201)
ALNUM = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
HEX = "0123456789abcdef"


def _r(n: int, alphabet: str = ALNUM) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


def _password() -> str:
    """A password people choose: a word, digits, a symbol."""
    word = _rng.choice(["Kedi", "Deniz", "Orange", "Falcon", "Lale", "Marmara", "Winter", "Simit"])
    return word + _r(4, string.digits) + _rng.choice("!.#%+") + _r(3, string.ascii_lowercase)


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _pem(label: str, lines: int) -> str:
    body = "\n".join(_r(64, B64) for _ in range(lines))
    return f"-----BEGIN {label}-----\n{body}\n{_r(24, B64)}==\n-----END {label}-----"


def _jwt() -> str:
    header = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    payload = _b64url(json.dumps({"sub": str(_rng.randrange(10**6)), "role": "admin", "iat": 1764547200}).encode())
    return f"{header}.{payload}.{_r(43, B64URL)}"


SECRETS: list[tuple[str, str]] = []
SECRET_VALUES: dict[str, str] = {}


def _add(name: str, text: str, value: str) -> None:
    assert value in text, name
    SECRETS.append((name, text))
    SECRET_VALUES[name] = value


def _one(name: str, template: str, value: str) -> None:
    _add(name, template.format(value), value)


RSA_KEY = _pem("RSA " + "PRIVATE KEY", 12)
EC_KEY = _pem("EC " + "PRIVATE KEY", 3)
OPENSSH_KEY = _pem("OPENSSH " + "PRIVATE KEY", 6)
TWILIO_SID, TWILIO_TOKEN = "AC" + _r(32, HEX), _r(32, HEX)
GH_SPLIT = "gh" + "p_" + _r(36)
ANT_SPLIT = "sk" + "-ant-api03-" + _r(93, B64URL) + "AA"
AWS_SPLIT = "AK" + "IA" + _r(16, UPPER_DIGITS)
GH_HIDDEN = "gh" + "p_" + _r(36)
OPENAI_HIDDEN = "sk" + "-proj-" + _r(100, B64URL)
AWS_HIDDEN = "AS" + "IA" + _r(16, UPPER_DIGITS)
PEM_LINE = _r(64, B64)

_one("aws-access-key-id", "Deploy user for the shop bucket uses access key {} (rotated every 90 days).",
     "AK" + "IA" + _r(16, UPPER_DIGITS))
_one("aws-secret-access-key", "~/.aws/credentials on the build box:\n[default]\naws_access_key_id = <see 1Password>\n"
     "aws_secret_access_key = {}\n", "k" + _r(39, B64))
_one("aws-key-id-tr", "Prod S3 için IAM kullanıcısının erişim anahtarı {}; bunu CI'a koyduk.",
     "AK" + "IA" + _r(16, UPPER_DIGITS))
_one("github-classic", "Token for the release bot: {} (repo + workflow scopes).", "gh" + "p_" + _r(36))
_one("github-fine-grained", "Fine-grained PAT for the docs site, expires in March: {}",
     "github" + "_pat_" + _r(22) + "_" + _r(59))
_one("github-app", "GitHub App installation token during the migration was {}", "gh" + "s_" + _r(36))
_one("github-oauth", "OAuth token from `gh auth token` on my laptop: {} — revoke after the demo.",
     "gh" + "o_" + _r(36))
_one("gitlab-pat", "GitLab personal access token for the mirror job: {}", "gl" + "pat-" + _r(20, B64URL))
_one("gitlab-deploy", "Registry deploy token (read_registry) için: {}", "gl" + "dt-" + _r(20, B64URL))
_one("gitlab-runner", "Runner'ı kaydederken şunu kullandık: "
     "gitlab-runner register --url https://gitlab.firma.local {}",
     "gl" + "rt-" + _r(20, B64URL))
_one("slack-bot", "Slack bot token for #deploys: {}",
     "xo" + "xb-" + _r(12, string.digits) + "-" + _r(13, string.digits) + "-" + _r(24))
_one("slack-user", "My Slack user token (xoxp, for the export script): {}",
     "xo" + "xp-" + _r(12, string.digits) + "-" + _r(12, string.digits) + "-" + _r(13, string.digits) + "-"
     + _r(32, HEX))
_one("slack-webhook", "Alerts go to {} — the #ops channel.",
     "https://hooks.slack" + ".com/services/T" + _r(8, UPPER_DIGITS) + "/B" + _r(10, UPPER_DIGITS) + "/" + _r(24))
_one("anthropic", "Anthropic key for the eval harness: {}", "sk" + "-ant-api03-" + _r(93, B64URL) + "AA")
_one("openai-project", "OpenAI project key (billing: research) {}", "sk" + "-proj-" + _r(156, B64URL))
_one("openai-legacy", "Eski OpenAI anahtarı hâlâ .env dosyasında duruyor: {}", "sk" + "-" + _r(48))
_one("google-api", "Maps JS API key restricted to *.shop.example: {}", "AI" + "za" + _r(35, B64URL))
_one("google-oauth-secret", "Google OAuth client secret for the admin login: {}", "GOC" + "SPX-" + _r(28, B64URL))
_one("stripe-live", "Stripe live secret key (never in tests): {}", "sk" + "_live_" + _r(24))
_one("stripe-restricted", "Restricted Stripe key for the reporting job: {}", "rk" + "_live_" + _r(24))
_one("stripe-webhook", "Stripe webhook signing secret {} — regenerate it if it leaks.", "wh" + "sec_" + _r(32))
_add("twilio", f"Twilio for SMS OTP: account {TWILIO_SID}, auth token {TWILIO_TOKEN}.", TWILIO_TOKEN)
_one("twilio-api-key", "Twilio API key for the IVR service is {}.", "S" + "K" + _r(32, HEX))
_one("sendgrid", "SendGrid key for transactional mail: {}", "S" + "G." + _r(22, B64URL) + "." + _r(43, B64URL))
_one("npm", "npm automation token for publishing @shop/ui: {}", "np" + "m_" + _r(36))
_one("pypi", "PyPI upload token (project scope) — {}", "py" + "pi-AgEIcHlwaS5vcmc" + _r(70, B64URL))
_one("huggingface", "HF token for pulling the gated model: {}", "h" + "f_" + _r(34, string.ascii_letters))
_one("digitalocean", "DigitalOcean API token used by terraform: {}", "do" + "p_v1_" + _r(64, HEX))
_one("shopify", "Shopify admin API access token for the sync app: {}", "shp" + "at_" + _r(32, HEX))
_one("mailgun", "Mailgun private key for the EU domain: {}", "ke" + "y-" + _r(32, HEX))
_one("discord-bot", "Discord bot token (moderation bot): {}",
     _b64url(("1" + _r(17, string.digits)).encode()) + "." + _r(6, B64URL) + "." + _r(38, B64URL))
_one("discord-webhook", "Build notifications post to {}",
     "https://discord" + ".com/api/webhooks/1" + _r(18, string.digits) + "/" + _r(68, B64URL))
_one("telegram", "Nöbetçi uyarıları için Telegram botu: {}",
     str(_rng.randrange(10**9, 10**10)) + ":A" + "A" + _r(33, B64URL))
_one("azure-storage", "Azure blob connection string: DefaultEndpointsProtocol=https;AccountName=shopassets;"
     "AccountKey={};EndpointSuffix=core.windows.net", _r(86, B64) + "==")
_add("rsa-private-key", f"Deploy key for the legacy box (id_rsa):\n{RSA_KEY}\n", RSA_KEY.splitlines()[3])
_add("ec-private-key", f"EC key used to sign webhooks:\n\n{EC_KEY}\n", EC_KEY.splitlines()[2])
_add("openssh-private-key", f"ssh anahtarı (yedek):\n{OPENSSH_KEY}", OPENSSH_KEY.splitlines()[4])
_add("private-key-header-only", "Pasted the start of the deploy key by mistake:\n-----BEGIN " + "RSA PRIVATE KEY-----\n"
     f"MIIEpAIBAAKCAQEA{PEM_LINE}\n", PEM_LINE)
_one("jwt", "Session JWT from staging for debugging: {}", _jwt())
_one("postgres-url", "DATABASE_URL=postgres://shop_app:{}@db.internal:5432/shop", _password())
_one("mysql-url", "Legacy MySQL: mysql://reporting:{}@10.0.3.7:3306/analytics", _password())
_one("redis-empty-user", "Celery broker: redis://:{}@cache.internal:6379/0", _r(24))
_one("amqp-url", "RabbitMQ: amqp://orders:{}@mq.internal:5672/%2F", _password())
_one("https-basic-auth", "Nexus mirror lives at https://ci-bot:{}@nexus.example.com/repository/npm/", _password())
_one("env-db-password", "Local .env for staging:\nDB_HOST=10.0.3.7\nDB_PASSWORD={}\nDB_NAME=shop\n", _password())
_one("env-lowercase-word", "Staging .env: DB_USER=shop and DB_PASSWORD={}", "tavsancik" + "sekiz")
_one("export-api-token", 'Add to ~/.zshrc: export API_TOKEN="{}"', _r(40))
_one("yaml-password", "config/database.yml:\nproduction:\n  adapter: postgresql\n  username: shop\n  password: {}\n",
     _password())
_one("json-password", 'Admin login for the demo: {{"user": "admin", "password": "{}"}}', _password())
_one("json-api-key", 'settings.json has "api_key": "{}" for the geocoder', _r(32))
_one("sifre-colon", "Sunucu şifre: {} (root değil, deploy kullanıcısı)", _password())
_one("sifre-equals", "Modem arayüzü: kullanici=admin sifre={}", _password())
_one("parola-space", "Wi-Fi parola {} olarak değiştirildi.", _password())
_one("parolasi-colon", "Test ortamının veritabanı parolası: {}", _password())
_one("password-flag", "Backup cron: mysqldump --user=backup --password={} shop > dump.sql", _password())
_one("pwd-yaml", "ftp:\n  host: files.partner.com\n  user: shopftp\n  pwd: {}\n", _password())
_one("client-secret", "Keycloak client_secret: {} (realm: shop)", _r(32))
_one("auth-token-yaml", "ci.yml:\n  env:\n    AUTH_TOKEN: {}\n", _r(40))
_one("django-secret-key", "settings.py had SECRET_KEY = '{}' hard-coded until last week.",
     _r(50, ALNUM + "!@#%^&*(-_=+)"))
_one("password-is", "The staging admin password is {} until we wire up SSO.", _password())
_one("bearer-header", 'curl -H "Authorization: Bearer {}" https://api.internal/v1/orders', _r(40, B64URL))
_one("github-token-mixed", "Staging'e deploy ederken GITHUB_TOKEN={} export et, sonra make release.",
     "gh" + "p_" + _r(36))
_add("split-github", f"Token (the terminal wrapped it):\n    {GH_SPLIT[:20]}\n    {GH_SPLIT[20:]}\n", GH_SPLIT[20:])
_add("split-anthropic-backslash", f"Anthropic key in the old script: {ANT_SPLIT[:23]}\\\n  {ANT_SPLIT[23:]}",
     ANT_SPLIT[23:])
_add("split-aws", f"IAM key id for the backup user is {AWS_SPLIT[:12]}\n{AWS_SPLIT[12:]} (the CSV wrapped it).",
     AWS_SPLIT[12:])
_add("zero-width-github", f"Release token: {GH_HIDDEN[:10]}\u200b{GH_HIDDEN[10:]}", GH_HIDDEN[10:])
_add("soft-hyphen-openai", f"OpenAI anahtarı: {OPENAI_HIDDEN[:30]}\u00ad{OPENAI_HIDDEN[30:]}", OPENAI_HIDDEN[30:])
_add("word-joiner-aws", f"Yedek kullanıcısının anahtarı {AWS_HIDDEN[:8]}\u2060{AWS_HIDDEN[8:]} idi.",
     AWS_HIDDEN[8:])
_one("high-entropy", "The payments callback verifies signatures with {} in the old cron script.", _r(48))

# Look-alikes: these must pass with no refusal and no warning.
SRI_384 = _r(64, B64)
NPM_SHA512 = _r(86, B64) + "=="
LOOKALIKES: list[tuple[str, str]] = [
    ("git-shas", "Fixed in 3f786850e387550fdab836ed7e6dc881de23001b, "
     "reverted in a94a8fe5ccb19ba61c4c0873d391e987982fbbd3."),
    ("uuids", "Run 123e4567-e89b-12d3-a456-426614174000 and 2b35b812-378d-43ac-b85a-f60e8a0d585b failed."),
    ("long-path", "Config: /home/ayse/projects/shop-backend/src/main/resources/application-production.yml"),
    ("windows-path", r"Logs are in C:\Users\ayse\AppData\Local\ShopDesktop\logs\2025-11-30\renderer-process.log"),
    ("camel-case", "Rename getUserProfileByAccountId2FactorAuth and TestUserProfileService2Handler_shouldReturn404"),
    ("ssh-user-url", "Mirror with git clone ssh://deploy@build.internal:2222/srv/git/shop-backend.git"),
    ("https-user-url", "The remote is https://ayse@github.com/shop/shop-backend.git; it asks for a token."),
    ("password-prose-en", "Reset your password from the admin panel; the password is in the vault, not in this repo."),
    ("password-pointer", "DB password lives in Vault at secret/db, read it with `vault kv get`."),
    ("password-1password", "password: stored in 1Password (item 'db-prod')"),
    ("sifre-prose", "Şifre değişikliği için IT'ye yaz; şifre sıfırlama linki 15 dakika geçerli."),
    ("parola-prose", "Parola sıfırlama ekranı /account/reset altında, parola politikası en az 12 karakter."),
    ("sifre-kasada", "şifre: kasada"),
    ("password-stdin", "echo $CR_PAT | docker login ghcr.io -u ayse --password-stdin"),
    ("env-placeholders", "DB_PASSWORD=${DB_PASSWORD}\nAPI_TOKEN=<token>\nSECRET_KEY=changeme\nREDIS_PASSWORD="),
    ("yaml-placeholders", "password: '***'\ntoken: xxx\nclient_secret: your-client-secret-here\napi_key: REDACTED"),
    ("template-placeholders", "password: {{ vault_db_password }}\nDSN uses %(pw)s and $PGPASSWORD; şifre: <şifre>"),
    ("actions-secret", "env:\n  GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}\n  NPM_TOKEN: ${{ secrets.NPM_TOKEN }}"),
    ("code-assignments",
     'password = os.environ["DB_PASSWORD"]\ntoken=self.token\nconnect(password=password, user=user)'),
    ("token-limits", "MAX_TOKENS=4096, max_tokens: 8192, token budget 200000 per request."),
    ("k8s-secret-ref", "valueFrom:\n  secretKeyRef:\n    name: db-creds\n    key: password"),
    ("url-placeholder-password", "DATABASE_URL=postgres://app:${DB_PASSWORD}@db:5432/shop"),
    ("bearer-variable", 'curl -H "Authorization: Bearer $TOKEN" https://api.internal/v1/orders'),
    ("package-lock", '"node_modules/react": {\n  "version": "18.2.0",\n  "resolved": '
     '"https://registry.npmjs.org/react/-/react-18.2.0.tgz",\n  "integrity": "sha512-' + NPM_SHA512 + '"\n}'),
    ("yarn-lock", '"@babel/core@^7.23.0":\n  version "7.23.2"\n  resolved "https://registry.yarnpkg.com/@babel/core/-/'
     'core-7.23.2.tgz#' + _r(40, HEX) + '"\n  integrity sha512-' + _r(86, B64) + "=="),
    ("npm-resolved",
     "resolved: https://registry.npmjs.org/@typescript-eslint/eslint-plugin/-/eslint-plugin-6.13.2.tgz"),
    ("go-sum", "github.com/stretchr/testify v1.8.4 h1:" + _r(43, B64) + "=\n"
     "github.com/stretchr/testify v1.8.4/go.mod h1:" + _r(43, B64) + "="),
    ("png-data-uri", "![logo](data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAA" + _r(300, B64) + "==)"),
    ("svg-data-uri", 'background: url("data:image/svg+xml;base64,PHN2ZyB4bWxucz0i' + _r(120, B64) + '");'),
    ("sri-script", '<script src="https://cdn.jsdelivr.net/npm/bootstrap@5.3.2/dist/js/bootstrap.bundle.min.js" '
     'integrity="sha384-' + SRI_384 + '" crossorigin="anonymous"></script>'),
    ("sri-sha256", "Nix pinned it with hash = \"sha256-" + _r(43, B64) + "=\";"),
    ("docker-digest", "Pin the image: node@sha256:" + _r(64, HEX)),
    ("tailwind", '<div class="flex items-center justify-between gap-4 rounded-xl bg-white/80 px-6 py-4 shadow-lg '
     'ring-1 ring-slate-900/5 backdrop-blur md:px-8 lg:grid-cols-[minmax(0,1fr)_320px] dark:bg-slate-800">'),
    ("css-modules", 'className="ProductCardGrid_productCardContainer__x7Yz2Qa9 ProductCardGrid_cardTitle__aB3xY"'),
    ("css-in-js", '<button class="css-1x2y3z4-Button sc-bdVaJa-kOmDoO MuiButtonBase-root-MuiButton-containedPrimary">'),
    ("semver", "Tagged v2.3.0-rc.1+build.20261130; the sk-learn model sk-classifier is fine."),
    ("long-hex", "SHA-512 of the release tarball: " + _r(128, HEX)),
    ("ssh-public-key", "authorized_keys: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + _r(43, B64) + " ayse@laptop"),
    ("certificate", "The CA we trust:\n" + _pem("CERTIFICATE", 8)),
    ("base64-text",
     "The header decodes fine: " + base64.b64encode(b"This is the staging banner, not a key at all.").decode()),
    ("turkish-long-words",
     "Çekoslovakyalılaştıramadıklarımızdanmışsınız ve muvaffakiyetsizleştiricileştiriveremeyeceklerimizden"),
    ("password-policy-tr",
     "Şifre en az 12 karakter olmalı, bir rakam ve bir sembol içermeli; parola 2FA ile korunuyor."),
    ("aws-prose", "Use AKIA... style keys only through the vault; the secret is in 1Password under 'aws-prod'."),
    ("email-tr", "Şifre sıfırlama maili noreply@firma.com.tr adresinden gelir, spam klasörüne bak."),
    ("webpack-chunk", "The bundle is main.3f4e5d6c7b8a9f0e1d2c.chunk.js and vendors~main.9a8b7c6d.chunk.js"),
    ("gh-auth-token", "Use `gh auth token` to print the token; never paste it here. GH_TOKEN is set by direnv."),
]

# Examples: documented example keys and placeholders pass, with a warning.
EXAMPLES: list[tuple[str, str]] = [
    ("aws-documented", "AWS docs use AKIAIOSFODNN7EXAMPLE with wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY."),
    ("aws-documented-assignment", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("github-x", "In the README, write the token as " + "gh" + "p_" + "x" * 36),
    ("openai-dots", "Set OPENAI_API_KEY=sk-...XXXX in .env (the real one is in 1Password)."),
    ("openai-your-key", "OPENAI_API_KEY=" + "sk" + "-your-openai-api-key-here"),
    ("slack-your-token", "SLACK_BOT_TOKEN=" + "xo" + "xb-your-slack-bot-token"),
    ("aws-x", "Template: aws_access_key_id = " + "AK" + "IA" + "X" * 16),
    ("huggingface-x", "hf token format: " + "h" + "f_" + "x" * 34),
    ("github-pat-placeholder", "Paste yours as " + "github" + "_pat_" + "<your-token>"),
    ("url-default-credentials", "Local dev DB: postgres://postgres:postgres@localhost:5432/shop"),
]
