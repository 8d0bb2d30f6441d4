"""Cues: the phrases that, across libraries, say what kind of failure a generic exception is.

Why: most failures arrive as a generic ``ValueError``, ``RuntimeError`` or ``AssertionError``
raised by a library; its class says nothing and no specific pattern knows its wording. The
words libraries use to explain themselves do carry the kind — "requires bitsandbytes>=0.39",
"is not compatible with", "is not defined". Each cue is a rule with a modest weight: on its own
it is a hint; the ranker (:mod:`.ranker`) learns how much it is worth next to the exception's
type, where it was raised, and what else matched.
"""

from __future__ import annotations

import re
from typing import Final

from flightlog.diagnose.patterns import ExceptionRule, LineRule

__all__ = ["CUE_EXCEPTION_RULES", "CUE_LINE_RULES"]

_I = re.IGNORECASE


def _re(text: str) -> re.Pattern[str]:
    return re.compile(text, _I)


#: versions, builds and installs that do not fit together
VERSIONS = _re(
    r"\bversion\b.{0,60}\b(?:mismatch|incompatible|not compatible|too old|too new|not supported|is required|requires"
    r"|must be|newer|older|at least|does not match|doesn't match)\b|\b(?:requires?|needs?)\b.{0,40}[\w.-]\s*(?:>=|==|<=|~=)\s*\d"
    r"|\bis required for\b.{0,60}\bbut found\b|\bplease (?:upgrade|update|downgrade|reinstall)\b|\bbut found [\w.-]+\s*==|\binstalled version\b"
    r"|\b(?:was|were|been|is) (?:built|compiled) (?:for|against|with)\b|\bnot (?:built|compiled) with\b|\bbinary (?:is )?incompatib"
    r"|\bir[_ ]version\b|\bAPI version\b|\bis used but incompatible\b|\bmigration guide\b|\bfailed building wheel\b"
    r"|\bsubprocess-exited-with-error\b|\bmetadata-generation-failed\b|\bcan't find rust compiler\b|\bcould not build wheels\b"
    r"|\bDLL load failed\b|\bextensions? (?:not|wasn't|could not be|can't be|cannot be) (?:built|loaded|compiled|found)\b"
    r"|\bcan't load C\+\+/CUDA extensions\b|\boperator [\w:.]+ does not exist\b|\bcan't find model\b"
    r"|\bcouldn't find (?:an )?appropriate backend\b|\bbackends? .{0,30}\bnot (?:available|found|installed)\b"
    r"|\bnot compiled with (?:GPU|CUDA) support\b|\b(?:torch|cuda|cudnn|nccl|python) (?:version )?\d[\d.]* (?:is )?(?:required|needed)\b"
    r"|\bno longer (?:supported|available) (?:in|since|from|as of)\b"
)
#: a configuration or argument the library refuses, in its own words
REFUSED = _re(
    r"\b(?:is|are) not compatible with\b|\bcan only be used\b|\bcan(?:'t|not) be used (?:with|together|in|on|when)\b"
    r"|\brequires? (?:a |an )?(?:GPU|CUDA|TPU|NPU)\b|\bplease (?:specify|set|provide|select|choose|pass)\b"
    r"|\bmust not (?:contain|be|exceed|have)\b|\b(?:have|has) to be\b|\bis (?:larger|greater|bigger|smaller|less) than (?:the )?max"
    r"|\btry (?:increasing|decreasing|reducing|setting|lowering|raising)\b|\bunknown (?:keys?|options?|arguments?|config\w*|names?)\b"
    r"|\bis not (?:a )?(?:valid|recognized|allowed) \w+|\bnot (?:a )?multiple of\b|\bmaximum context length\b"
    r"|\bcontext_length_exceeded\b|\bnot found in the (?:base )?model\b|\bshould be (?:set|one of|either)\b"
    r"|\bno (?:such|matching) (?:option|argument|parameter|key)\b|\bvalues? (?:that )?mismatch\b|\bnot a valid (?:choice|option|value)\b"
    r"|\bunexpected (?:keyword )?argument\b|\binvalid (?:argument|value|option|choice|parameter|input shape|device)\b"
)
#: a bug in the code: the words the interpreter and libraries use for misuse of the language
PROGRAMMING = _re(
    r"\bis not defined\b|\bobject is not (?:callable|subscriptable|iterable)\b|\bunsupported operand type"
    r"|\btakes (?:from )?\d+ (?:to \d+ )?positional arguments? but \d+ (?:was|were) given\b|\bmissing \d+ required (?:positional|keyword)"
    r"|\bindex out of range\b|\breferenced before assignment\b|\bcannot unpack non-iterable\b|\bnot enough values to unpack\b"
    r"|\btoo many values to unpack\b|\bmaximum recursion depth\b|\bcan only concatenate\b|\bmust be str, not\b"
    r"|\bobject of type '\w+' has no len\(\)|\bexpected str, bytes or os\.PathLike object, not\b|\bdivision by zero\b"
)
#: the data does not look like what the code reads (shapes that do not fit together are the
#: model's or the training code's: ``patterns.SHAPE_MISMATCH``, a code error; ``dtype=`` after
#: another argument is a repr's, ``Tensor(shape=(8, 5), dtype=float32)``, not a complaint; nor is
#: "… to have the same dtype": two tensors of one operation, the code's like their shapes)
DATA_WORDS = _re(
    r"(?<!same )\bdtype\b(?:[^(=]|$)|(?<!, )\bdtype=|\bcorrupt(?:ed)?\b|\btruncated\b"
    r"|\bmalformed\b|\bunexpected (?:end of|token|character|eof)\b|\bnot a valid (?:json|csv|image|utf-8)\b|\bfailed to (?:parse|decode)\b"
    r"|\bcould not (?:parse|decode|convert|cast)\b|\bencoding\b|\bempty (?:file|batch|data|split)\b|\bno (?:samples|rows|examples|images)\b"
    r"|\blabels?\b.{0,40}\b(?:out of range|must be|invalid|mismatch)\b|\bnum_classes\b|\bcolumns?\b|\bschemas?\b"
    r"|\binvalid dimensions?\b|\bconstraint failed\b|\bexpected sequence of length\b|\bout of bounds\b|\bnon-normalized\b"
    r"|\bduplicate (?:keys?|entr(?:y|ies)|values?)\b|\bmissing values?\b|\bunparseable\b|\bdoes not match (?:the )?(?:expected )?format\b"
)
#: credentials missing, expired or refused, in the words clients and servers use
CREDENTIAL_WORDS = _re(
    r"\bno password supplied\b|\bmissing (?:authentication )?credentials\b|\b(?:expired|revoked)\b.{0,20}\btoken\b"
    r"|\btoken\b.{0,30}\b(?:expired|revoked|invalid|not valid)\b|\binvalid_grant\b|\bforbidden\b|\bunauthori[sz]ed\b"
    r"|\bauthenticat\w*\b.{0,30}\b(?:failed|error|required|invalid)\b|\b(?:invalid|incorrect|wrong|missing) (?:api[ _-]?key|password|secret|token)\b"
    r"|\baccess (?:is )?(?:denied|forbidden)\b|\bnot (?:authorized|permitted) to\b|\bpermission\b.{0,30}\b(?:denied|required|missing)\b"
    r"|\blogin (?:failed|required)\b|\bplease (?:log ?in|login|authenticate)\b|\bhuggingface-cli login\b|\bwandb login\b"
)
#: a file, directory, dataset or stored object the run looked for and did not find
MISSING_WORDS = _re(
    r"\b(?:cannot|can't|could not|couldn't|unable to|failed to) (?:find|locate|open|load|read)\b.{0,60}\b(?:file|config|directory|folder"
    r"|dataset|checkpoint|path|weights|model file|image|bucket|object|key)\b|\b(?:file|config|directory|folder|dataset|checkpoint"
    r"|path|weights|bucket|object|blob|run|experiment|artifact)\b.{0,60}\b(?:not found|does not exist|doesn't exist|is missing)\b"
    r"|\bmissing[- ]files?\b|\bno such (?:file|directory|bucket|key|object)\b|\bRESOURCE_DOES_NOT_EXIST\b"
    # "not found" of something that can be stored: a file, a path, a directory, an object or a key
    # in a store, a model or an artifact in a registry, a program on the PATH; named, quoted, a path
    # or a URL; not of a result ("Optimal parameters not found": scipy's curve_fit ran out of calls)
    r"|\b(?:files?|path|director(?:y|ies)|folders?|checkpoints?|weights|models?|datasets?|objects?|keys?|blobs?"
    r"|buckets?|artifacts?|tables?|repo(?:sitory)?|images?|config(?:uration)?|alias|versions?|resources?|archives?"
    r"|snapshots?|commands?|programs?|executables?|binar(?:y|ies)|url|uri|page|location)\b[^\n]{0,60}?\bnot found\b"
    r"|['\"`][^'\"`\n]{1,200}['\"`][ \t]*(?:was |were |is |are )?not found\b"
    r"|[\w.~-]*[/\\][\w.~/\\-]+[ \t]+(?:was |is )?not found\b|\bnot found(?::| at| in| under)[ \t]*['\"]?(?:[\w.~-]*[/\\]|\w+://)"
    r"|\b[\w-]+\.[a-z0-9]{1,12}\b[^\n]{0,20}?\bnot found\b|\b404\b[^\n]{0,24}\bnot found\b|\bnot found \(404\)"
)

