"""The watch's thread in a process that has not imported ``threading`` (the bootstrap's).

Why: ``import threading`` brings ``functools`` and ``collections`` with it, ~5 ms of CPU at
every start of a workload under ``flightlog run``, most of what the bootstrap cost a pipeline
step that does little (issue 32, ``bench/README.md``). A process that imports ``threading``
itself (nearly every real workload) pays that anyway; one that does not should not pay it for
the watch. So the bootstrap starts its thread with ``_thread`` (`BareThread`), and the thread
joins ``threading``'s books the moment the workload imports ``threading``: a finder first on
``sys.meta_path`` sees that one import, lets it run as it would have, and has the watch's thread
call ``threading.current_thread()`` (which enters a thread ``threading`` did not start, named
then ``flightlog-hang-watch``), while the importing thread waits for it, briefly and bounded. So
``threading.enumerate()`` shows the watch from the workload's first look, as before. The
finder is gone after that import; the watch's thread never imports ``threading`` itself (it
would make itself ``threading.main_thread()``).

Standard library only (see ``agent/__init__.py``); never raises into the workload.
"""

from __future__ import annotations

import _thread
import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing into a workload at start-up
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["BareThread"]

_JOIN_WAIT = 1.0  # seconds an import of threading waits for the watch's thread to enter its books


class BareThread:
    """What the watch uses of a ``threading.Thread`` (``start``, ``is_alive``, ``join``,
    ``ident``), started with ``_thread``. ``wake`` wakes the thread's target from its sleep; the
    target calls `serve` after each wake-up (the entry into ``threading``'s books is made there,
    on this thread)."""

    def __init__(self, target: Callable[[], None], name: str, wake: Callable[[], None]) -> None:
        self._target = target
        self.name = name
        self._wake = wake
        self.ident: int | None = None
        self._pid = os.getpid()  # a child forked from this process has no such thread
        self._running = _thread.allocate_lock()  # held from start to the target's return
        self._entered = _thread.allocate_lock()  # held until the thread is in threading's books
        self._entered.acquire()
        self._asked = False

    def start(self) -> None:
        self._pid = os.getpid()
        self._running.acquire()
        try:
            self.ident = _thread.start_new_thread(self._main, ())
        except BaseException:
            self._running.release()
            raise
        if "threading" in sys.modules:  # imported meanwhile (another thread of the workload)
            self.ask_to_enter()
        else:
            _ThreadingImport.watch(self)

    def is_alive(self) -> bool:
        return self._running.locked() and self._pid == os.getpid()

    def join(self, timeout: float | None = None) -> None:
        if self._running.acquire(timeout=-1 if timeout is None else timeout):
            self._running.release()

    def serve(self) -> None:
        """On this thread, after a wake-up: enter ``threading``'s books if that was asked."""
        if self._asked:
            self._asked = False
            self._enter()

    def ask_to_enter(self) -> None:
        """From another thread, ``threading`` just imported: have this thread enter its books
        at its next wake-up (now), and wait for that a bounded while."""
        if self.ident == _thread.get_ident():
            self._enter()
            return
        if not self.is_alive():  # ended, or this is a forked child: nobody would answer
            return
        self._asked = True
        self._wake()
        if self._entered.acquire(timeout=_JOIN_WAIT):
            self._entered.release()

    def _enter(self) -> None:
        threading = sys.modules.get("threading")
        try:
            if threading is not None and self.is_alive():
                threading.current_thread().name = self.name  # a thread threading did not start: entered now
        except Exception:
            pass
        finally:
            try:
                self._entered.release()
            except RuntimeError:  # entered before
                pass

    def _main(self) -> None:
        try:
            self._target()
        finally:
            self._running.release()
            try:
                self._entered.release()  # nobody waits for a thread that ended
            except RuntimeError:
                pass


class _ThreadingImport:
    """A finder first on ``sys.meta_path`` until ``threading`` is imported: it finds nothing
    itself (every other import passes it by at the cost of one comparison); for ``threading``
    it asks the finders after it, and wraps the loader they found so that, once the module has
    run, the watch's thread enters its books. Then it removes itself."""

    _threads: list[BareThread] = []  # noqa: RUF012 - one list for the process
    _installed: Any = None

    @classmethod
    def watch(cls, thread: BareThread) -> None:
        cls._threads.append(thread)
        if cls._installed is None:
            cls._installed = cls()
            sys.meta_path.insert(0, cls._installed)

    @classmethod
    def _uninstall(cls) -> None:
        finder, cls._installed = cls._installed, None
        try:
            sys.meta_path.remove(finder)
        except ValueError:
            pass

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "threading":
            return None
        self._uninstall()
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if find is None:
                continue
            spec = find(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Entering(spec.loader, self._threads)
                return spec
        return None


class _Entering:
    """The loader of ``threading``, then the entry of the watch's threads into its books."""

    def __init__(self, loader: Any, threads: list[BareThread]) -> None:
        self._loader = loader
        self._threads = threads

    def create_module(self, spec: Any) -> Any:
        create = getattr(self._loader, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module: Any) -> None:
        module.__loader__ = self._loader  # the module looks as if it had been loaded plainly
        spec = getattr(module, "__spec__", None)
        if spec is not None:
            spec.loader = self._loader
        self._loader.exec_module(module)
        threads, self._threads[:] = list(self._threads), []
        for thread in threads:
            try:
                thread.ask_to_enter()
            except Exception:
                pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)
