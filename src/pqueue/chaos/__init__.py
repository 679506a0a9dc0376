"""``pqueue chaos``: a randomized, multi-process fault checker a user points at a broker.

It runs a seeded random workload (every enqueue option, handlers that succeed, fail, time
out, are cancelled or complete in a transaction, operators at work) through real worker
processes while it injects faults (SIGKILL, SIGSTOP past the lease, drains, connection
resets, stalls and latency through a proxy of its own, server restarts and failovers),
records a history and checks it: nothing acknowledged is lost, nothing is completed twice,
effects happen once, unique, idempotency and limit rules hold, statuses follow the state
machine, ``stats()`` agrees, SQLite's file is intact (docs/reliability.md, ADR 0161).
"""
