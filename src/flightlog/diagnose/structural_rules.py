"""Rules that read the structure of a failure, not only its words (issue 29): the codes inside a
message, the library an exception came from, how the process ended; and the message rules for
the failures the first tables missed — a service refusing for capacity, a framework's
configuration check, a library's API changed under the user, a time limit raised inside the
process, a numeric guard that stops before any NaN is printed, a signal a framework caught.

Each rule gives evidence with a weight (how strongly it alone points at its category); the
ranker (:mod:`.ranker`) learns how much each rule, at each place of the chain, is worth.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from typing import Final

from flightlog.diagnose.codes import Codes
from flightlog.diagnose.libroles import library_role
from flightlog.diagnose.patterns import ExceptionRule, LineRule
from flightlog.diagnose.tracebacks import Frame

__all__ = [
    "EXTRA_EXCEPTION_RULES",
    "EXTRA_LINE_RULES",
    "code_rules",
    "library_api_rule",
    "own_deadline_rule",
    "pickled_class_rule",
    "restored_state_rule",
    "STATE_DICT_KEYS",
    "STDLIB",
]

_I = re.IGNORECASE


def _re(text: str, flags: int = _I) -> re.Pattern[str]:
    return re.compile(text, flags)


#: a service that is there and says no: throttling, rate limits, quotas of an API, full pools
CAPACITY = _re(
    r"\btoo many requests\b|\brate[ _-]?limit(?:ed|ing)?\b(?! (?:reset|remaining))|\bratelimiterror\b|\bthrottl(?:ed|ing)"
    r"|\brate exceeded\b|\bOOM command not allowed\b|\bmaxmemory\b|\bQueuePool limit\b|\bpool (?:is )?exhausted\b"
    r"|\bSlowDown\b|RequestLimitExceeded|TooManyRequests|ProvisionedThroughputExceeded|\binsufficient_quota\b"
    r"|\bquota (?:exceeded|exhausted)\b(?!.{0,20}\bdisk\b)|\bexceeded (?:your|the) (?:current )?quota\b|\bRESOURCE_EXHAUSTED\b"
    r"|\btoo many (?:clients|connections|open connections|concurrent)\b|\bmax(?:imum)? number of clients reached\b"
    r"|\bremaining connection slots are reserved\b|\bserver (?:is )?(?:busy|overloaded)\b|\b(?:is|are) (?:currently )?overloaded\b|\boverloaded_error\b|\bat capacity\b"
    r"|\bplease (?:slow down|reduce your request rate)\b|\brequest rate\b.{0,30}\b(?:exceeded|too high)\b"
    r"|\bconcurrency limit\b|\bno (?:available )?capacity\b|\binsufficient capacity\b|\bInsufficientInstanceCapacity\b"
    r"|\btoo many (?:pending|queued) (?:requests|tasks)\b|\bengine is (?:busy|overloaded)\b"
    # a lock another writer holds: SQLite's SQLITE_BUSY (optuna's, MLflow's, a registry's file),
    # MySQL's 1205, PostgreSQL's lock_not_available — the store is there and busy; HDF5's lock on
    # a file another process has open for writing (h5py's "unable to lock file, errno = 11")
    r"|\bdatabase (?:table )?is locked\b|\block wait timeout exceeded\b|\bcould not obtain lock\b|\block_not_available\b"
    r"|\bunable to lock file\b"
    # a client's connection pool with no free connection (urllib3's EmptyPoolError and
    # FullPoolError in blocking mode): as SQLAlchemy's QueuePool limit, the pool is the capacity
    # the client was given; not urllib3's warning "Connection pool is full, discarding
    # connection", which is how a healthy run closes a connection it no longer needs
    r"|\bpool is empty and a new connection can't be opened\b|\bpool reached maximum size\b"
)
#: the kinds of object a call takes as its input: a library that says it takes only one of them
#: ("Specifying the columns using strings is only supported for dataframes") refuses what the
#: calling code handed it, whatever its configuration
_INPUT_OBJECTS = (
    r"(?:(?:pandas|polars|numpy|dense|sparse|2d|1d|numeric|contiguous) )?"
    r"(?:data ?frames?|arrays?|ndarrays?|tensors?|series|matri(?:x|ces)|lists?|tuples?|dicts?|dictionaries|strings?)\b"
)
#: a call handed an object of a kind it does not take (issue 29: scikit-learn's column selection
#: by name on a NumPy array, read as a framework's configuration check, bad_parameter 0.75)
INPUT_TYPE = _re(rf"\b(?:is|are) only supported (?:for|with|on|by) {_INPUT_OBJECTS}")
#: a framework's own check of its configuration against itself, the world size or the hardware
CONFIG_CHECK = _re(
    r"\b(?:must|should|has to|needs to) be (?:divisible|a multiple) (?:by|of)\b|\bis not divisible by\b"
    r"|\bnot (?:evenly )?divisible\b|\bmust be a multiple of\b|\bis not equal to\b.{0,80}\*"
    r"|\bworld[_ ]size\b.{0,80}\b(?:must|should|divisible|does not match|mismatch)\b"
    r"|\b(?:must|should) (?:equal|match)\b.{0,60}\bworld[_ ]size\b|\bis (?:not|only) supported (?:on|for|with|when|by|in)\b"
    # … but not a kind of input object: that is what the calling code handed over (INPUT_TYPE)
    rf"(?! {_INPUT_OBJECTS})"
    r"|\bnot supported (?:on|for|with|when|by) (?:this|the|your|current)\b|\bonly supports?\b|\bcannot be used (?:with|together)\b"
    r"|\bmutually exclusive\b|\bincompatible with\b(?! (?:the )?(?:installed|layer)\b)|\brequires? .{1,40} to be (?:set|enabled|true|false|specified)\b"
    r"|\bunsupported (?:dtype|precision|mode|device|backend|configuration|option|value|type|strategy|quantization)\b"
    r"|\binvalid (?:combination|config(?:uration)?|value for)\b|\bexpected .{1,40} to be (?:one of|in|either)\b"
    r"|\bcannot (?:both|be both) be\b|\bdoes not support\b.{0,40}\b(?:mode|precision|dtype|option|strategy|argument)\b"
    # a metric a callback or a scheduler is told to monitor that the run never logs, found only
    # at the first evaluation: Lightning's EarlyStopping and ReduceLROnPlateau ("conditioned on
    # metric `val_acc` which is not available"), ModelCheckpoint ("could not find the monitored
    # key in the returned metrics") (issue 29)
    r"|\bconditioned on metric\b.{0,80}\bwhich is not available\b|\bcould not find the monitored key\b"
    # an option of a reader or a writer that it does not know: pandas' "Unrecognized compression
    # type: gz", pyarrow's "Unsupported compression: zstandard", an unknown codec, engine or
    # text encoding — the value the job was told to use, not the data (issue 29: data_error 0.38)
    r"|\b(?:unsupported|unrecognized|unknown|invalid) (?:compression|codec|engine|encoding)s?"
    r"(?: (?:type|name|method|format))?\b"
)
#: an API the installed version of a library removed, renamed or changed
API_CHANGED = _re(
    r"^module '[\w.]+' has no attribute|\bhas no attribute '\w+'.{0,80}\b(?:deprecated|removed|renamed)\b"
    r"|\bwas (?:deprecated|removed) in\b|\bhas been (?:removed|renamed)\b|\bis deprecated and (?:has been|was) removed\b"
    r"|\bcannot import name\b|\bno longer (?:supported|available|exists|accepts?)\b|\bwas renamed to\b"
    r"|\bremoved in (?:version |v)?\d|\bexpired alias\b|\bdeprecated alias\b|\bnot found in module\b"
    # torch.load's refusal since PyTorch 2.6 flipped its default to weights_only=True: a checkpoint
    # that loaded before the upgrade ("Weights only load failed … we changed the default value")
    r"|\bweights only load failed\b|\bwe changed the default value of\b"
    # a checkpoint of a model type added by a later release than the one installed: Transformers'
    # "has model type `gpt5_moe` but Transformers does not recognize this architecture … your
    # version of Transformers is out of date" (issue 29: data_error 0.29)
    r"|\bdoes not recognize this architecture\b|\byour version of [\w-]+ is out of date\b"
)
#: a time limit raised inside the process (SIGALRM, an orchestrator's task timeout, a deadline).
#: "timed out after N s" alone is a *wait* that timed out — a socket, a rendezvous, a service's
#: initialisation (in the corpus mostly `service_unavailable`) — so it counts only when what
#: timed out is the work itself (a task, a job, a step, the execution)
TIME_LIMIT_INSIDE = _re(
    r"\b(?:task|job|step|function|execution|process|run|test|cell|trial) (?:has )?timed? ?out after \d+(?:\.\d+)? ?"
    r"(?:s|sec|secs|seconds|minutes|mins?|m|h|hours?)\b"
    r"|\bexceeded (?:the |its )?(?:time ?limit|timeout|maximum (?:run|execution) time)\b|\btime ?limit (?:exceeded|reached)\b"
    r"|\bexecution timed out\b|\bTimeout, PID\b|\btask (?:timed out|exceeded)\b|\bSIGALRM\b|^\s*alarm clock\s*$"
    r"|\bhard time limit\b|\bsoft time limit\b|\bjob (?:has )?exceeded (?:its )?(?:walltime|runtime)\b"
    # a budget of time the work was given, in the workload's own words (a SIGALRM handler's
    # "step exceeded the 2 s time limit", "job exceeded its time budget of 2s", "wall-clock budget
    # of 3600s exhausted"): with its length, or named a budget
    r"|\bexceeded (?:the |its |a )?(?:\d+(?:\.\d+)? ?(?:s|secs?|seconds|mins?|minutes|m|h|hours?) )?"
    r"(?:time ?(?:limit|budget)|(?:wall[- ]?clock|run ?time|compute|execution) (?:time ?)?(?:limit|budget))\b"
    r"|\b(?:time|wall[- ]?clock|run ?time|compute) budget\b[^\n]{0,40}?\b(?:exhausted|exceeded|used up|ran out|spent)\b"
)
TIME_LIMIT_CLASSES = (
    "AirflowTaskTimeout",
    "SoftTimeLimitExceeded",
    "TimeLimitExceeded",
    "TaskTimeoutError",
    "JobTimeoutException",
    "FunctionTimedOut",
    "TimeoutExpired",
    "TaskRunTimeoutError",
    "FlowRunTimeoutError",
    "TimeoutSignal",
    # nbclient's per-cell limit (``NotebookClient(timeout=…)``): "A cell timed out while it was
    # being executed, after 4 seconds." (read as a timeout at 0.24 only; issue 29)
    "CellTimeoutError",
)
#: a numeric guard (anomaly detection, check_numerics, a NaN debug mode) that stopped the run —
#: not torch's hint to turn one on, which ends autograd errors that have nothing to do with a NaN
#: ("… modified by an inplace operation … Hint: enable anomaly detection to find the operation")
NUMERIC_GUARD = _re(
    r"returned nan values in its \d+\w* output|\bdetect_anomaly\b|(?<!enable )\banomaly detection\b"
    r"|tensor had (?:nan|inf) values"
    r"|\bcheck_?numerics\b|invalid value \(nan\) encountered|\bnans? (?:detected|found|encountered) in (?:the )?"
    r"(?:gradients?|loss|outputs?|activations?|parameters?|weights?|logits)\b|\bgradients? (?:contain|are|is|became) (?:nan|inf)"
    r"|\bnon-?finite (?:loss|gradients?|values? in (?:the )?(?:loss|gradients?))\b|\bloss (?:returned|is|was) (?:nan|inf)\b"
    r"|\bdebug_nans\b|\bloss returned in `?\w+`? is (?:nan|inf)|\binf checks? (?:failed|found)\b"
    # the workload's own guard on what it computed, in its own words: "non-finite predictions:
    # 4096 of 4096", "evaluation loss is not finite (nan)" (issue 29)
    r"|\bnon-?finite (?:predictions?|outputs?|logits|scores?|probabilities|embeddings?|weights?|parameters?|metrics?)\b"
    # not a search's "test scores are non-finite": scikit-learn's warning that some of the
    # candidates' folds failed and were scored NaN (error_score) in a search that went on
    r"|\b(?:loss|gradients?|predictions?|outputs?|logits|(?<!test )(?<!train )scores?|probabilities|embeddings?|weights?)\b"
    r"[^\n]{0,20}?\b(?:is|are|was|were|became) (?:not finite|non-?finite)\b"
)
#: a class pickled in one program that the loading one cannot find: pickle's "Can't get
#: attribute 'RatioFeatures' on <module '__main__' from 'score.py'>"
_PICKLED_CLASS = re.compile(r"\bcan't get attribute '[\w.<>]+' on <module '(?P<module>[\w.]+)'", _I)
#: the words of torch's ``load_state_dict`` when a checkpoint's parameter names are not the
#: model's (a ``module.`` prefix of ``DataParallel``, a layer renamed or added since)
STATE_DICT_KEYS = _re(r"\b(?:missing|unexpected) key\(s\) in state_dict\b")
#: a path the message names and says is not there ("error: --data-dir /mnt/data/imagenet does not
#: exist", "Checkpoint ./ckpt/last.pt not found"), and a local model folder that is not there,
#: which Hugging Face reads as a Hub repo id and refuses as one ("Repo id must be in the form
#: 'repo_name' or 'namespace/repo_name': '/models/bert'", older versions' "Incorrect
#: path_or_model_id: '/models/bert'"): a missing file, whatever the words around the path
PATH_ABSENT = _re(
    r"(?:^|[\s'\"`(=:])(?:(?:[A-Za-z]:\\|~?/(?!/)|\.{1,2}/)[^\s'\"`]*|[\w.-]+/[^\s'\"`]*\.\w{1,8})['\"`)]?:?\s+"
    r"(?:does not exist|doesn't exist|not found|was not found|could not be found|is missing|no such file or directory)\b"
    r"|\b(?:Repo id must be in the form .{0,80}|Incorrect path_or_model_id): '(?:[A-Za-z]:\\|~?/|\.{1,2}/)"
)
#: a dataset with nothing in it, in the words of the sampler or loader that got it: torch's
#: ``RandomSampler`` ("num_samples should be a positive integer value, but got num_samples=0"),
#: "Found 0 files in …", "the dataset is empty" — a glob that matched nothing, a filter that
#: kept no row: the data's, not a parameter of the sampler (issue 29)
EMPTY_DATA = _re(
    r"\bnum_samples\s*=\s*0\b|\b(?:found|got|contains?|has|with|loaded) 0 (?:samples?|files?|images?|rows?|examples?"
    r"|records?|items?|sequences?|documents?|shards?)\b|\b(?:dataset|data ?set|data ?loader|split|shard list) (?:is|was) empty\b"
)
#: a process that says it received a terminating signal (and may then exit 0 after saving)
CAUGHT_SIGNAL = _re(
    r"\b(?:received|caught|got|handling|trapped|intercepted)\b.{0,20}\b(?:SIGTERM|SIGINT|SIGUSR1|SIGUSR2|SIGHUP|signal (?:15|2|10|12|1))\b"
    r"|\bSIG(?:TERM|INT|USR1) (?:received|caught|detected)\b|\bpreemption (?:signal|notice)\b|\bspot (?:instance )?(?:interruption|termination)\b"
    r"|\bsaving (?:a )?checkpoint before (?:exit|shutdown|terminat)|\bbeing preempted\b|\bwas preempted\b"
    r"|\bshutting down (?:gracefully )?(?:after|on|due to) (?:a )?(?:signal|SIGTERM)\b",
    0,
)

#: linear algebra on a matrix the numbers made degenerate: collinear or constant columns (a
#: sensor stuck at one value, a column duplicated upstream), NaN or infinity in the input (LAPACK's
#: "SVD did not converge") — the data's, as the values an estimator refuses are (issue 29: numpy's
#: "Singular matrix" read as "no clear cause", a hint of dependency_error 0.28)
DEGENERATE = _re(
    r"\bsingular matrix\b|\bmatrix is (?:exactly )?singular\b|\bnot positive[- ]definite\b"
    r"|\b(?:SVD|eigenvalues?|Eigenvalues) did not converge\b"
)
#: a file shorter than what its reader was told to find in it: a copy or an export cut short
#: (numpy's memmap "mmap length is greater than file size", pickle's "Ran out of input" on an
#: empty file, gzip's and lzma's "ended before the end-of-stream marker") (issue 29: read as
#: "no clear cause", a hint of bad_parameter 0.29)
#: ``locale.setlocale`` asked for a locale the system has not generated ("unsupported locale setting")
LOCALE_MISSING = _re(r"\bunsupported locale setting\b")
#: zoneinfo's, pytz's and dateutil's "no such time zone" (``ZoneInfoNotFoundError`` is a KeyError)
TIME_ZONE_CLASSES = ("ZoneInfoNotFoundError", "UnknownTimeZoneError")
SHORT_FILE = _re(
    r"\bmmap length is greater than file size\b|^ran out of input$"
    r"|\bended before the end-of-stream marker was reached\b"
)

EXTRA_EXCEPTION_RULES: Final[tuple[ExceptionRule, ...]] = (
    ExceptionRule("service_unavailable", 0.75, "a_service_refusing_for_capacity", message=CAPACITY),
    ExceptionRule(
        "service_unavailable",
        0.7,
        "a_rate_limit_or_capacity_error_class",
        classes=(
            "RateLimitError",
            "ThrottlingException",
            "TooManyRequests",
            "TooManyRequestsError",
            "ResourceExhausted",
            "TooManyConnections",
            "ServiceOverloaded",
            "OverloadedError",
            "APIStatusError",
        ),
    ),
    # a client's connection pool that gave no connection in time: urllib3's EmptyPoolError and
    # FullPoolError, httpx's and httpcore's PoolTimeout (raised with no message at all) — the
    # requests in flight hold every connection the pool may open, as a database's "too many
    # clients" (issue 29: httpx.PoolTimeout read as dependency_error 0.21, EmptyPoolError as
    # code_error 0.28)
    ExceptionRule(
        "service_unavailable",
        0.75,
        "a_connection_pool_with_no_free_connection",
        classes=("EmptyPoolError", "FullPoolError", "PoolTimeout"),
    ),
    ExceptionRule("bad_parameter", 0.6, "a_framework_s_configuration_check", message=CONFIG_CHECK),
    ExceptionRule("dependency_error", 0.55, "an_api_the_installed_library_changed", message=API_CHANGED),
    ExceptionRule("missing_file", 0.6, "a_path_the_message_says_is_not_there", message=PATH_ABSENT),
    ExceptionRule("data_error", 0.6, "a_dataset_with_nothing_in_it", message=EMPTY_DATA),
    ExceptionRule("timeout", 0.75, "a_time_limit_raised_inside_the_process", classes=TIME_LIMIT_CLASSES),
    ExceptionRule("timeout", 0.65, "a_time_limit_named_in_the_message", message=TIME_LIMIT_INSIDE),
    ExceptionRule("nan_loss", 0.75, "a_numeric_guard_stopped_the_run", message=NUMERIC_GUARD),
    ExceptionRule("nan_loss", 0.55, "a_floating_point_error", classes=("FloatingPointError",)),
    ExceptionRule("code_error", 0.45, "a_native_check_that_failed", classes=("NativeCheckFailure",)),
    ExceptionRule("code_error", 0.65, "a_checkpoint_whose_keys_do_not_fit_the_model", message=STATE_DICT_KEYS),
    # torch's compilers refusing the user's Python: TorchScript's frontend (``NotSupportedError``
    # "Compiled functions can't take variable number of arguments", ``UnsupportedNodeError``
    # for a construct it cannot script) and dynamo's ``Unsupported`` (a graph break where
    # ``fullgraph=True`` allows none) and ``UserError`` (a data-dependent branch it cannot
    # guard on) — the model's code to change, not torch's version nor a setting (issue 29:
    # dependency_error 0.30, bad_parameter 0.43). Not dynamo's ``BackendCompilerFailed`` nor
    # ``TorchRuntimeError``: a compiler the host lacks, an error of the traced code itself
    ExceptionRule(
        "code_error",
        0.7,
        "code_torch_s_compilers_cannot_take",
        classes=("NotSupportedError", "UnsupportedNodeError", "Unsupported", "UserError"),
        modules=("torch.jit.", "torch._dynamo."),
    ),
    ExceptionRule("code_error", 0.6, "an_input_of_a_kind_the_call_does_not_take", message=INPUT_TYPE),
    ExceptionRule(
        "data_error", 0.55, "a_matrix_the_data_made_degenerate", classes=("LinAlgError",), message=DEGENERATE
    ),
    ExceptionRule("data_error", 0.6, "a_file_shorter_than_its_reader_expects", message=SHORT_FILE),
    # the operating system's machinery, in its own words (issue 29: complete runs meeting the
    # limits and the set-up of their host, read as killed_by_signal 0.17, missing_file 0.89 and
    # data_error 0.43): a locale the image does not have installed is software the environment
    # lacks; a time zone key the tz database does not know is the value the run was given (the
    # FileNotFoundError zoneinfo raises it from is how it looks keys up, never a file of the
    # data); the csv module's refusals are a file that is not the CSV the code reads
    ExceptionRule("dependency_error", 0.75, "a_locale_the_system_does_not_have", message=LOCALE_MISSING),
    ExceptionRule("bad_parameter", 0.75, "a_time_zone_key_the_database_does_not_have", classes=TIME_ZONE_CLASSES),
    ExceptionRule(
        "data_error", 0.65, "a_file_the_csv_module_cannot_read", classes=("Error",), modules=("_csv.", "csv.")
    ),
)

EXTRA_LINE_RULES: Final[tuple[LineRule, ...]] = (
    LineRule("service_unavailable", 0.55, "a_service_refusing_for_capacity", CAPACITY),
    LineRule("bad_parameter", 0.4, "a_framework_s_configuration_check", CONFIG_CHECK),
    LineRule("missing_file", 0.5, "a_path_the_message_says_is_not_there", PATH_ABSENT),
    LineRule("data_error", 0.45, "a_dataset_with_nothing_in_it", EMPTY_DATA),
    LineRule("timeout", 0.55, "a_time_limit_named_in_the_message", TIME_LIMIT_INSIDE),
    LineRule("nan_loss", 0.6, "a_numeric_guard_stopped_the_run", NUMERIC_GUARD),
    LineRule("killed_by_signal", 0.55, "the_process_caught_a_terminating_signal", CAUGHT_SIGNAL),
)

#: the standard library's modules (an AttributeError about them is rarely an upgrade's doing)
STDLIB: Final = frozenset(getattr(sys, "stdlib_module_names", ())) | {"builtins", "__main__"}


def code_rules(codes: Codes) -> list[tuple[str, float, str]]:
    """``(category, weight, rule id)`` for each code a message carries."""
    out: list[tuple[str, float, str]] = []
    status = codes.http_status
    if status is not None:
        if status == 429:
            out.append(("service_unavailable", 0.8, "http_429_too_many_requests"))
        elif 500 <= status <= 599:
            out.append(("service_unavailable", 0.7, "http_5xx"))
        elif status in (401, 403, 407):
            out.append(("credentials_error", 0.75, "http_401_403"))
        elif status in (404, 410):
            out.append(("missing_file", 0.5, "http_404"))
        elif status == 408:
            out.append(("service_unavailable", 0.5, "http_408"))
        elif status in (400, 413, 422):
            out.append(("bad_parameter", 0.4, "http_400_413_422"))
    state = codes.sqlstate
    if state is not None:
        rule = _SQLSTATE.get(state) or _SQLSTATE.get(state[:2])
        if rule is not None:
            out.append(rule)
    if codes.grpc is not None and codes.grpc in _GRPC:
        out.append(_GRPC[codes.grpc])
    if codes.exit_code is not None and codes.exit_code in _EXIT_IN_MESSAGE:
        out += _EXIT_IN_MESSAGE[codes.exit_code]
    return out


_SQLSTATE: Final[dict[str, tuple[str, float, str]]] = {
    "08": ("service_unavailable", 0.75, "sqlstate_08_connection_exception"),
    "53300": ("service_unavailable", 0.8, "sqlstate_53300_too_many_connections"),
    "53000": ("service_unavailable", 0.6, "sqlstate_53_insufficient_resources"),
    "53200": ("service_unavailable", 0.5, "sqlstate_53_insufficient_resources"),
    "53100": ("disk_full", 0.7, "sqlstate_53100_disk_full"),
    "57P01": ("service_unavailable", 0.7, "sqlstate_57p_server_shutting_down"),
    "57P02": ("service_unavailable", 0.7, "sqlstate_57p_server_shutting_down"),
    "57P03": ("service_unavailable", 0.7, "sqlstate_57p_server_shutting_down"),
    "57014": ("timeout", 0.5, "sqlstate_57014_statement_timeout"),
    "28": ("credentials_error", 0.8, "sqlstate_28_invalid_authorization"),
    "42501": ("credentials_error", 0.7, "sqlstate_42501_insufficient_privilege"),
    "42P01": ("data_error", 0.5, "sqlstate_42_undefined_table_or_column"),
    # a database the connection names that the server does not have, as a bucket that is not there
    "3D000": ("missing_file", 0.6, "sqlstate_3d000_no_such_database"),
    # concurrent transactions that conflicted (serialization failure, deadlock) and a lock that
    # was not granted in time: the store is there and busy, as SQLite's "database is locked"
    "40": ("service_unavailable", 0.6, "sqlstate_40_55p03_concurrent_writers_conflicted"),
    "55P03": ("service_unavailable", 0.6, "sqlstate_40_55p03_concurrent_writers_conflicted"),
    "42703": ("data_error", 0.5, "sqlstate_42_undefined_table_or_column"),
    "22": ("data_error", 0.55, "sqlstate_22_23_data_exception"),
    "23": ("data_error", 0.55, "sqlstate_22_23_data_exception"),
}
_GRPC: Final[dict[str, tuple[str, float, str]]] = {
    "UNAVAILABLE": ("service_unavailable", 0.75, "grpc_unavailable"),
    "RESOURCE_EXHAUSTED": ("service_unavailable", 0.7, "grpc_resource_exhausted"),
    "DEADLINE_EXCEEDED": ("service_unavailable", 0.5, "grpc_deadline_exceeded"),
    "UNAUTHENTICATED": ("credentials_error", 0.75, "grpc_unauthenticated_or_permission_denied"),
    "PERMISSION_DENIED": ("credentials_error", 0.75, "grpc_unauthenticated_or_permission_denied"),
    "NOT_FOUND": ("missing_file", 0.5, "grpc_not_found"),
    "INVALID_ARGUMENT": ("bad_parameter", 0.4, "grpc_invalid_argument"),
}
#: an exit code another process reported (a launcher, a container runtime, a subprocess)
_EXIT_IN_MESSAGE: Final[dict[int, list[tuple[str, float, str]]]] = {
    137: [("oom_killed", 0.45, "a_reported_exit_137"), ("killed_by_signal", 0.3, "a_reported_exit_137")],
    -9: [("oom_killed", 0.4, "a_reported_sigkill"), ("killed_by_signal", 0.35, "a_reported_sigkill")],
    143: [("killed_by_signal", 0.5, "a_reported_exit_143")],
    -15: [("killed_by_signal", 0.5, "a_reported_exit_143")],
    139: [("code_error", 0.4, "a_reported_crash")],
    -11: [("code_error", 0.4, "a_reported_crash")],
    134: [("code_error", 0.35, "a_reported_crash")],
    -6: [("code_error", 0.35, "a_reported_crash")],
    127: [("dependency_error", 0.4, "a_reported_exit_127")],
}

#: the standard library's machinery a process waits on its own work with (a future's
#: ``result(timeout=…)``, ``asyncio.wait_for``/``asyncio.timeout``, a pool's ``get(timeout=…)``),
#: and Ray's ``ray.get(refs, timeout=…)`` on the run's own tasks
_OWN_WORK_WAITERS: Final = frozenset({"concurrent", "asyncio", "multiprocessing", "ray"})
#: the classes those waits raise: the standard ``TimeoutError`` and Ray's ``GetTimeoutError``
#: ("Get timed out: some object(s) not ready.")
_OWN_WORK_TIMEOUTS: Final = frozenset({"TimeoutError", "GetTimeoutError"})


def own_deadline_rule(short_type: str, library: str | None) -> tuple[str, float, str] | None:
    """A deadline the process set on its own work ran out: a bare ``TimeoutError`` raised by the
    standard library's futures, asyncio or a process pool, or Ray's ``GetTimeoutError`` from a
    ``ray.get`` with a timeout (read as slow_startup 0.45 before). The wait was for the run's own task
    (a preprocessing shard, a batch, a coroutine), not a socket's: a time limit, as a task's
    ``TimeoutExpired`` is, not an unreachable service (read as ``service_unavailable`` 0.21 and
    0.44 before, on complete runs written for the purpose; issue 29)."""
    if short_type in _OWN_WORK_TIMEOUTS and library in _OWN_WORK_WAITERS:
        return ("timeout", 0.7, "a_deadline_the_process_set_on_its_own_work")
    return None


_MODULE_ATTRIBUTE = re.compile(
    r"^module '(?P<module>[\w.]+)' has no attribute|cannot import name '\w+' from '(?P<from>[\w.]+)'"
)
_OBJECT_ATTRIBUTE = re.compile(
    r"^'?(?:type object )?'?(?P<cls>[\w.]+)'? object has no attribute|^type object '[\w.]+' has no attribute"
)


def pickled_class_rule(short_type: str, message: str) -> tuple[str, float, str] | None:
    """A class pickled by one program that the program loading it cannot find (issue 29: read
    as "no clear cause", code_error 0.26). Defined in the pickling script's ``__main__`` (a
    notebook's transformer, a training script's model class), it is the workload's code: the
    loader must import it from where it lives now. Looked up in a well-known library's module
    (:data:`.libroles.ROLES`), it is that library's version: the class moved or was renamed
    since the pickle was written (scikit-learn's private classes between releases)."""
    if short_type != "AttributeError":
        return None
    m = _PICKLED_CLASS.search(message)
    if m is None:
        return None
    module = m["module"]
    if module in ("__main__", "__mp_main__"):
        return ("code_error", 0.7, "a_pickled_class_the_loading_program_does_not_define")
    if library_role(module) is not None:
        return ("dependency_error", 0.7, "a_pickled_class_the_installed_library_no_longer_has")
    return None


#: the method by which a class rebuilds itself from a pickle (Cython's, for compiled classes)
_RESTORES_STATE = ("__setstate__", "__setstate_cython__")


def restored_state_rule(frames: Sequence[Frame]) -> tuple[str, float, str] | None:
    """A pickle of a library's object whose state the installed release of that library refuses
    as it rebuilds it (issue 29: scikit-learn's tree "node array from the pickle has an
    incompatible dtype", read as data_error 0.55 — a model pickled by scikit-learn 1.0 loaded
    by 1.3 or later). The pickle itself parsed: a corrupt file fails in pickle's own opcodes
    ("invalid load key"), never in the class's ``__setstate__``; what the class refuses is the
    layout another release of it wrote. Only a library's ``__setstate__``: the workload's own
    refusing its own old state is its code."""
    for frame in frames:
        if frame.function.rsplit(".", 1)[-1] in _RESTORES_STATE and frame.in_library:
            return ("dependency_error", 0.7, "a_pickled_state_the_installed_library_refuses")
    return None


#: the libraries that validate records and documents against a model or a schema, and the
#: class each raises: a record that breaks the model is the data's (a config's, the parameters')
_VALIDATION_MODULES = ("pydantic", "pydantic_core", "jsonschema", "marshmallow", "fastjsonschema")
_VALIDATION_CLASSES = ("ValidationError", "JsonSchemaValueException")
#: the name of what was validated says it is the run's configuration: the workload's own line
#: (``cfg = Config.model_validate(raw)``, ``settings = Settings()``) or pydantic's model name in
#: "1 validation error for TrainConfig"
_CONFIGURATION_NAME = re.compile(
    r"(?<![A-Za-z0-9])(?:cfg|config|conf|configs|hparams|hyperparams|hps|settings|params|args|options)(?![a-z])"
    r"|(?:config|configuration|settings|args|arguments|params|parameters|options|hparams|hyperparams)$",
    re.IGNORECASE,
)
_VALIDATED_MODEL = re.compile(r"\bvalidation errors? for (?P<model>\w+)")


def validation_rule(type_name: str, message: str, own_code: str) -> tuple[str, float, str] | None:
    """A record or a document a validation library refused (pydantic's, jsonschema's,
    marshmallow's ``ValidationError``): a record of the data that breaks its model is a
    data error; the run's configuration is a bad parameter — told apart by the name of what was
    validated (issue 29: an event with ``"dwell_ms": "12s"`` read as bad_parameter 0.35, a
    jsonschema enum refusal as dependency_error 0.42)."""
    short = type_name.rsplit(".", 1)[-1]
    if short not in _VALIDATION_CLASSES or type_name.split(".", 1)[0] not in _VALIDATION_MODULES:
        return None
    model = _VALIDATED_MODEL.search(message)
    if _CONFIGURATION_NAME.search(own_code) or (model is not None and _CONFIGURATION_NAME.search(model["model"])):
        return ("bad_parameter", 0.7, "a_configuration_that_failed_validation")
    return ("data_error", 0.7, "a_record_that_failed_validation")


def library_api_rule(
    short_type: str, message: str, library: str | None, raised_in_library: bool
) -> tuple[str, float, str] | None:
    """A library's API changed under the user: an ``AttributeError``/``ImportError`` about a
    third-party module's namespace, or raised inside a third-party library's own code (its
    callers and its own modules disagree about the version)."""
    if short_type not in ("AttributeError", "ImportError"):
        return None
    m = _MODULE_ATTRIBUTE.search(message)
    if m is not None:
        module = (m["module"] or m["from"] or "").split(".")[0]
        if module and module not in STDLIB:
            return ("dependency_error", 0.6, "an_attribute_or_name_a_library_s_namespace_lacks")
        return None
    if raised_in_library and library is not None and library not in STDLIB and _OBJECT_ATTRIBUTE.search(message):
        return ("dependency_error", 0.4, "an_attribute_error_inside_a_library")
    return None
