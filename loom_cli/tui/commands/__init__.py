"""The chat's built-in slash commands, cut by job; `registry` gathers them.

Each module holds its commands' `SlashCommand` entries beside their handlers. A handler
takes the `ChatHost` (what it may use of the chat) and the command as typed. Textual is
imported inside the handlers, never here: `loom run` and bootstrap read the registry's
names without loading the UI.
"""
