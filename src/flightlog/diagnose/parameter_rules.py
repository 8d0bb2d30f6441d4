"""Rules for the families of failures no other rule named: settings, services, limits, guards (issue 29).

Why: on the corpus's development side, a failure that some rule names is right nine times in
ten whatever repository it came from, and one that no rule names is right by the learned words
alone, which do not carry to repositories the training never saw. The failures below were
named by no rule; each rule reads one *family* — the words a library (or a kind of failure)
uses for one class of problem, at its cause — never one message:

- a setting the hardware or the cluster cannot meet (triton's kernel configuration, a GPU
  index, a precision or a distributed backend the machine lacks, a trial's resource request);
- a key the configuration's schema does not define (yacs's and detectron2's "Non-existent
  config key", jsonargparse's "No action for destination key");
- a library's own range check of one of its parameters (XGBoost's dmlc parameters, LightGBM's
  ``Check failed: … config->``, torch's samplers);
- configuration values whose arithmetic does not work out (batch sizes against generations,
  devices against a mesh);
- a model head configured otherwise than its dataset (mmdetection's ``num_classes`` check);
- a port another process holds (``EADDRINUSE``);
- a connection attempt in words the general rules lack (Milvus', Dask's), peer ranks that never
  came (torch's store, gloo), a database at its connection limit by its code alone (MySQL's
  1040), an API failing on its side (OpenAI's 500);
- a time limit of a platform or a CI runner, in its own words; torch's ``DataLoader`` timeout;
- TensorFlow's ``PermissionDeniedError``.

Each rule was counted over the whole development side before it was written (right on at
least nine in ten of the entries it fires on, silent on every benign line).
"""

from __future__ import annotations

import re
from typing import Final

from flightlog.diagnose.patterns import ExceptionRule, LineRule

__all__ = ["PARAMETER_EXCEPTION_RULES", "PARAMETER_LINE_RULES"]

_I = re.IGNORECASE


def _re(text: str, flags: int = _I) -> re.Pattern[str]:
    return re.compile(text, flags)


