"""The facts of a failure's structure that the ranker weighs for every candidate (issue 29).

Why facts and not more rules: a rule is tuned on one library's words and is silent on the next
library's; what generalises across libraries is the *shape* of a failure. Where the exception
was raised (the workload's own code, a library it called, the standard library), whether the
raising line is a deliberate ``raise`` or ``assert`` (the library checked something and
refused) or an operation that failed (a bug, or data it could not handle), whether a frame near
it is a validation or configuration function (``_check_…``, ``validate``, ``__post_init__``,
``_verify_args``), whether the exception's class belongs to the library whose frames raised it,
what the words of its class name say (``ConfigException``, ``SchemaError``,
``UnsupportedProtocol``), how its message is built (it quotes an argument the user passed, says
``expected … got …``, lists the values it accepts), the codes it carries — each is the same fact
in pandas, DeepSpeed or a library the corpus never saw. The ranker crosses each fact with each
candidate category and learns from the corpus what it is worth; a fact is never a word of a
message, only the name of a shape that a fixed pattern recognises.

:func:`structure_facts` is the one place these facts are computed: the training script and
the fast classifier both reach it through :func:`flightlog.diagnose.ranker.candidate_features`.
It runs on every failed attempt of ``flightlog run``: plain Python, a few patterns over the
first characters of one message, the frames of one link.
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Iterable

from flightlog.diagnose.libroles import library_role
from flightlog.diagnose.logprefix import logged_message
from flightlog.diagnose.structural_rules import STDLIB
from flightlog.diagnose.structure import TRUNCATED, FailureRead, Link, package_of_path
from flightlog.diagnose.tracebacks import Frame

__all__ = [
    "structure_facts",
    "chain_facts",
    "frame_facts",
    "class_facts",
    "message_facts",
    "message_families",
    "code_facts",
    "frame_name_facts",
    "library_role_facts",
    "code_line_facts",
    "name_tokens",
]

#: the most characters of a message read for its shape (a message's shape is in its start)
MESSAGE_CHARS = 2000
#: how many of the innermost frames of the raising link are read for what kind of function
#: raised (a validation function two calls above the ``raise`` is still the check that refused)
NEAR_FRAMES = 4


def structure_facts(read: FailureRead) -> list[str]:
    """Every fact of ``read`` that every candidate sees (each crossed with the candidate's
    category by the ranker): the chain's shape, the innermost and outermost types and libraries,
    where and how the exception was raised, its class's words, its message's shape, its codes,
    the exit and the memory at the end."""
    facts = chain_facts(read)
    inner = read.innermost
    raising = _raising_link(read)
    if raising is not None:
        facts += frame_facts(raising) + frame_name_facts(raising) + code_line_facts(raising)
    facts += library_role_facts(read, raising)
    if inner is not None:
        facts += class_facts(inner, raising)
        # a message cut off with its exception line is unknown, not empty (a bare ``assert``'s)
        facts += ["msg:cut_off"] if inner.cut_off else message_facts(inner.message) + message_families(inner.message)
        facts += code_facts(read.links)
        if raising is not None and _quotes_the_workload_s_code(inner.message, raising.frames):
            facts.append("msg:names_the_workload_s_code")
    elif read.last_line:
        # no exception to read: the last line printed is the failure's only words
        facts += [f"last_{fact}" for fact in message_facts(logged_message(read.last_line))]
    facts += _ending_facts(read)
    return facts


# ── the chain ────────────────────────────────────────────────────────────────
def chain_facts(read: FailureRead) -> list[str]:
    """The chain's shape: its length, where it was read from, the innermost and outermost types
    and libraries (the facts of the first ranker, kept under their names)."""
    facts = [f"links:{min(len(read.links), 2)}"]
    if read.links:
        inner, outer = read.links[0], read.links[-1]
        facts.append("traceback" if read.from_traceback else "exception_lines")
        facts.append(f"inner:{inner.short_type}")
        facts.append(f"inner_lib:{_link_library_kind(inner)}")
        if inner.library:
            facts.append(f"inner_lib={inner.library}")
        if len(read.links) > 1:
            facts.append(f"outer:{outer.short_type}")
            facts.append(f"outer_lib:{_link_library_kind(outer)}")
            facts.append(f"chain:{_pair(inner, outer)}")
        if any(link.via == "worker" for link in read.links):
            facts.append("has_worker")
        if read.lines_after_chain > 5:
            facts.append("output_after_the_chain")
    return facts


def _pair(inner: Link, outer: Link) -> str:
    """How the outermost wrapper relates to the innermost cause: the same class re-raised, the
    same library's own wrapper, another library's wrapper (an ORM over its driver, a launcher
    over its worker), or a builtin raised over a library's error."""
    if inner.short_type == outer.short_type:
        return "same_type"
    if inner.library is not None and inner.library == outer.library:
        return "same_library"
    if _is_builtin_class(outer.type):
        return "builtin_over_" + ("builtin" if _is_builtin_class(inner.type) else "library_class")
    return "library_class_over_" + ("builtin" if _is_builtin_class(inner.type) else "other_library_class")


