"""Small apps that use pqueue end to end; run one with ``python -m examples.<name>`` from the repo root."""
