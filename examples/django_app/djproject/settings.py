"""Settings of the example Django project: a shop whose views enqueue pqueue tasks.

``PQUEUE_DJANGO_DSN`` picks the broker (memory://, redis://..., postgresql://...); the
database is Postgres (``PQUEUE_TEST_POSTGRES_URL``), so with a Postgres DSN on the same
database an enqueue joins the view's transaction (docs/django.md).
"""

import os
from urllib.parse import urlsplit

_db = urlsplit(os.environ.get("PQUEUE_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"))

SECRET_KEY = "example-only-not-secret"
DEBUG = False
ALLOWED_HOSTS = ["*"]
USE_TZ = True
ROOT_URLCONF = "djproject.urls"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
INSTALLED_APPS = ["django.contrib.contenttypes", "pqueue.django", "shop"]
MIDDLEWARE: list[str] = []
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": os.environ.get("SHOP_DB_NAME") or _db.path.lstrip("/"),  # the tests pass theirs
        "USER": _db.username or "postgres",
        "PASSWORD": _db.password or "",
        "HOST": _db.hostname or "127.0.0.1",
        "PORT": str(_db.port or 5432),
        "ATOMIC_REQUESTS": True,  # each view runs in one transaction
    }
}
TASKS = {
    "default": {
        "BACKEND": "pqueue.django.PqueueBackend",
        "QUEUES": ["default", "emails"],
        "OPTIONS": {"DSN": os.environ.get("PQUEUE_DJANGO_DSN", "memory://shop")},
    }
}
LOGGING = {"version": 1, "disable_existing_loggers": False}