def _link_library_kind(link: Link) -> str:
    """Where a link comes from: the workload's own code only when its frames say so; an
    exception line read without frames whose class names no module (``IndexError: …`` quoted
    alone, a launcher's summary) is "unknown" — it may have been raised anywhere, and reading
    it as the workload's own code taught the ranker that a bare builtin is the user's."""
    if link.library is None and not link.frames:
        return "unknown"
    return library_kind(link.library)


def library_kind(library: str | None) -> str:
    if library is None:
        return "own"
    return "stdlib" if library in STDLIB else "third_party"


# ── where and how it was raised ──────────────────────────────────────────────
def _raising_link(read: FailureRead) -> Link | None:
    """The innermost link that kept its frames: where the failure was raised (a wrapper's inner
    exception named in a message has no frames of its own)."""
    return next((link for link in read.links if link.frames), None)


#: a function that checks its arguments or its configuration and refuses
_VALIDATION_FUNCTION = re.compile(
    r"(?:^|_)(?:check|checks|validate|validator|validation|verify|sanity|ensure|assert|require|requires)(?:_|$)"
    r"|^__post_init__$|^_?(?:check|validate|verify|ensure|assert)[A-Z]|^parse_(?:args|known_args|config)$",
    re.I,
)
#: a function that builds the run's configuration or objects from it
_CONFIG_FUNCTION = re.compile(
    r"(?:^|_)(?:config|configure|configs|setup|set_up|settings|options|instantiate|from_config|build_from_cfg|hparams)(?:_|$)",
    re.I,
)
#: a function that reads, decodes or loads data, weights or files
_LOAD_FUNCTION = re.compile(
    r"(?:^|_)(?:load|loads|read|reader|open|decode|deserialize|restore|from_pretrained|from_file|parse|collate|fetch"
    r"|getitem|get_item|next_data|to_numpy|convert|cast|astype)(?:_|$)|^__getitem__$",
    re.I,
)
#: a function that runs the model's computation
_COMPUTE_FUNCTION = re.compile(
    r"(?:^|_)(?:forward|backward|call|step|training_step|train_step|compute|loss|predict|fit|generate)(?:_|$)|^__call__$",
    re.I,
)
_RAISE = re.compile(r"^(?:raise|assert)\b")
_IMPORT = re.compile(r"^(?:import [\w.]+|from [\w.]+ import\b)")


