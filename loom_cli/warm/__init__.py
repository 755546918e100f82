"""The warm server: `loom` started from a process that has Loom and the SDKs imported.

`import anthropic` alone takes over a second of CPU; a per-user fork server pays it once
and forks a child per `loom` command line, which runs Loom's ordinary ``main()`` on the
caller's streams, folder and environment. :mod:`.client` is the `loom` entry point (it
imports almost nothing), :mod:`.server` the fork server, :mod:`.child` what a forked
child does, :mod:`.place` where the socket lives and which server is the right one,
:mod:`.protocol` the bytes between them, :mod:`.control` `loom server status|stop`.
"""
