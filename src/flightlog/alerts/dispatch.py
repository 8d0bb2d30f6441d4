"""Sending notifications off the evaluation path: one worker thread per notifier, so a slow or
failing notifier (retrying with backoff) never delays the others nor the evaluation.

Every outcome is recorded on the alerts it carried (``notified`` / ``notify_failed`` events)
and a failure is reported through ``on_failure`` (the runner prints it on stderr); nothing
here ever raises into the runner or the server.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from flightlog.alerts.notifiers import Outcome, deliver
from flightlog.alerts.routing import Pending
from flightlog.alerts.stores.base import AlertEvent, AlertStore

__all__ = ["Dispatcher", "Delivered"]


@dataclass
class Delivered:
    pending: Pending
    outcome: Outcome


class Dispatcher:
    def __init__(
        self,
        store: AlertStore | None,
        *,
        on_failure: Callable[[Delivered], None] | None = None,
        on_delivered: Callable[[Delivered], None] | None = None,
        threaded: bool = True,
        sleep: Callable[[float], object] = time.sleep,
    ) -> None:
        self.store = store
        self.on_failure = on_failure
        self.on_delivered = on_delivered
        self.threaded = threaded
        self.sleep = sleep
        self.delivered: list[Delivered] = []
        self._queues: dict[str, queue.Queue[Pending | None]] = {}
        self._threads: dict[str, threading.Thread] = {}
        self._busy = 0
        self._lock = threading.Condition()
        self._deadline: float | None = None

    def submit(self, pending: Pending) -> None:
        if not self.threaded:
            self._deliver(pending)
            return
        name = pending.notifier.name
        with self._lock:
            self._busy += 1
            q = self._queues.get(name)
            if q is None:
                q = self._queues[name] = queue.Queue()
                thread = threading.Thread(target=self._worker, args=(q,), name=f"flightlog-notify-{name}", daemon=True)
                self._threads[name] = thread
                thread.start()
        q.put(pending)

    def _worker(self, q: queue.Queue[Pending | None]) -> None:
        while True:
            pending = q.get()
            if pending is None:
                return
            try:
                self._deliver(pending)
            finally:
                with self._lock:
                    self._busy -= 1
                    self._lock.notify_all()

    def _deliver(self, pending: Pending) -> None:
        outcome = deliver(pending.notifier, pending.notification, sleep=self.sleep, deadline=self._deadline)
        done = Delivered(pending, outcome)
        self.delivered.append(done)
        if len(self.delivered) > 1000:
            del self.delivered[:500]
        event = "notified" if outcome.ok else "notify_failed"
        detail = {
            "notifier": outcome.notifier,
            "attempts": outcome.attempts,
            "status": pending.notification.status,
            "reason": pending.notification.reason,
            "group": pending.notification.group_key,
        }
        if outcome.error:
            detail["error"] = outcome.error
        now = time.time()
        try:
            if self.store is not None:  # each alert's own status: one notification may resolve one and fire another
                self.store.add_events(
                    [
                        AlertEvent(v.alert.id, now, event, {**detail, "status": v.status})
                        for v in pending.notification.alerts
                    ]
                )
        except Exception:  # noqa: BLE001 - the record is best effort; the report below still happens
            pass
        callback = self.on_delivered if outcome.ok else self.on_failure
        if callback is not None:
            try:
                callback(done)
            except Exception:  # noqa: BLE001
                pass

    def flush(self, timeout: float) -> bool:
        """Wait until everything submitted was delivered (or given up on); True when done.
        Retries that would end past the timeout are cut short."""
        deadline = time.monotonic() + timeout
        self._deadline = deadline
        with self._lock:
            while self._busy > 0:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._lock.wait(left)
        self._deadline = None
        return True

    def close(self, timeout: float = 10.0) -> bool:
        done = self.flush(timeout)
        for q in self._queues.values():
            q.put(None)
        return done