def frame_facts(link: Link) -> list[str]:
    """Where the raising link was raised and how: in the workload's own code, a library or the
    standard library (and how deep below the workload's last frame); by a ``raise`` or an
    ``assert`` (a check that refused) or by an operation that failed; at import time; and the
    kind of function near the raise (a validation, a configuration, a loader, the model's
    computation)."""
    frames = link.frames
    last = frames[-1]
    where = _frame_kind(last)
    facts = [f"raised:{where}"]
    own_index = next((i for i in range(len(frames) - 1, -1, -1) if _frame_kind(frames[i]) == "own"), None)
    if where != "own":
        if own_index is None:
            facts.append("stack:no_own_frame")
        else:
            depth = len(frames) - 1 - own_index
            facts.append("stack:own_calls_library")
            facts.append(f"depth:{'1' if depth == 1 else '2-4' if depth <= 4 else '5+'}")
    code = last.code.strip()
    if _RAISE.match(code):
        facts.append(f"raise:{code.split(None, 1)[0].rstrip('(')}")  # raise | assert
    elif code:
        facts.append("raise:operation")
    if _importing(frames):
        facts.append("frame:import")
    near = [f for f in frames[-NEAR_FRAMES:] if not f.file.startswith(_IMPORT_MACHINERY)]
    for name, pattern in (
        ("validation", _VALIDATION_FUNCTION),
        ("config", _CONFIG_FUNCTION),
        ("load", _LOAD_FUNCTION),
        ("compute", _COMPUTE_FUNCTION),
    ):
        if any(pattern.search(f.function) for f in near):
            facts.append(f"frame:{name}")
    return facts


#: the interpreter's import machinery, whose frames (``_find_and_load``) say an import ran
_IMPORT_MACHINERY = ("<frozen importlib", "<frozen zipimport")


def _importing(frames: list[Frame]) -> bool:
    """Whether the exception came out of importing a module: a frame's line is an import, a
    frame is the import machinery's, or a module's top level ran inside another's (the
    script's ``<module>`` is the first frame; a second one, or a library's, is an import)."""
    if any(_IMPORT.match(f.code.strip()) or f.file.startswith(_IMPORT_MACHINERY) for f in frames):
        return True
    tops = [f for f in frames if f.function == "<module>"]
    return len(tops) > 1 or any(_frame_kind(f) != "own" for f in tops)


def _quotes_the_workload_s_code(message: str, frames: list[Frame]) -> bool:
    """Whether a name the message quotes is written in a line of the workload's own frames: the
    argument, key or attribute the user's call passed (``Trainer(tokenizer=tok)`` and "got an
    unexpected keyword argument 'tokenizer'")."""
    own = " ".join(f.code for f in frames if f.code and not f.in_library)
    if not own:
        return False
    names = sorted({m[1:-1] for m in _QUOTED_NAME.findall(message[:MESSAGE_CHARS]) if len(m) > 3})[:10]
    return any(re.search(rf"(?<![\w.]){re.escape(n)}(?!\w)", own) for n in names)


def _frame_kind(frame: Frame) -> str:
    """Returns "own" (the workload's code: its files, ``<stdin>``, a notebook's cell, a ``<string>``
    module run by ``python -c`` or ``exec``), "stdlib" (and ``<frozen …>`` modules, code a
    library generated in a ``<string>``) or "library"."""
    if not frame.in_library:
        return "own"
    package = package_of_path(frame.file)
    return "stdlib" if package is None or package in STDLIB else "library"


# ── the names of the frames and their lines ─────────────────────────────────
#: a name's words: runs of capitals (``CSV``), a capital and lower-case letters, lower-case letters
_NAME_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+")
#: words of a function's name that say nothing about what it does
_EMPTY_NAME_WORDS = frozenset(
    {"init", "module", "call", "impl", "self", "wrapper", "wrapped", "inner", "main", "run", "func", "lambda"}
    | {"listcomp", "genexpr", "dictcomp", "the", "and"}
)


def name_tokens(name: str) -> list[str]:
    """The words of a function's, file's or variable's name, lower-cased, split on ``_``, digits
    and case: ``load_state_dict`` → load, state, dict; ``readCSV`` → read, csv; a dunder on its
    underscores only (``__getitem__`` → getitem, ``__post_init__`` → post). Words under three
    letters and the empty ones are left out."""
    if name.startswith("__") and name.endswith("__"):
        name = name.strip("_").lower()  # a dunder's words are lower-case: no case to split on
    words = [w.lower() for part in re.split(r"[_\W\d]+", name) for w in _NAME_WORD.findall(part)]
    return [w for w in words if len(w) >= 3 and w not in _EMPTY_NAME_WORDS]


