"""Metric names: which way is better, and which names are bookkeeping rather than quality.

One table for every analyzer that judges a metric (``nan_loss``, ``loss_plateau``,
``metric_regressed``): a project adds its own names in its diagnosis settings
(``lower_is_better`` / ``higher_is_better``)."""

from __future__ import annotations

import fnmatch
import re

from flightlog.diagnose.evidence import Thresholds

__all__ = ["metric_direction", "LOSS_LIKE", "VALIDATION"]

LOSS_LIKE = re.compile(
    r"loss|error|\bmse\b|\bmae\b|rmse|perplexity|\bppl\b|nll|cross.?entropy|objective|\bwer\b|\bcer\b"
    r"|(?:^|[_./-])(?:mse|mae|rmse|wer|cer|ppl|fid)(?:$|[_./-])",
    re.IGNORECASE,
)
_HIGHER = re.compile(
    r"acc|auc|f1|precision|recall|score|(?:^|[_./-])map(?:$|[_./@-])|ndcg|bleu|rouge|r2|iou|dice|reward|return",
    re.IGNORECASE,
)
#: names that contain a quality word but are bookkeeping (mixed-precision scaling, schedules,
#: speed): never judged. ``train_loss_step`` and ``val_acc_epoch`` are quality metrics.
_NOT_QUALITY = re.compile(
    r"loss_?scale|scaler|grad_?norm|learning_rate|(?:^|[_./-])lr(?:$|[_./-])|per_second|runtime|throughput",
    re.IGNORECASE,
)
VALIDATION = re.compile(r"(?:^|[_./-])(?:val|valid|validation|eval|test|dev)(?:$|[_./-])", re.IGNORECASE)


def metric_direction(name: str, th: Thresholds | None = None) -> str | None:
    """``"lower"``, ``"higher"`` (is better) or None when it is not known: the project's
    settings first, then the known name patterns."""
    th = th or Thresholds()
    if any(fnmatch.fnmatchcase(name, p) for p in th.lower_is_better):
        return "lower"
    if any(fnmatch.fnmatchcase(name, p) for p in th.higher_is_better):
        return "higher"
    if _NOT_QUALITY.search(name):
        return None
    if LOSS_LIKE.search(name):
        return "lower"
    if _HIGHER.search(name):
        return "higher"
    return None
