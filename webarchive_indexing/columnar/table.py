"""Parquet tables in Common Crawl's schema (``columnar.schema``) from sorted CDX lines.

A table is a directory of Hive-style partitions, as Common Crawl publishes its own
(``s3://commoncrawl/cc-index/table/cc-main/warc/``)::

    DIR/crawl=CC-MAIN-2024-22/subset=warc/part-00000.parquet
    DIR/crawl=CC-MAIN-2024-22/subset=robotstxt/part-00000.parquet
    DIR/crawl=my-collection/subset=warc/part-00001.parquet

Each shard of a cluster (each sorted run of lines) becomes one file per partition it has
rows in, ``part-NNNNN.parquet`` with NNNNN the shard's number. Rows keep the order of the
lines, so ``url_surtkey`` never decreases within a file, across its row groups too: the
min/max statistics of consecutive row groups do not overlap, and a reader looking for one
host skips every row group but the few that can hold it. The files say so too (the
``url_surtkey`` column is declared as their sorting column).

    with ShardTable("table", shard=0, collection="my-collection") as table:
        for line in sorted_lines:
            table.add(line)
    table.stats              # {"rows": ..., "files": [...], "errors": [...]}

The tasks of a build write the table of each shard beside the shard (``Table``,
``tasks.write_shard``); ``export`` writes that of a whole cluster.
"""
import contextlib
import os
from collections import namedtuple

from .. import storage
from .schema import LineError, arrow_schema, row_values
from ..options import (PARQUET_COMPRESSIONS as COMPRESSIONS,
                       ROW_GROUP_ROWS_DEFAULT as ROW_GROUP_ROWS)

__all__ = ["ROW_GROUP_ROWS", "COMPRESSIONS", "ShardTable", "Table", "TableSummary",
           "default_collection", "part_name", "partition_name"]

# Rows turned into an Arrow batch at a time (a row group is a few batches)
BATCH_ROWS = 10_000
# Problems kept in a summary (the count goes on)
ERRORS_KEPT = 100
# Characters Hive escapes in a partition value (as %XX), and so does this
_HIVE_ESCAPED = frozenset('"#%\'*/:=?\\\x7f{[]^')


class Table(namedtuple("Table", "dir crawl row_group_rows compression")):
    """Where and how the tasks of a run write a table (picklable, for Spark's tasks): its
    directory, the crawl of rows that are not Common Crawl's, rows per row group, the
    Parquet compression."""

    @classmethod
    def of(cls, table_dir, crawl, options):
        """From ``options.TableOptions`` (or any options object with their attributes)."""
        return cls(table_dir, crawl, options.row_group_rows, options.parquet_compression)

    def shard(self, shard):
        """The ``ShardTable`` of shard number ``shard``."""
        return ShardTable(self.dir, shard, self.crawl, self.row_group_rows, self.compression)

    def write_chunks(self, shard, chunks):
        """Write the files of shard number ``shard`` from ``chunks`` (lists of its sorted
        lines); their stats."""
        with self.shard(shard) as rows:
            for chunk in chunks:
                for line in chunk:
                    rows.add(line)
        return rows.stats


def part_name(shard):
    return f"part-{shard:05d}.parquet"


def _hive_escape(value):
    return "".join(f"%{ord(c):02X}" if c in _HIVE_ESCAPED or c < " " else c for c in value)


def partition_name(crawl, subset):
    """The directory of one partition in the table's: ``crawl=.../subset=...`` (Hive-escaped,
    so that no value read from input makes a path outside the table)."""
    return f"crawl={_hive_escape(crawl)}/subset={_hive_escape(subset)}"


class _PartitionFile:
    """The rows of one partition of one shard, written to a Parquet file that appears only
    once complete, a row group at a time; a row group's rows are held meanwhile as Arrow
    batches (several times smaller than the rows as Python objects)."""

    def __init__(self, table_dir, name, row_group_rows, compression, stack):
        self.name, self.path = name, storage.join(table_dir, name)
        self.row_group_rows, self.compression = row_group_rows, compression
        self.stack = stack
        self.rows_held, self.batches, self.batched = [], [], 0
        self.writer = None
        self.rows = 0
        self.last_key = None

    def add(self, row):
        key = row[0]
        if self.last_key is not None and key < self.last_key:
            raise ValueError(f"lines not sorted by URL key: {key[:200]!r} after "
                             f"{self.last_key[:200]!r} (a table is made from a cluster's "
                             "sorted lines)")
        self.last_key = key
        self.rows_held.append(row)
        if len(self.rows_held) >= min(BATCH_ROWS, self.row_group_rows - self.batched):
            self._batch()
            if self.batched == self.row_group_rows:
                self.flush()

    def _batch(self):
        import pyarrow as pa
        schema = arrow_schema()
        # rows to columns; the partition's crawl and subset (last) stay out: they are paths
        columns = list(zip(*self.rows_held))[:len(schema)]
        self.batches.append(pa.RecordBatch.from_arrays(
            [pa.array(values, type=field.type) for values, field in zip(columns, schema)],
            schema=schema))
        self.batched += len(self.rows_held)
        self.rows_held = []

    def flush(self):
        """Write the rows held as one row group."""
        import pyarrow as pa
        import pyarrow.parquet as pq
        if self.rows_held:
            self._batch()
        if not self.batches:
            return
        schema = arrow_schema()
        if self.writer is None:
            self.fh = self.stack.enter_context(storage.open_atomic(self.path))
            self.writer = self.stack.enter_context(pq.ParquetWriter(
                self.fh, schema, compression=self.compression, write_page_index=True,
                sorting_columns=[pq.SortingColumn(0)]))
        self.writer.write_table(pa.Table.from_batches(self.batches, schema=schema),
                                row_group_size=self.row_group_rows)
        self.rows += self.batched
        self.batches, self.batched = [], 0

    def close(self):
        """Write the last row group and the file's footer; the file's size. (The file
        appears under its name when the stack ends without an error.)"""
        self.flush()
        self.writer.close()
        return self.fh.tell()