def _file_stem(path: str) -> str:
    return re.split(r"[/\\]", path)[-1].rsplit(".", 1)[0]


def frame_name_facts(link: Link) -> list[str]:
    """The words of the names where the exception was raised — the raising frame's function
    (``fn_raise:collate``, ``fn_raise:getitem``, ``fn_raise:parse``) and, in a library, file
    (``file_raise:dataloader``, ``file_raise:config``) — and of the workload's innermost own
    function (``fn_own:load``, ``fn_own:forward``). Why beside ``frame:load``/``frame:config``:
    those families are fixed patterns; a name's own words let the ranker learn, across the
    libraries that share them, that a failure under ``collate`` or ``read_csv`` is the data's
    and one under ``parse_args`` or ``from_pretrained`` is a parameter's (issue 29: +0.2 points
    of grouped cross-validation alone, the most of the three facts of this stop)."""
    last = link.frames[-1]
    facts = {f"fn_raise:{w}" for w in name_tokens(_function_name(last))}
    if _frame_kind(last) != "own":  # a script's own name (``train.py``) says nothing of the failure
        facts |= {f"file_raise:{w}" for w in name_tokens(_file_stem(last.file))}
    own = next((f for f in reversed(link.frames) if _frame_kind(f) == "own"), None)
    if own is not None:
        facts |= {f"fn_own:{w}" for w in name_tokens(_function_name(own))}
    return sorted(facts)


def _function_name(frame: Frame) -> str:
    """A frame's function without the package path a compiled (Cython) function's name carries
    (``pandas._libs.index.IndexEngine.get_loc`` → ``get_loc``)."""
    return frame.function.rsplit(".", 1)[-1]


#: what the names in a line of code are about: the run's configuration, its data, its model
_CODE_FAMILIES: dict[str, frozenset[str]] = {
    family: frozenset(words.split())
    for family, words in {
        "config": "cfg config conf configs args opt opts hparams hparam params hp options settings flags kwargs",
        "data": "df data dataset datasets row rows record records sample samples batch item items example examples"
        " label labels column columns col cols img image images csv json line lines feature features annotation"
        " annotations target targets frame",
        "model": "model net module layer layers optimizer state dict checkpoint ckpt weights weight",
    }.items()
}


def code_line_facts(link: Link) -> list[str]:
    """What the line that failed reads, in the workload's innermost own frame (``code_own:…``)
    and in the raising frame (``code_raise:…``): names of the configuration (``cfg``, ``args``,
    ``hparams``), of the data (``df``, ``row``, ``batch``, ``labels``) or of the model
    (``model``, ``optimizer``, ``state_dict``). Why: ``KeyError: 'optimizer'``
    reads alike whether the line was ``ckpt['optimizer']`` or ``row['optimizer']``; a person
    tells them apart by the line, and so can the ranker."""
    facts = set()
    own = next((f for f in reversed(link.frames) if _frame_kind(f) == "own" and f.code), None)
    for where, frame in (("own", own), ("raise", link.frames[-1])):
        if frame is None or not frame.code:
            continue
        idents = re.findall(r"[A-Za-z_]\w*", frame.code)
        words = {w for ident in idents for w in (ident.lower(), *name_tokens(ident))}
        facts |= {f"code_{where}:{family}" for family, members in _CODE_FAMILIES.items() if words & members}
    return sorted(facts)


def library_role_facts(read: FailureRead, raising: Link | None) -> list[str]:
    """The role (:func:`flightlog.diagnose.libroles.library_role`: data, config, model) of the
    library the innermost exception comes from (``role_inner:data``) and of the libraries whose
    frames are near the raise (``role_near:config``)."""
    facts = set()
    inner = read.innermost
    role = library_role(inner.library) if inner is not None else None
    if role:
        facts.add(f"role_inner:{role}")
    if raising is not None:
        for frame in raising.frames[-NEAR_FRAMES:]:
            near = library_role(package_of_path(frame.file)) if _frame_kind(frame) == "library" else None
            if near:
                facts.add(f"role_near:{near}")
    return sorted(facts)


