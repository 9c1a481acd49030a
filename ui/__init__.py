"""`hafiza ui`: the vault in a browser, served on 127.0.0.1 to the one person who holds the printed URL.

An adapter like cli/ and hooks/: it opens the vault with hafiza.indexer.refresh.writable and calls the
library's methods, so every change it makes is the same one commit the command line makes
(`Hafiza-Actor: ui`). Pages are rendered on the server (Jinja2, every value escaped); a small vendored
script (htmx) swaps parts of a page; nothing is loaded from another host.
"""