#: a setting the hardware or the cluster cannot meet: triton's autotuner and JIT refuse a kernel
#: configuration whose blocks need more shared memory than the GPU has ("out of resource: shared
#: memory, Required: 98304, Hardware limit: 65536"), Lightning refuses a GPU index the machine
#: does not have ("You requested GPUs: [1] But your machine only has: []"), Ray Tune a trial's
#: request the cluster cannot hold ("Insufficient cluster resources to launch trial"),
#: transformers a precision the GPU lacks ("Your setup doesn't support bf16/gpu"), torch a
#: backend the platform lacks ("Distributed package doesn't have NCCL built in": NCCL chosen on
#: Windows or macOS, where gloo is the one there). The job is
#: not out of memory nor the code wrong: the setting asks for what this machine does not offer
HARDWARE_CANNOT_MEET = _re(
    r"\bout of resource: shared memory\b.{0,60}\bhardware limit\b"
    r"|\byou requested (?:gpus?|tpus?|devices?|hpus?|ipus?)\b.{0,60}\bbut your machine only has\b"
    r"|\binsufficient cluster resources to launch trial\b"
    r"|\byour setup doesn'?t support bf16\b|\bdistributed package doesn'?t have nccl built in\b",
    _I | re.DOTALL,
)
#: a key the configuration's schema does not define — a misspelled or outdated option: yacs's
#: (and detectron2's, fvcore's) "Non-existent config key: MODEL.ABINET", jsonargparse's
#: (LightningCLI's) "No action for destination key". Not pydantic's ``extra_forbidden`` ("Extra
#: inputs are not permitted"): on the development side one in five was a library writing a key
#: the installed version of another one's schema does not know (a dependency_error)
UNKNOWN_CONFIG_KEY = _re(r"\bnon-existent config key\b|\bno action for destination key\b")
#: a library's own range check of one of its parameters: the dmlc parameter manager of XGBoost
#: ("value 0 for Parameter num_class should be greater equal to 1"), LightGBM's native checks
#: of its config ("Check failed: (num_leaves) > (1) at …/config_auto.cpp", "Check failed:
#: config->feature_fraction < 1.0f"), torch's samplers ("batch_size should be a positive
#: integer value, but got batch_size=0")
PARAMETER_RANGE = _re(
    r"\bvalue .{1,40} for parameter \w+ should be\b"
    r"|\bcheck failed: .{0,200}(?:\bconfig->\w+|[/\\]config(?:_auto)?\.cpp\b)"
    r"|\b(?:batch_size|num_workers|prefetch_factor) should be a (?:positive|non-negative) integer(?:al)? value\b"
)
#: configuration values whose arithmetic does not work out, in the words the general
#: configuration check lacks: TRL's "global train batch size (7 x 1) must be evenly divisible by
#: the number of generations", JAX's and Flax's "Number of devices 1 must equal the product of
#: mesh_shape (1, 8)"
ARITHMETIC = _re(r"\bmust be evenly divisible by\b|\bmust equal the product of\b")
#: a model head configured otherwise than the dataset it reads: mmdetection's check of the head's
#: classes against the dataset's ("The `num_classes` (3) in Shared2FCBBoxHead of MMDataParallel
#: does not matches the length of `CLASSES` 80) in CocoDataset"), Transformers' head sized otherwise
#: than its checkpoint. Not torch's ``load_state_dict``
#: "size mismatch for …": on the development side one in three was a checkpoint of another
#: version of a library (a dependency_error), not another configuration
CONFIGURED_OTHERWISE = _re(
    r"\bnum_classes`? \(\d+\) in \w+.{0,80}\bdoes not match(?:es)? the length of `?CLASSES\b"
    # Transformers' ``from_pretrained`` of a checkpoint whose head the configuration sizes
    # otherwise (``num_labels=5`` on a two-label classifier, a vocabulary grown since): "You set
    # `ignore_mismatched_sizes` to `False`" (5.x), "You may consider adding
    # `ignore_mismatched_sizes=True`" (4.x) — the checkpoint against the configuration the job
    # asked for, not a library's version (issue 29: code_error 0.44)
    r"|\bignore_mismatched_sizes\b",
    _I | re.DOTALL,
)
#: a tokenizer set up without what the call needs: a special token (Transformers' "Asking to pad
#: but the tokenizer does not have a padding token", "does not have a mask token") or a chat
#: template ("Cannot use chat template functions because tokenizer.chat_template is not set"):
#: the tokenizer chosen or configured for the job, whatever the text (issue 29: bad_parameter
#: 0.46, code_error 0.40)
TOKENIZER_LACKS = _re(
    r"\bdoes not have a (?:padding|pad|mask|eos|bos|sep|cls|unk|unknown) token\b|\bchat_template is not set\b"
)
#: a port another process holds (EADDRINUSE: torch's rendezvous store, a server the run starts):
#: the run's port setting (``--main_process_port``, ``MASTER_PORT``) collides with another job.
#: Servers say it in a log line, with no traceback, before they exit: uvicorn's "[Errno 98] error
#: while attempting to bind on address …", gunicorn's "Connection in use: ('0.0.0.0', 8000)",
#: werkzeug's "Port 5000 is in use by another program"
ADDRESS_IN_USE = _re(
    r"\baddress already in use\b|\bEADDRINUSE\b|\[Errno 98\]|\berrno: 98\b"
    r"|\bConnection in use: \(|\bis in use by another program\b"
)
#: a connection attempt that failed, in words the general connection rule lacks: pymilvus's
#: "Fail connecting to server on localhost:19530. Timeout" (and its "Retry to connect server …
#: failed"), Dask's "Timed out trying to connect to 'tcp://…' after 10 s"
CONNECT_FAILED = _re(
    r"\bfail(?:ed)? connecting to (?:the )?(?:server|host)\b|\btimed out trying to connect to\b"
    r"|\bretry to connect (?:to )?(?:the )?server\b.{0,60}\bfailed\b"
)
#: peer ranks that never came to a rendezvous or a collective, in the words of torch's TCPStore
#: ("Timed out after 1801 seconds waiting for clients. 1/3 clients joined.") and gloo's transport
#: ("Timed out waiting 1800000ms for recv operation to complete"): the other ranks' side, as
#: NCCL's socket errors and the c10d store's connection failures are
PEERS_NEVER_ANSWERED = _re(
    r"\btimed out after \d+ seconds waiting for clients\b|\btimed out waiting \d+ ?ms for (?:recv|send) operation\b"
)
#: OpenAI's API failing on its side, in its fixed words for a 500 ("The server experienced an
#: error while processing your request. Sorry about that!", ``"type": "server_error"``)
API_SERVER_ERROR = _re(r"\bthe server experienced an error while processing your request\b|\"type\": \"server_error\"")
#: MySQL's server error 1040 (ER_CON_COUNT_ERROR, "Too many connections") by its code, as
#: PyMySQL and mysqlclient print it — ``OperationalError: (1040, '…')`` — whatever the text
MYSQL_TOO_MANY_CONNECTIONS = re.compile(r"^\(1040, ")
#: a time limit of the platform the job runs on, in its words: Travis CI's "The job exceeded the
#: maximum time limit for jobs, and has been terminated", submitit's "Job has timed out" and
#: "this job is timed-out" (Slurm's USR1 before the limit), a competition's "Your submission
#: timed out after running for too long"
PLATFORM_TIME_LIMIT = _re(
    r"\bexceeded the maximum time limit\b|\bjob has timed out\b|\bthis job is timed-out\b"
    r"|\btimed out after running for too long\b"
)
#: torch's ``DataLoader`` waited its ``timeout=`` for a batch ("DataLoader timed out after 5 seconds")
DATALOADER_TIMEOUT = _re(r"\bDataLoader timed out after \d+ seconds\b")
#: a context length the model or the KV cache cannot hold, in vLLM's words: "User-specified
#: max_model_len (4096) is greater than the derived max_model_len", "Make sure that
#: `max_model_len` is no smaller than the number of text tokens", "… larger than the maximum
#: number of tokens that can be stored in KV cache (7344). Try increasing `gpu_memory_utilization`
#: or decreasing `max_model_len`" — not its warning that names the setting on a healthy start
CONTEXT_LENGTH = _re(
    r"\buser-specified max_model_len \(\d+\) is greater than\b|\bmake sure that `?max_model_len`? is no smaller than\b"
    r"|\b(?:increasing|decreasing) `?max_model_len`?"
)
#: Accelerate's check of what ``prepare`` is given against its configuration and the devices:
#: "You cannot create a DummyScheduler without specifying a scheduler in the config file" (and
#: ``DummyOptim``'s), "You can't train a model that has been loaded in 8-bit precision on a
#: different device than the one you're training on"
ACCELERATE_SETUP = _re(
    r"\byou cannot create a Dummy(?:Optim|Scheduler)\b.{0,40}\bwithout specifying\b"
    r"|\bloaded in (?:8|4)-bit precision on a different device than the one you'?re training on\b"
)
#: a model file of another major version handed to Ultralytics ("… appears to be an Ultralytics
#: YOLOv5 model originally trained with … This model is NOT forwards compatible with YOLOv8")
MODEL_OF_ANOTHER_VERSION = _re(r"\bis NOT forwards compatible with YOLO\w*", 0)
#: torch.onnx's refusal of an opset the model's operators need a newer one for ("Exporting the
#: operator 'aten::tril' to ONNX opset version 13 is not supported. Support for this operator was
#: added in version 14"): the export's ``opset_version`` setting, not the model
OPSET_TOO_LOW = _re(r"\bto ONNX opset version \d+ is not supported\b.{0,80}\badded in (?:opset )?version \d+")
#: DVC's configuration errors, all worded "config file error: …" (``dvc.config.ConfigError``):
#: no remote named, an unknown key, a section that does not parse
DVC_CONFIG = _re(r"\bconfig file error: ")
#: torch.distributions' argument check finding NaN in a distribution's parameters ("Expected
#: parameter loc … of distribution Normal(loc: tensor([[nan]]) …) to satisfy the constraint
#: Real(), but found invalid values: tensor([[nan]])"): the network that computes them produced
#: NaN — a policy's or a VAE's head, the way a loss becomes NaN
DISTRIBUTION_NAN = _re(
    r"\bto satisfy the constraint \w+\(.{0,40}\bbut found invalid values:?(?:\\n|\s)*tensor\(\[*\s*nan\b"
)
#: an optimizer that used up the iterations or evaluations it was given, raised on (issue 29):
#: scipy's ``minimize`` "Maximum number of iterations has been exceeded" (the script raising on
#: ``res.success``), ``curve_fit``'s "Number of calls to function has reached maxfev = 60",
#: "The maximum number of function evaluations is exceeded", scikit-learn's ConvergenceWarning
#: made an error (``warnings.simplefilter('error')``: "lbfgs failed to converge … ITERATIONS
#: REACHED LIMIT", "Liblinear failed to converge, increase the number of iterations"). The limit
#: is an argument or a configuration value (``maxiter``, ``maxfev``, ``max_iter``): a setting
#: the problem needs more of, as the docs read ``bad_parameter``
ITERATION_LIMIT = _re(
    r"\bmaximum number of (?:iterations|function evaluations) (?:has been |have been |is |was )?(?:exceeded|reached)\b"
    r"|\bnumber of calls to function has reached maxfev\b|\bfailed to converge\b.{0,80}\b(?:iterations?|max_iter)\b"
    r"|\bITERATIONS REACHED LIMIT\b|\bincrease the number of iterations\b"
    r"|\bmaximum number of iterations?\b.{0,20}\breached before convergence\b"
)

