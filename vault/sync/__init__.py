"""Sync and teams: the vault's remote as the sync engine, three-way merges of vault files by their nature, and
the team vaults read beside the personal one."""
