"""Parquet tables in Common Crawl's schema (``ccschema``) from sorted CDX lines.

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

``export_cluster`` writes the table of a whole cluster (ours, or one Common Crawl
publishes), reading its shards block by block in index order.
"""
import contextlib
import os
import time

from . import storage
from .ccschema import COLUMN_NAMES, LineError, arrow_schema, row_values

__all__ = ["ROW_GROUP_ROWS", "COMPRESSIONS", "ShardTable", "export_cluster", "part_name",
           "partition_dir", "ExportSummary"]

# Rows per row group: ~5-10 MB of Common Crawl's rows compressed, a unit a remote reader
# (Athena, DuckDB over HTTP) fetches in one request, and fine enough that a one-host query
# reads a few row groups of a file, not the file (Spark writes 128 MB ones by default).
ROW_GROUP_ROWS = 100_000
# zstd: smaller and faster than gzip (Common Crawl's choice); DuckDB, Spark, Athena,
# pyarrow and Polars all read each of these.
COMPRESSIONS = ("zstd", "gzip", "snappy")
DEFAULT_COMPRESSION = "zstd"
# Rows turned into an Arrow batch at a time (a row group is a few batches)
BATCH_ROWS = 10_000
# Blocks fetched per read of a cluster's shard when exporting it all (~10-20 MB of Common
# Crawl's blocks); a lookup reads at most 10
EXPORT_BLOCKS_PER_READ = 64
# Problems kept in a summary (the count goes on)
ERRORS_KEPT = 100
# Characters Hive escapes in a partition value (as %XX), and so does this
_HIVE_ESCAPED = frozenset('"#%\'*/:=?\\\x7f{[]^')


def part_name(shard):
    return f"part-{shard:05d}.parquet"


def _hive_escape(value):
    return "".join(f"%{ord(c):02X}" if c in _HIVE_ESCAPED or c < " " else c for c in value)


def partition_dir(table_dir, crawl, subset):
    """The directory of one partition: ``table_dir/crawl=.../subset=...`` (Hive-escaped, so
    that no value read from input makes a path outside ``table_dir``)."""
    return storage.join(table_dir, f"crawl={_hive_escape(crawl)}", f"subset={_hive_escape(subset)}")


class _PartitionFile:
    """The rows of one partition of one shard, written to a Parquet file that appears only
    once complete, a row group at a time; a row group's rows are held meanwhile as Arrow
    batches (several times smaller than the rows as Python objects)."""

    def __init__(self, path, row_group_rows, compression, stack):
        self.path, self.row_group_rows, self.compression = path, row_group_rows, compression
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
            fh = self.stack.enter_context(storage.open_atomic(self.path))
            self.writer = self.stack.enter_context(pq.ParquetWriter(
                fh, schema, compression=self.compression, write_page_index=True,
                sorting_columns=[pq.SortingColumn(0)]))
        self.writer.write_table(pa.Table.from_batches(self.batches, schema=schema),
                                row_group_size=self.row_group_rows)
        self.rows += self.batched
        self.batches, self.batched = [], 0


