"""Settings of bench/django_bench.py's project: one no-op task, on pqueue or django-tasks-db.

``BENCH_BACKEND`` is ``pqueue`` (pqueue.django on Postgres, the same database: enqueue
joins the view's transaction) or ``db`` (django-tasks-db, the ORM backend). Both use the
``pqueue_bench`` database (``BENCH_POSTGRES_URL``).
"""

import os
from urllib.parse import urlsplit

_url = os.environ.get("BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/pqueue_bench")
_db = urlsplit(_url)
BACKEND = os.environ.get("BENCH_BACKEND", "pqueue")

SECRET_KEY = "bench-only-not-secret"
DEBUG = False
ALLOWED_HOSTS = ["*"]
USE_TZ = True
ROOT_URLCONF = "benchsite.urls"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
MIDDLEWARE: list[str] = []
INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "pqueue.django",
    "django_tasks",
    "django_tasks_db",
    "benchsite",
]
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": _db.path.lstrip("/"),
        "USER": _db.username or "postgres",
        "HOST": _db.hostname or "127.0.0.1",
        "PORT": str(_db.port or 5432),
        "ATOMIC_REQUESTS": True,
    }
}
if BACKEND == "pqueue":
    TASKS = {
        "default": {
            "BACKEND": "pqueue.django.PqueueBackend",
            "OPTIONS": {"DSN": f"{_url}?schema=django_bench"},
        }
    }
else:
    TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
