"""The search index: one SQLite file (FTS5) over the user's sessions, in the data dir.

``schema``   the tables, the schema version, opening (and rebuilding) the file
``extract``  what of a session's JSONL lines is searchable, redacted
``update``   bringing the index up to date with the session files (one writer at a time)
``query``    turning what a user typed into a safe FTS5 query, and ranked hits
``session_index``  the one object callers use: ``SessionIndex``

Every indexed thing is a row of ``sources`` with a ``kind``: ``session`` today; long-term
memory files (issue 24 §1's ``recall``) are meant to be rows of another kind in the same
file, searched by the same queries.
"""
