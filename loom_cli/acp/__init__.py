"""`loom acp`: Loom as an Agent Client Protocol agent over stdio, for editors.

``sdk`` is the one module that imports the ACP SDK; ``server`` answers the protocol's
methods; ``sessions`` builds a Loom agent for an editor's session (the same builder as
`loom run` and the chat); ``updates`` turns engine events into ``session/update``s,
``tool_calls`` says what a tool call is (kind, title, locations, content), ``asks``
turns permission questions into ``session/request_permission``; ``prompt_content`` maps
ACP content blocks to a Loom prompt; ``replay`` sends a stored session's history;
``command`` is the typer command's body; ``client_io`` (with ``client_files``
and ``client_terminal``) routes file reads, writes and commands through the editor when
it offers them. Nothing here is imported on the chat's start-up.
"""
