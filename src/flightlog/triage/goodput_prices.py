"""What an hour costs, per project: the prices that turn goodput's hours into money.

The project's configuration is ``flightlog.yaml`` in the working directory, else in
``FLIGHTLOG_HOME`` (found as the alert rules are: ``./flightlog.alerts.yaml``, else the
home's). Top-level keys apply to every project; a project's own entry overrides them::

    price_per_hour: 0.40        # a run's machine, per wall-clock hour it ran (not queued)
    price_per_gpu_hour: 2.50    # per GPU-hour held
    currency: USD
    projects:
      vision: {price_per_gpu_hour: 3.10}

Without the file, or without prices, goodput reports hours only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from flightlog.config import Settings
from flightlog.errors import InvalidInput

__all__ = ["Prices", "prices_for", "config_path", "CONFIG_FILE"]

CONFIG_FILE = "flightlog.yaml"
_KEYS = ("price_per_hour", "price_per_gpu_hour", "currency")


@dataclass(frozen=True)
class Prices:
    per_hour: float | None = None
    per_gpu_hour: float | None = None
    currency: str = "USD"
    source: str | None = None

    @property
    def any(self) -> bool:
        return self.per_hour is not None or self.per_gpu_hour is not None

    def cost(self, hours: float, gpu_hours: float) -> float | None:
        if not self.any:
            return None
        return (self.per_hour or 0.0) * hours + (self.per_gpu_hour or 0.0) * gpu_hours

    def to_dict(self) -> dict[str, Any]:
        return {
            "price_per_hour": self.per_hour,
            "price_per_gpu_hour": self.per_gpu_hour,
            "currency": self.currency,
            "source": self.source,
        }


def config_path(cwd: Path | None = None) -> Path | None:
    """The project configuration file in effect, or None."""
    for candidate in ((cwd or Path.cwd()) / CONFIG_FILE, Settings.from_env().home / CONFIG_FILE):
        if candidate.is_file():
            return candidate
    return None


def _price(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise InvalidInput(f"{where} must be a price: a number 0 or more (e.g. 2.5), not {value!r}")
    return float(value)


def prices_for(project: str | None, path: Path | None = None) -> Prices:
    """The prices of ``project`` (None: the defaults) from ``path`` (default: :func:`config_path`)."""
    path = path or config_path()
    if path is None:
        return Prices()
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise InvalidInput(f"cannot read the project configuration {path}: {exc}") from None
    if not isinstance(doc, dict):
        raise InvalidInput(
            f"{path}: the project configuration must be a mapping of keys ({', '.join(_KEYS)}, projects)"
        )
    merged = {k: doc.get(k) for k in _KEYS}
    projects = doc.get("projects") or {}
    if not isinstance(projects, dict):
        raise InvalidInput(f"{path}: 'projects' must map project names to their keys ({', '.join(_KEYS)})")
    own = projects.get(project) if project else None
    if own is not None:
        if not isinstance(own, dict):
            raise InvalidInput(f"{path}: projects.{project} must be a mapping of {', '.join(_KEYS)}")
        unknown = sorted(set(own) - set(_KEYS))
        if unknown:
            raise InvalidInput(f"{path}: projects.{project} has unknown keys {unknown}; known: {', '.join(_KEYS)}")
        merged.update({k: v for k, v in own.items() if v is not None})
    where = f"{path}: " + (f"projects.{project}." if own else "")
    currency = merged.get("currency") or "USD"
    if not isinstance(currency, str):
        raise InvalidInput(f"{where}currency must be a text such as USD or EUR, not {currency!r}")
    return Prices(
        per_hour=_price(merged.get("price_per_hour"), where + "price_per_hour"),
        per_gpu_hour=_price(merged.get("price_per_gpu_hour"), where + "price_per_gpu_hour"),
        currency=currency,
        source=str(path),
    )
