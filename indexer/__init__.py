"""The rebuildable index: analyzer, Whoosh schema, sync, ranking, embeddings."""
