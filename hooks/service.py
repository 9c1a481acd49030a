"""The answers both the warm process and the cold fallback give: one code path for both."""

from __future__ import annotations

from pathlib import Path

from hafiza.vault.errors import HafizaError

RECALL_LIMIT = 8  # more than the block shows: the session filter and budget cut afterwards


def answer(recall, request: dict, mode: str, profile_chars: int | None = None) -> dict:
    """Reply to one request: {"op": "recall" | "profile" | "ping", ...}. Raises HafizaError for one it
    cannot answer; the warm process turns that into an error line at the socket, in one place."""
    op = request.get("op")
    if op == "recall":
        from hafiza.indexer.recall import FLOOR, SEARCH_FLOOR

        mode = request.get("mode") or mode
        if mode not in recall.modes:
            raise HafizaError(f"mode {mode} is not available here", field="mode")
        hits = recall.search(
            request.get("query") or "", limit=int(request.get("limit") or RECALL_LIMIT), mode=mode,
            project=request.get("project"), all_scopes=bool(request.get("all_scopes")),
            include_inactive=bool(request.get("include_inactive")),
            floor=SEARCH_FLOOR if request.get("floor") == "search" else FLOOR, exclude=request.get("exclude") or (),
            context=request.get("context") or "")
        reply = {"mode": mode, "hits": [h.to_json(explain=bool(request.get("explain"))) for h in hits]}
        if left_out := recall.index.unparsable():  # `hafiza search` names them, as its in-process search does
            reply["unparsable"] = left_out
        roots = getattr(recall, "roots", None)  # several vaults (indexer/vaults.py): where each hit's vault is
        return {**reply, "vaults": roots()} if roots else reply
    if op == "profile":
        from hafiza.indexer.profile import build_profile

        cap = request.get("cap") or profile_chars
        return build_profile(recall.index, Path(recall.root), request.get("project"), cap).to_json()
    if op == "ping":
        return {"mode": mode}
    raise HafizaError(f"unknown op {op!r}", field="op")


def cold(root: Path, request: dict, settings) -> dict:
    """The fallback when no warm process answers: in-process and keyword-only (no model load), over the
    personal vault and the team vaults the user's config lists (settings: hafiza.indexer.config.Settings)."""
    from hafiza.indexer.vaults import open_recall

    recall, mode = open_recall(root, "keyword", embedder=settings, notice=lambda _: None, files=True)
    return answer(recall, request, mode, settings.profile_chars)
