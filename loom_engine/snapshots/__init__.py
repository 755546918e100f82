"""Rewind's engine: snapshots of the workspace in a shadow git repository, restores, rewinds.

Import from the submodules (this package imports nothing, so the engine's start-up
does not pay for it):

* :mod:`.model` — the frozen records: :class:`~.model.Snapshot`, :class:`~.model.RestorePoint`,
  :class:`~.model.RestorePlan`, :class:`~.model.FileChange`, :class:`~.model.RestoreResult`,
  :class:`~.model.RewindMode`, :class:`~.model.SnapshotCaps`.
* :mod:`.checkpoints` — :class:`~.checkpoints.Checkpointer` (the engine's ``checkpoints``).
* :mod:`.preimages` — :class:`~.preimages.PreimageCheckpointer`, used when git is missing.
* :mod:`.restore` — ``Snapshots`` (either of the two), ``snapshots_of``, ``restore_points``, ``plan_restore``,
  ``apply_restore``, ``last_undo``.
* :mod:`.rewind` — ``plan_for``, ``rewind``, ``plan_undo``, ``undo_rewind`` (code and/or conversation).
* :mod:`.shadow` — the git plumbing (``ShadowRepo``), never the user's repository.

In the chat (all of these run git: call them off the event loop, e.g. ``asyncio.to_thread``)::

    checkpointer = snapshots_of(agent.checkpoints)                # None: snapshots are off
    points = restore_points(checkpointer, agent.messages)         # the picker
    plan = plan_for(checkpointer, point)                          # the preview (code)
    outcome = rewind(agent.transcript, checkpointer, point, RewindMode.BOTH, plan=plan)
    # outcome.prompt_text goes back into the input; to undo:
    undo_rewind(agent.transcript, checkpointer, undo_snapshot=outcome.restore.undo.id,
                previous=outcome.previous)
"""
