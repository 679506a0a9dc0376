"""A FastAPI app that enqueues on request; on Postgres, in the request's own transaction."""
