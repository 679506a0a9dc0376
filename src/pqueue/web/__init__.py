"""pqueue's HTTP API and dashboard (the ``web`` extra: ``pip install 'pqueue-jobs[web]'``).

- :func:`create_app` builds the ASGI app: JSON endpoints to enqueue (one job or a batch),
  inspect and administer jobs, ``/metrics``, ``/healthz`` and ``/readyz``, and the
  dashboard at ``/``. Mount it in your own ASGI app or serve it with ``pqueue serve``.
- :class:`WebSettings` holds its tokens and limits.

Importing this package imports FastAPI and prometheus-client; ``import pqueue`` never does.
See docs/web.md.
"""

from pqueue.web.app import create_app
from pqueue.web.settings import WebSettings

__all__ = ["WebSettings", "create_app"]
