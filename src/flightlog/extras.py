"""Which optional extra brings which modules, and the error for a feature used without it.

A plain ``pip install flightlog`` gives the SDK, the runner, the journal and every command that
reads the store. ``flightlog[server]`` adds the HTTP server and the web UI; ``flightlog[data]``
adds the data evidence (profiles, drift, cohorts). Commands import an extra's modules only when
they run, and a missing module becomes :class:`~flightlog.errors.MissingExtra`, whose message
is the line to install it, instead of a traceback.

Keep :data:`EXTRAS` in step with ``[project.optional-dependencies]`` in pyproject.toml
(tests/test_plain_install.py checks that they agree).
"""

from __future__ import annotations

from flightlog.errors import MissingExtra

__all__ = ["EXTRAS", "extra_for", "install_line", "missing_extra"]

# extra → the top-level modules it installs (import names, which here match the distributions)
EXTRAS: dict[str, tuple[str, ...]] = {
    "server": ("starlette", "uvicorn"),
    "data": ("pyarrow", "scipy", "pandas", "polars"),
}


def extra_for(module: str | None) -> str | None:
    """The extra that installs ``module`` (a dotted name is judged by its top package)."""
    top = (module or "").partition(".")[0]
    return next((extra for extra, modules in EXTRAS.items() if top in modules), None)


def install_line(extra: str) -> str:
    return f"pip install 'flightlog[{extra}]'"


def missing_extra(exc: ModuleNotFoundError, feature: str = "this command") -> MissingExtra | None:
    """The error to show for ``exc``, or None when the module is not one of an extra's."""
    extra = extra_for(exc.name)
    if extra is None:
        return None
    return MissingExtra(
        f"{feature} needs the {extra!r} extra ({exc.name.partition('.')[0] if exc.name else 'a module'} "
        f"is not installed): {install_line(extra)}",
        details={"extra": extra, "module": exc.name},
    )
