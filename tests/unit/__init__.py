"""Unit tests: one process, no server. Functions and objects alone, with the in-memory
broker as the only backend; no Redis, no Postgres, no serving Worker, no child process.
What needs any of those belongs in tests/worker (the worker runtime) or tests/integration."""
