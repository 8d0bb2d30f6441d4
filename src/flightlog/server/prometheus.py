"""``/metrics``: request and error counts, latencies and ingest rates, in Prometheus text format.

Counters live in this process (each replica exports its own; Prometheus adds them up), are
labelled by route template — never by run id, project or the raw path, so their number stays
bounded — and are only touched from the event loop, so they need no lock. A request's method is
a label only when HTTP defines it (else ``other``): any client, even without a token, chooses
the method it sends, and every new label value would be a new series kept forever.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["Metrics", "MetricsMiddleware", "ROUTE_KEY"]

ROUTE_KEY = "flightlog.route"
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT"})
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class _Histogram:
    __slots__ = ("counts", "total", "n")

    def __init__(self) -> None:
        self.counts = [0] * len(BUCKETS)
        self.total = 0.0
        self.n = 0

    def observe(self, value: float) -> None:
        self.total += value
        self.n += 1
        for i, bound in enumerate(BUCKETS):
            if value <= bound:
                self.counts[i] += 1
                break


class Metrics:
    def __init__(self) -> None:
        self.started = time.time()
        self.requests: defaultdict[tuple[str, str, int], int] = defaultdict(int)
        self.errors: defaultdict[tuple[str, str], int] = defaultdict(int)
        self.latency: defaultdict[str, _Histogram] = defaultdict(_Histogram)
        self.ingest: defaultdict[str, int] = defaultdict(int)  # records, points, log_events, bytes, batches, ...
        self.streams_open = 0

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        self.requests[(method if method in METHODS else "other", route, status)] += 1
        if route != "/api/v1/runs/{run}/stream":  # a stream lasts as long as its reader
            self.latency[route].observe(seconds)

    def error(self, route: str, code: str) -> None:
        self.errors[(route, code)] += 1

    def add_ingest(self, **counts: int) -> None:
        for name, value in counts.items():
            self.ingest[name] += value

    def render(self) -> str:
        lines = [
            "# HELP flightlog_up 1 while the server runs.",
            "# TYPE flightlog_up gauge",
            "flightlog_up 1",
            "# HELP flightlog_start_time_seconds When this server process started.",
            "# TYPE flightlog_start_time_seconds gauge",
            f"flightlog_start_time_seconds {self.started:.3f}",
            "# HELP flightlog_http_requests_total HTTP requests answered, by route template and status.",
            "# TYPE flightlog_http_requests_total counter",
        ]
        for (method, route, status), n in sorted(self.requests.items()):
            lines.append(
                f'flightlog_http_requests_total{{method="{method}",route="{_esc(route)}",status="{status}"}} {n}'
            )
        lines += [
            "# HELP flightlog_http_errors_total Error answers (4xx and 5xx), by route template and error code.",
            "# TYPE flightlog_http_errors_total counter",
        ]
        for (route, code), n in sorted(self.errors.items()):
            lines.append(f'flightlog_http_errors_total{{route="{_esc(route)}",code="{_esc(code)}"}} {n}')
        lines += [
            "# HELP flightlog_http_request_duration_seconds Time to answer a request, by route template.",
            "# TYPE flightlog_http_request_duration_seconds histogram",
        ]
        for route, h in sorted(self.latency.items()):
            cumulative = 0
            for bound, count in zip(BUCKETS, h.counts, strict=True):
                cumulative += count
                lines.append(
                    f'flightlog_http_request_duration_seconds_bucket{{route="{_esc(route)}",le="{bound}"}} {cumulative}'
                )
            lines.append(f'flightlog_http_request_duration_seconds_bucket{{route="{_esc(route)}",le="+Inf"}} {h.n}')
            lines.append(f'flightlog_http_request_duration_seconds_sum{{route="{_esc(route)}"}} {h.total:.6f}')
            lines.append(f'flightlog_http_request_duration_seconds_count{{route="{_esc(route)}"}} {h.n}')
        for name, help_text in (
            ("batches", "Ingest requests applied."),
            ("records", "Journal records received."),
            ("applied", "Journal records applied (not duplicates)."),
            ("duplicates", "Journal records already applied (retries, replays)."),
            ("skipped", "Journal records refused as malformed."),
            ("points", "Metric points received."),
            ("log_events", "Log events received."),
            ("bytes", "Ingest body bytes received (compressed)."),
            ("upload_bytes", "Artifact bytes uploaded."),
        ):
            lines += [
                f"# HELP flightlog_ingest_{name}_total {help_text}",
                f"# TYPE flightlog_ingest_{name}_total counter",
                f"flightlog_ingest_{name}_total {self.ingest.get(name, 0)}",
            ]
        lines += [
            "# HELP flightlog_streams_open Live streams (SSE) being served.",
            "# TYPE flightlog_streams_open gauge",
            f"flightlog_streams_open {self.streams_open}",
        ]
        return "\n".join(lines) + "\n"


def _esc(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class MetricsMiddleware:
    """Counts every HTTP request by the route template its handler set (``other`` if none)."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = [500]

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            route: Any = scope.get(ROUTE_KEY) or "other"
            self.metrics.observe(scope.get("method", "GET"), str(route), status[0], time.perf_counter() - start)
