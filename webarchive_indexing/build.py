"""``webarchive-index build``: index archives, sample split points, write and publish a
ZipNum cluster (the three steps, run by an engine), with a summary and an error report.

    summary = build(["warcs/"], "out", BuildOptions(shards=4, runner="local"))

The output directory holds what ``options.BUILD_OUTPUT`` lists (``--help`` and the
README show it too).

With ``options.parquet`` (``build --parquet DIR``), each shard's lines also become the
files of a Parquet table in Common Crawl's columnar schema (``columnar``), published in
DIR once the cluster is: written by the task that writes the shard, on engines that do
so (mrjob's runners, Spark), else from the shard once written (``Engine.write_tables``).

Inputs and the output may be local, on S3 (``s3://bucket/prefix``) or, on a Hadoop
cluster, on HDFS (``hdfs:///path``, ``s3a://``; through ``hadoop fs``). The steps run
as tasks of the engine ``options.runner`` (``engines``), which read archives and write
CDX files, splits and shards themselves, through ``storage``. Existing indexes among
the inputs (``indexinputs``) add their lines to the cluster: read and checked first
(``indexprep``), then sampled and written with the archives' CDX files. The cluster is published
only once it is complete (``publish``), so a failed build leaves the previous cluster
as it was.
"""
import contextlib
import json
import time
from dataclasses import dataclass, field

from . import lock, storage
from .engines import open_engine
from .indexprep import open_sources, prepare
from .inputs import cdx_name, dictionary_file, expand_named
from .options import BuildOptions, UsageError, check_indexing, check_table
from .progress import Progress
from .publish import check_table_place, publish_cluster, remove_leftovers, staged_table
from .steps import ClusterIncomplete
from .zipnum import shard_name


@dataclass
class Summary:
    out_dir: str
    archives: int = 0
    archives_skipped: int = 0
    indexes: int = 0
    index_lines: int = 0
    records: int = 0
    lines: int = 0
    input_bytes: int = 0
    shards: int = 0
    blocks: int = 0
    cluster_bytes: int = 0
    errors: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    seconds: float = 0.0
    published: bool = False
    cluster_lines: int = 0
    report: str = None  # errors.json, where written
    table: object = None  # with --parquet: the columnar.TableSummary of the table written

    @property
    def cluster_dir(self):
        return storage.join(self.out_dir, "cluster")

    def add(self, status):
        """Count in the status dict of one archive (``steps.index_archive``)."""
        self.archives += 1
        self.archives_skipped += status["skipped"]
        self.records += status["records"]
        self.lines += status["lines"]
        self.input_bytes += status["bytes"]
        self.errors += status["errors"]
        self.warnings += status["warnings"]


class BuildFailed(Exception):
    def __init__(self, message, summary):
        super().__init__(message)
        self.summary = summary


def _progress_count(out_dir, paths):
    """How progress counts the outputs written so far: only locally, where asking
    costs no request (S3) or process (HDFS) per path and poll."""
    if not storage.is_local(out_dir):
        return {}
    return {"count": lambda: sum(1 for p in paths if storage.exists(p)), "total": len(paths)}


def build(inputs, out_dir, options=None):
    """Index ``inputs`` and build a ZipNum cluster in ``out_dir`` as ``options`` (a
    ``BuildOptions``) say; return a Summary.

    Every engine gives the same bytes. Raises ``InputError`` before anything is written
    when an input names nothing or inputs cannot go in one cluster, ``lock.Busy`` when
    another build or copy writes into ``out_dir``, and BuildFailed (with the summary) when
    ``options.on_error`` is "fail" and any input had a problem, when no input gave a line,
    or when the cluster could not be completed; nothing is published then.
    ``options.root_index`` publishes ``cluster.root`` beside ``cluster.idx`` (see
    ``zipnum.root_index``). Index inputs go into the cluster beside the archives' lines;
    ``options.cdx_format`` (None: the index inputs' format, else cdxj) must be theirs, and
    ``options.legacy_prefix`` restricts legacy URL indexes to the keys starting with it.
    """
    options = options or BuildOptions()
    started = time.monotonic()
    out_dir = storage.abspath(out_dir)
    check_table(options, options.parquet, "--parquet DIR")
    if options.parquet:
        check_table_place(options.parquet, storage.join(out_dir, "cluster"),
                          storage.join(out_dir, "cdx"))
    summary = Summary(out_dir)
    found = expand_named(inputs, options.input_root)
    zstd_dictionary = dictionary_file(options.zstd_dictionary)
    sources, open_errors, cdx_format = open_sources(found.indexes, options.cdx_format,
                                                    options.legacy_prefix.encode("utf-8"))
    check_indexing(options.cdx_fields, cdx_format)
    summary.errors = [{"file": path, "offset": 0, "reason": "no such file or directory"}
                      for path in found.missing] + open_errors
    summary.warnings = list(found.warnings)
    with lock.hold(out_dir, "build"):
        remove_leftovers(out_dir)
        return _build(found.archives, sources, cdx_format, zstd_dictionary, out_dir, options,
                      summary, started)


