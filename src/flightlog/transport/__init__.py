"""Talking to a flightlog server: the HTTP store readers use and the sink writers ship through.

    FLIGHTLOG_URL=https://flightlog.example.com FLIGHTLOG_TOKEN=flt_... python train.py

With ``FLIGHTLOG_URL`` set, the SDK and the runner still write their local journal first; the
shipper sends its records to the server (:class:`RemoteSink`), and ``flightlog.Client`` reads
through the API (:class:`HttpStore`, registered for ``http://`` and ``https://`` store URIs).
"""

from flightlog.transport.http_store import HttpStore
from flightlog.transport.sink import RemoteSink, open_remote_sink

__all__ = ["HttpStore", "RemoteSink", "open_remote_sink"]