# ── the exception's class ────────────────────────────────────────────────────
def _is_builtin_class(type_name: str) -> bool:
    """A class of Python's own (``ValueError``, ``builtins.KeyError``), not a library's
    (``XGBoostError`` printed without its module is a library's)."""
    if "." in type_name and not type_name.startswith("builtins."):
        return False
    return isinstance(getattr(builtins, type_name.rsplit(".", 1)[-1], None), type)


#: the words of a class name that say what kind of trouble it stands for, across libraries
_CLASS_WORDS: dict[str, frozenset[str]] = {
    family: frozenset(words.split())
    for family, words in {
        "config": "config configuration misconfiguration setting settings option options argument arguments arg args"
        " param parameter parameters hparams usage override instantiation validation invalid",
        "data": "data dataset schema parse parser parsing decode encode unicode json csv format empty column dtype"
        " shape index key value lookup serialization deserialization arrow cast conversion compute",
        "dependency": "import module version compat compatibility not implemented unsupported deprecated deprecation"
        " compile compiler compilation build backend extension library lib dll cuda driver operator attribute"
        " plugin registry install",
        "io": "file path directory dir notfound found io os missing exists storage",
        "network": "connection connect connector network socket http request requests response url protocol ssl"
        " grpc rpc client server service unavailable gateway api remote",
        "auth": "auth authentication authorization credential credentials permission forbidden unauthorized"
        " unauthenticated token access denied login signature expired",
        "resource": "memory oom resource resources exhausted quota limit capacity throttling overloaded rate space disk",
        "time": "timeout timed deadline time expired",
        "numeric": "floating point overflow zero division nan numerical arithmetic",
        "process": "process worker child task actor pool subprocess called signal",
    }.items()
}
_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def class_words(short_type: str) -> list[str]:
    """The lower-cased words of a class name: ``ConfigAttributeError`` → config, attribute."""
    return [w.lower() for w in _CAMEL.findall(short_type) if w.lower() not in ("error", "exception")]


def class_facts(inner: Link, raising: Link | None) -> list[str]:
    """The innermost exception's class: builtin or a library's; whether its library is the one
    whose frames raised it (a library's own error) or another (the workload raised a library's
    class, a library raised a builtin); and the families its name's words belong to."""
    if inner.type == TRUNCATED:  # the exception line was cut off: no class to read
        return ["class:truncated"]
    facts = []
    builtin = _is_builtin_class(inner.type)
    frame = raising.frames[-1] if raising is not None else None
    if builtin:
        where = _frame_kind(frame) if frame is not None else "unknown"
        facts.append(f"class:builtin_in_{where}")
    else:
        if frame is None:
            facts.append("class:library")
        elif _frame_kind(frame) == "own":
            facts.append("class:library_in_own")
        else:
            package = package_of_path(frame.file) or ""
            same = package.split(".", 1)[0] == inner.type.split(".", 1)[0] or package == inner.library
            facts.append("class:library_in_same_library" if same else "class:library_in_other_library")
        # a library's class name says what it stands for; a builtin's kind is its type, a fact already
        facts += [f"class_word:{f}" for f in _families(class_words(inner.short_type))]
    return facts


def _families(words: Iterable[str]) -> list[str]:
    found = {family for w in words for family, members in _CLASS_WORDS.items() if w in members}
    return sorted(found) if found else ["generic"]


