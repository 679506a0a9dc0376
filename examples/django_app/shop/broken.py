"""A task module that cannot be imported: the worker dead-letters its jobs (the tests)."""

raise RuntimeError("this module fails at import")