class ShardTable:
    """Writes the rows of one shard's sorted CDX lines into ``table_dir``: one Parquet file
    per partition (crawl, subset) the lines have rows in. Use as a context manager: the
    files appear when it closes without an error, and not at all after one.

    A line that cannot become a row (``ccschema.LineError``) is counted in ``stats``
    (``errors``: up to ``ERRORS_KEPT`` of ``{"line", "key", "reason"}``) and left out;
    lines out of order raise ValueError.
    """

    def __init__(self, table_dir, shard, collection, row_group_rows=ROW_GROUP_ROWS,
                 compression=DEFAULT_COMPRESSION):
        if row_group_rows < 1:
            raise ValueError(f"row_group_rows must be >= 1, got {row_group_rows}")
        if compression not in COMPRESSIONS:
            raise ValueError(f"unknown compression {compression!r}: choose one of "
                             f"{', '.join(COMPRESSIONS)}")
        self.table_dir, self.shard, self.collection = table_dir, shard, collection
        self.row_group_rows, self.compression = row_group_rows, compression
        self.partitions = {}
        self.lines = 0
        self.stats = {"rows": 0, "lines": 0, "files": [], "error_count": 0, "errors": []}
        self._stack = contextlib.ExitStack()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if exc[0] is None:
            try:
                for partition in self.partitions.values():
                    partition.flush()
            except BaseException as failure:
                self._stack.__exit__(type(failure), failure, failure.__traceback__)
                raise
        self._stack.__exit__(*exc)
        if exc[0] is None:
            self.stats["lines"] = self.lines
            self.stats["rows"] = sum(p.rows for p in self.partitions.values())
            self.stats["files"] = sorted(p.path for p in self.partitions.values())
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
            path = storage.join(partition_dir(self.table_dir, *where), part_name(self.shard))
            partition = self.partitions[where] = _PartitionFile(
                path, self.row_group_rows, self.compression, self._stack)
        partition.add(row)

    def _error(self, line, reason):
        self.stats["error_count"] += 1
        if len(self.stats["errors"]) < ERRORS_KEPT:
            self.stats["errors"].append({"shard": self.shard, "line": self.lines,
                                         "key": line.split(" ", 1)[0][:200], "reason": reason})


class ExportSummary:
    """What an export wrote: ``shards``, ``lines``, ``rows``, ``files``, ``bytes``, the
    ``errors`` kept (and ``error_count``), ``seconds``."""

    def __init__(self, out_dir):
        self.out_dir = out_dir
        self.shards = self.lines = self.rows = self.bytes = self.error_count = 0
        self.files, self.errors = [], []
        self.seconds = 0.0

    def add(self, stats):
        self.shards += 1
        self.lines += stats["lines"]
        self.rows += stats["rows"]
        self.files += stats["files"]
        self.error_count += stats["error_count"]
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


def export_cluster(location, out_dir, collection=None, row_group_rows=ROW_GROUP_ROWS,
                   compression=DEFAULT_COMPRESSION, progress=None):
    """Write the table of the cluster at ``location`` (as ``query.open_cluster`` takes it)
    into ``out_dir``; return an ``ExportSummary``.

    A local table is written into a fresh directory beside ``out_dir`` and put in its place
    once complete (a table already there stays until then); on S3 ``out_dir`` must hold
    nothing yet, and what a failed export wrote there is removed. ``collection`` is the crawl of rows that are not Common Crawl's (default:
    ``default_collection(location)``). ``progress(lines)`` is called now and then.
    """
    from .pipeline import _swap_in
    from .query import open_cluster
    started = time.monotonic()
    cluster = open_cluster(location, EXPORT_BLOCKS_PER_READ)
    collection = collection or default_collection(location)
    out_dir = storage.abspath(out_dir)
    remote = storage.is_remote(out_dir)
    if remote:
        if next(iter(storage.list_files(out_dir)), None) is not None:
            raise FileExistsError(f"{out_dir} is not empty: export a table to a new prefix "
                                  "(S3 has no rename with which to replace one whole)")
        building = out_dir
    else:
        parent = os.path.dirname(out_dir)
        os.makedirs(parent, exist_ok=True)
        building = storage.make_temp_dir(parent, ".table-build-")
    summary = ExportSummary(out_dir)
    done = False
    try:
        for shard, (_, lines) in enumerate(cluster.shards()):
            with ShardTable(building, shard, collection, row_group_rows, compression) as table:
                for count, line in enumerate(lines, 1):
                    table.add(line)
                    if progress is not None and not count % 10000:
                        progress(summary.lines + count)
            summary.add(table.stats)
            if progress is not None:
                progress(summary.lines)
        summary.bytes = sum(storage.size(path) for path in summary.files)
        if not remote:
            _swap_in(building, out_dir)
            summary.files = [out_dir + path[len(building):] for path in summary.files]
        done = True
    finally:
        if not done:  # on S3 too: the prefix was empty
            storage.remove_tree(building)
    summary.seconds = time.monotonic() - started
    return summary
