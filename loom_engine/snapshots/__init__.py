"""Rewind's engine: snapshots of the workspace in a shadow git repository, restores, rewinds.

Import from the submodules (this package imports nothing, so the engine's start-up
does not pay for it):

* :mod:`.model` — the frozen records: :class:`~.model.Snapshot`, :class:`~.model.RestorePoint`,
  :class:`~.model.RestorePlan`, :class:`~.model.FileChange`, :class:`~.model.RestoreResult`,
  :class:`~.model.RewindMode`, :class:`~.model.SnapshotCaps`.
* :mod:`.checkpoints` — :class:`~.checkpoints.Checkpointer` (the engine's ``checkpoints``).
* :mod:`.restore` — ``restore_points``, ``plan_restore``, ``apply_restore``, ``last_undo``.
* :mod:`.rewind` — ``plan_for``, ``rewind``, ``plan_undo``, ``undo_rewind`` (code and/or conversation).
* :mod:`.shadow` — the git plumbing (``ShadowRepo``), never the user's repository.
"""
