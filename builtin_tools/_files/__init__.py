"""What the file tools share: paths, limits, safe I/O, text files, diffs, globs, ignore
rules, the gitignore-aware walk and the rg process. Private to builtin_tools (and the
TUI's @-completion, which lists files with the same walk as glob).
"""
