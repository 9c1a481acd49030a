"""The memory file format: its one parse boundary, the frontmatter written and read without PyYAML, ids, types,
what a new memory's fields may be, text folding and escaping, and where files live."""
