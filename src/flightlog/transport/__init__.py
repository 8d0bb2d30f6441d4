"""Talking to a flightlog server: the HTTP store readers use and the sink writers ship through.

    FLIGHTLOG_URL=https://flightlog.example.com FLIGHTLOG_TOKEN=flt_... python train.py

With ``FLIGHTLOG_URL`` set, the SDK and the runner still write their local journal first; the
shipper sends its records to the server (:class:`RemoteSink`), and ``flightlog.Client`` reads
through the API (:class:`HttpStore`).

The transport registers its own store URI schemes, ``http://`` and ``https://``, in the store's
registry (`flightlog.store.registry`) when this package is imported: the store, below the
transport, never names it. ``flightlog.Client`` imports the package, so every reader can open
a server's URI. The HTTP client itself (httpx) is imported only when a server is opened.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flightlog.errors import InvalidInput
from flightlog.lazy import lazy_attributes
from flightlog.store.registry import Opener, register

if TYPE_CHECKING:
    from flightlog.transport.http_store import HttpStore
    from flightlog.transport.sink import RemoteSink, open_remote_sink

__all__ = ["SCHEMES", "HttpStore", "RemoteSink", "open_remote_sink"]

#: the store URI schemes of a flightlog server, registered below
SCHEMES = ("http", "https")

__getattr__, __dir__ = lazy_attributes(
    __name__,
    {"HttpStore": ".http_store", "RemoteSink": ".sink", "open_remote_sink": ".sink"},
)


def _http(fork_safe: bool) -> Opener:
    """The opener of a server's URI (the HTTP store: nothing of it is fork-sensitive)."""
    try:
        from flightlog.transport.http_store import HttpStore  # cost: a server's URI only (httpx)
    except ImportError as exc:
        raise InvalidInput(
            f"talking to a flightlog server needs httpx ({exc}): pip install 'flightlog[server]'"
        ) from None
    return HttpStore


for _scheme in SCHEMES:
    register(_scheme, _http)
