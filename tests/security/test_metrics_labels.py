"""``/metrics`` labels stay bounded whatever anonymous clients send: a method HTTP does not
define counts as ``other``, a path no route serves as route ``other`` (never the raw path)."""

from __future__ import annotations

import re

import httpx

from flightlog.server.testing import RunningServer


def _series(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("flightlog_http_requests_total{")]


def test_made_up_methods_and_paths_do_not_grow_the_series(live: RunningServer) -> None:
    with httpx.Client(base_url=live.url, timeout=30) as client:  # no token: anyone who can connect
        before = _series(client.get("/metrics").text)
        for i in range(200):
            client.request(f"BREW{i}", f"/api/v1/runs/{i:032x}/nowhere-{i}")
            client.get(f"/made/up/path/{i}")
        after = _series(client.get("/metrics").text)
    assert len(after) - len(before) <= 6, after
    assert not [line for line in after if re.search(r"BREW|made/up|nowhere", line)]
    other = [line for line in after if 'method="other"' in line]
    assert other and sum(int(line.rsplit(" ", 1)[1]) for line in other) == 200
