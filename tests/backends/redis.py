"""The Redis backend under test: one key prefix per test, on the service's database."""

from __future__ import annotations

from urllib.parse import urlencode, urlsplit, urlunsplit

from redis.asyncio import Redis

NAME = "redis"
SERVICE = "redis"


def namespace_dsn(service_url: str | None, namespace: str) -> str:
    assert service_url is not None
    parts = urlsplit(service_url)
    query = "&".join(q for q in (parts.query, urlencode({"prefix": namespace})) if q)
    return urlunsplit(parts._replace(query=query))


async def cleanup(service_url: str | None, namespace: str) -> None:
    """Delete this namespace's keys (SCAN MATCH <prefix>:* + UNLINK) and nothing else."""
    assert service_url is not None
    client = Redis.from_url(service_url)
    try:
        batch: list[bytes] = []
        async for key in client.scan_iter(match=f"{namespace}:*", count=1000):
            batch.append(key)
            if len(batch) >= 1000:
                await client.unlink(*batch)
                batch.clear()
        if batch:
            await client.unlink(*batch)
    finally:
        await client.aclose()