PARAMETER_EXCEPTION_RULES: Final[tuple[ExceptionRule, ...]] = (
    ExceptionRule("bad_parameter", 0.7, "an_optimizer_out_of_the_iterations_it_was_given", message=ITERATION_LIMIT),
    ExceptionRule("bad_parameter", 0.75, "a_setting_the_hardware_cannot_meet", message=HARDWARE_CANNOT_MEET),
    ExceptionRule("bad_parameter", 0.75, "a_key_the_configuration_does_not_define", message=UNKNOWN_CONFIG_KEY),
    ExceptionRule("bad_parameter", 0.75, "a_library_s_range_check_of_a_parameter", message=PARAMETER_RANGE),
    ExceptionRule("bad_parameter", 0.65, "configuration_values_that_do_not_work_out", message=ARITHMETIC),
    ExceptionRule(
        "bad_parameter", 0.7, "a_model_head_configured_otherwise_than_its_dataset", message=CONFIGURED_OTHERWISE
    ),
    ExceptionRule("bad_parameter", 0.65, "a_port_another_process_holds", message=ADDRESS_IN_USE),
    ExceptionRule("bad_parameter", 0.7, "a_tokenizer_without_what_the_call_needs", message=TOKENIZER_LACKS),
    ExceptionRule("service_unavailable", 0.7, "a_connection_attempt_that_failed", message=CONNECT_FAILED),
    ExceptionRule("service_unavailable", 0.7, "peer_ranks_that_never_answered", message=PEERS_NEVER_ANSWERED),
    ExceptionRule("service_unavailable", 0.7, "an_api_failing_on_its_side", message=API_SERVER_ERROR),
    ExceptionRule(
        "service_unavailable",
        0.75,
        "a_database_at_its_connection_limit",
        classes=("OperationalError", "InternalError"),
        message=MYSQL_TOO_MANY_CONNECTIONS,
    ),
    ExceptionRule("timeout", 0.7, "a_platform_s_time_limit", message=PLATFORM_TIME_LIMIT),
    ExceptionRule("timeout", 0.7, "a_data_loader_s_timeout", message=DATALOADER_TIMEOUT),
    ExceptionRule("credentials_error", 0.75, "tensorflow_s_permission_denied", classes=("PermissionDeniedError",)),
    ExceptionRule("bad_parameter", 0.7, "a_context_length_the_model_cannot_hold", message=CONTEXT_LENGTH),
    ExceptionRule("bad_parameter", 0.7, "accelerate_s_check_of_what_it_prepares", message=ACCELERATE_SETUP),
    ExceptionRule("bad_parameter", 0.65, "a_model_file_of_another_major_version", message=MODEL_OF_ANOTHER_VERSION),
    ExceptionRule("bad_parameter", 0.65, "an_export_opset_older_than_the_model_needs", message=OPSET_TOO_LOW),
    ExceptionRule("bad_parameter", 0.7, "dvc_s_configuration_error", message=DVC_CONFIG),
    # Hydra's class for a command-line override that does not parse (a stray character, a quote)
    ExceptionRule(
        "bad_parameter", 0.7, "a_command_line_override_that_does_not_parse", classes=("OverrideParseException",)
    ),
    ExceptionRule("nan_loss", 0.7, "a_distribution_whose_parameters_are_nan", message=DISTRIBUTION_NAN),
)

