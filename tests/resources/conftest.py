"""Shared fixture for resource tests: real child processes, always killed and reaped."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from typing import Any

import pytest

Spawn = Callable[..., "subprocess.Popen[bytes]"]


@pytest.fixture
def spawn() -> Iterator[Spawn]:
    """``spawn(args, **popen_kwargs)``; whatever still runs after the test is killed."""
    started: list[subprocess.Popen[bytes]] = []

    def _spawn(args: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
        proc: subprocess.Popen[bytes] = subprocess.Popen(args, **kwargs)
        started.append(proc)
        return proc

    yield _spawn
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
