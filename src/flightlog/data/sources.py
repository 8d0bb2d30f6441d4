"""Anything tabular → a re-iterable stream of Arrow record batches.

Why one abstraction: profiles and validation gates must work the same way on a pandas frame
in a notebook and on a 300 GB CSV in a pipeline. Every input becomes a :class:`Source` whose
``batches()`` yields ``pyarrow.RecordBatch`` objects of bounded size, so memory stays flat
however large the file is, and whose ``batches()`` can be called again (validation makes a
second pass to show offending examples of duplicate values).

Text formats infer column types from their first block. When a later block disagrees (an
integer column that shows ``1.5`` on row 9,000,000), the source widens that column's type
(integer → float → string) and raises :class:`RestartScan`; :func:`scan` then starts over with
the wider type instead of failing.
"""

from __future__ import annotations

import io
import os
import re
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa

from flightlog.errors import InvalidInput

__all__ = [
    "Source",
    "TableSource",
    "FileSource",
    "RestartScan",
    "KindConflict",
    "open_source",
    "scan",
    "column_kind",
    "type_name",
    "FILE_FORMATS",
]

BATCH_ROWS = 1_000_000
TEXT_BLOCK_BYTES = 1 << 20
_ROW_GROUP_BYTES = 512 << 20

FILE_FORMATS: dict[str, str] = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".csv.gz": "csv",
    ".tsv.gz": "tsv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".jsonl.gz": "jsonl",
    ".arrow": "ipc",
    ".feather": "ipc",
    ".ipc": "ipc",
}

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
    if pa.types.is_dictionary(t):
        return column_kind(t.value_type) if not pa.types.is_string(t.value_type) else "categorical"
    if pa.types.is_boolean(t):
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


class Source:
    """A named, re-iterable stream of record batches."""

    name: str = "<data>"
    #: Total size in bytes when known (files), for progress and for reports.
    size_bytes: int | None = None

    def batches(self) -> Iterator[pa.RecordBatch]:
        raise NotImplementedError

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


