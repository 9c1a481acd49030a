"""The transactional store: `Vault`, where every write is one locked, journaled, committed change, and what it
keeps beside the files (the change log, the usage log, where projects live)."""
