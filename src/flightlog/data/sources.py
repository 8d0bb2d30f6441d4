"""Anything tabular → a re-iterable stream of Arrow record batches.

Why one abstraction: profiles and validation gates must work the same way on a pandas frame
in a notebook and on a 300 GB CSV in a pipeline. Every input becomes a :class:`Source` whose
``batches()`` yields ``pyarrow.RecordBatch`` objects of bounded size, so memory stays flat
however large the file is, and whose ``batches()`` can be called again (validation makes a
second pass to show offending examples of duplicate values).

Files and directories are read by :mod:`flightlog.data.filesource`. Text formats infer column
types from their first block; when a later block disagrees (an integer column that shows
``1.5`` on row 9,000,000), the source widens that column's type (integer → float → string) and
raises :class:`RestartScan`; :func:`scan` then starts over with the wider type instead of
failing.
"""

from __future__ import annotations

import abc
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa

from flightlog.errors import InvalidInput

__all__ = [
    "Source",
    "TableSource",
    "RestartScan",
    "KindConflict",
    "open_source",
    "scan",
    "column_kind",
    "type_name",
    "BATCH_ROWS",
]

BATCH_ROWS = 1_000_000
_MAX_RESTARTS = 64


class RestartScan(Exception):
    """A text source widened a column's type; the scan must start again from the first row."""


class KindConflict(Exception):
    """A column changed kind (e.g. numbers → strings) between batches of a source."""

    def __init__(self, column: str, old: str, new: str) -> None:
        super().__init__(f"column {column!r} changed type from {old} to {new}")
        self.column, self.old, self.new = column, old, new


def column_kind(t: pa.DataType) -> str:
    """numeric | categorical | datetime | other — decides which statistics a column gets."""
    if pa.types.is_dictionary(t) or pa.types.is_boolean(t):  # pandas categoricals, flags
        return "categorical"
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "numeric"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "categorical"
    if pa.types.is_timestamp(t) or pa.types.is_date(t):
        return "datetime"
    if pa.types.is_null(t):
        return "null"
    return "other"


def type_name(t: pa.DataType) -> str:
    """A stable name for a column type: string flavours and dictionaries read as their values."""
    if pa.types.is_dictionary(t):
        return type_name(t.value_type)
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    if pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return "binary"
    return str(t)


class Source(abc.ABC):
    """A named, re-iterable stream of record batches."""

    name: str = "<data>"
    #: Total size in bytes when known (files), for progress and for reports.
    size_bytes: int | None = None

    @abc.abstractmethod
    def batches(self) -> Iterator[pa.RecordBatch]:
        """Implemented by each subclass."""

    def force_type(self, column: str, t: pa.DataType) -> bool:
        """Read ``column`` as ``t`` from now on; False when this source cannot do that."""
        return False

    def position(self) -> int | None:
        """Bytes consumed so far (for progress), when the source can tell."""
        return None


class TableSource(Source):
    """An in-memory Arrow table (what frames and arrays are converted into)."""

    def __init__(self, table: pa.Table, name: str, batch_rows: int = BATCH_ROWS) -> None:
        self.table, self.name, self.batch_rows = table, name, batch_rows
        self.size_bytes = None
        self._forced: dict[str, pa.DataType] = {}

    def batches(self) -> Iterator[pa.RecordBatch]:
        table = self.table
        for col, t in self._forced.items():
            i = table.schema.get_field_index(col)
            table = table.set_column(i, col, table.column(col).cast(t))
        yield from table.to_batches(max_chunksize=self.batch_rows)

    def force_type(self, column: str, t: pa.DataType) -> bool:
        if column in self.table.column_names and pa.types.is_string(t):
            self._forced[column] = t
            return True
        return False


