"""Sizes the file tools refuse to go past, so that memory stays bounded whatever the input.

Each limit comes with a message that says how to get the job done another way.
"""

from __future__ import annotations

# edit_file, multi_edit, write_file (over an existing file) and apply_patch hold a file
# several times over (bytes, text, the edited text, a diff): about ten times its size.
EDIT_LIMIT_BYTES = 10 * 1024 * 1024
# A grep regex or a glob this long is no search a model means to write; compiling a
# huge one costs memory far beyond its size.
MAX_PATTERN_CHARS = 10_000
# No system takes a path longer than this (Linux PATH_MAX); longer is a mistake or an attack.
MAX_PATH_CHARS = 4096
# ... nor a file or folder name longer than this (NAME_MAX, in bytes).
MAX_NAME_BYTES = 255
# grep without ripgrep reads each file whole (bytes, text and lines: about ten times its
# size); larger files are skipped with a note.
PYTHON_GREP_MAX_BYTES = 64 * 1024 * 1024
