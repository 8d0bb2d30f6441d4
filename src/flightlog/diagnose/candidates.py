"""The rules over a failure's structure: every piece of evidence with the place it was found.

Each :class:`Hit` is one rule that matched one thing — a link of the chain (and which link: the
innermost cause, the outer wrapper, a worker's exception), a line outside the chain (and
whether it was the last one printed), the exit facts, the memory at the end. A hit carries the
:class:`~.signals.Signal` a person reads as evidence; where it was found is what the ranker
(:mod:`.ranker`) weighs, so that a wrapper's words count for what they are worth at the
wrapper's place.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from flightlog.diagnose.codes import read_codes
from flightlog.diagnose.cues import CUE_EXCEPTION_RULES, CUE_LINE_RULES
from flightlog.diagnose.parameter_rules import PARAMETER_EXCEPTION_RULES, PARAMETER_LINE_RULES
from flightlog.diagnose.patterns import (
    CODE_ERROR_CLASSES,
    ERRNO_CATEGORY,
    EXCEPTION_RULES,
    LINE_RULES,
    errno_numbers,
    exception_matches,
)
from flightlog.diagnose.setup_rules import setup_rules
from flightlog.diagnose.signals import SIGKILL, Signal, exit_signals, line_factor, weigh_memory_at_the_kill
from flightlog.diagnose.structural_rules import (
    EXTRA_EXCEPTION_RULES,
    EXTRA_LINE_RULES,
    code_rules,
    library_api_rule,
    own_deadline_rule,
    pickled_class_rule,
    restored_state_rule,
    validation_rule,
)
from flightlog.diagnose.structure import FailureRead, Link

__all__ = ["Hit", "collect", "link_position", "CANDIDATE_FLOOR"]

ALL_EXCEPTION_RULES = (*EXCEPTION_RULES, *EXTRA_EXCEPTION_RULES, *CUE_EXCEPTION_RULES, *PARAMETER_EXCEPTION_RULES)
ALL_LINE_RULES = (*LINE_RULES, *EXTRA_LINE_RULES, *CUE_LINE_RULES, *PARAMETER_LINE_RULES)
#: lines this close to the end are the "tail" of the output
TAIL = 5
#: a line worth reading for codes (most lines hold none: the check keeps the line pass cheap)
_MAY_HOLD_A_CODE = re.compile(
    r"\b[45]\d\d\b|SQLSTATE|StatusCode|grpc_status|exit(?:ed)? (?:with )?(?:code|status)|exitcode"
)
#: a frame whose code is an import: the exception came out of importing a package
_IMPORT_STATEMENT = re.compile(r"^(?:import [\w.]+|from [\w.]+ import\b)")
#: the failing line takes a command-line argument by position (``sys.argv[1]``): an IndexError
#: or a ValueError there is the script started without that argument or with a wrong one — a
#: usage error, not the script's own bug
_READS_ARGV = re.compile(r"\bsys\.argv\s*\[")
#: libpq's report of the server's own answer to a connection ("connection to server at … failed:
#: FATAL:  role \"x\" does not exist"): the server was reached and said why it refused
_SERVER_ANSWERED = re.compile(r"\bFATAL:\s")
#: a line of the workload's that checks numbers for NaN or infinity (``np.isfinite(preds).all()``,
#: ``torch.isnan(loss).any()``, ``math.isfinite(mean)``)
_CHECKS_FINITENESS = re.compile(r"\b(?:isfinite|isnan|isinf|isposinf|isneginf|nan_to_num)\s*\(")
#: the failing line indexes the run's configuration (``cfg["learning_rate"]``, ``self.config[...]``,
#: ``args[...]``): a KeyError there is a key the configuration does not have — a parameter
#: missing or misspelled, not a column of the data nor the script's own mapping
_INDEXES_A_CONFIGURATION = re.compile(
    r"(?<![\w.])(?:self\.|\w+\.)?(?:\w+_)?(?:cfg|config|conf|configs|hparams|hyperparams|hps|opts?|options|args|settings)"
    r"\s*\[",
    re.IGNORECASE,
)
#: the failing line names a record of the data (``rec["messages"]``, ``for row in rows``,
#: ``example["text"]``): a parsed JSON line, a CSV row, a dataset's example
_NAMES_A_RECORD = re.compile(
    r"(?<![\w.])(?:\w+_)?(?:rec|recs|records?|rows?|examples?|ex|samples?|items?|entr(?:y|ies)|docs?|documents?"
    r"|datum|instances?|annotations?|anns?|messages?|msgs?|turns?|conversations?|convs?|events?|objs?)"
    r"(?:_\w+)?\s*\[\s*['\"]",
    re.IGNORECASE,
)
#: the failing line of the workload's own code names the run's configuration (``cfg = json.load(f)``,
#: ``json.loads(Path(config_path).read_text())``, ``self.hparams = …``): a JSON document that does
#: not parse there is a configuration file, not a record of the data
_NAMES_A_CONFIGURATION = re.compile(
    r"(?<![A-Za-z0-9])(?:cfg|config|conf|configs|hparams|hyperparams|hps|settings|params)(?![a-z])", re.IGNORECASE
)
#: what starting a program that is not installed raises: ``subprocess`` reports its child's failed
#: exec as a ``FileNotFoundError`` naming the executable as given — a bare name looked up on PATH
_NOT_FOUND_NAME = re.compile(r"No such file or directory: '(?P<name>[^'/\\]+)'$")
#: a line that subscripts a value (``folds[k]``, ``vec[i]``, ``batch[2]``): an index the code computed
_SUBSCRIPTS = re.compile(r"[\w)\]]\s*\[")
#: how an index past the end is worded (Python's "list index out of range", numpy's "index 7 is out
#: of bounds for axis 0 with size 7", h5py's "Index (1000) out of range for (0-999)")
_PAST_THE_END = re.compile(r"\bout of (?:range|bounds)\b", re.IGNORECASE)
#: a category is a candidate when one of its hits weighs at least this much
CANDIDATE_FLOOR = 0.05


@dataclass(frozen=True)
class Hit:
    """One rule that matched one place of the failure."""

    category: str
    rule: str
    weight: float
    position: str  # only | inner | middle | outer | line | tail | last | exit | resources
    kind: str  # a line's own level: "error", "warning", "quiet" (INFO, retried, resolved); "" elsewhere
    via: str  # the link's via ("raised", "cause", "worker", ...) or "" off the chain
    signal: Signal
    link: int = -1  # the index of the link it matched in ``FailureRead.links`` (-1: off the chain)
    #: from a rule that every exception of a kind matches (its class, where it was raised, a cue's
    #: common words, a failing exit): no words of the exception's own about what failed
    generic: bool = False


def link_position(index: int, count: int) -> str:
    if count == 1:
        return "only"
    if index == 0:
        return "inner"
    if index == count - 1:
        return "outer"
    return "middle"


def collect(read: FailureRead, *, at: float | None = None, memory_detail: str | None = None) -> list[Hit]:
    """Every hit of every rule on ``read``: its links, its lines, its exit and its memory."""
    hits: list[Hit] = []
    count = len(read.links)
    source = "traceback" if read.from_traceback else "log"
    for index, link in enumerate(read.links):
        hits += _link_hits(link, index, link_position(index, count), source, at)
    hits += _line_hits(read.lines, read.last_line, at)
    hits += [
        Hit(h.category, h.rule, h.weight, "handled", h.kind, "", h.signal) for h in _line_hits(read.handled, None, at)
    ]
    hits += _exit_hits(read, at, memory_detail)
    if read.served:
        hits = [h for h in hits if h.rule not in _THE_SERVER_S_500]
    return hits


#: the rules that read a 5xx status, in the client's error and in the server's access log: where
#: the server is the run's own and printed its handler's traceback (``FailureRead.served``), the
#: 500 is how that exception came back to the client, not a service that failed the run
_THE_SERVER_S_500 = frozenset({"http_5xx", "an_http_5xx_answer", "an_http_5xx_answer_from_a_dependency"})
#: a line that connects a socket (``s.connect(path)``, ``sock.connect(self.unix_socket)``)
_CONNECTS_A_SOCKET = re.compile(r"\.connect\(")
#: ENOENT with no file named: what connect() on a unix socket whose file is absent raises
_NO_PATH_NAMED = re.compile(r"^\s*\[Errno 2\] No such file or directory\s*$")


def _configuration_that_does_not_parse(link: Link) -> str | None:
    """The workload's own line that read a JSON configuration which does not parse (the line's
    code), or None: a JSON decode error whose innermost frame of the workload's own code names
    the configuration (issue 29: ``cfg = json.load(f)`` on a trailing comma read as data_error 0.87)."""
    if link.short_type != "JSONDecodeError":
        return None
    own = link.innermost_own_frame()
    code = own.code if own is not None else ""
    return code if code and _NAMES_A_CONFIGURATION.search(code) else None


def _where(link: Link) -> str:
    frame = link.innermost_own_frame() or (link.frames[-1] if link.frames else None)
    return f" (at {frame.where()})" if frame else ""


def _link_hits(link: Link, index: int, position: str, source: str, at: float | None) -> list[Hit]:
    out: list[Hit] = []
    detail = link.statement()[:300] + _where(link)

    def add(category: str, weight: float, rule: str, text: str = detail, *, generic: bool = False) -> None:
        signal = Signal(category, weight, rule, source, text, at)
        out.append(Hit(category, rule, weight, position, "", link.via, signal, index, generic))

    short = link.short_type
    if short == "KeyboardInterrupt":
        add("killed_by_signal", 0.7, "keyboardinterrupt", f"KeyboardInterrupt (SIGINT){_where(link)}")
    for exception_rule in ALL_EXCEPTION_RULES:
        if exception_matches(exception_rule, link.type, link.message):
            add(exception_rule.category, exception_rule.weight, exception_rule.id, generic=exception_rule.generic)
    for number in errno_numbers(link.message):
        category = ERRNO_CATEGORY.get(number)
        if category is not None:
            add(category, 0.8, f"errno:{number}", f"errno {number} in {detail}")
    for category, weight, code_rule in code_rules(link.codes):
        add(category, weight, code_rule, f"{code_rule.replace('_', ' ')} in {detail}")
    if _the_server_answered(link):
        # psycopg's "connection failed: …" over the server's FATAL answer is no network failure
        # (issue 29: a missing role and a missing database read service_unavailable 0.90)
        out[:] = [h for h in out if h.rule != "a_connection_refused_reset_or_timed_out"]
    raised_in_library = bool(link.frames) and link.frames[-1].in_library
    api = library_api_rule(short, link.message, link.library, raised_in_library)
    if api is not None:
        add(*api)
    pickled = pickled_class_rule(short, link.message)
    if pickled is not None:
        add(*pickled)
    restored = restored_state_rule(link.frames)
    if restored is not None:
        add(*restored)
    own_frame = link.innermost_own_frame()
    validated = validation_rule(link.type, link.message, own_frame.code if own_frame is not None else "")
    if validated is not None:
        add(*validated)
    if short == "KeyError" and any("/pandas/" in f.file.replace("\\", "/") for f in link.frames):
        add("data_error", 0.4, "a_keyerror_from_pandas_indexing")
    code = next((f.code for f in reversed(link.frames) if f.code), "")
    if _IMPORT_STATEMENT.match(code):
        add("dependency_error", 0.45, "an_import_statement_raised", f"{detail}: the failing line imports: {code[:200]}")
    if short == "AssertionError" and _CHECKS_FINITENESS.search(code) and not raised_in_library:
        # the workload's own ``assert np.isfinite(preds).all()``: a numeric guard, as anomaly
        # detection is, whether or not its message says NaN (issue 29: bad_parameter 0.35)
        add(
            "nan_loss",
            0.7,
            "the_workload_s_assertion_on_finite_numbers_failed",
            f"{detail}: the failing line checks numbers for NaN or infinity: {code[:200]}",
        )
    if short in ("IndexError", "ValueError") and _READS_ARGV.search(code):
        add(
            "bad_parameter",
            0.45,
            "the_failing_line_reads_a_command_line_argument",
            f"{detail}: the failing line reads a command-line argument: {code[:200]}",
        )
    if short == "KeyError" and _behind_the_trainer_s_column_remover(link):
        # the Trainer dropped the key from every example before the collator looked for it: a
        # setting of the Trainer (``remove_unused_columns``), not a record without it
        out[:] = [h for h in out if h.rule != "a_missing_key_in_a_record"]
        add(
            "bad_parameter",
            0.7,
            "a_column_the_trainer_removed_before_the_collator",
            f"{detail}: Transformers' Trainer removed the columns its model's forward() does not take "
            "before the data collator ran (TrainingArguments remove_unused_columns=True)",
        )
    if short == "KeyError" and _INDEXES_A_CONFIGURATION.search(code) and not raised_in_library:
        add(
            "bad_parameter",
            0.45,
            "the_failing_line_indexes_the_configuration",
            f"{detail}: the failing line looks the key up in the run's configuration: {code[:200]}",
        )
    if (
        short == "KeyError"
        and not raised_in_library
        and not _INDEXES_A_CONFIGURATION.search(code)
        and _reads_the_key_of_a_record(code, link.message)
    ):
        # as a KeyError on a column (pandas' indexing): the record the line reads lacks a key the
        # code reads from every record — a JSON line without "content" — the data's, not the code's
        add(
            "data_error",
            0.5,
            "the_failing_line_reads_a_key_of_a_record",
            f"{detail}: the failing line reads the key from a record of the data: {code[:200]}",
        )
    configuration = _configuration_that_does_not_parse(link)
    if configuration is not None:
        # as a YAML or TOML configuration that does not parse (patterns: the same rule), not
        # ``malformed_json_input``, a record of the data
        out[:] = [h for h in out if h.rule != "malformed_json_input"]
        add(
            "bad_parameter",
            0.8,
            "a_configuration_file_does_not_parse",
            f"{detail}: the failing line reads the run's configuration: {configuration[:200]}",
        )
    if _an_index_the_workload_computed(link, code):
        add(
            "code_error",
            0.6,
            "an_index_the_workload_s_line_computed_is_out_of_range",
            f"{detail}: the workload's line indexes past the end: {(link.innermost_own_frame() or link.frames[-1]).code[:200]}",
        )
    deadline = own_deadline_rule(short, link.library)
    if deadline is not None:
        # the futures', asyncio's or a pool's wait on the run's own work: no network timeout
        out[:] = [h for h in out if h.rule != "a_network_timeout"]
        add(*deadline)
    if short == "FileNotFoundError" and _CONNECTS_A_SOCKET.search(code) and _NO_PATH_NAMED.match(link.message):
        # a unix socket's connect() whose file is not there: the server (a sidecar, a daemon)
        # is not listening, as a refused connection is, not a file the run reads (issue 29:
        # missing_file 0.95 on a feature store's sidecar that had not started)
        out[:] = [h for h in out if h.category != "missing_file"]
        add(
            "service_unavailable",
            0.75,
            "a_unix_socket_no_server_listens_on",
            f"{detail}: the failing line connects to a socket whose file is not there (no server listening): {code[:200]}",
        )
    program = _program_not_installed(link)
    if program is not None:
        # a tool the run starts (``ffmpeg``, ``git``, ``nvcc``) is not on PATH: software the
        # environment lacks, not a file of the data or a path the code got wrong
        out[:] = [h for h in out if h.category != "missing_file"]
        add(
            "dependency_error",
            0.8,
            "a_program_the_run_starts_is_not_installed",
            f"{detail}: the program {program!r} the run starts is not installed (not found on PATH)",
        )
    for setup in setup_rules(link):
        # the setup's own reading (an unset variable, the workload's own import loop or
        # attribute, a lock's wait) replaces the general rules' reading of the same link
        out[:] = [h for h in out if h.rule not in setup.supersedes]
        add(setup.category, setup.weight, setup.rule, setup.detail)
    class_weight = CODE_ERROR_CLASSES.get(short)
    add("code_error", class_weight if class_weight is not None else 0.3, "code_error_class", generic=True)
    own = link.innermost_own_frame()
    if own is not None and link.frames and link.frames[-1] is own:
        add(
            "code_error",
            0.25,
            "raised_in_the_workload_s_own_code",
            f"raised directly in the workload's code at {own.where()}" + (f": {own.code}" if own.code else ""),
            generic=True,
        )
    return out


def _the_server_answered(link: Link) -> bool:
    """The message carries a database server's FATAL answer with a condition of its own (not a
    connection exception, class 08): the words about the connection failing are the client's
    frame around it, and the condition decides."""
    state = link.codes.sqlstate
    return state is not None and not state.startswith("08") and bool(_SERVER_ANSWERED.search(link.message))


def _reads_the_key_of_a_record(code: str, message: str) -> bool:
    """Whether the workload's failing line reads the missing key, written out as a string, from
    a record of the data (``m['content'] for m in rec["messages"]``, ``row["label"]``): a record
    that lacks a key the code reads from every record (issue 29: a chat record without
    ``content``, read as the code's own KeyError, code_error 0.29)."""
    key = message.strip().strip("'\"")
    if not key or not _NAMES_A_RECORD.search(code):
        return False
    return re.search(rf"""\[\s*['"]{re.escape(key)}['"]\s*\]""", code) is not None


def _behind_the_trainer_s_column_remover(link: Link) -> bool:
    """Whether ``link`` was raised under Transformers' ``RemoveColumnsCollator`` (its
    ``__call__`` in ``trainer_utils.py``, the Trainer's wrapper of a data collator when
    ``remove_unused_columns`` is on), in the workload's own collator: a key the collator reads
    ("text", "image_path") is a column the Trainer removed because the model's ``forward()``
    does not take it. Read as a record without the key (data_error 0.53) on a complete run
    written for the purpose (issue 29)."""
    for i, frame in enumerate(link.frames):
        if frame.function == "__call__" and frame.file.replace("\\", "/").endswith("transformers/trainer_utils.py"):
            return any(not below.in_library for below in link.frames[i + 1 :])
    return False


def _an_index_the_workload_computed(link: Link, code: str) -> bool:
    """Whether ``link`` is an index past the end that the workload's own line computed: an
    ``IndexError`` (out of range, out of bounds) raised on a line of its code that subscripts,
    or by the ``__getitem__`` of the container that line subscripts (an h5py dataset, a torch
    dataset, a custom sequence). A loop that runs one step too far, ``range(1, n + 1)`` over a
    list of ``n``: the code's, not the data's — the failing line reads no command-line argument
    (``sys.argv[1]``: a usage error) and the index is not a library's own computation."""
    if link.short_type != "IndexError" or not _PAST_THE_END.search(link.message) or _READS_ARGV.search(code):
        return False
    own = link.innermost_own_frame()
    if own is None or not _SUBSCRIPTS.search(own.code):
        return False
    below = link.frames[max(i for i, frame in enumerate(link.frames) if frame is own) + 1 :]
    return not below or any(frame.function == "__getitem__" for frame in below[:3])


def _program_not_installed(link: Link) -> str | None:
    """The program's name when ``link`` is ``subprocess`` failing to start a program given by a
    bare name (``FileNotFoundError: … No such file or directory: 'ffmpeg'`` raised in its
    ``_execute_child``); a path (``./tools/convert``) may be a file the code got wrong."""
    if link.short_type != "FileNotFoundError" or not link.frames:
        return None
    innermost = link.frames[-1]
    if innermost.function != "_execute_child" or not innermost.file.replace("\\", "/").endswith("/subprocess.py"):
        return None
    m = _NOT_FOUND_NAME.search(link.message.strip())
    return m["name"] if m else None


def _line_hits(lines: Sequence[str], last_line: str | None, at: float | None) -> list[Hit]:
    out: list[Hit] = []
    texts = [ln.strip() for ln in lines if ln.strip()]
    n = len(texts)
    for i, line in enumerate(texts):
        if len(line) > 2000:
            continue
        position = "last" if i == n - 1 and line == last_line else "tail" if i >= n - TAIL else "line"
        found = [(rule.category, rule.weight, rule.id) for rule in ALL_LINE_RULES if rule.pattern.search(line)]
        if "rrno" in line or "code:" in line or "Error" in line:
            for number in errno_numbers(line):
                category = ERRNO_CATEGORY.get(number)
                if category is not None:
                    found.append((category, 0.55, f"errno:{number}"))
        if _MAY_HOLD_A_CODE.search(line):
            found += [(c, w * 0.75, r) for c, w, r in code_rules(read_codes(line))]
        if not found:
            continue
        factor = line_factor(line)
        kind = "error" if factor >= 1.0 else "warning" if factor >= 0.75 else "quiet"
        for category, weight, rule in found:
            w = weight * factor
            out.append(Hit(category, rule, w, position, kind, "", Signal(category, w, rule, "log", line[:300], at)))
    return out


_REPORTED_KILL = re.compile(
    r"\bexit ?code\s*:?\s*(?:-9|137)\b|\bexited with (?:exit )?code 137\b|\bSignal 9 \(SIGKILL\)|\bkilled by signal 9\b"
    r"|\bexit status 137\b|\breturned non-zero exit status (?:-9|137)\b|\bOOMKilled\b",
    re.I,
)


def _reported_kill(read: FailureRead) -> str | None:
    """The line in which a launcher reports a worker's SIGKILL (exit code 137 or -9), if any."""
    for link in read.links:
        if link.codes.exit_code in (137, -9):
            return link.headline()
    # under a launcher its report (read before its child's last lines) says how the child ended
    for line in read.lines if read.launcher is not None else read.lines[-60:]:
        if ("137" in line or "9" in line) and _REPORTED_KILL.search(line):
            return line.strip()
    return None


def _exit_hits(read: FailureRead, at: float | None, memory_detail: str | None) -> list[Hit]:
    signals = exit_signals(
        exit_code=read.exit_code, signal=read.signal, timed_out=read.timed_out, oom_killed=read.oom_killed, at=at
    )
    reported = _reported_kill(read)
    if reported is not None and not any(s.id == SIGKILL for s in signals):
        # a launcher (torchrun, a remote job's client) says its worker was killed: a kill, as
        # far as the memory at the end is concerned
        signals.append(Signal("killed_by_signal", 0.3, SIGKILL, "log", f"a launcher reported: {reported[:280]}", at))
    if not read.timed_out and read.memory_share_at_end is not None:
        share = read.memory_share_at_end
        signals = weigh_memory_at_the_kill(
            signals,
            share,
            at=at,
            detail=memory_detail
            or f"memory was at {share:.0%} of its limit in the last samples before the process was killed",
        )
    hits = [
        Hit(s.category, s.id, s.weight, "resources" if s.source == "resources" else "exit", "", "", s) for s in signals
    ]
    if read.exit_code not in (None, 0) or read.signal is not None:
        code = read.exit_code if read.exit_code is not None else f"signal {read.signal}"
        failing = Signal("code_error", 0.1, "a_failing_exit", "exit", f"the process ended with exit code {code}", at)
        hits.append(Hit("code_error", failing.id, failing.weight, "exit", "", "", failing, generic=True))
    return hits