def open_source(
    obj: Any,
    *,
    columns: list[str] | None = None,
    batch_rows: int = BATCH_ROWS,
    name: str | None = None,
) -> Source:
    """Wrap a frame, table, array, file or directory as a :class:`Source`.

    Accepted: pandas and polars data frames (and polars lazy frames), pyarrow tables and record
    batches, numpy arrays (1-D → one column ``value``; 2-D → columns ``"0"``, ``"1"``, …;
    structured → its fields), and paths to CSV / TSV / Parquet / JSON Lines / Arrow IPC files or
    to a directory of them.
    """
    if isinstance(obj, Source):
        return obj
    if isinstance(obj, str | os.PathLike):
        path = Path(obj).expanduser()
        if not path.exists():
            raise InvalidInput(f"no such file or directory: {path}")
        from flightlog.data.filesource import FILE_FORMATS, FileSource, dir_format, format_of

        fmt = dir_format(path) if path.is_dir() else format_of(path)
        if fmt is None:
            raise InvalidInput(
                f"cannot tell the format of {path} from its name: use one of " + ", ".join(sorted(FILE_FORMATS))
            )
        src = FileSource(path.resolve(), fmt, columns=columns, batch_rows=batch_rows)
        if name:
            src.name = name
        return src
    table, label = _to_table(obj)
    if columns:
        missing = [c for c in columns if c not in table.column_names]
        if missing:
            raise InvalidInput(f"no column {missing[0]!r} in the data; columns: {table.column_names}")
        table = table.select(columns)
    return TableSource(table, name or label, batch_rows)


def _to_table(obj: Any) -> tuple[pa.Table, str]:
    if isinstance(obj, pa.Table):
        return obj, "<pyarrow.Table>"
    if isinstance(obj, pa.RecordBatch):
        return pa.Table.from_batches([obj]), "<pyarrow.RecordBatch>"
    if isinstance(obj, np.ndarray):
        return _numpy_table(obj), "<numpy.ndarray>"
    mod = type(obj).__module__.split(".")[0]
    if mod == "pandas":
        return _pandas_table(obj), "<pandas.DataFrame>"
    if mod == "polars":
        frame = obj.collect() if hasattr(obj, "collect") and not hasattr(obj, "to_arrow") else obj
        if hasattr(frame, "to_frame") and not hasattr(frame, "columns"):
            frame = frame.to_frame()
        return frame.to_arrow(), "<polars.DataFrame>"
    if isinstance(obj, dict):
        try:
            return pa.table(obj), "<dict>"
        except (pa.ArrowException, TypeError, ValueError) as exc:
            raise InvalidInput(f"cannot build a table from the dict: {exc}") from None
    raise InvalidInput(
        f"cannot profile a {type(obj).__name__}: pass a pandas or polars data frame, a pyarrow "
        "table, a numpy array, a dict of columns, or the path of a CSV / Parquet / JSON Lines file"
    )


def _numpy_table(arr: np.ndarray) -> pa.Table:
    if arr.dtype.names:
        return pa.table({n: np.ascontiguousarray(arr[n]) for n in arr.dtype.names})
    if arr.ndim == 1:
        return pa.table({"value": arr})
    if arr.ndim == 2:
        return pa.table({str(i): np.ascontiguousarray(arr[:, i]) for i in range(arr.shape[1])})
    raise InvalidInput(f"cannot profile a {arr.ndim}-dimensional array: pass 1-D or 2-D data")


def _pandas_table(df: Any) -> pa.Table:
    if hasattr(df, "to_frame") and not hasattr(df, "columns"):
        df = df.to_frame()
    arrays, names = [], []
    for col in df.columns:
        series = df[col]
        try:
            arr = pa.array(series, from_pandas=True)
        except (pa.ArrowException, TypeError, ValueError):
            # Mixed object columns (numbers and strings): profile them as strings.
            arr = pa.array(series.map(lambda v: None if v is None or v != v else str(v)), pa.string())
        arrays.append(arr)
        names.append(str(col))
    return pa.Table.from_arrays(arrays, names=names)


T = TypeVar("T")


def scan(
    source: Source,
    start: Callable[[], T],
    feed: Callable[[T, pa.RecordBatch], None],
    *,
    on_progress: Callable[[int], None] | None = None,
) -> T:
    """Feed every batch of ``source`` to a fresh state from ``start()``; restart on widening.

    ``feed`` may raise :class:`KindConflict` (a column's kind changed between batches); the
    column is then read as strings from the start, when the source can do that.
    """
    for _ in range(_MAX_RESTARTS):
        state = start()
        try:
            for batch in source.batches():
                feed(state, batch)
                if on_progress is not None:
                    on_progress(batch.num_rows)
            return state
        except RestartScan:
            continue
        except KindConflict as exc:
            if not source.force_type(exc.column, pa.string()):
                raise InvalidInput(f"{source.name}: {exc}; cast the column to one type before profiling") from None
    raise InvalidInput(f"{source.name}: column types kept changing; give explicit types")
