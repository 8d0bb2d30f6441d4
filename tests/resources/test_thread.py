"""SamplerThread: schedule, prompt stop, contained errors."""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

import pytest

from flightlog.forksafe import no_fork
from flightlog.resources import ProcessTreeSampler, SamplerThread
from tests.helpers import wait_for
from tests.resources.conftest import Spawn


class Counting:
    def __init__(self) -> None:
        self.n = 0

    def sample(self, now: float | None = None) -> dict[str, Any]:
        self.n += 1
        return {"time": time.time(), "n": self.n}


def test_samples_on_schedule_with_a_real_sampler(spawn: Spawn) -> None:
    got: list[dict[str, Any]] = []
    # a child of our own: the test process may have children of other fixtures (a PostgreSQL server)
    child = spawn([sys.executable, "-c", "import time; time.sleep(60)"])
    thread = SamplerThread(ProcessTreeSampler(child.pid, gpu=False), got.append, interval=0.05)
    thread.start()
    wait_for(lambda: len(got) >= 5, "five samples")
    assert thread.stop() is True
    gaps = [b["time"] - a["time"] for a, b in zip(got, got[1:], strict=False)]
    # on its schedule, a fixed grid (start + k * interval, missed ticks skipped): never a burst
    # that catches up (two samples in one slot) and never sooner than the interval on average;
    # one gap may be shorter than the interval when the tick before it was taken late (load)
    assert min(gaps) >= 0.05 * 0.5, gaps
    assert sum(gaps) / len(gaps) >= 0.05 * 0.9, gaps
    assert got[0]["procs"] == 1
    assert thread.errors == 0
    assert not thread.running


def test_stop_is_prompt_even_with_a_long_interval() -> None:
    thread = SamplerThread(Counting(), lambda s: None, interval=3600.0).start()
    wait_for(lambda: thread.samples, "the first sample, taken at start")
    assert thread.stop(timeout=60.0) is True  # ended long before the next sample was due
    assert thread.samples == 1


def test_callback_exceptions_are_counted_and_reported_once(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def broken(sample: dict[str, Any]) -> None:
        raise RuntimeError("store is down")

    thread = SamplerThread(Counting(), broken, interval=0.02).start()
    wait_for(lambda: thread.errors >= 5, "five failed callbacks")
    thread.stop()
    err = capsys.readouterr().err
    assert thread.errors >= 5
    assert isinstance(thread.last_error, RuntimeError)
    assert err.count("flightlog: resource sampling error: RuntimeError: store is down") == 1


def test_sampler_exceptions_are_contained(capsys: pytest.CaptureFixture[str]) -> None:
    class Broken:
        def sample(self, now: float | None = None) -> dict[str, Any]:
            raise OSError("no /proc")

    got: list[dict[str, Any]] = []
    thread = SamplerThread(Broken(), got.append, interval=0.02).start()
    wait_for(lambda: thread.errors >= 2, "two failed samples")
    assert thread.stop()
    assert got == []
    assert thread.errors >= 2
    assert "flightlog: resource sampling error: OSError: no /proc" in capsys.readouterr().err


def test_stop_returns_after_timeout_when_the_callback_hangs() -> None:
    release, entered = threading.Event(), threading.Event()

    def hang(sample: dict[str, Any]) -> None:
        entered.set()
        release.wait(120)

    thread = SamplerThread(Counting(), hang, interval=0.01).start()
    try:
        wait_for(entered.is_set, "the first sample's callback, which hangs")
        assert thread.stop(timeout=0.2) is False  # returned while the callback still hangs
        with no_fork():  # the hanging callback holds no lock of the process's
            pass
    finally:
        release.set()
    assert thread.stop() is True


def test_is_a_daemon_with_its_name() -> None:
    thread = SamplerThread(Counting(), lambda s: None, interval=1.0, name="flightlog-sampler-x")
    thread.start()
    names = {t.name: t.daemon for t in threading.enumerate()}
    thread.stop()
    assert names.get("flightlog-sampler-x") is True


def test_interval_must_be_positive() -> None:
    with pytest.raises(ValueError):
        SamplerThread(Counting(), lambda s: None, interval=0)


def test_pause_and_resume_keep_one_thread_and_resume_samples_at_once() -> None:
    thread = SamplerThread(Counting(), lambda s: None, interval=60.0).start()
    _wait_until(lambda: thread.samples == 1)
    thread.pause()  # returns without waiting for anything
    assert thread.paused and thread.running
    thread.resume()
    _wait_until(lambda: thread.samples == 2)  # not a minute later: right away
    assert not thread.paused
    assert thread.stop() is True


def test_a_paused_thread_takes_no_samples_until_resumed() -> None:
    got: list[dict[str, Any]] = []
    thread = SamplerThread(Counting(), got.append, interval=0.01).start()
    _wait_until(lambda: len(got) >= 3)
    thread.pause()
    paused_at = len(got)
    time.sleep(0.3)
    assert len(got) <= paused_at + 1  # a sample in flight when pausing may still land, no other
    held = len(got)
    thread.resume()
    _wait_until(lambda: len(got) > held)
    assert thread.stop() is True
    assert thread.stop() is True  # stopping twice is harmless


def test_stop_ends_a_paused_thread() -> None:
    thread = SamplerThread(Counting(), lambda s: None, interval=0.01).start()
    thread.pause()
    assert thread.stop(timeout=2.0) is True and not thread.running


def _wait_until(condition: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.005)


def test_a_resume_not_at_once_keeps_the_schedule_and_wakes_a_parked_thread() -> None:
    thread = SamplerThread(Counting(), lambda s: None, interval=60.0).start()
    _wait_until(lambda: thread.samples == 1)
    thread.pause()
    thread.resume(at_once=False)  # before the thread parked: its next sample stays a minute away
    time.sleep(0.3)
    assert thread.samples == 1 and not thread.paused
    thread.stop()
    quick = SamplerThread(Counting(), lambda s: None, interval=0.05).start()
    _wait_until(lambda: quick.samples >= 1)
    quick.pause()
    _wait_until(lambda: quick._parked)  # parked at its next tick, with no timer
    before = quick.samples
    quick.resume(at_once=False)  # a parked thread is woken, and samples on its schedule again
    _wait_until(lambda: quick.samples > before)
    assert quick.stop() is True
