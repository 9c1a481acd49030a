"""The web app: its routes, behind the guard (ui/security.py).

The handlers are plain synchronous code under `async def`: they run one at a time on the server's one loop,
so the index readers and vaults the server holds are never used by two requests at once (one person's
browser asks for a page at a time; a write takes the vault's lock as any writer does)."""

from __future__ import annotations

from pathlib import Path

from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from hafiza.vault.errors import HafizaError

from . import agent, health, memories, memory, review
from .hold import Hold
from .security import Guard, Keys
from .web import HERE, render


def build(root: Path, settings, keys: Keys | None = None, port_of=lambda: 0):
    """The ASGI app for the vault at `root`: (the guarded app, its keys)."""
    keys = keys or Keys()
    routes = [
        Route("/", memories.memories),
        Route("/memory/{id}", memory.memory),
        Route("/memory/{id}/edit", memory.edit, methods=["POST"]),
        Route("/memory/{id}/undo", memory.undo, methods=["POST"]),
        Route("/memory/{id}/{what}", memory.change, methods=["POST"]),
        Route("/review", review.queue),
        Route("/review/decide", review.decide, methods=["POST"]),
        Route("/review/related", review.judge, methods=["POST"]),
        Route("/review/resolve", review.resolve, methods=["POST"]),
        Route("/agent", agent.agent),
        Route("/health", health.health),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    app = Starlette(routes=routes, exception_handlers={HafizaError: _error, 404: _not_found})
    app.state.hold = Hold(root, settings)
    app.state.keys = keys
    return Guard(app, keys, port_of), keys


async def _error(request, exc: HafizaError):
    return render(request, "missing.html", status=400, message=exc.message)


async def _not_found(request, exc):
    return PlainTextResponse("404: no such page", status_code=404)
