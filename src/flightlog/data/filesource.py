"""Files and directories as record-batch sources: Parquet, Arrow IPC, CSV / TSV, JSON Lines.

Each format is read in bounded pieces: Parquet by row group, CSV by blocks whose size bounds
Arrow's reader memory (about 40 blocks at its peak), JSON Lines by chunks of whole lines.
Text formats infer column types from their first block; when a later block disagrees, the
column is widened (integer → float → string) and :class:`~flightlog.data.sources.RestartScan`
asks the scan to start over.
"""

from __future__ import annotations

import io
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from flightlog.data.sources import BATCH_ROWS, RestartScan, Source
from flightlog.errors import InvalidInput

__all__ = ["FileSource", "FILE_FORMATS", "format_of", "dir_format"]

# Arrow's streaming CSV reader holds about 40 blocks' worth of buffers at its peak, so the
# block size is what bounds memory: 256 KiB per block for narrow files, more for wide ones
# (a block must hold enough rows to keep per-batch overhead small).
TEXT_BLOCK_BYTES = 256 << 10
_MAX_BLOCK_BYTES = 2 << 20
_BLOCK_BYTES_PER_COLUMN = 32 << 10
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


class FileSource(Source):
    """One file or a directory of files of one format, streamed in bounded batches."""

    def __init__(
        self,
        path: Path,
        fmt: str,
        *,
        columns: list[str] | None = None,
        batch_rows: int = BATCH_ROWS,
        block_bytes: int | None = None,
    ) -> None:
        self.path, self.fmt, self.columns = path, fmt, columns
        self.name = str(path)
        self.batch_rows = batch_rows
        self.block_bytes = block_bytes
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
                    yield from f.iter_batches(batch_size=self.batch_rows, row_groups=[i], columns=self.columns)

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

        read = pcsv.ReadOptions(block_size=self.block_bytes or self._csv_block(), use_threads=True)
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

    def _csv_block(self) -> int:
        """A block size scaled to the number of columns (counted on the header line)."""
        try:
            with pa.input_stream(str(self.path), compression="detect") as f:
                header = f.read(64 << 10).split(b"\n", 1)[0]
        except (OSError, pa.ArrowException):
            return TEXT_BLOCK_BYTES
        columns = header.count(b"\t" if self.fmt == "tsv" else b",") + 1
        return max(TEXT_BLOCK_BYTES, min(_MAX_BLOCK_BYTES, columns * _BLOCK_BYTES_PER_COLUMN))

    def _widen_csv(self, exc: Exception, names: list[str], schema: pa.Schema) -> None:
        m = re.search(r"CSV column #(\d+): CSV conversion error to (\S+?): invalid value '(.*)'", str(exc))
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
                block = stream.read(self.block_bytes or TEXT_BLOCK_BYTES * 4)
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
                raise InvalidInput(f"{self.path}:{line_no + i}: expected a JSON object, got {type(obj).__name__}")
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


def format_of(path: Path) -> str | None:
    name = path.name.lower()
    for ext in sorted(FILE_FORMATS, key=len, reverse=True):
        if name.endswith(ext):
            return FILE_FORMATS[ext]
    return None


def dir_format(path: Path) -> str:
    found: Counter[str] = Counter()
    for p in path.rglob("*"):
        if p.is_file() and not p.name.startswith((".", "_")):
            fmt = format_of(p)
            if fmt:
                found[fmt] += 1
    if not found:
        raise InvalidInput(
            f"no data files in directory {path}: expected files ending in " + ", ".join(sorted(FILE_FORMATS))
        )
    return found.most_common(1)[0][0]