class FileSource(Source):
    """One file or a directory of files of one format, streamed in bounded batches."""

    def __init__(
        self,
        path: Path,
        fmt: str,
        *,
        columns: list[str] | None = None,
        batch_rows: int = BATCH_ROWS,
        block_bytes: int = TEXT_BLOCK_BYTES,
    ) -> None:
        self.path, self.fmt, self.columns = path, fmt, columns
        self.name = str(path)
        self.batch_rows, self.block_bytes = batch_rows, block_bytes
        self.size_bytes = _size_of(path)
        self._forced: dict[str, pa.DataType] = {}
        self._stream: Any = None

    def force_type(self, column: str, t: pa.DataType) -> bool:
        if self.fmt in ("csv", "tsv", "jsonl"):
            self._forced[column] = t
            return True
        return False

    def position(self) -> int | None:
        stream = self._stream
        try:
            return int(stream.tell()) if stream is not None else None
        except (OSError, ValueError, pa.ArrowException):
            return None

    def batches(self) -> Iterator[pa.RecordBatch]:
        if self.path.is_dir():
            yield from self._dataset_batches()
        elif self.fmt in ("csv", "tsv"):
            yield from self._csv_batches()
        elif self.fmt == "jsonl":
            yield from self._json_batches()
        elif self.fmt == "parquet":
            yield from self._parquet_batches()
        else:
            yield from self._ipc_batches()

    # -- formats -----------------------------------------------------------------------------

    def _parquet_batches(self) -> Iterator[pa.RecordBatch]:
        import pyarrow.parquet as pq

        with pq.ParquetFile(self.path) as f:
            meta = f.metadata
            for i in range(meta.num_row_groups):
                group = meta.row_group(i)
                if group.total_byte_size <= _ROW_GROUP_BYTES:
                    # Whole row groups decode several times faster than iter_batches.
                    table = f.read_row_group(i, columns=self.columns)
                    yield from table.to_batches(max_chunksize=self.batch_rows)
                else:
                    yield from f.iter_batches(
                        batch_size=self.batch_rows, row_groups=[i], columns=self.columns
                    )

    def _ipc_batches(self) -> Iterator[pa.RecordBatch]:
        with pa.memory_map(str(self.path)) as mm:
            try:
                reader: Any = pa.ipc.open_file(mm)
                batches = (reader.get_batch(i) for i in range(reader.num_record_batches))
            except pa.ArrowInvalid:
                mm.seek(0)
                batches = iter(pa.ipc.open_stream(mm))
            for b in batches:
                yield b.select(self.columns) if self.columns else b

    def _dataset_batches(self) -> Iterator[pa.RecordBatch]:
        import pyarrow.dataset as ds

        fmt: Any
        if self.fmt in ("csv", "tsv"):
            fmt = ds.CsvFileFormat(parse_options=_csv_parse(self.fmt))
        elif self.fmt == "jsonl":
            fmt = ds.JsonFileFormat()
        else:
            fmt = "ipc" if self.fmt == "ipc" else "parquet"
        dataset = ds.dataset(str(self.path), format=fmt, exclude_invalid_files=True)
        yield from dataset.to_batches(columns=self.columns, batch_size=self.batch_rows)

    def _csv_batches(self) -> Iterator[pa.RecordBatch]:
        import pyarrow.csv as pcsv

        read = pcsv.ReadOptions(block_size=self.block_bytes, use_threads=True)
        convert = pcsv.ConvertOptions(
            column_types=dict(self._forced),
            strings_can_be_null=True,
            include_columns=self.columns or [],
        )
        stream = pa.input_stream(str(self.path), compression="detect")
        self._stream = stream
        try:
            reader = pcsv.open_csv(
                stream,
                read_options=read,
                parse_options=_csv_parse(self.fmt),
                convert_options=convert,
            )
            names = reader.schema.names
            while True:
                try:
                    batch = reader.read_next_batch()
                except StopIteration:
                    return
                except pa.ArrowInvalid as exc:
                    self._widen_csv(exc, names, reader.schema)
                    raise RestartScan(str(exc)) from None
                yield batch
        except pa.ArrowInvalid as exc:
            raise InvalidInput(f"cannot read {self.path} as {self.fmt.upper()}: {exc}") from None
        finally:
            self._stream = None
            stream.close()

    def _widen_csv(self, exc: Exception, names: list[str], schema: pa.Schema) -> None:
        m = re.search(
            r"CSV column #(\d+): CSV conversion error to (\S+?): invalid value '(.*)'", str(exc)
        )
        if not m:
            raise InvalidInput(f"cannot read {self.path} as {self.fmt.upper()}: {exc}") from None
        name = names[int(m.group(1))]
        current = self._forced.get(name) or schema.field(name).type
        self._forced[name] = _wider(current, m.group(3))

    def _json_batches(self) -> Iterator[pa.RecordBatch]:
        """JSON Lines in chunks of whole lines, each parsed on its own.

        pyarrow's streaming JSON reader fixes the set of fields after its first block and fails
        on a field that first appears later; parsing independent chunks lets every chunk infer
        its own fields, and the profile treats a column missing from a chunk as null there.
        """
        import pyarrow.json as pjson

        stream = pa.input_stream(str(self.path), compression="detect")
        self._stream = stream
        try:
            carry = b""
            line_no = 1
            while True:
                block = stream.read(self.block_bytes)
                if not block:
                    chunk, carry = carry, b""
                else:
                    data = carry + block
                    cut = data.rfind(b"\n")
                    if cut < 0:
                        carry = data
                        continue
                    chunk, carry = data[: cut + 1], data[cut + 1 :]
                if chunk.strip():
                    yield from self._parse_json_chunk(pjson, chunk, line_no)
                    line_no += chunk.count(b"\n")
                if not block:
                    return
        finally:
            self._stream = None
            stream.close()

    def _parse_json_chunk(self, pjson: Any, chunk: bytes, line_no: int) -> Iterator[pa.RecordBatch]:
        forced = {k: t for k, t in self._forced.items() if not pa.types.is_string(t)}
        parse = pjson.ParseOptions(
            explicit_schema=pa.schema(list(forced.items())) if forced else None,
            unexpected_field_behavior="infer",
        )
        strings = [k for k, t in self._forced.items() if pa.types.is_string(t)]
        table = None
        if not strings:
            try:
                table = pjson.read_json(
                    io.BytesIO(chunk),
                    read_options=pjson.ReadOptions(use_threads=True),
                    parse_options=parse,
                )
            except pa.ArrowInvalid:
                table = None
        if table is None:
            table = self._python_json_chunk(chunk, line_no)
        if self.columns:
            table = table.select([c for c in self.columns if c in table.column_names])
        yield from table.to_batches(max_chunksize=self.batch_rows)

    def _python_json_chunk(self, chunk: bytes, line_no: int) -> pa.Table:
        """The slow path for chunks Arrow cannot read: fields that mix numbers and strings.

        Such fields are read as strings from the first row (the scan restarts once when a
        field first shows its mix), so a column keeps one kind from start to end.
        """
        import json

        rows: list[dict[str, Any]] = []
        kinds: dict[str, set[str]] = {}
        for i, line in enumerate(chunk.split(b"\n")):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError as exc:
                raise InvalidInput(
                    f"{self.path}:{line_no + i}: not valid JSON ({exc}); every line of a JSON Lines "
                    "file must be one JSON object"
                ) from None
            if not isinstance(obj, dict):
                raise InvalidInput(
                    f"{self.path}:{line_no + i}: expected a JSON object, got {type(obj).__name__}"
                )
            for k, v in obj.items():
                if v is not None:
                    kinds.setdefault(k, set()).add(_json_kind(v))
            rows.append(obj)
        widened = False
        for k, ks in kinds.items():
            if len(ks) > 1 and not pa.types.is_string(self._forced.get(k, pa.null())):
                self._forced[k] = pa.string()
                widened = True
        if widened:
            raise RestartScan("a JSON field mixes kinds of values; reading it as strings")
        strings = {k for k, t in self._forced.items() if pa.types.is_string(t)}
        for obj in rows:
            for k in strings & obj.keys():
                v = obj[k]
                if v is not None and not isinstance(v, str):
                    obj[k] = json.dumps(v)
        names = list(dict.fromkeys(k for obj in rows for k in obj))
        try:
            return pa.table({k: [obj.get(k) for obj in rows] for k in names})
        except (pa.ArrowException, TypeError, ValueError) as exc:
            raise InvalidInput(f"cannot read {self.path} near line {line_no}: {exc}") from None


