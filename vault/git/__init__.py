"""git, behind the one interface the store uses (`repo.GitStore`): git's own processes, a commit's trees edited
in memory, and git's index brought level for a few paths."""
