"""A second corpus for the secret guard, written from issue 29's attack pass and kept apart from
secrets_corpus.py: passwords as people type them (command lines, connection strings, assignments in Turkish
and English, .env, YAML, JSON, INI and docker-compose files), and the look-alikes that must keep passing.
bench/secret_guard.py drives it through every write path and publishes the figures.

Every secret is synthetic, generated from a fixed seed; token prefixes are split ("gh" + "p_") so no file in
the repository holds one literally.

- SECRETS: (name, text, value): `value` is the piece of `text` that must never reach git.
- LOOKALIKES: (name, text): must be written as they are, with no refusal and no warning.
- KNOWN_MISSES: names of SECRETS the guard lets through today, each with why (published in docs/safety.md).
"""

import random
import string

_rng = random.Random(20261207)
ALNUM = string.ascii_letters + string.digits


def _r(n: int, alphabet: str = ALNUM) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


def _pw() -> str:
    """A password people choose: a capitalised word, digits, a symbol, letters."""
    word = _rng.choice(["Kedi", "Deniz", "Orange", "Falcon", "Lale", "Marmara", "Winter", "Simit", "Bogaz", "Ankara"])
    return word + _r(4, string.digits) + _rng.choice("!.#%+_") + _r(3, string.ascii_lowercase)


def _plain() -> str:
    """A password with no symbol: letters and digits, as a generator without symbols makes them."""
    return _r(6, string.ascii_lowercase) + _r(3, string.digits) + _r(3, string.ascii_uppercase)


SECRETS: list[tuple[str, str, str]] = []


def _add(name: str, template: str, value: str | None = None) -> None:
    value = value or _pw()
    text = template.format(v=value)
    assert value in text, name
    SECRETS.append((name, text, value))


# Command lines (issue 29's list first).
_add("docker-login-p", "Registry login on the runner: docker login -u ci -p {v} registry.shop.local")
_add("docker-login-password", "podman login --password {v} --username deploy quay.io")
_add("docker-login-equals", "docker login --username=ci --password={v} ghcr.io")
_add("mysql-attached", "Prod'a bağlanmak için: mysql -uroot -p{v} shop")
_add("mysql-attached-quoted", "mysqldump -u backup -p'{v}' --all-databases > all.sql")
_add("mariadb-attached", "mariadb -h 10.0.3.7 -u app -p{v} -e 'show tables'", _plain())
_add("curl-user", "curl -u admin:{v} https://jenkins.shop.local/api/json")
_add("curl-user-long", "curl --user deploy:{v} -X POST https://nexus.shop.local/service/rest/v1/components")
_add("curl-user-quoted", 'curl -s -u "reporter:{v}" https://grafana.shop.local/api/dashboards')
_add("sshpass-quoted", "sshpass -p '{v}' ssh deploy@10.0.0.4 'sudo systemctl restart shop'")
_add("sshpass-bare", "Eski sunucu için: sshpass -p {v} scp dump.sql root@10.0.0.9:/tmp/")
_add("pgpassword-prefix", "PGPASSWORD={v} psql -h db.internal -U shop -d shop")
_add("pgpassword-export", "export PGPASSWORD='{v}'")
_add("mysql-pwd-env", "MYSQL_PWD={v} mysql -u reporting analytics < report.sql")
_add("redis-cli-a", "redis-cli -h cache.internal -a {v} FLUSHALL  # never on prod")
_add("mongo-p", "mongosh --host mongo.internal -u admin -p {v} --authenticationDatabase admin")
_add("sqlcmd-P", "sqlcmd -S sql.internal -U sa -P {v} -Q 'SELECT 1'")
_add("ldapsearch-w", "ldapsearch -x -D cn=admin,dc=shop,dc=local -w {v} -b dc=shop,dc=local")
_add("zip-P", "Arşivi şifreledik: zip -P {v} -r backup.zip ./dumps")
_add("7z-p", "7z a -p{v} secrets.7z ./certs")
_add("keytool-storepass", "keytool -importcert -keystore shop.jks -storepass {v} -file ca.pem")
_add("openssl-passout", "openssl pkcs12 -export -in cert.pem -inkey key.pem -passout pass:{v} -out shop.p12")
_add("gpg-passphrase", "gpg --batch --passphrase {v} -d backup.tar.gpg")
_add("sqlplus", "sqlplus scott/{v}@orcl @report.sql")
_add("htpasswd-b", "htpasswd -b /etc/nginx/.htpasswd admin {v}")
_add("echo-password-stdin", "echo {v} | docker login -u ci --password-stdin registry.shop.local")
_add("echo-sudo-S", "echo '{v}' | sudo -S apt-get upgrade -y")
_add("az-login-p", "az login -u ops@shop.com -p {v}")
_add("smbclient-U", "smbclient //fs.internal/share -U muhasebe%{v}")
_add("git-credential-url", "git clone https://deploy:{v}@git.shop.local/shop/backend.git")
_add("wget-password", "wget --user=mirror --password={v} https://files.partner.com/export.csv")
_add("kubectl-from-literal",
     "kubectl create secret generic db --from-literal=username=shop --from-literal=password={v}")
