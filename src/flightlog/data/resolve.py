"""What a CLI argument names: a JSON file we wrote, a data file or directory, or a run.

The data commands accept all three wherever it makes sense (``flightlog data drift
reference.json data/today.parquet``, ``flightlog data drift RUN_A RUN_B --profile train``), so
the rules live here once: an existing path wins; otherwise the argument is a run id or unique
prefix and the evidence of that run is read through :class:`flightlog.Client`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flightlog.errors import FlightlogError, InvalidInput, NotFound

if TYPE_CHECKING:
    from flightlog.data.profiling import Profile

__all__ = [
    "Runs",
    "cache_dir",
    "read_json",
    "manifest_from",
    "profile_from",
    "eval_from",
]


class Runs:
    """The store, opened on first use (plain file commands never touch it) and closed once."""

    def __init__(self, home: str | None = None) -> None:
        self.home = home
        self._client: Any = None

    @property
    def client(self) -> Any:
        if self._client is None:
            from flightlog.client import Client

            self._client = Client(self.home)
        return self._client

    def run_id(self, arg: str) -> str:
        """The full id of the run ``arg`` names (id or unique prefix)."""
        return str(self.client.run(arg).id)

    def evidence(self, arg: str, kind: str, name: str | None, what: str) -> dict[str, Any]:
        """The latest evidence of ``kind`` (and ``name``) on run ``arg``; errors list what exists."""
        try:
            info = self.client.run(arg)
        except NotFound:
            raise NotFound(f"{what} {arg!r} is neither an existing file or directory nor a run id") from None
        items = self.client.evidence(info.id, kind=kind, name=name)
        if not items:
            others = sorted({e["name"] for e in self.client.evidence(info.id, kind=kind)}) if name else []
            hint = f"; names on this run: {', '.join(others)}" if others else ""
            named = f" named {name!r}" if name else ""
            raise NotFound(f"run {info.id} has no {kind} evidence{named}{hint}")
        names = sorted({e["name"] for e in items})
        if name is None and len(names) > 1:
            raise InvalidInput(f"run {info.id} has several {kind} records ({', '.join(names)}): choose one with --name")
        return dict(items[-1]["data"])

    def log_evidence(self, arg: str, kind: str, name: str, data: dict[str, Any]) -> None:
        self.client.log_evidence(self.run_id(arg), kind, name, data)

    def log_artifact(self, arg: str, path: Path, *, name: str, kind: str) -> None:
        self.client.log_artifact(self.run_id(arg), str(path), name=name, role="output", kind=kind)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def cache_dir(home: str | None = None) -> Path:
    """``FLIGHTLOG_HOME/cache``: where manifest hashes are cached."""
    from flightlog.config import Settings

    settings = Settings.from_env(home=home) if home else Settings.from_env()
    return settings.home / "cache"


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{path}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror or exc}") from None


def _json_of_kind(path: Path, keys: tuple[str, ...]) -> dict[str, Any] | None:
    """The parsed file when it is a JSON object with ``keys`` (one of ours), else None."""
    if path.suffix.lower() != ".json" or not path.is_file():
        return None
    try:
        with path.open("rb") as f:
            head = f.read(1)
    except OSError:
        return None
    if head != b"{":
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    if isinstance(data, dict) and all(k in data for k in keys):
        return data
    return None


def manifest_from(arg: str, runs: Runs, *, name: str | None = None, use_cache: bool = True) -> dict[str, Any]:
    """A manifest JSON file, a file or directory to scan, or a run's input manifest."""
    from flightlog.data.manifest import build_manifest

    path = Path(arg).expanduser()
    if path.exists():
        data = _json_of_kind(path, ("files", "digest"))
        if data is not None:
            return data
        return build_manifest(path, cache_dir=cache_dir(runs.home) if use_cache else None)
    return runs.evidence(arg, "manifest", name, "manifest argument")


def profile_from(arg: str, runs: Runs, *, name: str | None = None, **options: Any) -> Profile:
    """A profile JSON file, a data file or directory to profile, or a run's logged profile."""
    from flightlog.data.profiling import Profile, profile

    path = Path(arg).expanduser()
    if path.exists():
        data = _json_of_kind(path, ("row_count", "columns"))
        if data is not None:
            return Profile.from_dict(data)
        return profile(path, **options)
    try:
        return Profile.from_dict(runs.evidence(arg, "profile", name, "profile argument"))
    except FlightlogError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidInput(f"the profile stored on run {arg!r} is damaged: {exc}") from None


def eval_from(arg: str, runs: Runs, *, name: str | None = "eval") -> dict[str, Any]:
    """An eval JSON file (from ``evaluate``) or a run's eval evidence."""
    path = Path(arg).expanduser()
    if path.is_file():
        data = read_json(path)
        if not isinstance(data, dict) or "cohorts" not in data:
            raise InvalidInput(f"{path} is not an eval result: expected an object with metrics and cohorts")
        return data
    return runs.evidence(arg, "eval", name, "run")