def _build(archives, sources, cdx_format, zstd_dictionary, out_dir, options, summary, started):
    progress = Progress(enabled=options.progress)
    storage.write_atomic(storage.join(out_dir, "archives.txt"),
                         "".join(a.path + "\n" for a in archives).encode("utf-8"))
    index_files = []
    if sources:
        done = []
        progress.step(f"[1/3] reading {len(sources)} index inputs", count=lambda: len(done),
                      total=len(sources))
        index_files, errors, warnings, summary.index_lines = prepare(
            sources, out_dir, options.on_error, done)
        progress.done()
        summary.indexes = len(sources)
        summary.errors += errors
        summary.warnings += warnings
    shards = options.shards
    with contextlib.ExitStack() as stack:
        table = None
        if options.parquet:
            from .columnar import Table, default_collection
            table = Table.of(stack.enter_context(staged_table(options.parquet)),
                             options.crawl or default_collection(out_dir), options)
        engine = stack.enter_context(open_engine(options.runner, options))
        if table is not None and storage.is_local(table.dir) and not engine.tasks_here:
            raise UsageError(f"--parquet {options.parquet}: the tasks that write the table run "
                             "on other machines: give an s3:// or hdfs:// directory")
        cdx_dir = storage.join(out_dir, "cdx")
        expected = [storage.join(cdx_dir, cdx_name(a.name)) for a in archives]
        if archives or not sources:
            progress.step(f"[1/3] indexing {len(archives)} archives",
                          **_progress_count(out_dir, expected))
        statuses = engine.index(archives, cdx_dir, cdx_format, options.skip_existing,
                                options.cdx_fields, zstd_dictionary)
        progress.done()
        for status in statuses:
            summary.add(status)
        _write_report(summary)
        if summary.errors and options.on_error == "fail":
            summary.seconds = time.monotonic() - started
            raise BuildFailed(f"{len(summary.errors)} problems in the input; no cluster was built "
                              "(use --on-error skip to index what is readable)", summary)

        if not summary.lines and not summary.archives_skipped and not summary.index_lines:
            summary.seconds = time.monotonic() - started
            raise BuildFailed("no input gave a CDX line: there is nothing to publish (a "
                              "published cluster is left as it was)", summary)

        cdx_files = [s["cdx"] for s in statuses] + index_files
        progress.step(f"[2/3] sampling split points for {shards} shards")
        split_lines = engine.sample(cdx_files, shards, out_dir)
        progress.done()

        def write(cluster_dir):
            progress.step(f"[3/3] writing {shards} shards" + (" and their Parquet files"
                                                               if table else ""),
                          **_progress_count(out_dir, [storage.resolve(cluster_dir, shard_name(i))
                                                      for i in range(shards)]))
            try:
                engine.table = table
                written = engine.write_cluster(cdx_files, split_lines, shards,
                                               options.lines_per_block, cluster_dir)
            finally:
                progress.done()
            if table is not None:
                from .columnar import TableSummary
                left = [shard for shard, stats in written.items() if "table" not in stats]
                if left:
                    progress.step(f"[3/3] writing the Parquet files of {len(left)} shards")
                    try:
                        for shard, stats in engine.write_tables(cluster_dir, left).items():
                            written[shard]["table"] = stats
                    finally:
                        progress.done()
                summary.table = TableSummary(storage.abspath(options.parquet),
                                             [stats["table"] for stats in written.values()])
            return written

        try:
            totals = publish_cluster(out_dir, shards, write, options.root_index)
        except ClusterIncomplete as exc:
            raise BuildFailed(f"the cluster is incomplete, nothing was published: {exc}",
                              summary) from exc
    summary.published = True
    summary.shards, summary.blocks, summary.cluster_bytes = totals["shards"], totals["blocks"], totals["bytes"]
    summary.cluster_lines = totals["lines"]
    summary.seconds = time.monotonic() - started
    return summary


def _write_report(summary):
    path = storage.join(summary.out_dir, "errors.json")
    if summary.errors or summary.warnings:
        report = {"errors": summary.errors, "warnings": summary.warnings}
        storage.write_atomic(path, json.dumps(report, indent=1).encode("utf-8"))
        summary.report = path
    else:
        storage.remove(path)
