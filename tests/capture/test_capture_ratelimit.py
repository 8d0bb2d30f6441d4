"""Volume is bounded: a token bucket, counted drops and one summary event per interval."""

from __future__ import annotations

from flightlog.capture import CaptureConfig, CapturePipeline
from flightlog.capture.ratelimit import RateLimiter, TokenBucket
from flightlog.logevents import LogBatch


def lines(n: int, start: int = 0) -> bytes:
    return b"".join(b"line %d\n" % i for i in range(start, start + n))


def test_token_bucket_refills_at_its_rate_up_to_capacity() -> None:
    bucket = TokenBucket(rate=10, capacity=10)
    bucket.refill(0.0)
    assert bucket.take(25) == 10
    bucket.refill(0.5)
    assert bucket.take(25) == 5
    bucket.refill(100.0)
    assert bucket.take(25) == 10


def test_rate_limit_drops_counts_and_summarizes_once_per_interval() -> None:
    pipeline = CapturePipeline(CaptureConfig(env={}, max_rate=100, rate_interval=10))
    stored = LogBatch()
    for second in range(25):  # 1,000 lines/s for 25 s against a limit of 100 lines/s
        stored.extend(pipeline.feed("stdout", lines(1000, second * 1000), 100.0 + second))
        stored.extend(pipeline.poll(100.0 + second + 0.5))
    stored.extend(pipeline.close(125.0))
    summaries = [e for e in stored.events() if e["component"] == "flightlog"]
    kept = len(stored) - len(summaries)
    assert 2_400 <= kept <= 2_600  # ~100 lines/s (plus the first second's burst)
    assert len(summaries) == 3  # at 10 s, 20 s, and the remainder at close
    assert all(s["level"] == 30 and s["stream"] == "stderr" for s in summaries)
    assert summaries[0]["message"].startswith("flightlog dropped ")
    assert summaries[0]["message"].endswith("lines in the last 10s (rate limit 100 lines/s)")
    stats = pipeline.stats
    assert stats["lines"] == 25_000
    assert stats["dropped_lines"] == 25_000 - kept
    assert sum(s["fields"]["dropped_lines"] for s in summaries) == stats["dropped_lines"]
    assert stats["dropped_bytes"] == sum(s["fields"]["dropped_bytes"] for s in summaries) > 0
    assert stats["events"] == len(stored)


def test_no_summary_while_nothing_is_dropped() -> None:
    pipeline = CapturePipeline(CaptureConfig(env={}, max_rate=1000, rate_interval=1))
    batch = pipeline.feed("stdout", lines(10), 1.0)
    batch.extend(pipeline.poll(5.0))
    batch.extend(pipeline.close(6.0))
    assert len(batch) == 10 and pipeline.stats["dropped_lines"] == 0


def test_a_multi_line_event_costs_one_token_and_counts_its_lines_when_dropped() -> None:
    limiter = RateLimiter(1, 10, counts := {"dropped_lines": 0, "dropped_bytes": 0})
    batch = LogBatch()
    batch.append(0.0, "stdout", 20, "first")
    batch.append(0.0, "stdout", 20, "a\n  b\n  c")
    out = limiter(batch, 0.0)
    assert out.message == ["first"]
    assert counts == {"dropped_lines": 3, "dropped_bytes": len("a\n  b\n  c") + 1}


def test_errors_survive_a_flood_through_their_reserve() -> None:
    pipeline = CapturePipeline(CaptureConfig(env={}, max_rate=10, rate_interval=60))
    batch = pipeline.feed("stdout", lines(1000), 1.0)
    tb = b'Traceback (most recent call last):\n  File "t.py", line 1\nRuntimeError: the real cause\n'
    batch.extend(pipeline.feed("stdout", lines(1000, 1000) + tb + b"bye\n", 1.1))
    batch.extend(pipeline.close(1.2))
    assert any(m.endswith("RuntimeError: the real cause") for m in batch.message)
    assert batch.message[-1].startswith("flightlog dropped ")
