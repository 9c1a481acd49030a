"""git, behind the one interface the rest of hafiza uses: `GitStore` (a vault's repository), the commit `message`
hafiza writes, and a few functions for what is not the vault's own history. Import from here
(`from hafiza.vault.git import GitStore`), never from the modules inside, which are this room's own business
(tests/test_architecture.py checks it):

    run.py       running git: one process a call, the identity, git's failures as one-line errors
    repo.py      GitStore: reading history, trees and blobs; the stale lock a killed git leaves
    commit.py    committing files atomically (the branch moves only from its parent)
    trees.py     a commit's trees edited in memory; index.py: git's index brought level for a few paths
    branches.py  review branches written without touching the work tree
    remotes.py   remotes and merges, for sync
    commits.py   the commit message and its trailers, `log`'s records
    project.py   a project's own repository (not the vault's), read only
"""

from .commit import StagedElsewhere
from .commits import TRAILERS, Commit, blob_id, message
from .project import read_only, renamed
from .remotes import merge_text
from .repo import GitStore
from .run import DISK_FULL, NO_GIT, OFFLINE, pack

__all__ = ["DISK_FULL", "NO_GIT", "OFFLINE", "TRAILERS", "Commit", "GitStore", "StagedElsewhere", "blob_id",
           "merge_text", "message", "pack", "read_only", "renamed"]
