"""The machine-readable codes inside an error message: errno, HTTP status, SQLSTATE, gRPC
status and a process exit code.

Why: a code says more than the words around it. A generic ``ClientError`` with ``(429)`` is a
service refusing for capacity; ``psycopg2.OperationalError`` with SQLSTATE ``53300`` is a
database out of connections; ``StatusCode.RESOURCE_EXHAUSTED`` is a quota. Libraries print
codes in many ways; each way is one pattern here, and :mod:`.candidates` maps a code to the
category it names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from flightlog.diagnose.patterns import errno_numbers

__all__ = ["Codes", "read_codes", "GRPC_CODES"]


@dataclass(frozen=True)
class Codes:
    """The codes one message carries (each None when it carries none)."""

    errno: int | None = None
    http_status: int | None = None
    sqlstate: str | None = None
    grpc: str | None = None
    exit_code: int | None = None

    def __bool__(self) -> bool:
        return any(v is not None for v in (self.errno, self.http_status, self.sqlstate, self.grpc, self.exit_code))

    def to_dict(self) -> dict[str, int | str]:
        return {
            k: v
            for k, v in (
                ("errno", self.errno),
                ("http_status", self.http_status),
                ("sqlstate", self.sqlstate),
                ("grpc", self.grpc),
                ("exit_code", self.exit_code),
            )
            if v is not None
        }


#: how HTTP statuses are printed by requests, httpx, urllib, botocore, google-api-core, openai,
#: huggingface_hub, aiohttp and friends
_HTTP = re.compile(
    r"\b(?P<a>[1-5]\d\d) (?:Client|Server) Error\b|(?:Client|Server) error '(?P<b>[1-5]\d\d)|HTTP Error (?P<c>[1-5]\d\d)"
    r"|(?<!exit )(?<!exit_)\b(?:status|status[_ ]code|http[_ ]status|response code|error code|statusCode|http_code)['\"]?\s*[:=]\s*['\"]?(?P<d>[1-5]\d\d)\b"
    r"|\bHTTP(?:/\d(?:\.\d)?)?\s+(?P<e>[1-5]\d\d)\b|<Response \[(?P<f>[1-5]\d\d)\]>|\((?P<g>4\d\d|5\d\d)\) when calling the"
    r"|\breturned (?:status |HTTP )?(?P<h>[45]\d\d)\b|\bError code: (?P<i>[45]\d\d)\b|\b(?P<j>[45]\d\d) (?:Too Many Requests|"
    r"Service Unavailable|Bad Gateway|Gateway Time-?out|Internal Server Error|Unauthorized|Forbidden|Not Found|Bad Request|"
    r"Payload Too Large|Unprocessable Entity|Request Timeout|Conflict)\b|\bgot (?:status )?(?P<k>[45]\d\d) from\b"
    r"|\((?P<l>[45]\d\d)\)\s*(?:Reason:|$)|[\"']code[\"']\s*:\s*(?P<m>[45]\d\d)\b|\b[A-Z]\w*(?:Exception|Error)\((?P<n>[45]\d\d)\b"
    # urllib3's Retry giving up on a status of its ``status_forcelist`` (requests' RetryError)
    r"|\btoo many (?P<o>[45]\d\d) error responses\b",
    re.I | re.M,
)
#: the reason phrase alone (Kubernetes' ``Reason: Forbidden``, a client's ``Not Found`` without its number)
_REASON = re.compile(
    r"\bReason: (Unauthorized|Forbidden|Not Found|Too Many Requests|Service Unavailable|Bad Gateway|Gateway Time-?out"
    r"|Internal Server Error|Bad Request|Request Timeout|Conflict)\b"
)
_REASON_STATUS = {
    "Unauthorized": 401,
    "Forbidden": 403,
    "Not Found": 404,
    "Too Many Requests": 429,
    "Service Unavailable": 503,
    "Bad Gateway": 502,
    "Gateway Timeout": 504,
    "Gateway Time-out": 504,
    "Internal Server Error": 500,
    "Bad Request": 400,
    "Request Timeout": 408,
    "Conflict": 409,
}
#: google-api-core and some clients put the status first: ``429 Quota exceeded for ...``
_LEADING_STATUS = re.compile(r"^\s*([45]\d\d) [A-Z]")
#: a SQLSTATE: ``SQLSTATE[08006]``, ``sqlstate: 53300``, ``pgcode 53300``, MySQL's ``ERROR 1045 (28000)``
_SQLSTATE = re.compile(
    r"\bSQLSTATE\s*[\[=:]?\s*['\"]?(?P<a>[0-9A-Z]{5})\b|\bpgcode[\s=:]+['\"]?(?P<b>[0-9A-Z]{5})\b"
    r"|\bERROR \d{4} \((?P<c>[0-9A-Z]{5})\)|\bsql_?state['\"]?\s*[:=]\s*['\"]?(?P<d>[0-9A-Z]{5})\b",
    re.I,
)
#: PostgreSQL's own condition names, as psycopg2/psycopg print them in the class name
_PG_ERRORS = {
    "TooManyConnections": "53300",
    "InsufficientResources": "53000",
    "DiskFull": "53100",
    "OutOfMemory": "53200",
    "InvalidPassword": "28P01",
    "InvalidAuthorizationSpecification": "28000",
    "ConnectionException": "08000",
    "ConnectionFailure": "08006",
    "UndefinedTable": "42P01",
    "UndefinedColumn": "42703",
    "AdminShutdown": "57P01",
    "CannotConnectNow": "57P03",
    "QueryCanceled": "57014",
    "InvalidTextRepresentation": "22P02",
    "NumericValueOutOfRange": "22003",
    "UniqueViolation": "23505",
    "NotNullViolation": "23502",
    "ForeignKeyViolation": "23503",
    "InsufficientPrivilege": "42501",
    "InvalidCatalogName": "3D000",
    "StringDataRightTruncation": "22001",
    "DatetimeFieldOverflow": "22008",
    "InvalidDatetimeFormat": "22007",
    "CheckViolation": "23514",
    "TransactionRollback": "40000",
    "SerializationFailure": "40001",
    "DeadlockDetected": "40P01",
    "LockNotAvailable": "55P03",
}
_PG_CLASS = re.compile(r"\b(?:psycopg2?|asyncpg)\.(?:errors|exceptions)\.(?P<name>\w+)")
#: messages that say the condition in PostgreSQL's and MySQL's own words
_SQL_WORDS = (
    (
        re.compile(
            r"sorry, too many clients already|too many connections|remaining connection slots are reserved", re.I
        ),
        "53300",
    ),
    (re.compile(r"password authentication failed|access denied for user", re.I), "28P01"),
    (re.compile(r"the database system is (?:starting up|shutting down|in recovery mode)", re.I), "57P03"),
    (re.compile(r"canceling statement due to statement timeout", re.I), "57014"),
    # the server's FATAL answer to a connection, which psycopg (3) prints without its code inside
    # "connection failed: connection to server at … failed: FATAL: …": the server was there and
    # refused the login (28000) or has no such database (3D000) — not a network failure
    (
        re.compile(
            r"\brole \"[^\"]*\" (?:does not exist|is not permitted to log in)|\bno pg_hba\.conf entry for\b", re.I
        ),
        "28000",
    ),
    (re.compile(r"\bdatabase \"[^\"]*\" does not exist", re.I), "3D000"),
    # concurrent transactions that conflicted (PostgreSQL's class 40; MySQL's 1213 "Deadlock found
    # when trying to get lock" is in that class too) and a lock NOWAIT or lock_timeout gave up on
    (re.compile(r"\bcould not serialize access due to\b", re.I), "40001"),
    (re.compile(r"\bdeadlock detected\b|\bdeadlock found when trying to get lock\b", re.I), "40P01"),
    (re.compile(r"\bcanceling statement due to lock timeout\b|\bcould not obtain lock on\b", re.I), "55P03"),
    # a value wider than its column (PostgreSQL's 22001; MySQL's 1406 "Data too long for column")
    (re.compile(r"\bvalue too long for type\b|\bdata too long for column\b", re.I), "22001"),
)
GRPC_CODES = (
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
)
_GRPC_NUMBER = dict(enumerate(GRPC_CODES, start=1))
#: ``StatusCode.UNAVAILABLE``, ``status = StatusCode.RESOURCE_EXHAUSTED``, ``grpc_status:14``,
#: google-api-core's ``429 RESOURCE_EXHAUSTED``, Go's ``code = ResourceExhausted``
_GRPC = re.compile(
    r"\bStatusCode\.(?P<a>[A-Z_]{5,})\b|\bgrpc_status[\"']?\s*[:=]\s*(?P<n>\d{1,2})\b"
    r"|\b\d{3} (?P<b>" + "|".join(GRPC_CODES) + r")\b|\bcode = (?P<c>[A-Z][A-Za-z]+)\b"
    r"|^(?P<d>" + "|".join(GRPC_CODES) + r"):",
    re.M,
)
#: an exit code another process reported: ``exited with code 137``, ``exitcode: -9``,
#: ``returned non-zero exit status 137``, ``exit status 1``, ``Exit code: 137``
_EXIT = re.compile(
    r"\bexit(?:ed)?(?: with)?[ _]?(?:code|status)\b\s*[:=]?\s*\(?(?P<a>-?\d{1,3})\b|\bexitcode\s*:\s*(?P<b>-?\d{1,3})\b"
    r"|non-zero exit status (?P<c>-?\d{1,3})\b|\bexit_code[\"']?\s*[:=]\s*(?P<d>-?\d{1,3})\b",
    re.I,
)


def _first(m: re.Match[str] | None) -> str | None:
    if m is None:
        return None
    return next((g for g in m.groups() if g is not None), None)


def read_codes(message: str, type_name: str = "") -> Codes:
    """The codes in one exception's message (and its class name, for PostgreSQL's condition
    classes): the first of each kind."""
    text = message[:4000]
    errnos = errno_numbers(text)
    http = _first(_HTTP.search(text)) or _first(_LEADING_STATUS.match(text))
    if http is None and (reason := _REASON.search(text)):
        http = str(_REASON_STATUS[reason[1]])
    sqlstate = _first(_SQLSTATE.search(text))
    if sqlstate is None:
        pg = _PG_CLASS.search(type_name) or _PG_CLASS.search(text)
        if pg and pg["name"] in _PG_ERRORS:
            sqlstate = _PG_ERRORS[pg["name"]]
        elif type_name.rsplit(".", 1)[-1] in _PG_ERRORS and "psycopg" in type_name:
            sqlstate = _PG_ERRORS[type_name.rsplit(".", 1)[-1]]
        else:
            sqlstate = next((code for pattern, code in _SQL_WORDS if pattern.search(text)), None)
    grpc = _grpc(text)
    exit_match = _first(_EXIT.search(text))
    return Codes(
        errno=errnos[0] if errnos else None,
        http_status=int(http) if http else None,
        sqlstate=sqlstate.upper() if sqlstate else None,
        grpc=grpc,
        exit_code=int(exit_match) if exit_match else None,
    )


def _grpc(text: str) -> str | None:
    if (
        "tatus" not in text
        and "code = " not in text
        and not any(
            c in text
            for c in (
                "_EXHAUSTED",
                "UNAVAILABLE",
                "DEADLINE",
                "PERMISSION_DENIED",
                "UNAUTHENTICATED",
                "NOT_FOUND",
                "INVALID_ARGUMENT",
            )
        )
    ):
        return None
    m = _GRPC.search(text)
    if m is None:
        return None
    if m["n"]:
        return _GRPC_NUMBER.get(int(m["n"]))
    name = m["a"] or m["b"] or m["d"]
    if name:
        return name if name in GRPC_CODES else None
    camel = re.sub(r"(?<!^)(?=[A-Z])", "_", m["c"] or "").upper()  # Go's ResourceExhausted
    return camel if camel in GRPC_CODES else None
