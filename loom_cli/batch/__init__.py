"""`loom batch`: many tasks, each in its own git worktree, run by warm workers (docs/batch.md)."""
