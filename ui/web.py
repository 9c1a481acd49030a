"""What every screen shares: the templates (every value escaped, hidden characters shown), a page's frame,
the form a request carried (read once by the guard), and errors turned into a message on the page."""

from __future__ import annotations

import html
import re
from pathlib import Path
from urllib.parse import parse_qsl, urlencode

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup, escape
from starlette.responses import HTMLResponse, RedirectResponse

from hafiza.vault.format.properties import claim_line, unlink
from hafiza.vault.format.text import plural, visible

HERE = Path(__file__).parent


def shown(text) -> Markup:
    """`text` escaped for HTML, each control, bidi or invisible character shown as a marked code point
    (U+202E) instead of acting on the page: a right-to-left override cannot turn the words around it."""
    text = "" if text is None else str(text)
    if visible(text) == text:
        return escape(text)
    out = []
    for ch in text:
        if ch in "\n\t" or visible(ch) == ch:
            out.append(escape(ch))
        else:
            out.append(Markup('<span class="hidden-char" title="a hidden character">U+{:04X}</span>').format(ord(ch)))
    return Markup("").join(out)


def hidden_count(text) -> int:
    """How many characters of `text` would be shown as code points (the editor warns of them)."""
    text = "" if text is None else str(text)
    if visible(text) == text:
        return 0
    return sum(1 for ch in text if ch not in "\n\t" and visible(ch) != ch)


_WIKILINK = re.compile(r"\[\[[^\[\]<>\n]+\]\]")  # in escaped text: `[[id]]`, `[[id|shown]]`, `[[facts/acme#x]]`


def linked(text, to) -> Markup:
    """`text` shown, each `[[...]]` link Obsidian would follow made a link to the page `to(what it names)` gives
    (None: it stays text). The link's words are the escaped text itself, so nothing of them is ever markup."""
    escaped = str(shown(text))

    def link(match) -> str:
        url = to(unlink(html.unescape(match.group(0))))
        return f'<a href="{escape(url)}" class="wikilink">{match.group(0)}</a>' if url else match.group(0)

    return Markup(_WIKILINK.sub(link, escaped))


_MARK = re.compile(r"\u27e6U\+([0-9A-F]{4,6})\u27e7")


def editable(text: str) -> str:
    """`text` for the editor: each hidden character written as `⟦U+202E⟧`, since a textarea would act on it (a
    right-to-left override turns the rest of the line around) and no style can stop it there."""
    if visible(text) == text:
        return text
    return "".join(f"\u27e6U+{ord(ch):04X}\u27e7" if ch not in "\n\t" and visible(ch) != ch else ch for ch in text)


def from_editable(text: str) -> str:
    """The editor's text back as the file's: each `⟦U+XXXX⟧` marker of a hidden character is that character again
    (a marker deleted in the editor takes its character with it)."""
    def back(match) -> str:
        ch = chr(int(match.group(1), 16)) if int(match.group(1), 16) <= 0x10FFFF else ""
        return ch if ch and visible(ch) != ch else match.group(0)

    return _MARK.sub(back, text)


def _env() -> Environment:
    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(default=True),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["shown"] = shown
    env.globals["hidden_count"] = hidden_count
    env.filters["editable"] = editable
    env.filters["linked"] = linked
    env.filters["claim"] = claim_line  # a claim as the file holds it: `path scripts/seed.py`
    env.filters["plural"] = plural  # `{{ n|plural("memory") }}`: `1 memory`, `2 memories`, as the commands count
    env.globals["urlencode"] = lambda params: urlencode(params)
    return env


TEMPLATES = _env()


def render(request, name: str, status: int = 200, **context) -> HTMLResponse:
    """The template `name`, with what every page needs: the CSRF token, the vaults, warnings of the last write.
    A request htmx makes for one part of the page (`hx-target="#results"`) gets that part only: the template's
    block of the same name."""
    app = request.app.state
    warnings, app.hold.warnings = app.hold.warnings, []
    context = {"csrf": app.keys.csrf, "vaults": list(app.hold.roots), "warnings": warnings, "request": request,
               "path": request.url.path, **context}
    template = TEMPLATES.get_template(name)
    target = request.headers.get("hx-target") if request.headers.get("hx-request") else None
    if target in template.blocks and not request.headers.get("hx-boosted"):
        html = "".join(template.blocks[target](template.new_context(context)))
    else:
        html = template.render(context)
    return HTMLResponse(html, status_code=status)


def form(request) -> dict[str, str]:
    """The POSTed form's fields (the last of each name), as the guard read and checked them."""
    return dict(pairs(request))


def pairs(request) -> list[tuple[str, str]]:
    body = request.scope.get("hafiza.form", b"")
    return parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True)


def back(url: str) -> RedirectResponse:
    """After a change, the page that shows it (POST, then redirect, then GET: a reload repeats nothing)."""
    return RedirectResponse(url, status_code=303)
