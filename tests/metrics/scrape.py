"""Read a Prometheus text exposition into ``{(name, labels): value}`` for assertions."""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str) -> Samples:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sum of ``name``'s samples whose labels include ``labels`` (0 when none)."""
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and want <= ls)


def fetch(url: str, timeout: float = 5.0) -> tuple[int, str]:
    """GET ``url``: (status, body); HTTP errors are returned, not raised."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def scrape(port: int) -> Samples:
    status, body = fetch(f"http://127.0.0.1:{port}/metrics")
    assert status == 200, body
    return parse(body)
