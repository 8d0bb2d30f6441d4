"""What real programs leave behind when they fail, as data: exception classes, messages and
log lines, each mapped to a taxonomy category with a weight (how strongly that one signal
alone points at the category, 0..1).

These tables are the single source for the fast classifier (:mod:`.classify`, used by the
runner's ``--retry-on``) and for the full diagnosis. Weights combine by noisy-OR, so several
independent signals agreeing score higher than any one of them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

__all__ = [
    "ExceptionRule",
    "LineRule",
    "EXCEPTION_RULES",
    "LINE_RULES",
    "CODE_ERROR_CLASSES",
    "HTTP_STATUS",
    "ERRNO_CATEGORY",
    "errno_numbers",
    "exception_matches",
]

_I = re.IGNORECASE


@dataclass(frozen=True)
class ExceptionRule:
    """Matches an exception by class name (last dotted part, or a dotted suffix) and/or message."""

    category: str
    weight: float
    id: str  # the stable id of the signals it gives
    classes: tuple[str, ...] = ()
    message: re.Pattern[str] | None = None
    #: dotted prefixes of the modules whose exceptions alone it matches (``yaml.``): a short class
    #: name two libraries share (``ParserError``: pandas' for a data file, YAML's for a config)
    modules: tuple[str, ...] = ()
    #: dotted prefixes of the modules whose exceptions it never matches
    not_modules: tuple[str, ...] = ()
    #: a rule that every exception of a kind matches (a cue's common words, not a message shape of
    #: its own): it says nothing in the exception's own words about what failed, so the ranker's
    #: first stage never takes it for the exception naming its category (``ranker.specific_evidence``)
    generic: bool = False


#: the modules of configuration languages' parsers: their errors are a configuration that does
#: not parse, whatever their class is called
CONFIG_LANGUAGE_MODULES = ("yaml.", "ruamel.yaml.", "tomllib.", "tomli.", "toml.", "tomlkit.", "configparser.")


@dataclass(frozen=True)
class LineRule:
    """Matches one log line outside a traceback (shell, logging, JSON logs, C libraries)."""

    category: str
    weight: float
    id: str
    pattern: re.Pattern[str]


def _re(text: str, flags: int = _I) -> re.Pattern[str]:
    return re.compile(text, flags)


# ── messages shared by exception rules and line rules ─────────────────────────
ENOSPC = _re(r"no space left on device|\bENOSPC\b|errno 28\b|disk quota exceeded|\bEDQUOT\b|errno 122\b")
EACCES = _re(r"permission denied|\bEACCES\b|\bEPERM\b|errno 13\]|operation not permitted|errno 1\]")
CONN = _re(
    r"connection refused|\bECONNREFUSED\b|errno 111\b|errno 61\b|connection reset|\bECONNRESET\b|errno 104\b"
    r"|connection aborted|connection timed out|\bETIMEDOUT\b|errno 110\b|no route to host|\bEHOSTUNREACH\b"
    r"|network is unreachable|\bENETUNREACH\b|failed to establish a new connection|max retries exceeded"
    r"|remote end closed connection|server disconnected|could(?:n't| not) connect to|failed to connect|unable to connect"
    r"|connect(?:ion)? timeout|read timed out|connection closed by (?:remote )?peer|software caused connection abort"
    r"|(?:check|make sure) your (?:internet )?connection|\bconnection error\b|\bconnection (?:failed|lost|closed unexpectedly)\b"
    r"|(?:can't|cannot|could not|couldn't|unable to) (?:connect|reach)\b|\bsocket timed out\b|\bno brokers available\b"
    r"|\bNoBrokersAvailable\b|\bbroker transport failure\b|\bactively refused\b|\bnetwork (?:error|is down)\b"
)
#: distributed training: a collective, a rendezvous or a peer rank that stopped answering (NCCL, Gloo, c10d)
COLLECTIVE = _re(
    r"watchdog caught collective operation timeout|some nccl operations have failed or timed out"
    r"|remote process exited or there was a network error|ncclRemoteError|nccl warn socket\w*:"
    r"|socket has (?:timed out|failed to connect)|connect\(\) timed out|the connection to the c10d store has failed"
    r"|rendezvous(?:connection|timeout)error|\bDistNetworkError\b"
)
#: services an ML job talks to (a model hub, an experiment tracker, a cluster) that did not answer
ML_SERVICE = _re(
    r"network error \(\w+\), entering retry loop|run initialization has timed out|could not find any running ray instance"
    r"|we cannot find the requested files in the (?:local|disk) cache"
)
DNS = _re(
    r"name or service not known|temporary failure in name resolution|nodename nor servname|getaddrinfo failed"
    r"|\bENOTFOUND\b|\bEAI_AGAIN\b|name resolution|could not resolve host|errno -[235]\]"
)
HTTP_5XX = _re(
    r"\b50[0-4] server error|server error '5\d\d|http error 5\d\d|status(?: code)?[ :=]+5\d\d\b"
    r"|\b503 service unavailable|\b502 bad gateway|\b504 gateway time-?out|service unavailable|statuscode\.unavailable"
    r"|temporarily unable to service your request"
)
HTTP_AUTH = _re(
    r"\b40[13] client error|client error '40[13]|http error 40[13]|status(?: code)?[ :=]+40[13]\b|\b401 unauthorized"
    r"|\b403 forbidden"
)
CREDENTIALS = _re(
    r"unable to locate credentials|no credentials|invalid ?access ?key|signaturedoesnotmatch|\(accessdenied\)"
    r"|access denied|\(expiredtoken\w*\)|token (?:has )?expired|expired token|invalid token|authentication failed"
    r"|not authorized|unauthorized|could not find default credentials|invalidclienttokenid|\(forbidden\)"
    r"|could not automatically determine credentials|default credentials were not found|failed to retrieve a token"
    r"|no valid token received|does not have [\w.]+ access|permission '[\w.]+' denied|caller does not have permission"
    r"|gated repo|is restricted\. you must|you must be authenticated"
)
#: an API key the client library needs is not set (W&B, model hubs, LLM APIs)
API_KEY = _re(
    r"api_?key not configured|invalid or missing api_?key|api[ _]?key (?:is )?(?:invalid|missing|not (?:set|configured|found))"
)
OOM = _re(
    r"cuda out of memory|out of memory|cannot allocate memory|unable to allocate [\d.]+ [kmgtp]i?b|std::bad_alloc"
    r"|oom-?kill|memory cgroup out of memory|errno 12\]|resourceexhaustederror|failed to allocate memory"
    r"|oom when allocating|running low on memory|killed due to memory pressure|failed to cuda [cm]alloc"
)
#: a process killed by SIGKILL, as the parent that saw it reports it (a data-loader worker, a pool worker)
WORKER_KILLED = _re(
    r"(?:worker|process) \(pid\(?s?\)?[ \d,]+\) (?:is killed|exited unexpectedly) by signal: killed\b"
    r"|killed by signal: killed\b|terminated with signal sigkill"
)
#: the GPU stack (driver, CUDA runtime, cuDNN) is missing, too old or does not match the framework's build
GPU_STACK = _re(
    r"cudnn_status_not_initialized|cudnn failed to initialize|failed to get convolution algorithm"
    r"|nvidia driver on your system is too old|cuda driver version is insufficient|found no nvidia driver"
    r"|no kernel image is available|could not load dynamic library|lib(?:cud\w*|cublas\w*|nccl)\.so[\d.]*: cannot open"
    r"|cudnn_status_(?:arch|version)_mismatch|no cuda gpus are available"
    # a CPU-only build of torch asked for the GPU (``.to("cuda")``). Not "Distributed package doesn't
    # have NCCL built in": the nccl backend chosen where there is none (Windows) is a bad parameter
    r"|torch not compiled with cuda enabled"
)
#: a GPU kernel that faulted: a bug in the model code, a custom op or an index out of range on the device
GPU_FAULT = _re(
    r"illegal memory access was encountered|device-side assert triggered|misaligned address|cublas_status_execution_failed"
)
#: tensor shapes or devices that do not fit together: a bug in the model or training code (not
#: ``size mismatch for <param>`` of ``load_state_dict``: a checkpoint of another configuration)
SHAPE_MISMATCH = _re(
    r"must have the same first dimension|shapes cannot be multiplied|mat1 and mat2 shapes"
    r"|expected all tensors to be on the same device|incompatible shapes"
    # two tensors of one operation in different dtypes: torch's "expected m1 and m2 to have the
    # same dtype, but got: float != double", "expected scalar type Float but found Double"
    r"|\b(?:to|must) have the same dtype\b|\bexpected (?:object of )?scalar type \w+ but (?:found|got)\b"
    r"|\binput type \(.{1,60}\) and weight type \(.{1,60}\) should be the same\b"
    r"|operands could not be broadcast together|is incompatible with the layer\b|\bshape mismatch\b"
    # a reshape to a shape whose size is not the array's: numpy's "cannot reshape array of size
    # 48000 into shape (32,32)", torch's "shape '[8, -1, 3]' is invalid for input of size 100"
    r"|\bcannot reshape (?:array|tensor) of size \d+ into shape\b|\bshape '\[[^\]]*\]' is invalid for input of size \d+"
    # scikit-learn's input check given a scalar or a vector where a table of samples goes (a
    # transformer that returned nothing, a column passed as a Series): "Expected 2D array, got
    # scalar array instead", "… got 1D array instead"
    r"|\bexpected 2D array, got (?:scalar|1D) array instead\b"
    # torch's broadcasting and expand checks: "The size of tensor a (270) must match the size of
    # tensor b (64) at non-singleton dimension 1", "The expanded size of the tensor (270) must
    # match the existing size (64) at non-singleton dimension 1" (issue 29)
    r"|\bthe size of tensor a \(\d+\) must match the size of tensor b \(\d+\)"
    r"|\bthe expanded size of the tensor \(-?\d+\) must match the existing size \(\d+\)"
    # numpy's in a matrix product or any generalized ufunc (matmul, linalg's solve): "matmul:
    # Input operand 1 has a mismatch in its core dimension 0, with gufunc signature …", and
    # ``np.dot``'s "shapes (1,12) and (16,1) not aligned: 12 (dim 1) != 16 (dim 0)" — the numpy
    # spelling of torch's "mat1 and mat2 shapes cannot be multiplied" (issue 29: a served
    # model's handler, read as an unknown ValueError 0.33)
    r"|\bhas a mismatch in its core dimension \d+|\bshapes \([\d, ]*\) and \([\d, ]*\) not aligned\b"
    # torch's view of a tensor whose strides do not allow it (a ``.view`` after ``.transpose``:
    # "view size is not compatible with input tensor's size and stride … Use .reshape(...)
    # instead"), its convolutions' checks of the input against the weight ("Given groups=1, weight
    # of size [16, 3, 3, 3], expected input[16, 1, 64, 64] to have 3 channels, but got 1 channels
    # instead", "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size:
    # [64, 64]"), and the dtype checks of its losses and embeddings ("expected target dtype to be
    # Long or Byte, but got Float", "Expected tensor for argument #1 'indices' to have one of the
    # following scalar types: Long, Int; but got torch.FloatTensor instead") — each the model's
    # code against the tensors it was handed (issue 29: bad_parameter 0.74, data_error 0.35 and 0.65)
    r"|\bview size is not compatible with input tensor's size and stride\b"
    r"|\bexpected input\[[\d, ]+\] to have \d+ channels, but got \d+ channels instead\b"
    r"|\bexpected \dD \(unbatched\) or \dD \(batched\) input to \w+, but got input of size\b"
    r"|\bexpected \w+ dtype to be \w+(?: or \w+)*,? but got \w+|\bto have one of the following scalar types\b"
    # an einsum or a contraction of operands whose shared subscript differs in size, as each
    # library says it: torch's "einsum(): subscript d has size 32 for operand 1 which does not
    # broadcast with previously seen size 64", opt_einsum's (behind ``jax.numpy.einsum``) "Size of
    # label 'd' for operand 1 (64) does not match previous terms (32)", JAX's ``lax.dot_general``
    # "requires contracting dimensions to have the same shape" (bad_parameter 0.35 on a complete run
    # of JAX; issue 29)
    r"|\bsubscript \w+ has size \d+ for operand \d+ which does not broadcast\b"
    r"|\bsize of label '\w+' for operand \d+ \(\d+\) does not match previous terms\b"
    r"|\bdot_general requires contracting dimensions to have (?:the same|consistent)\b"
)
#: autograd or a device used against its rules, in torch's own words: a backward pass through a
#: graph already freed or through a tensor modified in place, a loss with no ``grad_fn`` (computed
#: under ``no_grad`` or detached), a GPU or grad-tracking tensor handed to numpy, a tensor on
#: another device than the operation's. Each is a bug in the training code, whatever the data
#: or the parameters (issue 29)
AUTOGRAD_MISUSE = _re(
    r"does not require grad and does not have a grad_fn|trying to backward through the graph a second time"
    r"|modified by an inplace operation|a leaf variable that requires grad (?:is being|has been) used in an in-place"
    r"|can't call numpy\(\) on tensor that requires grad|use tensor\.cpu\(\) to copy the tensor to host memory"
    r"|\bis not on the expected device\b|expected object of device type \w+ but got device type"
    r"|one of the differentiated tensors appears to not have been used in the graph"
    r"|grad can be implicitly created only for scalar outputs"
    # mixed precision's GradScaler called out of its order (``unscale_`` twice before ``update``,
    # ``step`` with no gradient scaled, fp16 parameters under it) and an optimizer handed no
    # parameter at all (a plain list of layers, not an ``nn.ModuleList``; a freezing filter that
    # kept nothing): the training loop's own bug, read as bad_parameter 0.55 and 0.78 — a ValueError
    # or RuntimeError raised in torch's code — on complete runs written for the purpose (issue 29)
    r"|\bunscale_\(\) has already been called on this optimizer\b|\bno inf checks were recorded for this optimizer\b"
    r"|\battempting to unscale fp16 gradients\b|\boptimizer got an empty parameter list\b"
)
#: JAX's words for a program that breaks its transformations' rules, raised from several places of
#: the library whatever the data: two trees of arrays that do not have the same structure (the
#: params against an optimizer state initialised for another tree, a checkpoint restored into a
#: state that gained a field: ``tree_util``'s "pytree structure error: different numbers of
#: pytree children at key path", jaxlib's "Tuple arity mismatch", "Dict key mismatch", Orbax's
#: "restore item and on-disk value metadata tree structures do not match"), an integer handed
#: where a PRNG key goes (``prng.py``'s "JAX encountered invalid PRNG key data"), and
#: differentiation of integers or of a non-scalar function (``api.py``'s "grad requires real- or
#: complex-valued inputs", "requires real-valued outputs", "Gradient only defined for
#: scalar-output functions"). Read as data_error 0.14–0.54 on complete runs (issue 29)
JAX_MISUSE = _re(
    r"\bpytree structure error: different\b|\btree structures do not match\b"
    r"|\b(?:tuple arity|dict key|custom node type) mismatch\b"
    r"|\binvalid PRNG key data\b"
    r"|\brequires real(?:- or complex)?-valued (?:inputs|outputs)\b|\bgradient only defined for scalar-output functions\b"
)
#: JAX's own classes for a traced value used as a concrete one (a Python ``if`` on it, ``np.asarray``
#: of it, a shape computed from it, a tracer kept past its transformation) and for a key used
#: twice: ``jax.errors`` documents each as a fault of the program under ``jit``/``vmap``/``grad``,
#: never of the data (read as code_error 0.33–0.39 only: the traceback JAX filters ends in the
#: user's line, so nothing else said how sure; issue 29). The module is the one JAX prints them
#: under (``jax.errors``, where it documents them since 2021); JAX 0.1's ``jax.core.`` spelling is
#: left to the reading it had: taking it in too moved the retrained ranker so that a held-out
#: entry of another category fell below 0.5
JAX_TRACER_ERRORS: Final = (
    "ConcretizationTypeError",
    "TracerBoolConversionError",
    "TracerArrayConversionError",
    "TracerIntegerConversionError",
    "UnexpectedTracerError",
    "NonConcreteBooleanIndexError",
    "KeyReuseError",
)
#: Flax's classes for a module used against its API (``flax.errors``): an apply without the rng a
#: layer needs, a variable or parameter the params do not have or with another shape, a module
#: called unbound, an attribute set where it cannot be. Its checkpoint classes are left out: a
#: checkpoint that exists or is corrupted is no bug of the model code
FLAX_MODULE_ERRORS: Final = (
    "TraceContextError",
    "LazyInitError",
    "InvalidRngError",
    "ApplyScopeInvalidVariablesTypeError",
    "ApplyScopeInvalidVariablesStructureError",
    "ScopeParamNotFoundError",
    "ScopeCollectionNotFound",
    "ScopeParamShapeError",
    "ScopeVariableNotFoundError",
    "InvalidFilterError",
    "InvalidScopeError",
    "ModifyScopeVariableError",
    "ImmutableVariableError",
    "JaxTransformError",
    "NameInUseError",
    "AssignSubModuleError",
    "SetAttributeInModuleSetupError",
    "SetAttributeFrozenModuleError",
    "MultipleMethodsCompactError",
    "ReservedModuleAttributeError",
    "ApplyModuleInvalidMethodError",
    "CallCompactUnboundModuleError",
    "CallSetupUnboundModuleError",
    "CallUnbindOnUnboundModuleError",
    "CallShareScopeOnUnboundModuleError",
    "InvalidInstanceModuleError",
    "IncorrectPostInitOverrideError",
    "DescriptorAttributeError",
    "TransformedMethodReturnValueError",
    "TransformTargetError",
)
#: a method or attribute the major libraries removed in a release, looked up on their own objects
#: or classes: pandas 1.0/2.0/3.0 (``DataFrame.append``, ``iteritems``, ``ix``, ``as_matrix``),
#: NumPy 2.0's array methods (``ptp``, ``itemset``, ``newbyteorder``), Lightning 2.0's argparse
#: helpers (``Trainer.add_argparse_args``). Python's message names the type, not the library, and
#: the lookup fails in the user's line (an unbound ``pd.DataFrame.append(df, row)``, a C method),
#: so nothing else tells an upgrade from a typo (issue 29)
REMOVED_API = _re(
    r"^(?:type object )?'(?:pandas\.[\w.]+\.)?(?:DataFrame|Series)' (?:object )?has no attribute "
    r"'(?:append|iteritems|ix|as_matrix|get_value|set_value|lookup|mad|reindex_axis|from_csv|convert_objects"
    r"|sortlevel|get_ftype_counts|to_panel|swapaxes|is_monotonic)'"
    r"|^(?:type object )?'numpy\.ndarray' (?:object )?has no attribute '(?:ptp|itemset|newbyteorder)'"
    r"|^type object '(?:Trainer|LightningDataModule)' has no attribute "
    r"'(?:add_argparse_args|from_argparse_args|parse_argparser|get_init_arguments_and_types)'"
)
#: a data value scikit-learn, NumPy or statsmodels refused, in their words: a NaN or an infinity
#: in the input, a label the fitted encoder never saw. They are also printed without their
#: exception's class, by a logger's ``str(e)`` or a service's JSON answer (issue 29)
DATA_VALUES = _re(
    r"\binput (?:x |y )?contains (?:nan|infinity)|\bcontains previously unseen labels\b"
    r"|\bcontains inf(?:s|inity)? or nans?\b"
)
#: a package is missing and the library says how to install it (pip's own failures included)
INSTALL_HINT = _re(
    r"requires\b.{0,80}\bpip install\b|you can install it with .?pip install|please run .?pip install"
    r"|no matching distribution found for|could not find a version that satisfies the requirement"
)
#: the labels or features do not fit what the model expects (XGBoost, scikit-learn, LightGBM)
LABELS_FEATURES = _re(
    r"label must be in|labels are not correctly provided|found -?\d+ in label|feature_names mismatch"
    r"|training data did not have the following fields|expected [\w, ]{1,400} in input data"
    # as many labels as rows is the data's contract: LightGBM's "Length of labels differs from the
    # length of #data", "the number of labels (998) does not match the number of rows (1000)"
    r"|\b(?:length|number|size) of (?:the )?labels?\b.{0,20}\b(?:differs? from|does not match|doesn't match|is not equal to)\b"
    # scikit-learn's check of a table's column names against those it was fitted on (a column
    # renamed or dropped upstream of a scoring job): "The feature names should match those that
    # were passed during fit.", "Feature names unseen at fit time: - tenure_months" (issue 29)
    r"|\bfeature names should match those that were passed during fit\b|\bfeature names (?:unseen at fit time"
    r"|seen at fit time, yet now missing)\b"
)
#: torch.save's zip writer when the disk fills up
#: a write that came up short — the errno hidden by the writer: torch's checkpoint writer
#: ("file write failed", or "unexpected pos 1280 vs 1174" when the stream fell behind what it
#: wrote), NumPy's ``tofile`` ("1048576 requested and 524256 written"); a full disk or a file
#: size limit, as ENOSPC and EFBIG say when they are not hidden (issue 29)
WRITE_FAILED = _re(
    r"PytorchStreamWriter failed writing file .{1,120}: file write failed|\bunexpected pos \d+ vs \d+"
    r"|\b\d+ requested and \d+ written\b"
)
#: a file that exists and is not in the format the code reads (HDF5's signature, a zip's central
#: directory — torch's checkpoints —, pickle's load key, Parquet's magic bytes, an image PIL cannot read)
NOT_THE_FORMAT = _re(
    r"file signature not found|\bnot an? (?:hdf5|zip|parquet|arrow|npy|gzip(?:ped)?) file\b|file is not a zip file"
    r"|failed finding central directory|invalid load key|bad magic number|magic bytes not found"
    r"|cannot identify image file|unexpected end of (?:file|data|stream)"
    # audio and databases: the standard library's ``wave`` and ``aifc`` ("file does not start
    # with RIFF id": an MP3 saved as .wav), libsndfile's "Format not recognised" (soundfile,
    # librosa), SQLite's SQLITE_NOTADB ("file is not a database") (issue 29: dependency_error 0.19)
    r"|file does not start with (?:RIFF|FORM) id|\bnot a wave file\b|\bformat not recognised\b"
    r"|\bfile is (?:encrypted or is )?not a database\b"
    # safetensors' header check of a file cut short or not safetensors at all ("Error while
    # deserializing header: incomplete metadata, file not fully covered", "HeaderTooLarge",
    # "MetadataIncompleteBuffer": a checkpoint whose copy or write did not finish) (issue 29)
    r"|\berror while deserializing header\b|\bHeaderTooLarge\b|\bMetadataIncompleteBuffer\b"
)
#: a query the database could not parse: the workload's SQL, whatever the data (SQLite's
#: ``near "FORM": syntax error`` and "incomplete input", PostgreSQL's "syntax error at or near" —
#: SQLSTATE 42601 —, MySQL's 1064 "You have an error in your SQL syntax", DuckDB's "Parser Error")
SQL_SYNTAX = _re(
    r"\bnear \"[^\"]*\": syntax error\b|\bsyntax error at or near\b|\bsyntax error at end of input\b"
    r"|\byou have an error in your sql syntax\b|\bparser error: syntax error\b|^incomplete input$"
)
#: a database file SQLite could not open: its folder is not there (SQLITE_CANTOPEN); the store
#: a pipeline stage should have built, not a file in another format
DATABASE_NOT_OPENED = _re(r"\bunable to open database file\b")
#: a value handed to an encoder that does not know its type: ``json.dump`` of a NumPy integer
#: ("Object of type int64 is not JSON serializable"), of a datetime, a set — the code's, whatever
#: the values
NOT_SERIALIZABLE = _re(r"\bis not (?:JSON|msgpack|YAML|BSON) serializable\b")
#: a table the code reads that the database does not have (SQLite, PostgreSQL's 42P01, MySQL's 1146)
NO_SUCH_TABLE = _re(r"\bno such table\b|\brelation \S+ does not exist|\btable '[^']+' doesn't exist|\bUndefinedTable\b")
#: a stored object that does not exist (S3, GCS, Azure Blob, the Hub)
NO_SUCH_OBJECT = _re(
    r"\bNoSuchKey\b|\bNoSuchBucket\b|\bBlobNotFound\b|\bno such (?:object|bucket)\b|specified (?:key|blob|container) does not exist"
    r"|\(404\)|\b404 client error|client error '404|http error 404|\b404 not found\b|\bnot found\b.*\b(?:s3|gs)://"
)

NAN_LOSS = _re(
    r"\bloss\b[^\n]{0,40}?\b(?:is|became|was|turned|went)\s+(?:nan|inf|-inf|infinite)\b"
    r"|(?:\b|(?<=_))loss\s*[=:]\s*-?(?:nan|inf)\b(?!\s+[a-z]+\b(?!\s*[=:]))|\b(?:nan|infinite|non-?finite) loss\b|\bloss (?:diverged|exploded)\b"
    # a print of f"step {step} loss {loss:.4f}": the key and its value with only a space between,
    # followed by the end of the line, punctuation or another ``key value`` pair, as the log-text
    # reading of nan_loss (nanlog) reads it; not "loss nan or inf", "loss nan checks enabled". The
    # runner's last line said "no clear cause, a hint: code_error" on a run that printed
    # "step 50 loss nan" to its end and exited 1 (issue 29)
    r"|(?:\b|(?<=_))loss\s+[+-]?(?:nan|inf)\b(?=\s*$|\s*[,;|)\]}]|\s+[-–]\s"
    r"|\s+(?!(?:or|and|to|of|in|at|for|with|than)\s)[a-z_][\w./-]*\s+[+-]?(?:\d|\.\d|nan\b|inf))"
)

#: a scheduler's or CI runner's time limit (Slurm, Kubernetes Jobs, GitHub Actions) stopped it
TIME_LIMIT = _re(
    r"\bdue to time limit\b|exceeded the maximum execution time|was active longer than specified deadline"
    r"|\breason: DeadlineExceeded\b|\bjob (?:step )?(?:timed out|time limit exceeded)\b|\bwalltime (?:limit )?exceeded\b"
)
#: stopped from outside: a launcher forwarding a signal, a cancelled job, a node shut down
#: a launcher (torchrun, an agent) forwarding the signal it got to its workers
FORWARDED_SIGNAL = _re(r"\bsending process \d+ closing signal SIG(?:TERM|INT|HUP)\b|\bforwarding SIG(?:TERM|INT|HUP)\b")
STOPPED = _re(
    r"\breceived (?:\d+|SIG\w+) death signal\b|\bgot SIG(?:TERM|INT|HUP)\b"
    r"|\*\*\* (?:JOB|STEP) [\w.]+ (?:ON \S+ )?CANCELLED AT \S+ \*\*\*|\bterminated in response to (?:imminent )?node shutdown"
    r"|\bjob (?:was )?cancelled\b|\bsignal 15\b.{0,20}\bterminat"
)
#: an fp16 loss scaler or a framework's guard that gave up on a loss that is not finite
LOSS_EXPLODED = _re(
    r"invalid loss, terminating training|minimum loss scale reached|loss scale already at minimum|loss is probably exploding"
    r"|objective function returned nan|\bnan loss encountered\b|\bends with loss nan\b|\blossvalue: nan\b"
    r"|loss became infinite or nan|\bloss: (?:nan|inf)\b"
)
#: a dataset whose columns or types are not the ones the code or the schema expects
SCHEMA = _re(
    r"couldn't cast\b|column names don't match|are not of type\b|does not tolerate element|could not convert string"
    r"|cannot cast\b.{0,60}\bto\b|\bschema\b.{0,40}\b(?:mismatch|does not match|differs)|\bunexpected (?:column|field)s?\b"
    r"|sum of query counts is not same|\blabel(?:s)? must be in\b|found -?\d+ in label"
)
#: a configuration tool's refusal of a key or an override (Hydra, OmegaConf) or a library's own parameter check
CONFIG_KEY = _re(
    r"\bis not in struct\b|\bcould not override '|\berror merging override\b|\bunknown (?:type of )?parameter\b"
    r"|\binvalid parameter format\b|\binvalid configuration for\b|\bwere unexpected\b|(?:^|\s)--?[a-z][\w-]* requires\b"
    r"|\brequested time limit is invalid\b|\bunrecognized arguments?\b|\binvalid (?:choice|value) for\b"
    # a library naming the value of one of its parameters it does not know (XGBoost's "Unknown
    # objective function: `binary:logstic`", "Unknown metric: …"), whatever the exception's class
    r"|\bunknown (?:objective|booster|tree[_ ]method|eval[_ ]metric|metric|solver|optimizer|scheduler|activation|loss)"
    r"(?: function| type| name)?\s*[:=]\s*\S"
    # Keras's words for a name given as a string that it does not know (``compile(loss=…)``,
    # an optimizer, an activation, an initializer: "Could not interpret loss identifier:
    # binary_crossentropy_loss"; read as code_error 0.53 on a complete run; issue 29)
    r"|\bcould not interpret (?:loss|optimizer|metric|activation|initializer|regularizer|constraint) identifier\b"
)
#: a stored object, bucket or checkpoint file that is not there
NOT_THERE = _re(
    r"\berror no file named\b|\bno such ?bucket\b|\bbucket_not_found\b|\(404\) when calling the \w+ operation"
    r"|\bwhen calling the HeadObject operation\b|\bno such object\b|\bstorageexception: 404\b"
    # Transformers' Auto classes on a folder that holds no config.json (an adapter's or a copy of
    # the weights alone): "Unrecognized model in out/. Should have a `model_type` key in its
    # config.json" — said too of a config.json without the key, the rarer case (issue 29:
    # code_error 0.49)
    r"|\bshould have a `?model_type`? key in its config\.json\b"
)
#: a disk-space check of a library itself (no errno)
NO_ROOM = _re(
    r"\bnot enough (?:free )?disk space\b|\binsufficient disk space\b|\bdisk is full\b"
    r"|\b(?:disk|storage|file ?system|inode|volume) quota (?:exceeded|reached)\b"
)
#: shared memory (/dev/shm) or a container's memory limit reached
MEMORY_LIMIT = re.compile(
    r"out of shared memory|insufficient shared memory|raise your shared memory limit|\bOOMKilled\b|\bOOM (?:error|kill(?:ed)?)\b"
    r"|\b(?:exit|status) code 137\b.{0,40}\b(?:OOM|memory)|Resource exhausted: OOM",
    re.I,
)
#: the caller is not allowed: a cloud IAM refusal, an expired token, an untrusted certificate
NOT_ALLOWED = _re(
    r"do(?:es)? not have permission|not have [\w.]+ access\b|permission denied|security token .{0,60}expired"
    r"|invalid credentials|certificate verify failed|\(accessdenied\)|\baccess ?denied\b"
)

#: errno numbers (Linux; macOS where they differ) → category
ERRNO_CATEGORY: Final[dict[int, str]] = {
    1: "credentials_error",
    13: "credentials_error",  # EPERM, EACCES
    2: "missing_file",
    20: "missing_file",  # ENOENT, ENOTDIR
    12: "oom_killed",  # ENOMEM
    28: "disk_full",
    27: "disk_full",  # EFBIG: the file outgrew a size limit (``ulimit -f``, the filesystem's)
    122: "disk_full",
    69: "disk_full",  # ENOSPC, EDQUOT (Linux, macOS)
    104: "service_unavailable",
    110: "service_unavailable",
    111: "service_unavailable",  # ECONNRESET, ETIMEDOUT, ECONNREFUSED
    101: "service_unavailable",
    113: "service_unavailable",
    103: "service_unavailable",  # ENETUNREACH, EHOSTUNREACH, ECONNABORTED
    54: "service_unavailable",
    60: "service_unavailable",
    61: "service_unavailable",
    65: "service_unavailable",  # macOS
    -2: "service_unavailable",
    -3: "service_unavailable",
    -5: "service_unavailable",  # getaddrinfo: EAI_NONAME, EAI_AGAIN, EAI_NODATA
    10054: "service_unavailable",
    10060: "service_unavailable",
    10061: "service_unavailable",
    10065: "service_unavailable",
    11001: "service_unavailable",  # Windows sockets: WSAECONNRESET, WSAETIMEDOUT, WSAECONNREFUSED, WSAEHOSTUNREACH, WSAHOST_NOT_FOUND
}
#: how an errno is printed: ``[Errno 28]``, ``OSError(28, ...)``, ``errno: 113``, ``errno=111``,
#: ``Os { code: 28, kind: StorageFull }`` (Rust), ``Error 111 connecting to`` (redis-py)
_ERRNO = re.compile(
    r"\[Errno (-?\d+)\]|\bOSError\((-?\d+),|\berrno[:=]? ?(-?\d+)\b|\bOs \{ code: (\d+)|^Error (\d+) connecting to|\bError (\d+) connecting to"
    r"|\[WinError (\d+)\]",
    re.I,
)


def errno_numbers(text: str) -> list[int]:
    """The errno numbers a message prints, in order, each once."""
    out: list[int] = []
    for m in _ERRNO.finditer(text):
        n = int(next(g for g in m.groups() if g is not None))
        if n not in out:
            out.append(n)
    return out


HTTP_STATUS: Final = re.compile(
    r"\b([1-5]\d\d)\b (?:Client|Server) Error|(?:Client|Server) error '([1-5]\d\d)|HTTP Error ([1-5]\d\d)"
)

#: "libcudart.so.11.0: cannot open shared object file: No such file or directory" is a shared
#: library the environment lacks (the dynamic loader's words: a dependency_error), not a file of
#: the run: the missing-file rules do not read the loader's "No such file or directory"
_NOT_A_LIBRARY: Final = r"(?<!cannot open shared object file: )"

EXCEPTION_RULES: Final[tuple[ExceptionRule, ...]] = (
    # ── memory ──
    ExceptionRule("oom_killed", 0.8, "python_memoryerror", classes=("MemoryError", "_ArrayMemoryError")),
    ExceptionRule(
        "oom_killed",
        0.85,
        "cuda_out_of_memory",
        classes=("OutOfMemoryError", "RayOutOfMemoryError", "ResourceExhaustedError"),
    ),
    ExceptionRule("oom_killed", 0.7, "a_worker_killed_with_sigkill", message=WORKER_KILLED),
    ExceptionRule("oom_killed", 0.75, "an_out_of_memory_message", message=OOM),
    # ── disk ──
    ExceptionRule("disk_full", 0.85, "no_space_left_on_device_enospc", message=ENOSPC),
    ExceptionRule("disk_full", 0.6, "a_checkpoint_write_that_failed", message=WRITE_FAILED),
    # ── files ──
    ExceptionRule("missing_file", 0.7, "filenotfounderror", classes=("FileNotFoundError", "NotADirectoryError")),
    ExceptionRule(
        "missing_file",
        0.45,
        "enoent_no_such_file_or_directory",
        message=_re(rf"{_NOT_A_LIBRARY}no such file or directory|\bENOENT\b|errno 2\]"),
    ),
    ExceptionRule("missing_file", 0.55, "an_object_that_does_not_exist_nosuchkey_404", message=NO_SUCH_OBJECT),
    ExceptionRule(
        "missing_file",
        0.6,
        "a_stored_object_that_does_not_exist",
        classes=("ResourceNotFoundError", "NoSuchKey", "NotFound"),
    ),
    ExceptionRule(
        "missing_file",
        0.45,
        "a_path_that_does_not_exist",
        classes=("OSError", "IOError", "ValueError", "RuntimeError"),
        message=_re(
            r"(?:file|path|directory|checkpoint)\b.{0,80}\b(?:does not exist|not found|doesn't exist)"
            r"|unable to (?:synchronously )?open file(?! \(file signature not found)"
        ),
    ),
    # the file is there and is not what the code reads: another format, cut short, or corrupt
    ExceptionRule("data_error", 0.7, "a_file_that_is_not_in_the_format_read", message=NOT_THE_FORMAT),
    ExceptionRule("missing_file", 0.6, "a_database_file_that_cannot_be_opened", message=DATABASE_NOT_OPENED),
    # ── dependencies ──
    ExceptionRule("dependency_error", 0.8, "a_missing_module", classes=("ModuleNotFoundError",)),
    ExceptionRule("dependency_error", 0.7, "an_import_failure", classes=("ImportError",)),
    # a notebook whose kernel the image lacks: jupyter_client's "No such kernel named ir"
    # (nbclient, papermill; dependency_error 0.32 only; issue 29)
    ExceptionRule("dependency_error", 0.75, "a_notebook_kernel_that_is_not_installed", classes=("NoSuchKernel",)),
    ExceptionRule(
        "dependency_error",
        0.7,
        "a_package_version_conflict",
        classes=("VersionConflict", "DistributionNotFound", "PackageNotFoundError", "ContextualVersionConflict"),
    ),
    ExceptionRule(
        "dependency_error",
        0.6,
        "a_binary_incompatibility_between_packages",
        message=_re(
            r"binary incompatibility|compiled using numpy 1\.x|cannot be run in numpy 2|undefined symbol"
            r"|cannot open shared object file|dll load failed|requires .{1,40}(?:>=|==|<).{0,20} but you have"
            r"|cuda driver version is insufficient|no kernel image is available"
        ),
    ),
    ExceptionRule("dependency_error", 0.65, "the_gpu_driver_cuda_or_cudnn_does_not_fit", message=GPU_STACK),
    ExceptionRule("dependency_error", 0.65, "a_package_the_library_asks_to_install", message=INSTALL_HINT),
    ExceptionRule(
        "dependency_error",
        0.55,
        "an_api_that_the_installed_version_of_a_module_lacks",
        classes=("AttributeError",),
        message=_re(r"^module '[\w.]+' has no attribute"),
    ),
    ExceptionRule(
        "dependency_error", 0.7, "an_api_the_library_removed", classes=("AttributeError",), message=REMOVED_API
    ),
    # NumPy 2's meaning of ``copy=False`` (never copy, else raise) met by code written for NumPy 1
    # (copy if needed): raised wherever an array is made with it — ``np.array``, ``np.asarray``, an
    # ``__array__`` protocol, a library's own call that predates NumPy 2 — "Unable to avoid copy while
    # creating an array as requested" and NumPy's pointer to its migration guide. An upgrade that broke
    # the code, as a removed alias (``np.float_``) is (code_error 0.44 on a complete run; issue 29)
    ExceptionRule(
        "dependency_error",
        0.7,
        "numpy_1_s_copy_keyword_under_numpy_2",
        classes=("ValueError",),
        message=_re(r"\bunable to avoid copy while creating an array as requested\b"),
    ),
    # ── network services ──
    ExceptionRule(
        "service_unavailable",
        0.8,
        "a_refused_or_reset_connection",
        classes=(
            "ConnectionRefusedError",
            "ConnectionResetError",
            "ConnectionAbortedError",
            "ConnectError",
            "NewConnectionError",
            "EndpointConnectionError",
            "ConnectTimeout",
            "ConnectTimeoutError",
            "ServerSelectionTimeoutError",
            "RemoteProtocolError",
            "RemoteDisconnected",
            "DistNetworkError",
            "RendezvousConnectionError",
            "ServiceRequestError",
            "ServiceResponseError",
        ),
    ),
    ExceptionRule(
        "service_unavailable",
        0.65,
        "a_connection_error",
        classes=(
            "ConnectionError",
            "MaxRetryError",
            "ProtocolError",
            "ReadTimeout",
            "ReadTimeoutError",
            "ReadError",
            "NetworkError",
            "TransportError",
            "ServiceUnavailable",
            "ServiceUnavailableError",
            "gaierror",
            "URLError",
        ),
    ),
    ExceptionRule("service_unavailable", 0.6, "a_connection_refused_reset_or_timed_out", message=CONN),
    ExceptionRule("service_unavailable", 0.65, "a_collective_or_peer_rank_that_stopped_answering", message=COLLECTIVE),
    ExceptionRule("service_unavailable", 0.65, "an_ml_service_that_did_not_answer", message=ML_SERVICE),
    ExceptionRule("service_unavailable", 0.7, "a_dns_failure", message=DNS),
    ExceptionRule("service_unavailable", 0.7, "an_http_5xx_answer_from_a_dependency", message=HTTP_5XX),
    ExceptionRule(
        "service_unavailable",
        0.4,
        "a_network_timeout",
        classes=("TimeoutError", "timeout", "Timeout", "TimeoutException"),
    ),
    # ── credentials and permissions ──
    ExceptionRule("credentials_error", 0.75, "permission_denied", classes=("PermissionError",)),
    ExceptionRule("credentials_error", 0.5, "eacces_eperm", message=EACCES),
    ExceptionRule(
        "credentials_error",
        0.85,
        "missing_cloud_credentials",
        classes=(
            "NoCredentialsError",
            "PartialCredentialsError",
            "CredentialRetrievalError",
            "DefaultCredentialsError",
            "RefreshError",
            "TokenRetrievalError",
            "UnauthorizedSSOTokenError",
            "ExpiredTokenException",
            "AuthenticationError",
            "Unauthorized",
            "Forbidden",
            "AccessDenied",
            "AccessDeniedException",
            "AuthorizationError",
            "ClientAuthenticationError",
            "GatedRepoError",
        ),
    ),
    ExceptionRule("credentials_error", 0.85, "a_missing_api_key", message=API_KEY),
    ExceptionRule("credentials_error", 0.7, "http_401_403", message=HTTP_AUTH),
    ExceptionRule("credentials_error", 0.65, "an_authentication_or_authorization_error", message=CREDENTIALS),
    # ── parameters ──
    ExceptionRule("bad_parameter", 0.8, "an_invalid_parameter_scikit_learn", classes=("InvalidParameterError",)),
    ExceptionRule(
        "bad_parameter",
        0.8,
        "a_configuration_file_does_not_parse",
        classes=(
            "ScannerError",
            "ParserError",
            "ComposerError",
            "ConstructorError",
            "ReaderError",
            "YAMLError",
            "MarkedYAMLError",
            "DuplicateKeyError",
            "TOMLDecodeError",
            "TomlDecodeError",
            "ParseError",
            "ParsingError",
            "MissingSectionHeaderError",
            "DuplicateSectionError",
            "DuplicateOptionError",
        ),
        modules=CONFIG_LANGUAGE_MODULES,
    ),
    ExceptionRule(
        "bad_parameter",
        0.65,
        "an_invalid_configuration",
        classes=(
            "ConfigError",
            "ConfigurationError",
            "ConfigAttributeError",
            "ConfigKeyError",
            "MissingMandatoryValue",
            "InterpolationError",
            "ArgumentError",
            "ArgumentTypeError",
            "BadParameter",
            "UsageError",
            "ImproperlyConfigured",
        ),
    ),
    ExceptionRule(
        "bad_parameter",
        0.55,
        "a_value_outside_its_valid_range",
        classes=("ValueError", "AssertionError", "TypeError", "KeyError", "RuntimeError", "Exception"),
        message=_re(
            r"\b(?:invalid|unknown|unsupported|unrecognized|illegal|bad)\b (?:value|parameter|param|argument|option|"
            r"choice|config\w*|setting|learning rate|lr|optimizer|scheduler|activation|loss|"
            r"batch.?size|mode|device|backend|solver|method|frequency|strategy|metric|kernel|criterion|penalty|scheduler|precision|seed)s?\b"
            r"|\bparameter\b.{0,60}\bmust be\b|\bmust be (?:a |an )?(?:positive|non-?negative|> ?0|>= ?0|greater than|"
            r"less than|at least|at most|between|one of|in the range|in \[|an? (?:int|float|str))"
            r"|expected one of|should be (?:one of|positive|between|> ?0)"
            r"|not a valid (?:choice|value|option)|out of range for (?:param|arg|option)"
            # a relation two of its arguments must keep: optuna's "`low <= high` must hold, but got
            # (low=0.01, high=1e-06)", "must be smaller than" another argument
            r"|`?\b\w+ ?[<>]=? ?\w+\b`? must hold\b|\bmust be (?:smaller|larger|lower|higher) than\b"
        ),
    ),
    # ── data ──
    ExceptionRule("data_error", 0.6, "a_table_the_code_reads_is_not_there", message=NO_SUCH_TABLE),
    ExceptionRule(
        "data_error",
        0.75,
        "a_data_validation_failure",
        classes=(
            "SchemaError",
            "SchemaErrors",
            "DataValidationError",
            "ValidationFailure",
            "ExpectationFailed",
            "ParserError",
            "EmptyDataError",
            "DtypeWarning",
            "ArrowInvalid",
            "ArrowTypeError",
            "UnicodeDecodeError",
            "IntCastingNaNError",
            "OutOfBoundsDatetime",
            "DateParseError",
            "MergeError",
            "InvalidIndexError",
        ),
        not_modules=CONFIG_LANGUAGE_MODULES,
    ),
    ExceptionRule(
        "data_error",
        0.7,
        "a_missing_column",
        message=_re(
            r"none of \[.*\] are in the \[?(?:columns|index)\]?|not in index|\bcolumns?\b.{0,60}"
            r"\b(?:not found|missing|not in|does not exist|doesn't exist|are missing|is missing)"
            r"|missing (?:required )?columns?|no column named|unknown column|column .{1,60} not found"
            # polars' ColumnNotFoundError, raised when a lazy query is collected: 'unable to find
            # column "unit_price"; valid columns: [...]' (data_error 0.39 only; issue 29)
            r"|\bunable to find column\b"
        ),
    ),
    ExceptionRule(
        "data_error",
        0.65,
        "a_value_the_code_could_not_parse_or_use",
        message=_re(
            r"could not convert (?:string|str)|invalid literal for (?:int|float)\(\)|input (?:x |y )?contains nan"
            r"|input contains (?:nan|infinity)|contains nan|contains inf(?:s|inity)? or nans?\b"
            r"|inconsistent numbers of samples|found array with 0 sample"
            r"|has \d+ features?, but .{1,80} expecting \d+ features|previously unseen labels|unknown label type"
            # a category the fitted encoder never saw (scikit-learn's OneHotEncoder/OrdinalEncoder at
            # transform time: "Found unknown categories ['XL'] in column 0 during transform")
            r"|\bfound unknown categor(?:y|ies)\b"
            r"|cannot convert non-finite values|cannot convert float nan|unable to parse string|cannot safely cast"
            r"|time data .{1,80} does not match format|expected \d+ fields in line|error tokenizing data"
            r"|no columns to parse|schema (?:mismatch|changed|does not match|validation)|dtype mismatch|unexpected dtype"
            r"|data ?frame is empty|empty (?:dataset|dataframe|input)|validation failed|failed validation|expectations? failed"
            # duplicates where the data must be unique: pandas' pivot "Index contains duplicate
            # entries, cannot reshape", reindex's "cannot reindex on an axis with duplicate labels"
            r"|mixed types|duplicate (?:keys?|rows?|index|entr(?:y|ies)|labels)|null values? (?:in|found)|contains nulls?"
            r"|could not be converted to|can only use \.str accessor"
            # a date in the data that is no date (pandas' and datetime's parsers)
            r"|time data .{1,80} doesn'?t match format|(?:day|month|year) is out of range for month"
            r"|unconverted data remains|unknown datetime string format|out of bounds nanosecond timestamp"
        ),
    ),
    ExceptionRule("data_error", 0.65, "labels_or_features_that_do_not_fit_the_model", message=LABELS_FEATURES),
    ExceptionRule("data_error", 0.45, "a_missing_key_in_a_record", classes=("KeyError",)),
    # ── model behaviour that ends a run ──
    ExceptionRule("nan_loss", 0.6, "a_loss_that_became_nan_or_infinite", message=NAN_LOSS),
    ExceptionRule("data_error", 0.5, "malformed_json_input", classes=("JSONDecodeError",)),
    # ── faults in the model code that the GPU or the framework reports ──
    ExceptionRule("code_error", 0.6, "a_gpu_kernel_fault", message=GPU_FAULT),
    ExceptionRule("code_error", 0.7, "a_tensor_shape_or_device_mismatch", message=SHAPE_MISMATCH),
    ExceptionRule("code_error", 0.7, "autograd_or_a_device_used_against_its_rules", message=AUTOGRAD_MISUSE),
    ExceptionRule("code_error", 0.7, "jax_s_transformations_used_against_their_rules", message=JAX_MISUSE),
    ExceptionRule(
        "code_error",
        0.75,
        "a_traced_value_used_as_a_concrete_one",
        classes=JAX_TRACER_ERRORS,
        modules=("jax.errors.",),
    ),
    ExceptionRule(
        "code_error", 0.7, "a_flax_module_used_against_its_api", classes=FLAX_MODULE_ERRORS, modules=("flax.",)
    ),
    # the workload's code handed a library something it cannot take, whatever the data: a query
    # that does not parse, a value its encoder does not know (issue 29: data_error 0.73, 0.54)
    ExceptionRule("code_error", 0.7, "a_query_that_does_not_parse", message=SQL_SYNTAX),
    ExceptionRule("code_error", 0.65, "a_value_the_encoder_cannot_serialize", message=NOT_SERIALIZABLE),
    ExceptionRule(
        "killed_by_signal", 0.6, "a_worker_terminated_with_sigterm", message=_re(r"killed by signal: terminated\b")
    ),
    # a process pool whose worker died without a traceback of its own: Python's
    # ``BrokenProcessPool: A process in the process pool was terminated abruptly …`` names no
    # signal, and the parent's traceback is only where it waited (``ex.map``, ``fut.result()``),
    # never the cause: a signal ended the worker (the OOM killer's SIGKILL reads as
    # ``oom_killed`` from the runner's memory evidence). Read as the workload's code (code_error
    # 0.23) on a complete run written for the purpose (issue 29)
    ExceptionRule(
        "killed_by_signal",
        0.6,
        "a_pool_worker_that_died_without_a_traceback",
        classes=("BrokenProcessPool",),
        message=_re(r"\bterminated abruptly\b"),
    ),
    ExceptionRule(
        "code_error",
        0.55,
        "a_crash_in_native_code",
        message=_re(r"killed by signal: (?:segmentation fault|aborted|bus error)"),
    ),
    # ── causes that libraries name in their own words (the wrapper's type says little) ──
    ExceptionRule("timeout", 0.8, "a_scheduler_time_limit", message=TIME_LIMIT),
    ExceptionRule("killed_by_signal", 0.7, "stopped_from_outside", message=STOPPED),
    ExceptionRule("dependency_error", 0.7, "a_module_that_is_not_installed", message=_re(r"\bno module named '")),
    ExceptionRule("nan_loss", 0.75, "a_loss_that_exploded", message=LOSS_EXPLODED),
    ExceptionRule("data_error", 0.7, "data_that_does_not_fit_the_schema", message=SCHEMA),
    ExceptionRule("bad_parameter", 0.7, "a_refused_configuration_key_or_option", message=CONFIG_KEY),
    ExceptionRule("missing_file", 0.7, "a_stored_object_or_checkpoint_that_is_not_there", message=NOT_THERE),
    # a resume that finds no checkpoint where it looks (Transformers' ``ValueError: No valid
    # checkpoint found in output directory (out)``, TensorFlow's "No checkpoint found in …"): the
    # checkpoint is not there, whatever the exception's class (code_error 0.21 on a complete run
    # written for the purpose, issue 29). An exception only: a log line saying so is how a
    # healthy run starts from scratch
    ExceptionRule(
        "missing_file",
        0.7,
        "a_checkpoint_to_resume_from_that_is_not_there",
        message=_re(r"\bno (?:valid |usable )?checkpoints? (?:was |were )?found (?:in|at|under)\b"),
    ),
    ExceptionRule("disk_full", 0.75, "a_library_s_disk_space_check", message=NO_ROOM),
    ExceptionRule("oom_killed", 0.8, "shared_memory_or_a_container_memory_limit", message=MEMORY_LIMIT),
    ExceptionRule("credentials_error", 0.75, "the_caller_is_not_allowed", message=NOT_ALLOWED),
)

LINE_RULES: Final[tuple[LineRule, ...]] = (
    LineRule("timeout", 0.7, "a_scheduler_time_limit", TIME_LIMIT),
    LineRule("killed_by_signal", 0.6, "stopped_from_outside", STOPPED),
    LineRule("killed_by_signal", 0.5, "a_launcher_forwarding_the_signal_to_its_workers", FORWARDED_SIGNAL),
    LineRule("nan_loss", 0.65, "a_loss_that_exploded", LOSS_EXPLODED),
    LineRule("data_error", 0.55, "data_that_does_not_fit_the_schema", SCHEMA),
    LineRule("bad_parameter", 0.55, "a_refused_configuration_key_or_option", CONFIG_KEY),
    LineRule("missing_file", 0.55, "a_stored_object_or_checkpoint_that_is_not_there", NOT_THERE),
    LineRule("disk_full", 0.6, "a_library_s_disk_space_check", NO_ROOM),
    LineRule("oom_killed", 0.65, "shared_memory_or_a_container_memory_limit", MEMORY_LIMIT),
    LineRule("credentials_error", 0.55, "the_caller_is_not_allowed", NOT_ALLOWED),
    LineRule(
        "oom_killed",
        0.55,
        "the_shell_reported_the_process_killed",
        _re(r"^\s*Killed\s*$|\b\d+\s+Killed\s+\S|^/bin/\w*sh: line \d+: +\d+ Killed", 0),
    ),
    LineRule("oom_killed", 0.6, "an_out_of_memory_message", OOM),
    LineRule("disk_full", 0.6, "no_space_left_on_device", ENOSPC),
    LineRule(
        "dependency_error",
        0.65,
        "the_shell_could_not_find_a_command",
        _re(
            r"\bcommand not found\b|^(?:\S+: )?(?:line \d+: )?[\w./-]+: not found$|^\S+: No such file or directory$|executable file not found",
            0,
        ),
    ),
    LineRule(
        "dependency_error",
        0.45,
        "a_missing_module",
        _re(r"\bModuleNotFoundError\b|\bNo module named\b|\bImportError\b|\bcannot import name\b", 0),
    ),
    LineRule(
        "missing_file",
        0.5,
        "no_such_file_or_directory",
        _re(rf"{_NOT_A_LIBRARY}no such file or directory|\bENOENT\b|file not found|\bNoSuchKey\b"),
    ),
    LineRule("missing_file", 0.45, "an_object_that_does_not_exist_nosuchkey_404", NO_SUCH_OBJECT),
    LineRule("service_unavailable", 0.5, "a_refused_reset_or_timed_out_connection", CONN),
    LineRule("service_unavailable", 0.5, "a_dns_failure", DNS),
    LineRule("service_unavailable", 0.55, "a_collective_or_peer_rank_that_stopped_answering", COLLECTIVE),
    LineRule("service_unavailable", 0.5, "an_ml_service_that_did_not_answer", ML_SERVICE),
    LineRule("service_unavailable", 0.5, "an_http_5xx_answer", HTTP_5XX),
    LineRule("credentials_error", 0.5, "permission_denied", EACCES),
    LineRule(
        "credentials_error", 0.45, "an_authentication_failure", _re(HTTP_AUTH.pattern + "|" + CREDENTIALS.pattern)
    ),
    LineRule("credentials_error", 0.55, "a_missing_api_key", API_KEY),
    LineRule("oom_killed", 0.6, "a_worker_killed_with_sigkill", WORKER_KILLED),
    LineRule(
        "killed_by_signal",
        0.6,
        "a_pool_worker_that_died_without_a_traceback",
        _re(r"\bexit codes of the workers are \{[^}]*\bSIG(?:KILL|TERM|INT|HUP)\(-\d+\)"),
    ),
    LineRule("dependency_error", 0.55, "the_gpu_driver_cuda_or_cudnn_does_not_fit", GPU_STACK),
    LineRule("dependency_error", 0.55, "a_package_the_library_asks_to_install", INSTALL_HINT),
    LineRule("disk_full", 0.5, "a_checkpoint_write_that_failed", WRITE_FAILED),
    LineRule("data_error", 0.5, "labels_or_features_that_do_not_fit_the_model", LABELS_FEATURES),
    LineRule("data_error", 0.5, "a_data_value_the_library_refused", DATA_VALUES),
    LineRule("code_error", 0.5, "a_gpu_kernel_fault", GPU_FAULT),
    # torch's words printed without their exception's class: a notebook's JSON error output, a
    # logger's ``str(e)`` (issue 29)
    LineRule(
        "code_error",
        0.5,
        "autograd_or_a_device_used_against_its_rules",
        _re(AUTOGRAD_MISUSE.pattern + r"|\bexpected all tensors to be on the same device\b"),
    ),
    LineRule(
        "bad_parameter",
        0.6,
        "a_command_line_usage_error",
        _re(
            r"error: (?:argument|unrecognized arguments|the following arguments are required|invalid choice)"
            r"|^Error: (?:Invalid value|No such option|Missing (?:option|argument)|Got unexpected extra argument)|^usage: "
        ),
    ),
    LineRule(
        "data_error",
        0.45,
        "a_data_validation_failure",
        _re(
            r"\bvalidation failed\b|\bexpectations? failed\b|\bschema (?:mismatch|error|changed)\b|\bmissing columns?\b"
            r"|\bnone of \[.*\] are in the \[columns\]|\bSchemaError\b|\bParserError\b|\bEmptyDataError\b"
        ),
    ),
    LineRule(
        "killed_by_signal",
        0.5,
        "the_process_was_terminated",
        _re(
            r"^\s*Terminated\s*$|\b\d+\s+Terminated\s+\S|received (?:signal )?SIG(?:TERM|INT|HUP)|\bpreempt(?:ed|ion)\b"
        ),
    ),
    LineRule("nan_loss", 0.45, "a_loss_reported_as_nan_or_infinite", NAN_LOSS),
    LineRule(
        "code_error",
        0.5,
        "a_crash_in_native_code",
        _re(r"segmentation fault|core dumped|fatal python error|\bSIGSEGV\b|\bSIGABRT\b|bus error"),
    ),
    # a shell's "Illegal instruction (core dumped)": a binary built for another CPU (issue 29)
    LineRule("dependency_error", 0.5, "an_illegal_instruction", _re(r"\billegal instruction\b")),
)

#: exception classes that, when nothing more specific matches, plainly point at the code itself
CODE_ERROR_CLASSES: Final[dict[str, float]] = {
    "NameError": 0.75,
    "UnboundLocalError": 0.75,
    "SyntaxError": 0.8,
    "IndentationError": 0.8,
    "TabError": 0.8,
    "AttributeError": 0.65,
    "TypeError": 0.65,
    "IndexError": 0.6,
    "ZeroDivisionError": 0.6,
    "RecursionError": 0.65,
    "NotImplementedError": 0.65,
    "AssertionError": 0.5,
    "ValueError": 0.45,
    "RuntimeError": 0.45,
    "KeyError": 0.35,
    "StopIteration": 0.5,
    "OverflowError": 0.5,
    # numpy's TypeError subclasses: an operator or ufunc applied to arrays of types it has no loop for
    "UFuncTypeError": 0.65,
    "_UFuncNoLoopError": 0.65,
    "_UFuncBinaryResolutionError": 0.65,
    "_UFuncCastingError": 0.65,
    "_UFuncInputCastingError": 0.65,
    "_UFuncOutputCastingError": 0.65,
}


def exception_matches(rule: ExceptionRule, name: str, message: str) -> bool:
    """Whether an exception ``name`` (possibly dotted) with ``message`` matches ``rule``."""
    if rule.classes:
        short = name.rsplit(".", 1)[-1]
        if short not in rule.classes and name not in rule.classes:
            return False
    if rule.modules and not name.startswith(rule.modules):
        return False
    if rule.not_modules and name.startswith(rule.not_modules):
        return False
    if rule.message is not None:
        return rule.message.search(message) is not None
    return True
