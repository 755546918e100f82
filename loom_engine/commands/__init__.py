"""Custom slash commands (Claude Code's format) and skills run as ``/name``.

``catalog.CommandCatalog.discover(root, user_config_dir=..., reserved=builtin_names)``
finds the command files; ``invoke.resolve(text, commands, skills, reserved)`` says what
``/name args`` runs; ``invoke.run_invocation(agent, invocation)`` expands it (``template``)
and runs the model's turn.
"""