_add("docker-run-env", "docker run -e POSTGRES_PASSWORD={v} -p 5432:5432 postgres:16")
_add("helm-set", "helm upgrade shop ./chart --set redis.auth.password={v}")
_add("password-flag-space", "./migrate --host db.internal --user shop --password {v}")

# Connection strings.
_add("userinfo-no-scheme", "DB: app:{v}@db.internal:5432/shop")
_add("userinfo-ip-port", "Eski MySQL shop:{v}@10.0.3.7:3306 üzerinde duruyor.")
_add("postgres-url", "DATABASE_URL=postgresql://shop:{v}@db.internal:5432/shop?sslmode=require")
_add("mongodb-srv", "mongodb+srv://admin:{v}@cluster0.abcde.mongodb.net/shop")
_add("redis-url", "REDIS_URL=redis://default:{v}@cache.internal:6379/0")
_add("jdbc-password", "jdbc:sqlserver://sql.internal:1433;databaseName=shop;user=sa;password={v};")
_add("ado-connection", "Server=sql.internal;Database=shop;User Id=shop;Password={v};")
_add("libpq-keywords", "psql 'host=db.internal dbname=shop user=shop password={v}'")
_add("amqp-url", "CELERY_BROKER_URL=amqp://orders:{v}@mq.internal:5672//")
_add("ftp-url", "Partner dosyaları: ftp://partner:{v}@files.partner.com/outgoing/")
_add("smtp-url", "EMAIL_URL=smtp://postmaster%40shop.com:{v}@smtp.mailgun.org:587")

# Assignments, English and Turkish.
_add("dbpassword-colon", "dbpassword: {v}")
_add("smtp-password-camel", "smtpPassword = {v}")
_add("db-pass", "db_pass: {v}")
_add("mail-passwd", "mail_passwd={v}")
_add("jwtsecret", "jwtsecret: {v}")
_add("webhook-secret", "WEBHOOK_SECRET={v}", _r(32))
_add("session-secret-quoted", "session_secret = '{v}'", _r(40))
_add("api-key-unclosed", "API_KEY='{v}", _r(32))
_add("token-unclosed-double", 'export SLACK_TOKEN="{v}', _r(40))
_add("password-is-en", "The root password for the NAS is {v}, change it after the audit.")
_add("password-was-colon", "Old admin password: {v}")
_add("sifresi-tr", "Veritabanı şifresi: {v}")
_add("sifre-yaml-tr", "sunucu:\n  kullanici: deploy\n  şifre: {v}\n")
_add("parolasi-tr", "Wi-Fi parolası {v} olarak değişti.")
_add("sifre-eq-tr", "Modem: kullanici=admin sifre={v}")
_add("parola-colon-tr", "VPN parola: {v}")
_add("gizli-anahtar-tr", "Ödeme servisinin gizli anahtarı: {v}", _r(32))
_add("secret-key-en", "secret_key: {v}", _r(40))
_add("client-secret-json", '{{"client_id": "shop-web", "client_secret": "{v}"}}', _r(32))
_add("tilde-token", "Azure AD app secret: {v}", _r(3) + "8Q~" + _r(34, ALNUM + "_~.-"))
_add("tilde-generic", "Session cookie value {v} from the admin panel", _r(18) + "~" + _r(22))
_add("github-after-percent", "Callback: https://ci.shop.local/hook?token%3D{v}%26ref%3Dmain",
     "gh" + "p_" + _r(36))

