"""Secrets out of everything flightlog stores: the bottom layer every writer redacts through.

What it promises
----------------
Nothing a user gives a run reaches the journal or the store with a secret in it. A secret is
replaced by a marker that names its family, ``[REDACTED:<family>]``, and the text around it is
kept (``password=hunter2 user=bob`` → ``password=[REDACTED:secret] user=bob``). What counts as
a secret is one policy, applied in a fixed order (``engine.py``):

1. its *shape* (``families.py``): private key blocks (``[REDACTED:private_key]``, the whole
   block), AWS access key ids, Google API keys, GitHub and GitLab tokens, Slack tokens and
   webhooks, JWTs, Hugging Face tokens, ``sk-…`` API keys, Stripe keys and webhook secrets,
   npm and PyPI tokens, SendGrid keys, passwords in URLs (``[REDACTED:url_password]``);
2. its *name* (``names.py``, ``assignments.py``): ``password=…``, ``"api_key": "…"``,
   ``Authorization: Bearer …`` (``[REDACTED:secret]``, ``[REDACTED:authorization]``,
   ``[REDACTED:aws_secret_access_key]``), and its *place* in a command (``commands.py``:
   ``docker login -p X``, ``curl -u user:X``);
3. the values of the process's secret-looking environment variables
   (``[REDACTED:env:GITHUB_TOKEN]``);
4. the user's own patterns (``patterns.py``: ``--redact``, ``flightlog.redact.txt``,
   ``FLIGHTLOG_HOME/redact.txt``; ``[REDACTED:custom]``).

Redaction is idempotent: every rule skips a value that already starts with ``[REDACTED``, so
a second pass over redacted text changes nothing and counts nothing.

Where it runs: once per record, where the record is formed
----------------------------------------------------------
- log events: ``Run.log_event`` and the SDK's tracebacks redact each event as they build it;
  captured output (``flightlog run``, the SDK's console capture) is redacted by the capture
  pipeline, chunk by chunk, before it becomes events;
- user strings (params, tags, notes, the run's name and failure, the context, evidence;
  ``kinds.USER_STRING_KINDS``): by ``redact_user_strings`` — the SDK writer's flush, before
  the journal; ``store.base.ingest_one`` for what is typed at the CLI or sent to the API
  (notes, edits, evidence); the MLflow importer as it forms its records;
- nothing redacts again on the way to the store: the journal, ``flightlog sync``, the shipper
  and the embedded store carry records as they were formed.

Server ingest is the one second pass, by design. A writer that redacts says so on the wire
(``REDACTED_HEADER`` on ``POST /api/v1/ingest``; flightlog's HTTP store always sends it):

- user-string records are redacted again whatever the writer says. They are few (a handful
  per run, against thousands of log and metric records), so the pass is cheap; it is
  idempotent, so it changes nothing a redacting writer sent; and it is the only point where
  the *server's* policy (its environment, its home's ``redact.txt``) reaches every writer,
  old clients and clients that claim to redact included — a claim cannot be checked;
- log chunks, the bulk, are redacted at ingest only when the writer does not declare it
  (an old client, a script posting records, the MLflow protocol to come). Trusting the
  declaration for them is safe: redaction keeps honest writers from storing secrets by
  accident, it cannot stop a writer that means to (it can always transform a secret past any
  pattern), so a writer that lies about redacting gains nothing it did not already have.

``stats()`` counts the passes made in this process by record kind, so that promise is tested
(``tests/redaction``) rather than hoped for.

This package imports only ``flightlog.errors`` and the standard library: it sits below the
journal, the store and every feature that stores user strings (``[tool.importlinter]``).
The rules are imported on first use (``redactor``, ``redact_user_strings``), so ``import
flightlog`` does not compile them.
"""

from __future__ import annotations

from flightlog.redaction.kinds import USER_STRING_KINDS
from flightlog.redaction.process import (
    pattern_files,
    personal_data_redacted,
    redact_personal_data,
    redact_user_strings,
    redactor,
)
from flightlog.redaction.stats import count_pass, reset_stats, stats

__all__ = [
    "REDACTED_HEADER",
    "REDACTION_VERSION",
    "USER_STRING_KINDS",
    "count_pass",
    "pattern_files",
    "personal_data_redacted",
    "redact_personal_data",
    "redact_user_strings",
    "redactor",
    "reset_stats",
    "stats",
]

#: The request header with which a writer declares that it redacted what it sends (the value
#: is the policy's version). Read by server ingest (see above); absent means "not redacted".
REDACTED_HEADER = "X-Flightlog-Redacted"
REDACTION_VERSION = "1"