PARAMETER_LINE_RULES: Final[tuple[LineRule, ...]] = (
    # a server the run starts says so in a log line and exits without a traceback (issue 29:
    # uvicorn's bind error read as code_error 0.25 by its exit code alone)
    LineRule("bad_parameter", 0.6, "a_port_another_process_holds", ADDRESS_IN_USE),
    LineRule("bad_parameter", 0.6, "a_setting_the_hardware_cannot_meet", HARDWARE_CANNOT_MEET),
    LineRule("bad_parameter", 0.55, "a_key_the_configuration_does_not_define", UNKNOWN_CONFIG_KEY),
    LineRule("bad_parameter", 0.55, "a_library_s_range_check_of_a_parameter", PARAMETER_RANGE),
    LineRule("bad_parameter", 0.5, "a_model_head_configured_otherwise_than_its_dataset", CONFIGURED_OTHERWISE),
    LineRule("service_unavailable", 0.55, "a_connection_attempt_that_failed", CONNECT_FAILED),
    LineRule("service_unavailable", 0.55, "peer_ranks_that_never_answered", PEERS_NEVER_ANSWERED),
    LineRule("service_unavailable", 0.55, "an_api_failing_on_its_side", API_SERVER_ERROR),
    LineRule("timeout", 0.6, "a_platform_s_time_limit", PLATFORM_TIME_LIMIT),
    LineRule("bad_parameter", 0.55, "a_context_length_the_model_cannot_hold", CONTEXT_LENGTH),
    LineRule("bad_parameter", 0.55, "dvc_s_configuration_error", DVC_CONFIG),
    LineRule("nan_loss", 0.55, "a_distribution_whose_parameters_are_nan", DISTRIBUTION_NAN),
)