# Config files.
_add("dotenv-file", "# .env\nAPP_ENV=production\nDB_HOST=db.internal\nDB_USER=shop\nDB_PASS={v}\nLOG_LEVEL=info\n")
_add("dotenv-quoted", '# .env.production\nSTRIPE_WEBHOOK_SECRET="{v}"\n', _r(32))
_add("dotenv-export", "export AWS_SECRET_ACCESS_KEY={v}\nexport AWS_DEFAULT_REGION=eu-central-1\n", _r(40, ALNUM + "/+"))
_add("yaml-nested", "production:\n  database:\n    host: db.internal\n    username: shop\n    password: {v}\n")
_add("yaml-quoted", "smtp:\n  user: noreply@shop.com\n  password: \"{v}\"\n")
_add("yaml-dbpassword", "spring:\n  datasource:\n    url: jdbc:postgresql://db:5432/shop\n    dbpassword: {v}\n")
_add("json-config", '{{\n  "db": {{\n    "host": "db.internal",\n    "user": "shop",\n    "password": "{v}"\n  }}\n}}')
_add("json-token", '{{"registry": "https://npm.shop.local", "authToken": "{v}"}}', _r(36))
_add("ini-section", "[database]\nhost = db.internal\nuser = shop\npassword = {v}\n")
_add("ini-mysql-client", "~/.my.cnf:\n[client]\nuser=root\npassword={v}\n")
_add("pgpass-line", "~/.pgpass: db.internal:5432:shop:shop:{v}")
_add("compose-env-list", "services:\n  db:\n    image: postgres:16\n    environment:\n      - POSTGRES_PASSWORD={v}\n")
_add("compose-env-map", "services:\n  mysql:\n    image: mysql:8\n    environment:\n      MYSQL_ROOT_PASSWORD: {v}\n")
_add("compose-redis-command", "services:\n  redis:\n    command: redis-server --requirepass {v}\n")
_add("netrc", "~/.netrc:\nmachine git.shop.local login deploy password {v}\n")
_add("npmrc", "//registry.npmjs.org/:_authToken={v}", "np" + "m_" + _r(36))
_add("pip-conf", "[global]\nindex-url = https://deploy:{v}@pypi.shop.local/simple\n")
_add("toml-password", '[tool.poetry.http-basic.shop]\nusername = "deploy"\npassword = "{v}"\n')
_add("properties-file", "spring.datasource.password={v}\nspring.datasource.username=shop\n")
_add("xml-password", "<add key=\"DbPassword\" value=\"{v}\" />")
_add("terraform-tfvars", 'db_password = "{v}"\nregion = "eu-central-1"\n')

