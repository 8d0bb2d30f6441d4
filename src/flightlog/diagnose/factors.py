"""Relative changes as a person reads them: a few per cent as a percentage, a large change as
a factor.

A loss that went from 0.3 to 13,500 did not get "4515864% worse"; it got ×45,000 worse. Every
report that prints how much a figure moved (a regression, a divergence, a comparison) words
it here, so the same change reads the same everywhere.
"""

from __future__ import annotations

import math

__all__ = ["factor_text", "worse_text", "change_text", "FACTOR_FROM"]

#: from this ratio (new / old) a change reads as a factor rather than a percentage
FACTOR_FROM = 2.0

_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def factor_text(ratio: float) -> str:
    """``×2.5``, ``×45,000``, ``×3·10⁸``: two significant figures, never a wall of digits."""
    if not math.isfinite(ratio) or ratio <= 0:
        return "×?"
    if ratio < 10:
        return f"×{ratio:.1f}"
    exponent = int(math.floor(math.log10(ratio)))
    rounded = round(ratio, 1 - exponent)
    if rounded >= 10 ** (exponent + 1):  # 999,999 rounds up to 1,000,000
        exponent += 1
    if rounded < 1e6:
        return f"×{rounded:,.0f}"
    mantissa = rounded / 10**exponent
    head = f"{mantissa:.1f}".rstrip("0").rstrip(".")
    return f"×{head}·10{str(exponent).translate(_SUPERSCRIPT)}"


def worse_text(run: float, base: float, direction: str, worse: float) -> str:
    """How much worse ``run`` is than ``base`` (``worse`` its relative change in the metric's
    direction, 0.5 = 50 % worse): a percentage, or a factor from ×2 (a loss 45,000 times the
    baseline's, an accuracy a third of it)."""
    ratio = run / base if direction == "lower" else base / run if run else math.inf
    if base > 0 and run > 0 and ratio >= FACTOR_FROM:
        return f"{factor_text(ratio)} worse"
    return f"{worse:.0%} worse"


def change_text(run: float, base: float) -> str:
    """A signed change for a comparison line: ``+12.5%``, ``-99.8%``, or ``×45,000`` once the
    new value is at least twice the old one (both positive)."""
    if base > 0 and run > 0 and run / base >= FACTOR_FROM:
        return factor_text(run / base)
    return f"{(run - base) / abs(base):+.1%}"
