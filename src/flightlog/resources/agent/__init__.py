"""Evidence of a hang, collected inside the process that hangs (docs/distributed.md).

* `stacks` — every thread's Python stack, the torch Flight Recorder's entries, faulthandler's
  text read back;
* `settings` — the hang watch's settings (``FLIGHTLOG_HANG_*``) and a rank's identity;
* `watch` — `RankWatch`, the daemon thread that notices a stall and records the evidence;
* `channel` — the files through which ranks without the SDK hand it to ``flightlog run``;
* `boot` — what the runner's bootstrap (``_boot/sitecustomize.py``) starts in such a rank.

The package imports nothing but the standard library and its own modules, always relatively:
the bootstrap loads it into a workload under a private name (``_flightlog_agent``), without
``flightlog`` itself, whose installed version may differ from the runner's or be missing. The
SDK and the runner import it as ``flightlog.resources.agent``.
"""
