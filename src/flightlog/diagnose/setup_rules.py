"""Rules for failures of a run's setup that read as a library's fault and are not (issue 29).

Why: before the real work starts, a run imports its own package, reads its environment and
waits for what it shares with other jobs. Several of those failures surface in code that is not
the workload's — ``os.environ``'s ``__getitem__``, torch's ``Module.__getattr__``, a lock
library's wait — or in an exception class that names an API change (``ImportError``), and the
general rules read them so: an unset variable as a missing column of the data, the workload's
own circular import and the typo of an attribute of its own model as an upgrade's doing, a lock
another process holds as an unreachable service. Each rule here reads the place in the chain
that says whose it is, and names the hits it supersedes on that link.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from flightlog.diagnose.tracebacks import Frame, ParsedException, is_library_file

__all__ = ["SetupHit", "setup_rules"]


@dataclass(frozen=True)
class SetupHit:
    """One setup rule that matched a link, and the rules its reading replaces there."""

    category: str
    weight: float
    rule: str
    detail: str
    #: the ids of the rules on the same link that read it otherwise (their hits are dropped)
    supersedes: frozenset[str]


#: Python's words for an import that reached a module still being initialised
_CIRCULAR = re.compile(r"\bpartially initiali[sz]ed module '(?P<module>[\w.]+)'.*\bcircular import\b", re.DOTALL)
#: the module's file as the ImportError names it at the end: ``(/src/featkit/__init__.py)``
_MODULE_FILE = re.compile(r"\((?P<path>[^()]+\.py)\)\s*$")
#: the readings of an import failure as a dependency's: the exception's class, the words of an
#: API change, the failing line being an import, a missing module
_IMPORT_READINGS: Final = frozenset(
    {"an_import_failure", "an_api_the_installed_library_changed", "an_import_statement_raised", "a_missing_module"}
)
#: an object's attribute that is not there, as Python (and torch's ``Module.__getattr__``) words it
_OBJECT_ATTRIBUTE = re.compile(r"^'(?P<cls>[\w.]+)' object has no attribute '(?P<attr>\w+)'")
#: the functions through which a class answers an attribute lookup
_LOOKUPS: Final = frozenset({"__getattr__", "__getattribute__"})
#: the failing line reads the process's environment by key (``os.environ["X"]``, ``environ['X']``)
_READS_ENVIRON = re.compile(r"\benviron\s*\[")
#: a variable's name that says it holds a secret: a key, a token, a password, credentials
_SECRET_NAME = re.compile(r"(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|CREDENTIALS?|AUTH|PAT)(?:_|$)")
#: a lock another process holds that the wait for gave up on: py-filelock's ``Timeout`` (Hugging
#: Face's caches, datasets' builders, torch extensions' build dir), portalocker's, fasteners'
_LOCK_WAIT = re.compile(
    r"\bfile ?lock\b.{0,200}\bcould not be acquired\b|\bcould not acquire (?:the )?(?:file )?lock\b.{0,80}"
    r"\b(?:within|after|timeout|timed out)\b|\btimed? ?out (?:while )?(?:waiting for|acquiring) (?:the )?(?:file )?lock\b"
    r"|\block acquisition timed out\b",
    re.IGNORECASE | re.DOTALL,
)
_NETWORK_TIMEOUT: Final = frozenset({"a_network_timeout"})
#: the file a ``FileNotFoundError`` names
_NOT_FOUND_PATH = re.compile(r"No such file or directory: '(?P<path>[^']+)'")
#: the names of files that hold credentials: a token file, ``.netrc``, a cloud's credentials or
#: service-account key, Kaggle's ``kaggle.json``, PostgreSQL's ``.pgpass``, an SSH or TLS key
_CREDENTIALS_FILE = re.compile(
    r"^(?:\.?(?:\w+[_.-])?token(?:\.txt|\.json)?|\.netrc|_netrc|credentials(?:\.json|\.ini)?|\.git-credentials"
    r"|kaggle\.json|\.pgpass|id_(?:rsa|ed25519|ecdsa)|[\w.-]*service[_-]?account[\w.-]*\.json|[\w.-]+\.pem"
    r"|application_default_credentials\.json)$",
    re.IGNORECASE,
)
#: the readings of a file that is not there as the data's
_MISSING_FILE_READINGS: Final = frozenset(
    {
        "filenotfounderror",
        "enoent_no_such_file_or_directory",
        "cue:something_not_found",
        "errno:2",
        "a_path_the_message_says_is_not_there",
    }
)


def setup_rules(link: ParsedException) -> list[SetupHit]:
    """The setup rules that match ``link`` (most links: none)."""
    found = [
        _own_circular_import(link),
        _own_object_attribute(link),
        _unset_environment_variable(link),
        _a_lock_that_did_not_come_free(link),
        _a_credentials_file_that_is_not_there(link),
    ]
    return [hit for hit in found if hit is not None]


def _own_circular_import(link: ParsedException) -> SetupHit | None:
    """An import that reached the workload's own module while it was still being initialised
    ("cannot import name 'DEFAULT_CLIP' from partially initialized module 'featkit' (most likely
    due to a circular import)"): its package imports itself in a loop, or a file of the workload
    shadows the library it imports (a ``torch.py`` beside the script). The workload's code, not
    a dependency: the innermost frame, or the module's file the message names, is its own."""
    if link.short_type not in ("ImportError", "AttributeError"):
        return None
    m = _CIRCULAR.search(link.message)
    if m is None:
        return None
    named = _MODULE_FILE.search(link.message.strip())
    if named is not None:
        own = not is_library_file(named["path"])
    elif link.frames:
        own = not link.frames[-1].in_library
    else:
        return None
    if not own:
        return None
    return SetupHit(
        "code_error",
        0.85,
        "a_circular_import_in_the_workload_s_own_modules",
        f"{link.headline()[:300]}: the module {m['module']!r} is the workload's own and imports itself in a loop",
        _IMPORT_READINGS,
    )