# ── the message ──────────────────────────────────────────────────────────────
_I = re.IGNORECASE
_MESSAGE_SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "call_signature",  # the user's call does not fit the function's signature
        re.compile(
            r"\bgot an unexpected keyword argument\b|\bunexpected keyword\b|\bmissing \d+ required (?:positional |keyword-only )?arguments?\b"
            r"|\btakes (?:from )?\d+ (?:to \d+ )?positional arguments? but \d+ (?:were|was) given\b|\bgot multiple values for (?:keyword )?argument\b"
            r"|\bunrecognized arguments?\b|\bunexpected argument\b|\b(?:unknown|invalid|unrecognized|unsupported) (?:keyword )?(?:argument|parameter|option|flag|kwarg)s?\b"
            r"|\bextra (?:inputs|fields) (?:are|is) not permitted\b|\bfield required\b|\bmissing required\b",
            _I,
        ),
    ),
    (
        "expected_got",  # a check compared a value with what it wanted
        re.compile(
            r"\bexpect(?:ed|s|ing)?\b.{0,120}?\b(?:got|but|found|received|instead|actual)\b|\bgot\b.{0,80}?\bexpected\b"
            r"|\bmismatch\b|\bdo(?:es)? not match\b|\bdoesn't match\b|\bnot equal\b|\s!=\s|\bshould (?:have|be)\b.{0,60}\bbut\b",
            _I,
        ),
    ),
    (
        "choices",  # the message lists what it accepts
        re.compile(
            r"\b(?:must|should|has to|needs to) be (?:one of|either|in)\b|\bexpected one of\b|\bone of \[|\bchoose from\b"
            r"|\b(?:valid|available|supported|allowed|possible|accepted) (?:options|values|choices|parameters|modes|keys|types|names|models|formats|arguments)\b"
            r"|\binvalid choice\b|\bnot in \[|\bnot one of\b",
            _I,
        ),
    ),
    (
        "value_bound",  # a value outside a bound the code set
        re.compile(
            r"\b(?:must|should|has to|needs to) be (?:a )?(?:positive|negative|non-negative|nonnegative|greater|less|larger|smaller|"
            r"at least|at most|between|in (?:the )?range|an? (?:int|integer|float|string|str|bool|list|dict|tuple|number))\b"
            r"|\bout of (?:range|bounds)\b|\bexceeds?\b|\bgreater than\b|\bless than\b|\bcannot be (?:negative|zero|empty|none)\b",
            _I,
        ),
    ),
    ("did_you_mean", re.compile(r"\bdid you mean\b|\bperhaps you meant\b|\bmaybe you meant\b|\bdo you mean\b", _I)),
    (
        "not_supported",
        re.compile(
            r"\bnot (?:yet )?(?:supported|implemented|available)\b|\bunsupported\b|\bdoes(?:n't| not) support\b", _I
        ),
    ),
    (
        "not_found",
        re.compile(
            r"\bnot found\b|\bdoes(?:n't| not) exist\b|\bno such\b|\bcould(?:n't| not) (?:find|locate)\b|\bunknown\b"
            r"|\bnot (?:in|registered in) (?:the )?\w* ?registry\b|\bis not in\b|\bnot (?:a )?(?:valid|registered|recognized)\b",
            _I,
        ),
    ),
    (
        "namespace",  # a module's or an object's namespace lacks a name
        re.compile(r"\bhas no attribute\b|\bcannot import name\b|\bNo module named\b|\bis not defined\b", _I),
    ),
    (
        "version",
        re.compile(
            r"\bversions?\s*[v=]?\d|\bv\d+\.\d+|[<>=]=\s*\d+\.\d|\b(?:requires?|needs?|upgrade|downgrade|install(?:ed)?)\b.{0,40}\b\d+\.\d+",
            _I,
        ),
    ),
    (
        "shape",
        re.compile(
            r"torch\.Size\(|\bshapes?\b|\bdimensions?\b|\bdims?\b|\bsize mismatch\b|\(\d+, ?\d+[,)]|\[\d+, ?\d+[,\]]",
            _I,
        ),
    ),
    ("dtype", re.compile(r"\bdtypes?\b|\b(?:float|int|uint|bfloat)(?:8|16|32|64)\b|\bobject\b.{0,20}\btype\b", _I)),
    ("none_value", re.compile(r"\bNoneType\b|\bNone\b")),
    (
        "path",
        re.compile(
            r"(?:^|[\s'\"(=:])(?:/[\w.@+-]+){2,}|\b[A-Za-z]:\\[\w.\\ -]+|\.(?:csv|json|ya?ml|pt|pth|ckpt|bin|safetensors|parquet|h5|txt|jsonl|pkl)\b"
        ),
    ),
    ("url", re.compile(r"\bhttps?://", _I)),
    (
        "hint",
        re.compile(r"\b(?:please|try|consider|you (?:can|should|may|need|must)|make sure|set the|use `|pass `)\b", _I),
    ),
)
#: the kind of trouble a message's words are about, across libraries: not a word of the message
#: but the name of a family of words a fixed pattern recognises (``msg:says_capacity`` for "too
#: many clients", "rate limit", "quota exceeded"), so that what the ranker learns of a family on
#: one library's messages carries to the next library's. Why beside the shapes above: the rules
#: name a category only where their exact words match; a family is a weak vote the ranker weighs
#: for every category (issue 29). "empty" and "index" are no data words here: "pop from empty
#: list" and "list index out of range" are the workload's code
_MESSAGE_FAMILIES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern, _I))
    for name, pattern in (
        (
            "capacity",
            r"\btoo many\b|\brate.?limit|\bthrottl|\bquota\b|\bexceeded\b|\bcapacity\b|\boverloaded\b|\bslow ?down\b",
        ),
        (
            "network",
            r"\bconnection\b|\bconnect(?:ed|ing)?\b|\bsocket\b|\bhttps?\b|\brequests?\b|\bapi\b|\bhost\b|\bport\b"
            r"|\bunreachable\b|\bdns\b|\bssl\b|\brefused\b|\breset by peer\b",
        ),
        ("time", r"\btimed? ?out\b|\btimeout\b|\bdeadline\b|\btime limit\b|\bwatchdog\b"),
        (
            "auth",
            r"\bauth\w*|\bcredential|\btoken\b|\bpermission|\bforbidden\b|\bunauthori[sz]ed\b|\baccess denied\b"
            r"|\blog ?in\b|\bpassword\b|\bsecret\b|\bapi.?key\b",
        ),
        ("memory", r"\bmemory\b|\boom\b|\ballocat\w*|\bexhausted\b"),
        ("disk", r"\bno space\b|\bdisk\b|\bquota\b|\bfull\b|\bwrite\b|\bwriting\b"),
        ("file", r"\bfiles?\b|\bdirector(?:y|ies)\b|\bpath\b|\bno such\b|\bexists?\b|\bnot found\b"),
        (
            "dependency",
            r"\bimport\w*|\bmodule\b|\bversions?\b|\binstall\w*|\bupgrade|\bdowngrade|\bcompat\w*|\bdeprecat\w*"
            r"|\bremoved\b|\bregistry\b|\bplugin\b|\bbackend\b|\bbuilt with\b|\bcompiled\b|\blibrary\b|\bdriver\b",
        ),
        (
            "config",
            r"\bconfig\w*|\bargument|\bparameter|\boption|\bsetting|\bmust be\b|\bshould be\b|\bdivisible\b"
            r"|\bmultiple of\b|\bnot compatible\b|\brequires?\b|\bcheck\b|\boptimizer\b|\bprecision\b|\bbatch.?size\b",
        ),
        (
            "data",
            r"\bdata(?:set|frame)?\b|\bcolumns?\b|\blabels?\b|\bdtype\b|\bparse\w*|\bdecode\w*|\bjson\b|\bcsv\b"
            r"|\bencod\w*|\btokeni[sz]\w*|\binput\b|\bsamples?\b|\bbounds\b|\bschema\b",
        ),
        ("numeric", r"\bnan\b|\binf\b|\boverflow\b|\bdivision by zero\b|\bnon-finite\b"),
        (
            "process",
            r"\bkilled\b|\bsignal\b|\bsig[a-z]{3,4}\b|\bterminated\b|\bexit ?code\b|\bexited\b|\bworker\b|\bprematurely\b",
        ),
        (
            "code",
            r"\bobject\b|\bnonetype\b|\bnot (?:callable|subscriptable|iterable)\b|\bunsupported operand\b"
            r"|\breferenced before\b|\bis not defined\b",
        ),
    )
)
#: a name quoted in a message: ``'learning_rate'``, ``"text"``, `` `num_labels` `` — the argument,
#: key or value the message is about
_QUOTED_NAME = re.compile(r"""(?:'|"|`|‘|«)[A-Za-z_][\w.\-]{0,80}(?:'|"|`|’|»)""")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e-?\d+)?(?![\w.])")


