"""A thread started beside its starter (flightlog.resources.agent.nearby): it runs first on
the starter's CPU, and both have the starter's CPUs again once ``start`` returns."""

from __future__ import annotations

import os
import threading

import pytest

from flightlog.resources.agent import nearby
from flightlog.resources.agent.nearby import start_beside

pytestmark = pytest.mark.skipif(
    not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
    reason="CPU affinity needs Linux and two CPUs or more",
)


def _start_one() -> tuple[set[int], set[int], set[int]]:
    """The new thread's CPUs as it first ran, its CPUs and the starter's once started."""
    first: list[set[int]] = []
    release = threading.Event()

    def body() -> None:
        first.append(os.sched_getaffinity(0))
        release.wait(10)

    thread = threading.Thread(target=body, name="beside", daemon=True)
    start_beside(thread)
    try:
        assert thread.native_id is not None
        return first[0], os.sched_getaffinity(thread.native_id), os.sched_getaffinity(0)
    finally:
        release.set()
        thread.join(10)


def test_a_thread_starts_on_its_starter_s_cpu_and_then_runs_anywhere_it_did() -> None:
    mine = os.sched_getaffinity(0)
    _start_one()  # a process's first start is a plain one (no ctypes import for one thread)
    first, after, starter = _start_one()
    assert len(first) == 1 and first <= mine  # pinned beside its starter while start() waited
    assert after == mine and starter == mine  # and both got the starter's CPUs back


def test_a_starter_with_one_cpu_of_its_own_leaves_its_mask_as_it_was() -> None:
    mine = os.sched_getaffinity(0)
    one = {min(mine)}
    os.sched_setaffinity(0, one)
    try:
        _start_one()
        first, after, starter = _start_one()
        assert first == after == starter == one
    finally:
        os.sched_setaffinity(0, mine)


def test_a_mask_the_system_no_longer_takes_gives_every_cpu_back_not_one() -> None:
    """Put back after ``start()``: should the CPUs of the saved mask be gone meanwhile (a cpuset
    changed), the starter runs on every CPU allowed, never stays pinned."""
    mine = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(mine)})
    try:
        nearby._set_mask(0, {1 << 20})  # a CPU no system has
        assert (
            os.sched_getaffinity(0) >= mine
        )  # (every CPU of its cpuset: more than its own mask, if it had narrowed it)
    finally:
        os.sched_setaffinity(0, mine)
