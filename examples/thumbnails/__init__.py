"""Thumbnails: a sync, CPU-bound handler on worker threads, a file reference in the payload, a timeout."""
