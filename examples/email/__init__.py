"""Emails and a charge: an async handler, retries with backoff, an idempotency key."""
