"""Every setting hafiza takes from the environment, read in one place (stdlib only: the prompt path).

The edges read them once (the command line, the hook, the warm process, the
MCP server: `settings(os.environ)`) and pass what each part needs into the
library, which never looks at the environment itself. The vault's location
is resolved in hafiza.vault.format.paths, the model cache's in hafiza.indexer.embed.
"""

from __future__ import annotations

import os
from typing import Mapping, NamedTuple

from hafiza.vault.format.paths import config_dir

EMBEDDERS = ("usem3", "hash", "none")


class Settings(NamedTuple):
    embedder: str = "usem3"              # HAFIZA_EMBEDDER: usem3 (the model), hash (tests) or none
    profile_chars: int | None = None     # HAFIZA_PROFILE_CHARS: the session-start profile's budget
    hook_timeout: float | None = None    # HAFIZA_HOOK_TIMEOUT: seconds before an in-process hook gives up
    daemon: bool = True                  # HAFIZA_DAEMON=0: hooks never start a warm process
    daemon_idle: float | None = None     # HAFIZA_DAEMON_IDLE: seconds before an idle warm process exits
    blas_threads: str | None = None      # OPENBLAS_NUM_THREADS as the user set it (else hafiza uses one)
    model: str | None = None             # HAFIZA_MODEL: the offline model (hafiza.vault.offline.provider.make_provider)
    model_key: str | None = None         # HAFIZA_MODEL_KEY: its API key; kept out of repr, never written
    config: str | None = None            # the user's config folder (vault.paths.config_dir): lists team vaults

    def __repr__(self) -> str:
        # Settings get printed in logs and tracebacks; the key must not go with them.
        shown = self._replace(model_key="***") if self.model_key else self
        return "Settings(" + ", ".join(f"{k}={v!r}" for k, v in zip(self._fields, shown)) + ")"


def settings(environ: Mapping[str, str] | None = None) -> Settings:
    """The settings in `environ` (the process environment when None: for the edges only)."""
    env = os.environ if environ is None else environ
    return Settings(
        embedder=env.get("HAFIZA_EMBEDDER", "").strip().lower() or "usem3",
        profile_chars=_number(env.get("HAFIZA_PROFILE_CHARS"), int),
        hook_timeout=_number(env.get("HAFIZA_HOOK_TIMEOUT"), float),
        daemon=env.get("HAFIZA_DAEMON", "1") != "0",
        daemon_idle=_number(env.get("HAFIZA_DAEMON_IDLE"), float),
        blas_threads=env.get("OPENBLAS_NUM_THREADS"),
        model=env.get("HAFIZA_MODEL", "").strip() or None,
        model_key=env.get("HAFIZA_MODEL_KEY", "").strip() or None,
        config=str(config_dir(env)),
    )


def _number(value: str | None, kind):
    try:
        return kind(value) if value not in (None, "") else None
    except ValueError:
        return None  # a typo in a setting falls back to the default rather than break every hook


def embedder(settings: Settings, mode: str | None = None):
    """The embedder the settings name, or None when it is `none` or `mode` is keyword-only.

    numpy and the model package are imported only here, when the meaning channel is on.
    """
    if settings.embedder == "none" or mode == "keyword":
        return None
    from .embed import make_embedder

    return make_embedder(settings.embedder, blas_threads=settings.blas_threads)


def default_embedder():
    """The embedder the environment names: for the edges (commands, benchmarks), not the library."""
    return embedder(settings())
