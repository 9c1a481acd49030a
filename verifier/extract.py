"""Claims drawn from a memory's text, so the verifier can check memories nobody annotated.

Deterministic first: paths the text names that exist in the project, scripts
it runs (`npm run X`, `pnpm X`, `make X`, `just X`) that the project defines,
branches (`release/2.x`) the repository has, and URLs. A model, where one is
configured, may suggest more; code keeps an argument only if it appears
verbatim in the memory's text and the probe's own validation passes, so a
model cannot invent a path, and an instruction hidden in a memory is text,
not a command.
"""

from __future__ import annotations

import re
from pathlib import Path

from hafiza.vault.errors import HafizaError
from hafiza.vault.format.layout import vault_rel
from hafiza.vault.format.mentions import mentioned
from hafiza.vault.store.projects import folder

from . import safety
from .probes import REGISTRY, Context, runnable_names
from .tools import git

_RUN = re.compile(r"\b(?:npm run|pnpm run|pnpm|yarn run|yarn|bun run|make|just)\s+([A-Za-z0-9][\w:.\-/]*)")
_BRANCH = re.compile(r"(?<![\w/.-])((?:release|feature|hotfix|bugfix|fix|support)/[\w.\-/]+[\w])")
_URL = re.compile(r"https?://[^\s<>`'\")\]]+")
_PULL = re.compile(r"^https://github\.com/[\w.-]+/[\w.-]+/pull/\d+/?$")
MAX_CLAIMS = 8
SCHEMA = {
    "type": "object",
    "required": ["claims"],
    "properties": {"claims": {"type": "array", "maxItems": 12, "items": {
        "type": "object", "required": ["probe", "args"],
        "properties": {"probe": {"enum": list(REGISTRY)}, "args": {"type": "object"}}}}},
}


def extract(text: str, root: Path | None) -> list[dict]:
    """Claims a careful reader would check, in order of appearance, at most MAX_CLAIMS."""
    claims: list[dict] = []
    if root is not None:
        for path in mentioned(text):
            path = path.removeprefix("./")  # still verbatim in the text, and the form the project lists
            if not path.startswith("/") and _exists(root, path):
                claims.append({"probe": "path", "args": {"path": path}})
        scripts = set().union(*runnable_names(root).values()) if root.is_dir() else set()
        for name in _RUN.findall(text):
            name = name.rstrip(".:")
            if name in scripts:
                claims.append({"probe": "script", "args": {"name": name}})
        for branch in _BRANCH.findall(text):
            if git(root, "rev-parse", "--verify", "--quiet", "--end-of-options", f"refs/heads/{branch}"):
                claims.append({"probe": "branch", "args": {"name": branch}})
    for url in _URL.findall(text):
        url = url.rstrip(".,;:")
        claims.append({"probe": "pr" if _PULL.match(url) else "url", "args": {"url": url}})
    return vet(claims, text, root)[0][:MAX_CLAIMS]  # the same checks as a model's: nothing a probe would refuse


def from_model(provider, text: str, root: Path | None) -> tuple[list[dict], list[str]]:
    """The model's claims that code accepts, and why each other one was dropped."""
    prompt = (f"Note from a developer's memory:\n{text[:2000]}\n\nList the checkable claims it makes about the "
              "project: files (probe path, args.path), text in a file (contains: path, text), definitions "
              "(symbol: path, name), scripts (script: name), packages (dependency: name), branches (branch: "
              "name), commits (commit: sha), URLs (url: url). Copy every argument exactly as written in the note. "
              'Answer as JSON: {"claims": [{"probe": str, "args": {...}}]}')
    answer = provider.ask(prompt, SCHEMA)
    return vet(answer.data["claims"], text, root)


def vet(claims, text: str, root: Path | None) -> tuple[list[dict], list[str]]:
    """Keep a claim only if every argument appears verbatim in `text` and validates for its probe."""
    kept, dropped = [], []
    ctx = Context(project=root)
    for claim in claims:
        name = claim.get("probe") if isinstance(claim, dict) else None
        probe = REGISTRY.get(name) if isinstance(name, str) else None
        args = claim.get("args") if isinstance(claim, dict) else None
        if probe is None or not isinstance(args, dict) or not args:
            dropped.append(f"{str(claim)[:60]}: not a claim")
            continue
        missing = [k for k, v in args.items() if not isinstance(v, str) or v not in text]
        if missing:
            dropped.append(f"{probe.name}: {missing[0]} is not in the memory's text")
            continue
        try:
            if probe.network:
                # Syntax only (no lookup); a private or loopback URL is not proposed: probing it would need
                # --allow-private, which is the user's call for a claim they write themselves.
                safety.url(args, resolve=False) if probe.name == "url" else probe.validate(args, ctx)
            else:
                probe.validate(args, ctx)
        except safety.Refused as exc:
            dropped.append(f"{probe.name}: {exc}")
            continue
        kept.append({"probe": probe.name, "args": dict(args)})
    return _unique(kept), dropped


def _exists(root: Path, path: str) -> bool:
    try:
        target = safety.path({"path": path}, root)
    except safety.Refused:
        return False
    return target is not None and target.exists()


def _unique(claims: list[dict]) -> list[dict]:
    seen, out = set(), []
    for claim in claims:
        key = (claim["probe"], tuple(sorted(claim["args"].items())))
        if key not in seen:
            seen.add(key)
            out.append(claim)
    return out


def propose(vault, memories, projects: dict, *, provider=None, apply: bool = False) -> tuple[str | None, list]:
    """Claims for memories that have none: one review-branch commit per memory (or straight to main with
    `apply`); (branch or None, [(memory id, claims, dropped, commit)])."""
    from hafiza.vault.format import model
    from hafiza.vault.review import Action, Review

    review = Review(vault, actor="verifier")
    branch, done = None, []
    for memory in memories:
        if memory.claims:
            continue
        root = folder(memory.scope, projects)
        text = f"{memory.title}\n{memory.body}"
        claims, dropped = extract(text, root), []
        if provider is not None and getattr(provider, "available", False):
            try:
                extra, dropped = from_model(provider, text, root)
            except HafizaError as exc:  # an invalid answer, a server down, the budget spent: this memory only
                extra, dropped = [], [f"model: {exc.message[:120]}"]
            claims = _unique(claims + extra)[:MAX_CLAIMS]
        if not claims:
            continue
        shown = ", ".join(f"{c['probe']} {next(iter(c['args'].values()))}" for c in claims)
        action = Action("add-claims", f"add claims to {memory.id}", f"add-claims:{memory.id}",
                        {vault_rel(memory.path): model.dump(memory.evolve(claims=claims)).encode("utf-8")},
                        f"checkable claims found in the text: {shown}",
                        evidence="every argument appears verbatim in the memory", confidence=0.9,
                        guards=("verbatim-arguments", "arguments-validated"), ids=(memory.id,))
        if apply:
            sha = review.apply(action)
        else:
            branch = branch or review.start("verify")
            sha = review.propose(branch, action)
        done.append((memory.id, claims, dropped, sha))
    return branch, done