def message_facts(message: str) -> list[str]:
    """The shape of a message: which of the shapes above it has, whether it quotes a name (the
    argument, key or value it is about) and carries numbers, and how long it is; ``msg:empty``
    when the exception said nothing (an ``AssertionError`` of a bare ``assert``)."""
    text = message[:MESSAGE_CHARS].strip()
    if not text:
        return ["msg:empty"]
    facts = [f"msg:{name}" for name, pattern in _MESSAGE_SHAPES if pattern.search(text)]
    if _QUOTED_NAME.search(text):
        facts.append("msg:quotes_a_name")
    numbers = len(_NUMBER.findall(text[:400]))
    if numbers:
        facts.append("msg:numbers" if numbers >= 2 else "msg:a_number")
    facts.append(
        "msg:lines"
        if "\n" in text
        else "msg:short"
        if len(text) < 60
        else "msg:long"
        if len(text) > 200
        else "msg:medium"
    )
    return facts


def message_families(message: str) -> list[str]:
    """The families of trouble an exception's message is about (``_MESSAGE_FAMILIES``), as
    ``msg:says_<family>``. Only the exception's: on the last line of a failure without one they
    measured no better than without (grouped cross-validation), and that line has its own
    facts (``last_msg:…``)."""
    text = message[:MESSAGE_CHARS]
    return [f"msg:says_{name}" for name, pattern in _MESSAGE_FAMILIES if pattern.search(text)]