class ShardTable:
    """Writes the rows of one shard's sorted CDX lines into ``table_dir``: one Parquet file
    per partition (crawl, subset) the lines have rows in. Use as a context manager: the
    files appear when it closes without an error, and not at all after one.

    A line that cannot become a row (``columnar.schema.LineError``) is counted in ``stats``
    (``errors``: up to ``ERRORS_KEPT`` of ``{"line", "key", "reason"}``) and left out;
    lines out of order raise ValueError.
    """

    def __init__(self, table_dir, shard, collection, row_group_rows=ROW_GROUP_ROWS,
                 compression=COMPRESSIONS[0]):
        if row_group_rows < 1:
            raise ValueError(f"row_group_rows must be >= 1, got {row_group_rows}")
        if compression not in COMPRESSIONS:
            raise ValueError(f"unknown compression {compression!r}: choose one of "
                             f"{', '.join(COMPRESSIONS)}")
        self.table_dir, self.shard, self.collection = table_dir, shard, collection
        self.row_group_rows, self.compression = row_group_rows, compression
        self.partitions = {}
        self.lines = 0
        self.stats = {"rows": 0, "lines": 0, "files": [], "bytes": 0, "error_count": 0,
                      "errors": []}
        self._stack = contextlib.ExitStack()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if exc[0] is not None:
            self._stack.__exit__(*exc)  # nothing appears
            return False
        with self._stack:
            self.stats["bytes"] = sum(p.close() for p in self.partitions.values())
        self.stats["lines"] = self.lines
        self.stats["rows"] = sum(p.rows for p in self.partitions.values())
        # relative to the table's directory: the same once it is published elsewhere
        self.stats["files"] = sorted(p.name for p in self.partitions.values())
        return False

    def add(self, line):
        """Add one CDX line (str or UTF-8 bytes, with or without its newline)."""
        self.lines += 1
        if isinstance(line, bytes):
            line = line.decode("utf-8", "replace")
        try:
            row = row_values(line, self.collection)
        except LineError as exc:
            self._error(line, str(exc))
            return
        where = row[-2:]
        partition = self.partitions.get(where)
        if partition is None:
            partition = self.partitions[where] = _PartitionFile(
                self.table_dir, f"{partition_name(*where)}/{part_name(self.shard)}",
                self.row_group_rows, self.compression, self._stack)
        partition.add(row)

    def _error(self, line, reason):
        self.stats["error_count"] += 1
        if len(self.stats["errors"]) < ERRORS_KEPT:
            self.stats["errors"].append({"shard": self.shard, "line": self.lines,
                                         "key": line.split(" ", 1)[0][:200], "reason": reason})


class TableSummary:
    """What the tasks of a run wrote into a table (from each ``ShardTable``'s stats):
    ``shards``, ``lines``, ``rows``, ``files`` (relative to ``table_dir``), ``bytes``, the
    ``errors`` kept (and ``error_count``)."""

    def __init__(self, table_dir, shard_stats=()):
        self.table_dir = table_dir
        self.shards = self.lines = self.rows = self.bytes = self.error_count = 0
        self.files, self.errors = [], []
        for stats in shard_stats:
            self.add(stats)

    def add(self, stats):
        self.shards += 1
        for total in ("lines", "rows", "bytes", "error_count"):
            setattr(self, total, getattr(self, total) + stats[total])
        self.files += stats["files"]
        self.errors += stats["errors"][:ERRORS_KEPT - len(self.errors)]


def default_collection(location):
    """The collection name of a cluster's rows that are not Common Crawl's: the name of the
    directory that holds its ``cluster/`` directory (``out`` for ``out``, ``out/cluster``
    or ``out/cluster/cluster.idx``), else of the directory holding its index."""
    path = location.rstrip("/")
    names = (path if "://" in path else os.path.abspath(path)).split("/")
    if names[-1].endswith((".idx", ".summary")):
        names.pop()
    if names[-1:] == ["cluster"]:
        names.pop()
    return names[-1] if names and names[-1] else "default"
