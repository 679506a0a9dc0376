"""Integration tests: one backend's own behaviour on real servers (redis/, postgres/,
memory/) and the CLI run as a process, outside the worker runtime (tests/worker)."""