CUE_EXCEPTION_RULES: Final[tuple[ExceptionRule, ...]] = (
    ExceptionRule("dependency_error", 0.45, "cue:versions_and_builds", message=VERSIONS, generic=True),
    ExceptionRule("bad_parameter", 0.4, "cue:a_refused_setting", message=REFUSED, generic=True),
    ExceptionRule("code_error", 0.45, "cue:a_programming_error", message=PROGRAMMING, generic=True),
    ExceptionRule("data_error", 0.35, "cue:the_data_s_shape_or_format", message=DATA_WORDS, generic=True),
    ExceptionRule("credentials_error", 0.4, "cue:credentials_words", message=CREDENTIAL_WORDS, generic=True),
    ExceptionRule("missing_file", 0.35, "cue:something_not_found", message=MISSING_WORDS, generic=True),
)
CUE_LINE_RULES: Final[tuple[LineRule, ...]] = (
    LineRule("dependency_error", 0.35, "cue:versions_and_builds", VERSIONS),
    LineRule("bad_parameter", 0.3, "cue:a_refused_setting", REFUSED),
    LineRule("code_error", 0.3, "cue:a_programming_error", PROGRAMMING),
    LineRule("data_error", 0.25, "cue:the_data_s_shape_or_format", DATA_WORDS),
    LineRule("credentials_error", 0.3, "cue:credentials_words", CREDENTIAL_WORDS),
    LineRule("missing_file", 0.25, "cue:something_not_found", MISSING_WORDS),
)
