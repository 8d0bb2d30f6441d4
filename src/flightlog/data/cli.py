"""``flightlog data …``: manifests, profiles, validation gates, drift and cohorts from a shell.

Conventions (shared with every flightlog command): ``--format json`` prints exactly one JSON
document on stdout; human output is rich tables; errors are raised as
:class:`~flightlog.errors.FlightlogError` for the main CLI to print as ``error: …`` with exit
status 1. Gates use the exit status: ``validate`` exits 1 when an expectation failed,
``drift --fail-on-drift`` exits 1 on dataset-level drift.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from flightlog.cli.output import emit_json, format_option, json_safe
from flightlog.errors import FlightlogError, InvalidInput

if TYPE_CHECKING:
    from flightlog.data.resolve import Runs

__all__ = ["data_group", "main"]


def _runs(ctx: click.Context) -> Runs:
    """The store for this command, opened on first use: FLIGHTLOG_HOME or the root ``--home``."""
    from flightlog.data.resolve import Runs

    runs = ctx.meta.get("flightlog.data.runs")
    if runs is None:
        root = ctx.find_root()
        runs = Runs(root.params.get("home"))
        ctx.meta["flightlog.data.runs"] = runs
        ctx.call_on_close(runs.close)
    return runs


def _emit(obj: Any) -> None:
    """Exactly one JSON document on stdout, written as every flightlog command writes it."""
    emit_json(obj)


def _write_json(path: Path, obj: Any) -> None:
    try:
        text = json.dumps(json_safe(obj), ensure_ascii=False, default=str, allow_nan=False)
        path.write_text(text + "\n", encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(f"cannot write {path}: {exc.strerror or exc}") from None


def _pairs(values: tuple[str, ...], option: str) -> dict[str, str]:
    out = {}
    for v in values:
        key, sep, val = v.partition("=")
        if not sep or not key or not val:
            raise InvalidInput(f"{option} {v!r}: expected NAME=VALUE, e.g. {option} wasserstein=0.2")
        out[key.strip()] = val.strip()
    return out


def _floats(values: dict[str, str], option: str) -> dict[str, float]:
    out = {}
    for k, v in values.items():
        try:
            out[k] = float(v)
        except ValueError:
            raise InvalidInput(f"{option} {k}={v!r}: the value must be a number") from None
    return out


def _columns(text: str | None) -> list[str] | None:
    return [c.strip() for c in text.split(",") if c.strip()] if text else None


@click.group("data")
def data_group() -> None:
    """Data evidence: manifests, profiles, validation gates, drift and cohorts."""


@data_group.command("manifest")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option("--exclude", multiple=True, metavar="GLOB", help="Skip files matching this glob (repeatable).")
@click.option("--no-cache", is_flag=True, help="Hash every file even when the cache knows it.")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write the full manifest JSON here.",
)
@click.option("--run", "run", metavar="RUN", help="Store the manifest on this run (evidence kind manifest).")
@format_option
@click.pass_context
def manifest_cmd(
    ctx: click.Context,
    path: Path,
    exclude: tuple[str, ...],
    no_cache: bool,
    out: Path | None,
    run: str | None,
    fmt: str,
) -> None:
    """Scan a file or directory: counts, sizes, extensions, content hashes and a digest.

    Hashes are cached under FLIGHTLOG_HOME/cache by size and mtime, so re-scanning an unchanged
    tree only stats the files.
    """
    from flightlog.data import render, resolve
    from flightlog.data.manifest import build_manifest

    runs = _runs(ctx)
    m = build_manifest(path, cache_dir=None if no_cache else resolve.cache_dir(runs.home), exclude=exclude)
    if out is not None:
        _write_json(out, m)
    if run:
        runs.log_evidence(run, "manifest", Path(m["path"]).name, m)
    if fmt == "json":
        _emit(m)
    else:
        render.show_manifest(m)


@data_group.command("diff")
@click.argument("a")
@click.argument("b")
@click.option("--name", default=None, help="Which input manifest of a run (when it has several).")
@click.option("--limit", default=20, show_default=True, help="Files listed per section in text output.")
@format_option
@click.pass_context
def diff_cmd(ctx: click.Context, a: str, b: str, name: str | None, limit: int, fmt: str) -> None:
    """Compare two dataset snapshots: added, removed and changed files, and shifts.

    A and B are manifest JSON files, files or directories (scanned now), or run ids whose input
    manifest to use.
    """
    from flightlog.data import render, resolve
    from flightlog.data.manifest import diff_manifests

    d = diff_manifests(
        resolve.manifest_from(a, _runs(ctx), name=name),
        resolve.manifest_from(b, _runs(ctx), name=name),
    )
    if fmt == "json":
        _emit(d)
    else:
        render.show_diff(d, limit)


@data_group.command("profile")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the profile JSON here (a drift reference).",
)
@click.option("--columns", help="Comma-separated columns to profile (default: all).")
@click.option("--run", "run", metavar="RUN", help="Store the profile on this run (evidence kind profile).")
@click.option("--name", default=None, help="Name of the profile on the run (default: the file name).")
@format_option
@click.pass_context
def profile_cmd(
    ctx: click.Context,
    path: Path,
    out: Path | None,
    columns: str | None,
    run: str | None,
    name: str | None,
    fmt: str,
) -> None:
    """Profile a CSV / Parquet / JSON Lines file (or a directory of them), streamed in batches."""
    from flightlog.data import render
    from flightlog.data.profiling import profile

    p = profile(path, columns=_columns(columns))
    d = p.to_dict()
    if out is not None:
        _write_json(out, d)
    if run:
        _runs(ctx).log_evidence(run, "profile", name or path.name, d)
    if fmt == "json":
        _emit(d)
    else:
        render.show_profile(p)


@data_group.command("validate")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--expect",
    "expect",
    required=True,
    type=click.Path(path_type=Path),
    help="Expectations: a YAML or Python file.",
)
@click.option(
    "--sensitive",
    multiple=True,
    metavar="COLUMN",
    help="Redact this column's values in examples (repeatable).",
)
@click.option("--run", "run", metavar="RUN", help="Store the result on this run (evidence kind validation).")
@click.option("--name", default=None, help="Name of the result on the run (default: the file name).")
@format_option
@click.pass_context
def validate_cmd(
    ctx: click.Context,
    path: Path,
    expect: Path,
    sensitive: tuple[str, ...],
    run: str | None,
    name: str | None,
    fmt: str,
) -> None:
    """Check data against expectations; exit status 1 when any expectation fails.

    Failed expectations show offending examples (row and value); values of sensitive columns
    are replaced by <redacted>.
    """
    from flightlog.data import render
    from flightlog.data.expectfile import load_expectations
    from flightlog.data.validation import validate

    suite = load_expectations(expect)
    v = validate(path, suite, sensitive=sensitive)
    d = v.to_dict()
    if run:
        _runs(ctx).log_evidence(run, "validation", name or path.name, d)
    if fmt == "json":
        _emit(d)
    else:
        render.show_validation(d)
    if not v.success:
        ctx.exit(1)


@data_group.command("drift")
@click.argument("reference")
@click.argument("current")
@click.option(
    "--profile",
    "profile_name",
    default=None,
    help="Name of the profile to use when REFERENCE/CURRENT are runs.",
)
@click.option("--columns", help="Comma-separated columns to test (default: all of the reference).")
@click.option(
    "--threshold",
    "thresholds",
    multiple=True,
    metavar="NAME=VALUE",
    help="Override a default: sample_limit, p_value, wasserstein, jensenshannon, drift_share, psi_bins.",
)
@click.option(
    "--column-threshold",
    "column_thresholds",
    multiple=True,
    metavar="COLUMN=VALUE",
    help="Threshold for one column's test.",
)
@click.option(
    "--test",
    "tests",
    multiple=True,
    metavar="COLUMN=TEST",
    help="Force a test for a column: ks, wasserstein, chisquare, z, jensenshannon.",
)
@click.option("--fail-on-drift", is_flag=True, help="Exit 1 when the dataset drifted (for pipelines).")
@click.option(
    "--report",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write an HTML report with per-column plots here.",
)
@click.option("--run", "run", metavar="RUN", help="Store the result (and the HTML report) on this run.")
@click.option("--name", default="drift", show_default=True, help="Name of the result on the run.")
@format_option
@click.pass_context
def drift_cmd(
    ctx: click.Context,
    reference: str,
    current: str,
    profile_name: str | None,
    columns: str | None,
    thresholds: tuple[str, ...],
    column_thresholds: tuple[str, ...],
    tests: tuple[str, ...],
    fail_on_drift: bool,
    report: Path | None,
    run: str | None,
    name: str,
    fmt: str,
) -> None:
    """Compare CURRENT with REFERENCE column by column (profile JSON files, data files, or runs).

    Numbers: Kolmogorov–Smirnov (p < 0.05) up to 1,000 values, else Wasserstein distance normed
    by the reference std (≥ 0.1). Categories: chi-square or a z-test (p < 0.05) up to 1,000
    values, else Jensen–Shannon distance (≥ 0.1). PSI alongside. The dataset drifts when at
    least half of the columns drifted.
    """
    from flightlog.data import render, resolve
    from flightlog.data.driftcheck import drift

    runs = _runs(ctx)
    ref = resolve.profile_from(reference, runs, name=profile_name)
    cur = resolve.profile_from(current, runs, name=profile_name)
    r = drift(
        ref,
        cur,
        columns=_columns(columns),
        thresholds=_floats(_pairs(thresholds, "--threshold"), "--threshold"),
        column_thresholds=_floats(_pairs(column_thresholds, "--column-threshold"), "--column-threshold"),
        tests=_pairs(tests, "--test"),
    )
    d = r.to_dict()
    html_path = report
    if run or report is not None:
        from flightlog.data.report import render_drift_html

        page = render_drift_html(r, ref, cur)
        if html_path is None:
            rid = runs.run_id(run or "")
            html_path = resolve.cache_dir(runs.home).parent / "reports" / rid / f"{name}.html"
        try:
            html_path.parent.mkdir(parents=True, exist_ok=True)
            html_path.write_text(page, encoding="utf-8")
        except OSError as exc:
            raise InvalidInput(f"cannot write the report {html_path}: {exc.strerror or exc}") from None
    if run:
        runs.log_evidence(run, "drift", name, d)
        if html_path is not None:
            runs.log_artifact(run, html_path, name=f"{name}.html", kind="report")
    if fmt == "json":
        _emit(d)
    else:
        render.show_drift(d)
        if html_path is not None:
            click.echo(f"report: {html_path}", err=True)
    if fail_on_drift and r.dataset_drift:
        ctx.exit(1)


@data_group.command("cohorts")
@click.argument("run")
@click.option("--baseline", required=True, metavar="RUN", help="The run (or eval JSON file) to compare with.")
@click.option("--name", default="eval", show_default=True, help="Name of the eval record on both runs.")
@click.option(
    "--threshold",
    default=0.05,
    show_default=True,
    type=float,
    help="Regression threshold: absolute drop for accuracy/precision/recall/F1/AUC, relative rise for MAE/RMSE.",
)
@click.option(
    "--min-count",
    default=30,
    show_default=True,
    type=int,
    help="Ignore cohorts with fewer rows on either side.",
)
@click.option("--fail-on-regression", is_flag=True, help="Exit 1 when a cohort regressed.")
@format_option
@click.pass_context
def cohorts_cmd(
    ctx: click.Context,
    run: str,
    baseline: str,
    name: str,
    threshold: float,
    min_count: int,
    fail_on_regression: bool,
    fmt: str,
) -> None:
    """Cohorts of RUN whose metrics regressed against the baseline, even when the aggregate improved."""
    from flightlog.data import render, resolve
    from flightlog.data.cohorts import compare_cohorts

    cur = resolve.eval_from(run, _runs(ctx), name=name)
    base = resolve.eval_from(baseline, _runs(ctx), name=name)
    d = compare_cohorts(cur, base, threshold=threshold, min_count=min_count)
    runs = _runs(ctx)
    label = {x: x if Path(x).expanduser().is_file() else runs.run_id(x) for x in (run, baseline)}
    d = {"run": label[run], "baseline": label[baseline], **d}
    if fmt == "json":
        _emit(d)
    else:
        render.show_cohorts(d)
    if fail_on_regression and d["regressions"]:
        ctx.exit(1)


def main(argv: list[str] | None = None) -> None:
    """Run the group on its own (``python -m flightlog.data.cli``), printing errors like the main CLI."""
    try:
        code = data_group.main(args=argv, prog_name="flightlog data", standalone_mode=False)
        sys.exit(code if isinstance(code, int) else 0)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except FlightlogError as exc:
        click.echo(f"error: {exc.message}", err=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
