"""Both texts of a merge conflict, kept in one valid memory file until a person picks.

Where two machines changed the same lines of a memory's body, the merge keeps
our text as the body and the other machine's text in a fenced section after it:

    <our text>

    <!-- hafiza-conflict {"kind": "body", ...} -->
    <their text>
    <!-- /hafiza-conflict -->

The file stays valid YAML + markdown (the fences are HTML comments, invisible
when rendered), both texts stay searchable, and nothing is lost. The header
names the machine that made the merge (`merged_on`): the text above the fence
is that machine's. A machine that took the merge by a fast-forward reads the
two the other way round, so "ours" is always this machine's text (issue 30,
item 5: it was the other machine's), and the fenced side's `title` goes with
its text. `hafiza doctor`
lists such files; `hafiza resolve ID --keep ours|theirs|both` picks. A memory
created with the same id on two machines with different texts is fenced the
same way (kind `same-id`, with that side's header) until `hafiza sync` or
`hafiza resolve` gives it a new id of its own.
"""

from __future__ import annotations

import json
import re

START, END = "<!-- hafiza-conflict ", "<!-- /hafiza-conflict -->"
KEEP = ("ours", "theirs", "both")
MARKERS = ("<<<<<<< ", ">>>>>>> ")  # what git leaves in a file it could not merge (a merge without our driver)
_FENCE = re.compile(r"\n*^<!-- hafiza-conflict (\{.*?\}) -->\n(.*?)\n?^<!-- /hafiza-conflict -->\n?",
                    re.DOTALL | re.MULTILINE)
HINTS = {"body": "two machines changed this text; `hafiza resolve {id} --keep ours|theirs|both` picks",
         "same-id": "another memory made with the id {id} on another machine; `hafiza sync` (or `hafiza resolve "
                    "{id}`) gives it an id of its own"}


class Fence:
    """One fenced second text. A plain class: the cold hook indexes through this module, and importing
    dataclasses would cost every prompt a few ms."""

    __slots__ = ("kind", "info", "text", "span")

    def __init__(self, kind: str, info: dict, text: str, span: tuple[int, int]):
        self.kind = kind    # body | same-id
        self.info = info    # what the fence's header says (for same-id: the other memory's frontmatter as `meta`)
        self.text = text    # the other side's text
        self.span = span    # where the fence stands in the body


def fence(kind: str, text: str, memory_id: str, **info) -> str:
    """The fenced section for the other side's `text`; `info` must be JSON-serialisable."""
    header = json.dumps({"kind": kind, "hint": HINTS[kind].format(id=memory_id), **info}, ensure_ascii=False,
                        default=str, sort_keys=False)
    header = header.replace("-->", "--\\u003e")  # the JSON must not close the comment
    return f"\n\n{START}{header} -->\n{text.strip(chr(10))}\n{END}\n"


def fences(body: str) -> list[Fence]:
    found = []
    for match in _FENCE.finditer(body):
        try:
            info = json.loads(match.group(1))
        except ValueError:
            continue  # a mangled header: doctor still sees the fence as text, a person fixes it
        if isinstance(info, dict):
            found.append(Fence(str(info.get("kind", "body")), info, match.group(2), match.span()))
    return found


def has_markers(text: str) -> bool:
    """Raw conflict markers of a merge made without hafiza's driver: `<<<<<<< `, `=======`, `>>>>>>> ` lines
    in that order (one of them alone is more likely a memory about merges)."""
    want = iter(("<<<<<<< ", "=======", ">>>>>>> "))
    step = next(want)
    for line in text.splitlines():
        if line.startswith(step) and (step != "=======" or line.rstrip() == step):
            step = next(want, None)
            if step is None:
                return True
    return False


def elsewhere(body: str, here: str | None) -> bool:
    """The body's texts are the other way round on machine `here`: the merge that fenced them was made on another
    machine (its header says which), so the text above the fence is that machine's and the fenced one ours."""
    made = {f.info.get("merged_on") for f in fences(body) if f.kind == "body"} - {None}
    return here is not None and bool(made) and here not in made


def sides(body: str, here: str | None = None) -> tuple[str, str]:
    """(this machine's text, the other machine's) of a body holding `body` fences, as machine `here` sees them
    (without `here`, as the machine that made the merge does)."""
    found = [f for f in fences(body) if f.kind == "body"]
    kept, last = [], 0
    for f in found:
        kept.append(body[last:f.span[0]])
        last = f.span[1]
    kept.append(body[last:])
    merged = "".join(kept).strip("\n")
    fenced = "\n\n".join(f.text.strip("\n") for f in found)
    return (fenced, merged) if elsewhere(body, here) else (merged, fenced)


def pick(body: str, keep: str, here: str | None = None) -> str:
    """The body once every `body` fence is settled on machine `here`: its text (ours), the other machine's
    (theirs) or both, ours first. Fences of other kinds stay where ours is the text above them."""
    if keep not in KEEP:
        raise ValueError(f"keep one of {', '.join(KEEP)}")
    if not any(f.kind == "body" for f in fences(body)):
        return body
    ours, theirs = sides(body, here)
    if keep == "ours":
        return ours
    if keep == "theirs":
        return theirs
    return f"{ours}\n\n{theirs}".strip("\n")


def texts(body: str) -> list[str]:
    """The texts a memory holds while a conflict is open: its own, then each fenced one; [] without a
    fence. Recall shows them apart and labelled, never glued into one memory (issue 30, item 6)."""
    found = fences(body)
    if not found:
        return []
    own, last = [], 0
    for f in found:
        own.append(body[last:f.span[0]])
        last = f.span[1]
    own.append(body[last:])
    return ["".join(own).strip("\n"), *(f.text.strip("\n") for f in found)]


def readable(body: str) -> str:
    """`body` with the fences' comment lines left out and both texts kept: what search indexes and recall
    shows (the fence's JSON would otherwise match prompts about machines and merges)."""
    if START not in body:
        return body
    return "\n".join(line for line in body.split("\n") if not line.startswith((START, END)))
