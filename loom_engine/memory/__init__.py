"""Memory: the project's long-term memory folder and the scoped, versioned memories of
an agent tree, all behind one contract (:mod:`.entries`)."""
