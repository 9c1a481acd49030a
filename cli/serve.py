"""`hafiza mcp`: serve the vault to MCP clients (stdio, or streamable HTTP on loopback)."""

from __future__ import annotations

from hafiza.vault.errors import HafizaError

from .app import cli, emit, open_vault
from .args import arg, err, flag, folder, many


def _address(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise HafizaError(f"--http wants HOST:PORT, e.g. 127.0.0.1:8765 (got {value!r})")
    from hafiza.hooks.mcp import check_loopback

    return check_loopback(host or "127.0.0.1"), int(port)


@cli.command(
    arg("--http", metavar="HOST:PORT",
        help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio (loopback hosts only)."),
    arg("--project",
        help="Project whose memories recall adds to the global ones (default: the git repo of the cwd)."),
    flag("--users",
         help="With --http: serve the users of `hafiza token list`, each with a bearer token, their own vault "
              "and the team vaults they are granted."),
    arg("--sessions", type=int, metavar="N",
        help="With --users: sessions one user may hold open at once, 32 unless given; the next is refused (503)."),
    arg("--idle", type=float, metavar="SECONDS",
        help="With --users: close a session that has had no request for this long (1800 unless given)."),
    name="mcp",
)
def mcp_(ctx, http, project, users, sessions, idle):
    """Run the MCP server: recall, remember, update, add_aliases, supersede, forget, mark_used, get, list,
    profile, record_episode, search_sessions, set_fact, remove_fact, get_fact.

    Over stdio (the default) nothing but protocol is written to stdout. With no vault yet at the default
    location, it creates one as `hafiza init` would (and says so on stderr): an agent's first session
    must not find a server that died before it could say why. A folder named by --vault or HAFIZA_VAULT
    is never created: with no vault there it exits with an error naming it (`hafiza init` makes one).
    """
    from hafiza.hooks.mcp import serve
    from hafiza.vault.format.paths import is_default, is_vault, project_of

    address = _address(http) if http else None
    if users:
        if address is None:
            raise HafizaError("--users serves several people over HTTP: give --http 127.0.0.1:PORT too")
        from pathlib import Path

        from hafiza.hooks.shared import IDLE_SECONDS, SESSIONS_PER_USER, serve as serve_users

        sessions = SESSIONS_PER_USER if sessions is None else sessions
        idle = IDLE_SECONDS if idle is None else idle
        if sessions < 1 or not 0 < idle < float("inf"):
            raise HafizaError("--sessions wants a whole number from 1, --idle a number of seconds above 0")
        serve_users(Path(ctx.settings.config), ctx.settings, address, sessions, idle)
        return
    if not is_vault(ctx.root) and is_default(ctx.root):  # a misspelt --vault or HAFIZA_VAULT: open_vault's error
        from hafiza.vault.store.vault import Vault

        Vault.init(ctx.root, actor="mcp")
        err(f"hafiza: created a vault at {ctx.root} (none was there)")
    vault = open_vault(ctx)
    serve(vault.root, project or project_of(), address, ctx.settings)


@cli.group(
    flag("--json", "as_json", help="Print the users as JSON (never their tokens)."),
    bare=True,
)
def token(ctx, as_json):
    """The users of a shared server (`hafiza mcp --http HOST:PORT --users`): `token add USER`, `token list`,
    `token revoke USER`. Tokens are kept hashed in ~/.config/hafiza/users.json (0600)."""
    token_list(ctx, as_json)


@token.command(
    arg("user"),
    many("--team", dest="teams", metavar="NAME",
         help="A team vault (`hafiza vault list`) the user may read and write; repeatable."),
    arg("--personal", type=folder,
        help="The user's personal vault (default: ~/.local/share/hafiza/users/USER, created)."),
    flag("--json", "as_json", help="Print the user and the token (shown this once) as JSON."),
    name="add",
)
def token_add(ctx, user, teams, personal, as_json):
    """Add USER with a new token, printed once: give it to them, it is stored only hashed."""
    import os
    from pathlib import Path

    from hafiza.hooks.users import add
    from hafiza.vault.format.paths import data_dir

    made, secret = add(Path(ctx.settings.config), data_dir(os.environ), user, teams, personal)
    if as_json:
        emit({**made.to_json(), "token": secret})
        return
    err(f"added {made.name}: vault {made.vault}; teams: {', '.join(made.teams) or 'none'}")
    err("token (shown once; the client sends it as 'Authorization: Bearer <token>'):")
    print(secret)


@token.command(
    flag("--json", "as_json", help="Print the users as JSON (never their tokens)."),
    name="list",
)
def token_list(ctx, as_json):
    """List the users: name, vault, granted team vaults, when added."""
    from pathlib import Path

    from hafiza.hooks.users import listed

    found = listed(Path(ctx.settings.config))
    if as_json:
        emit([u.to_json() for u in found])
        return
    if not found:
        print("no users; `hafiza token add USER [--team NAME]` adds one")
    for u in found:
        print(f"{u.name:<16} {u.vault}  teams: {', '.join(u.teams) or 'none'}  added {u.created}")


@token.command(
    arg("user"),
    flag("--json", "as_json", help="Print the user whose token was revoked as JSON."),
    name="revoke",
)
def token_revoke(ctx, user, as_json):
    """Revoke USER's token; a running server refuses it from the next request. Their vault stays."""
    from pathlib import Path

    from hafiza.hooks.users import revoke

    gone = revoke(Path(ctx.settings.config), user)
    if as_json:
        emit(gone.to_json())
        return
    print(f"revoked {gone.name}'s token; their vault stays at {gone.vault}")