# ── codes ────────────────────────────────────────────────────────────────────
def code_facts(links: list[Link]) -> list[str]:
    """The codes the chain's messages carry, as classes (an HTTP status's hundred and the
    statuses that name a cause; a SQLSTATE's class; a gRPC status; an errno)."""
    facts: set[str] = set()
    for link in links:
        codes = link.codes
        if codes.http_status is not None:
            facts.add(f"http:{codes.http_status // 100}xx")
            if codes.http_status in (400, 401, 403, 404, 408, 409, 413, 422, 429, 500, 502, 503, 504):
                facts.add(f"http:{codes.http_status}")
        if codes.sqlstate is not None:
            facts.add(f"sqlstate:{codes.sqlstate[:2]}")
        if codes.grpc is not None:
            facts.add(f"grpc:{codes.grpc}")
    return sorted(facts)


# ── the ending ───────────────────────────────────────────────────────────────
def _ending_facts(read: FailureRead) -> list[str]:
    facts = [f"exit:{exit_kind(read.exit_code, read.signal)}"]
    if read.end_reason == "crashed":  # the process vanished without recording its end
        facts.append("end:crashed")
    if read.timed_out:
        facts.append("timed_out")
    if read.oom_killed:
        facts.append("oom_killed")
    share = read.memory_share_at_end
    if share is not None:
        facts.append("memory:at_limit" if share >= 0.97 else "memory:near_limit" if share >= 0.9 else "memory:below")
    return facts


_SIGNAL_NAMES = {9: "sigkill", 15: "sigterm", 2: "sigint", 1: "sighup", 6: "sigabrt", 11: "sigsegv", 14: "sigalrm"}


def exit_kind(exit_code: int | None, signal: int | None) -> str:
    sig = signal
    if sig is None and exit_code is not None and 128 < exit_code < 160:
        sig = exit_code - 128
    if sig is not None:
        return _SIGNAL_NAMES.get(sig, "signal")
    if exit_code is None:
        return "unknown"
    if exit_code in (0, 1, 2, 124, 126, 127):
        return str(exit_code)
    return "other"