# Written after the guard above was done and measured once before any change for them: it found 20 of these
# 30 (docs/safety.md). The forms it then learned are general ones (an attached `-pPW` after `login`, an
# all-caps NAME ending in PASS, `define('DB_PASSWORD', '…')`, `AUTH PW`, `rabbitmqctl add_user`, `mc alias
# set`, `net use`); the rest are KNOWN_MISSES.
_add("fresh-pg-dump-env", "PGPASSWORD='{v}' pg_dump -h db -U shop shop > shop.sql")
_add("fresh-mysqladmin", "mysqladmin -u root -p{v} shutdown")
_add("fresh-docker-login-attached", "docker login -p{v} -u ci registry.local", _plain())
_add("fresh-podman-login-eq", "podman login -u ci -p={v} quay.io", _plain())
_add("fresh-curl-basic-url", "curl https://admin:{v}@jenkins.local/api/json")
_add("fresh-wget-http-password", "wget --http-user=ci --http-password={v} https://files.local/a.tgz")
_add("fresh-mongodump-uri", "mongodump --uri mongodb://backup:{v}@mongo.local:27017/shop")
_add("fresh-redis-auth", "redis-cli -h cache AUTH {v}")
_add("fresh-psql-conninfo", 'psql "postgresql://shop:{v}@db.local/shop"')
_add("fresh-sshpass-env", "SSHPASS={v} sshpass -e ssh deploy@10.0.0.4")
_add("fresh-rabbitmq-add-user", "rabbitmqctl add_user orders {v}")
_add("fresh-mc-alias", "mc alias set prod https://s3.local ADMINKEY {v}", _plain())
_add("fresh-net-use", "net use \\\\fs\\share {v} /user:CORP\\ayse")
_add("fresh-runas", "echo {v}| runas /user:admin cmd")
_add("fresh-lftp", "lftp -u partner,{v} ftp.partner.com")
_add("fresh-yaml-secret-key-base", "rails:\n  secret_key_base: {v}\n", _r(64, "0123456789abcdef"))
_add("fresh-env-passphrase", "GPG_PASSPHRASE={v}")
_add("fresh-ini-pass", "[smtp]\nuser = noreply\npass = {v}\n")
_add("fresh-json-pwd", '{{"user": "sa", "pwd": "{v}"}}')
_add("fresh-tr-sifrem", "Benim sunucu şifrem {v} idi, değiştirdim.")
_add("fresh-tr-parolasi-eq", "wifi_parolasi={v}")
_add("fresh-en-pass-is", "The wifi pass is {v}")
_add("fresh-en-login-with", "Log in with admin / {v} on the router.")
_add("fresh-compose-mysql", "services:\n  db:\n    environment:\n      - MYSQL_PASSWORD={v}\n")
_add("fresh-dotenv-redis", "REDIS_PASS={v}\n")
_add("fresh-k8s-secret-data", "apiVersion: v1\nkind: Secret\ndata:\n  password: {v}\n", "R3VuZXM3NzMxIWthcA==")
_add("fresh-xml-connection", '<add name="Shop" connectionString="Server=db;User Id=sa;Password={v};" />')
_add("fresh-java-properties", "db.password = {v}")
_add("fresh-php-define", "define('DB_PASSWORD', '{v}');")
_add("fresh-python-kwarg", "psycopg2.connect(host='db', user='shop', password='{v}')")

# Why each miss is let through (published in docs/safety.md with the figures).
KNOWN_MISSES: dict[str, str] = {
    "pgpass-line": "a .pgpass line is host:port:db:user:password with no key word; a bare field could be anything",
    "fresh-runas": "`echo PW| runas`: runas reads no password from a pipe by design, so no rule looks for it",
    "fresh-yaml-secret-key-base": "the key word is inside the name (`secret_key_base`), not at its end; the value is "
                                  "64 hex characters, which the entropy rule leaves to git shas",
    "fresh-en-login-with": "`admin / PW` in prose: a slash between two words is no assignment",
}