def _json_kind(v: Any) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int | float):
        return "number"
    return type(v).__name__


def _csv_parse(fmt: str) -> Any:
    import pyarrow.csv as pcsv

    return pcsv.ParseOptions(delimiter="\t" if fmt == "tsv" else ",")


def _wider(current: pa.DataType, value: str) -> pa.DataType:
    """The next type up that can hold ``value``: integer/null → float → string."""
    if pa.types.is_integer(current) or pa.types.is_null(current):
        try:
            float(value)
            return pa.float64()
        except ValueError:
            pass
    return pa.string()


def _size_of(path: Path) -> int | None:
    try:
        if path.is_dir():
            return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
        return path.stat().st_size
    except OSError:
        return None


def _format_of(path: Path) -> str | None:
    name = path.name.lower()
    for ext in sorted(FILE_FORMATS, key=len, reverse=True):
        if name.endswith(ext):
            return FILE_FORMATS[ext]
    return None


def _dir_format(path: Path) -> str:
    found: Counter[str] = Counter()
    for p in path.rglob("*"):
        if p.is_file() and not p.name.startswith((".", "_")):
            fmt = _format_of(p)
            if fmt:
                found[fmt] += 1
    if not found:
        raise InvalidInput(
            f"no data files in directory {path}: expected files ending in "
            + ", ".join(sorted(FILE_FORMATS))
        )
    return found.most_common(1)[0][0]


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
        fmt = _dir_format(path) if path.is_dir() else _format_of(path)
        if fmt is None:
            raise InvalidInput(
                f"cannot tell the format of {path} from its name: use one of "
                + ", ".join(sorted(FILE_FORMATS))
            )
        src = FileSource(path.resolve(), fmt, columns=columns, batch_rows=batch_rows)
        if name:
            src.name = name
        return src
    table, label = _to_table(obj)
    if columns:
        missing = [c for c in columns if c not in table.column_names]
        if missing:
            raise InvalidInput(
                f"no column {missing[0]!r} in the data; columns: {table.column_names}"
            )
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
            arr = pa.array(
                series.map(lambda v: None if v is None or v != v else str(v)), pa.string()
            )
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
                raise InvalidInput(
                    f"{source.name}: {exc}; cast the column to one type before profiling"
                ) from None
    raise InvalidInput(f"{source.name}: column types kept changing; give explicit types")
