"""The Whoosh schema. Stored fields are all that recall needs: search never opens the markdown files.

Whoosh is imported only when a schema is built: a writer reads the constants and never loads it.
"""

SCHEMA_VERSION = 10  # bump when fields or analysis change: the index is rebuilt (2: alias_terms, 3: verified_note,
                    # 4: a title made from the text is stored, not indexed, 5: the manifest in SQLite, with a catalog,
                    # 6: the prefixes field, and alias_terms without the general stop words, 7: conflict, 8: the
                    # concepts field, 10: a project's name in the body of its memories; also bump it when
                    # data/lexicon.tsv changes, with LEXICON_DIGEST)
LEXICON_DIGEST = "32248489d4e71f61"  # sha256 of data/lexicon.tsv, its first 16 hex digits, as this version indexes it

# Query-time field weights for BM25F: words people put in titles and aliases name the subject.
# `prefixes`: each longer word of the memory cut to its first PREFIX letters, so that a Turkish word with another
# ending ("veritabanını", "portunu") still meets the memory's form, below every exact field (text.prefix).
# `concepts`: the lexicon's concepts the memory's words name (indexer/lexicon.py), so another wording of the same
# thing, in either language, meets it, below every exact field (0.5 and 2.0: tuning recall@2 as at 1.0 or lower).
FIELD_BOOSTS = {"title": 3.0, "aliases": 2.5, "tags": 2.0, "body": 1.0, "prefixes": 0.5, "concepts": 1.0}
PREFIXES = "prefixes"
CONCEPTS = "concepts"
INDEX_ONLY = ("body", "prefixes", "concepts")  # the fields indexed but not stored (see schema); every other field is stored
ALIAS_SEPARATOR = " | "  # between a memory's aliases in the stored field
TAG_SEPARATOR = ", "     # between its tags
SNIPPET_CHARS = 500      # a document's stored snippet: the body's start, also what is embedded of it
CONFLICT_CHARS = 250     # of each text an open conflict holds: what recall shows of it, labelled


def indexed_body(body: str, scope: str) -> str:
    """The text indexed as a memory's body: its own, and for a memory scoped to a project, the project's name,
    which it is about even when its text does not say so ("what Java version does fatura-motoru use" and the
    memory of that project's stack that names only Java). Issue 34, round four: on r37 with its scopes kept,
    keyword prompts naming their project recall@2 0.81 -> 0.94 (bench/recall/README.md)."""
    return f"{body}\n{scope.removeprefix('project:')}" if scope.startswith("project:") else body


def split_field(value: str | None, separator: str = ",") -> list[str]:
    """A stored list field back into its items: tags (split at ',') or aliases (at ALIAS_SEPARATOR)."""
    return [part.strip() for part in (value or "").split(separator) if part.strip()]


def schema():
    from whoosh.fields import ID, NUMERIC, STORED, TEXT, Schema

    from .analyzer import analyzer

    text = analyzer()
    return Schema(
        id=ID(stored=True, unique=True),
        title=TEXT(analyzer=text, stored=True, phrase=False),
        aliases=TEXT(analyzer=text, stored=True, phrase=False),
        alias_terms=STORED,  # each alias's query terms, for weighing alias-only matches (search.alias_weights)
        tags=TEXT(analyzer=text, stored=True, phrase=False),
        body=TEXT(analyzer=text, phrase=False),  # INDEX_ONLY
        prefixes=TEXT(analyzer=text, phrase=False),  # INDEX_ONLY: text.prefixes of the fields above
        concepts=TEXT(analyzer=text, phrase=False),  # INDEX_ONLY: lexicon.concepts_text of the same
        type=ID(stored=True),
        scope=ID(stored=True),
        status=ID(stored=True),
        created=ID(stored=True),
        updated=ID(stored=True),
        last_used=STORED,
        shown=STORED,
        used=STORED,
        half_life=STORED,
        snippet=STORED,
        path=STORED,
        supersedes=STORED,
        superseded_by=STORED,
        verified=STORED,
        verified_note=STORED,  # 'since <date>: <what failed>', for the label in the recalled block
        conflict=STORED,  # while a merge conflict is open: the texts it holds, each cut to CONFLICT_CHARS
        hash=STORED,
        chars=NUMERIC(stored=True),
    )