LOOKALIKES: list[tuple[str, str]] = [
    ("docker-login-variable", 'docker login -u ci -p "$DOCKER_PASSWORD" registry.shop.local'),
    ("docker-login-braces", "docker login -u ci -p ${REGISTRY_PASSWORD} registry.shop.local"),
    ("docker-password-stdin", "echo $CR_PAT | docker login ghcr.io -u ayse --password-stdin"),
    ("docker-run-port", "docker run -d -p 8080:80 -p 443:443 nginx:1.27"),
    ("docker-image-digest", "Pinned: node:20@sha256:" + _r(64, "0123456789abcdef")),
    ("curl-user-variable", "curl -u deploy:$API_TOKEN https://nexus.shop.local/service/rest/v1/status"),
    ("curl-user-no-password", "curl -u deploy https://nexus.shop.local (it asks for the password)"),
    ("curl-user-env", 'curl -u "$NEXUS_USER:$NEXUS_PASSWORD" https://nexus.shop.local'),
    ("curl-output", "curl -sSfL -o install.sh https://get.docker.com && sh install.sh"),
    ("mysql-p-prompt", "Run mysql -u root -p and type the password when it asks."),
    ("mysql-p-database", "mysql -u root -p shop < schema.sql"),
    ("mysql-port", "mysql -h 127.0.0.1 -P 3306 -u root -p"),
    ("pgpassword-prose", "psql reads PGPASSWORD from the environment; set it in direnv, never in a script."),
    ("pgpassword-variable", "PGPASSWORD=$DB_PASSWORD psql -h db.internal -U shop"),
    ("pgpassword-empty", "unset PGPASSWORD; export PGPASSWORD="),
    ("sshpass-env", "sshpass -e ssh deploy@10.0.0.4 (SSHPASS comes from the CI secret store)"),
    ("sshpass-file", "sshpass -f ~/.ssh/pw.txt ssh deploy@10.0.0.4"),
    ("ssh-port", "ssh -p 2222 deploy@build.internal"),
    ("mkdir-p", "mkdir -p ~/.config/hafiza && cp config.toml ~/.config/hafiza/"),
    ("pip-install", "pip install -r requirements.txt -c constraints.txt -p"),
    ("redis-cli-prose", "redis-cli -a asks for nothing; pass the password with REDISCLI_AUTH instead."),
    ("password-placeholder-angle", "password: <password>"),
    ("password-stars", "password: ***"),
    ("password-changeme", "dbpassword: changeme"),
    ("password-env-template", "DB_PASSWORD=${DB_PASSWORD}"),
    ("password-jinja", "password: {{ vault_db_password }}"),
    ("password-helm-ref", "password: {{ .Values.db.password }}"),
    ("password-k8s-ref", "env:\n  - name: DB_PASSWORD\n    valueFrom:\n      secretKeyRef:\n        name: db\n        key: password"),
    ("compose-env-ref", "services:\n  db:\n    environment:\n      POSTGRES_PASSWORD: ${POSTGRES_PASSWORD}\n"),
    ("compose-secret-file", "services:\n  db:\n    environment:\n      POSTGRES_PASSWORD_FILE: /run/secrets/db_password\n"),
    ("dotenv-empty", "# .env.example\nDB_PASSWORD=\nAPI_TOKEN=\nSECRET_KEY=\n"),
    ("dotenv-example", "# .env.example\nDB_PASSWORD=your-password-here\nAPI_TOKEN=<token>\n"),
    ("ini-no-password", "[database]\nhost = db.internal\nuser = shop\n; password comes from PGPASSFILE\n"),
    ("json-null", '{"password": null, "token": ""}'),
    ("json-schema", '{"type": "object", "properties": {"password": {"type": "string", "minLength": 12}}}'),
    ("userinfo-variable", "app:${DB_PASSWORD}@db.internal:5432/shop"),
    ("scp-path", "scp dump.sql deploy@10.0.0.9:/tmp/ and git@github.com:shop/backend.git"),
    ("email-with-port", "Mail goes through noreply@shop.com via smtp.shop.com:587"),
    ("mailto", "Write to mailto:ops@shop.com/ for access."),
    ("time-at", "Standup 09:30@zoom/standup every day."),
    ("npm-scoped", "npm i @shop/ui@2.3.1 @types/node@20.11.5"),
    ("python-decorator", "@app.route('/login', methods=['POST'])\ndef login(): ..."),
    ("password-prose-en", "Passwords rotate every 90 days; the password is in 1Password under 'db-prod'."),
    ("password-prose-tr", "Şifre sıfırlama linki 15 dakika geçerli; parola en az 12 karakter olmalı."),
    ("sifre-pointer-tr", "şifre: kasada, parola: Bitwarden'da"),
    ("bypass-compass", "bypass: true\ncompass: north\nsurpass the limit"),
    ("onepassword-cli", "op read op://prod/db/password > /dev/null"),
    ("vault-cli", "vault kv get -field=password secret/db"),
    ("aws-cli-profile", "aws --profile prod s3 ls s3://shop-assets"),
    ("gpg-symmetric-prompt", "gpg --symmetric backup.tar (asks for the passphrase)"),
    ("keytool-prompt", "keytool -importcert -keystore shop.jks -file ca.pem (it asks for the store password)"),
    ("openssl-env", "openssl pkcs12 -export -passout env:P12_PASSWORD -out shop.p12"),
    ("openssl-file", "openssl rsa -in key.pem -passin file:/run/secrets/key_pass"),
    ("zip-prompt", "zip -e -r backup.zip ./dumps (prompts for the password)"),
    ("htpasswd-prompt", "htpasswd -c /etc/nginx/.htpasswd admin"),
    ("password-flag-prose", "use the --password flag only in scripts you own"),
    ("tilde-path", "Config lives in ~/.config/shop/settings.toml and ~/projects/shop-backend/src"),
    ("percent-encoded-url", "https://shop.local/search?q%3Dkedi%20mamas%C4%B1%26page%3D2"),
    ("token-counts", "MAX_TOKENS=4096, token budget 200000 per request, tokenizer cl100k_base"),
    ("git-sha-url", "https://github.com/shop/backend/commit/3f786850e387550fdab836ed7e6dc881de23001b"),
    ("api-key-header-variable", 'curl -H "X-Api-Key: $SHOP_API_KEY" https://api.shop.local/v1/orders'),
    # Written with the fresh secrets above, never tuned on.
    ("fresh-stdin-file", "docker login -u ci --password-stdin < ~/.docker-pw"),
    ("fresh-mysqladmin-prompt", "mysqladmin -u root -p shutdown (it asks)"),
    ("fresh-pgpassword-prose", "PGPASSWORD is read by pg_dump too; never export it in .bashrc"),
    ("fresh-redis-askpass", "redis-cli --askpass"),
    ("fresh-rabbitmq-prompt", "rabbitmqctl change_password orders (prompts since 3.12)"),
    ("fresh-curl-user-variable", 'curl -u "$USER" https://api.local'),
    ("fresh-php-getenv", "define('DB_PASSWORD', getenv('DB_PASSWORD'));"),
    ("fresh-python-environ", "psycopg2.connect(host='db', user='shop', password=os.environ['PW'])"),
    ("fresh-properties-ref", "db.password = ${DB_PASSWORD}"),
    ("fresh-pass-prose", "The wifi pass is on the fridge."),
    ("fresh-login-prose", "Log in with your SSO account on the router."),
    ("fresh-tr-placeholder", "wifi_parolasi=<buraya>"),
    ("fresh-tr-prose", "Benim şifrem kasada duruyor, sorma."),
    ("fresh-ssh-key", "ssh -p 2222 -i ~/.ssh/id_ed25519 deploy@host"),
    ("fresh-pip-index", "pip install --index-url https://pypi.local/simple pkg"),
    ("fresh-git-push", "git push https://github.com/shop/backend.git main"),
    ("fresh-npm-login", "npm login --registry https://npm.local"),
    ("fresh-kubectl-jsonpath", "kubectl get secret db -o jsonpath='{.data.password}' | base64 -d"),
    ("fresh-op-run", "Use `op run --env-file .env -- make deploy` so secrets stay in 1Password"),
    ("fresh-gh-token-variable", 'token=$(gh auth token) && curl -H "Authorization: Bearer $token" https://api.github.com'),
    ("camel-identifiers", "resetPasswordToken, passwordResetExpires and hashPassword(user.password) in auth.ts"),
]