def _own_object_attribute(link: ParsedException) -> SetupHit | None:
    """An attribute the workload's own object lacks, looked up by a method of its own class
    (``return self.hidden_szie``) and answered by a base class's ``__getattr__`` in a library
    (torch's ``nn.Module``): the typo is the workload's. Raised inside the library, it read as
    that library's API changed (dependency_error 0.49 on a complete run written for the purpose)."""
    if link.short_type != "AttributeError" or len(link.frames) < 2:
        return None
    m = _OBJECT_ATTRIBUTE.search(link.message)
    innermost, caller = link.frames[-1], link.frames[-2]
    if m is None or not innermost.in_library or innermost.function not in _LOOKUPS or caller.in_library:
        return None
    if not re.search(rf"\bself\.{re.escape(m['attr'])}\b", caller.code):
        return None
    return SetupHit(
        "code_error",
        0.6,
        "an_attribute_the_workload_s_own_object_lacks",
        f"{link.headline()[:300]}: looked up on its own object at {caller.where()}: {caller.code[:200]}",
        frozenset({"an_attribute_error_inside_a_library"}),
    )


def _unset_environment_variable(link: ParsedException) -> SetupHit | None:
    """An environment variable the workload reads by key (``os.environ["FEATSTORE_API_KEY"]``)
    that the job does not set: a ``KeyError`` raised by ``os.environ``'s ``__getitem__`` on the
    workload's own line. Not a record's missing key (data_error 0.32 on a complete run written
    for the purpose): the job's environment lacks a setting, and when its name says it holds a
    secret (a key, a token, a password), the credentials."""
    if link.short_type != "KeyError":
        return None
    own = link.innermost_own_frame()
    if own is None:
        return None
    below = link.frames[link.frames.index(own) + 1 :]
    # the lookup itself: ``os``'s ``__getitem__`` (only ``os.environ``'s raises there), or, where
    # a traceback shows no frame of ``os``, the workload's line indexing ``environ`` (a line a
    # log's redaction may have cut: ``self.api_key = [REDACTED:secret]"X"]``)
    if below:
        if not all(_in_os(frame) for frame in below) or below[-1].function != "__getitem__":
            return None
    elif not _READS_ENVIRON.search(own.code):
        return None
    name = link.message.strip().strip("'\"")
    if not name or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        return None
    detail = f"{link.headline()[:300]}: the environment variable {name} is not set (at {own.where()})"
    record_readings = frozenset({"a_missing_key_in_a_record"})
    if _SECRET_NAME.search(name.upper()):
        return SetupHit(
            "credentials_error", 0.75, "an_unset_environment_variable_holding_a_secret", detail, record_readings
        )
    return SetupHit("bad_parameter", 0.6, "an_unset_environment_variable", detail, record_readings)


def _in_os(frame: Frame) -> bool:
    path = frame.file.replace("\\", "/")
    return path == "<frozen os>" or path.endswith("/os.py")


def _a_lock_that_did_not_come_free(link: ParsedException) -> SetupHit | None:
    """A file lock another process holds, waited for until the wait's timeout ("The file lock
    'cache/tokenized.lock' could not be acquired."): a time limit the run set on its wait, not a
    service that did not answer (the class, ``Timeout``, read as a network timeout: service_unavailable
    0.32 on a complete run written for the purpose)."""
    if not _LOCK_WAIT.search(link.message):
        return None
    return SetupHit(
        "timeout",
        0.7,
        "a_lock_another_process_holds_did_not_come_free_in_time",
        f"{link.headline()[:300]}: another process holds the lock and the wait timed out",
        _NETWORK_TIMEOUT,
    )


def _a_credentials_file_that_is_not_there(link: ParsedException) -> SetupHit | None:
    """A credentials file the run reads and the node lacks (``FileNotFoundError: … No such file
    or directory: '/home/job/.config/modelreg/token'``, ``~/.netrc``, ``kaggle.json``, a
    service account's key): the credentials were never provisioned there — what Google's
    ``DefaultCredentialsError`` and Kaggle's "Could not find kaggle.json" say in their words —,
    not a file of the data (missing_file 0.93 on a complete run written for the purpose)."""
    if link.short_type != "FileNotFoundError":
        return None
    m = _NOT_FOUND_PATH.search(link.message)
    if m is None:
        return None
    name = m["path"].replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    if not _CREDENTIALS_FILE.match(name):
        return None
    return SetupHit(
        "credentials_error",
        0.8,
        "a_credentials_file_that_is_not_there",
        f"{link.headline()[:300]}: {name!r} holds credentials, and the node has none there",
        _MISSING_FILE_READINGS,
    )
