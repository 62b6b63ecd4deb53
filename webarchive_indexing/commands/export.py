"""``webarchive-index export``: every line of a ZipNum cluster, in order, as another index:
one flat file, or a columnar table.

    from webarchive_indexing.commands.export import export
    from webarchive_indexing.options import ExportOptions
    export(ExportOptions(location="out", output="all.cdxj.gz"))   # an Exported
    export(ExportOptions(location="out", output="table", format="parquet"))

The cluster (a build's output directory, its ``cluster/`` directory or a ``cluster.idx``;
ours or one Common Crawl publishes; local, ``s3://`` or ``http(s)://``) is read shard by
shard as ``inputs.indexes`` reads a cluster input, a chunk of lines at a time, so nothing
is held in memory. ``FORMATS`` maps each ``--format`` to the function that writes it (a
new format is one more entry, and its name in ``options.EXPORT_FORMATS``):

* ``cdx`` writes the lines as the cluster holds them (CDXJ, or CDX11/CDX9 under their
  `` CDX`` header line, as a flat CDX file of those formats starts) into one file (local
  or ``s3://``; gzipped when its name ends in ``.gz``), or to stdout;
* ``parquet`` writes the table of the cluster in Common Crawl's columnar schema
  (``columnar``): each shard's lines into that shard's files, as ``build --parquet``
  writes them, into a directory published whole, one writer at a time
  (``publish.staged_table``).

What an export writes appears only once complete, and not at all when the cluster has a
malformed line or is out of order: an export is a sorted index, or nothing. With access
rules (``--acl``, ``--embargo``: a public release), only the captures they allow go out,
neither excluded nor blocked ones (``Withheld``).
"""
import gzip
import time
from dataclasses import dataclass

from .. import storage
from ..inputs.indexes import ZipNumCluster
from ..zipnum.places import cluster_index
from ..inputs.discovery import check_output
from ..options import UsageError, check_table
from ..api.access import permitting
from ..util.progress import Progress
from ..build.publish import check_table_place, staged_table
from ..cdx.cdxline import header_line
from ..columnar.table import Table, TableSummary, default_collection
from ..zipnum.layout import shard_number
from ..zipnum.reader import _check_not_an_archive


class ExportFailed(Exception):
    pass


@dataclass
class Exported:
    """What an export wrote; ``table``: the ``table.TableSummary`` of a table."""
    lines: int
    format: str
    output: str
    seconds: float
    table: object = None
    withheld: dict = None


def _check(source):
    """ExportFailed if what was read of ``source`` was not a sorted index."""
    if source.malformed:
        first = source.problems[0]
        raise ExportFailed(f"{source.malformed} malformed lines in the cluster, the first in "
                           f"{first['file']} line {first['line']}: {first['reason']}")
    if source.unsorted:
        raise ExportFailed(f"the cluster is not sorted: {source.unsorted['file']} line "
                           f"{source.unsorted['line']} sorts before the line above it")


def write_cdx(source, options, stdout):
    """The ``cdx`` format: the cluster's own lines, after the header line of their format,
    into ``options.output`` (None: ``stdout``, a binary stream)."""

    def write(out):
        out.write(header_line(source.format).encode("utf-8"))
        source.write(out)
        _check(source)

    if options.output is None:
        write(stdout)
        return None
    with storage.open_atomic(options.output) as raw:
        if options.output.endswith(".gz"):
            with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6, mtime=0) as out:
                write(out)
        else:
            write(raw)
    return None


def _shard_numbers(names):
    """The number of each shard, for the names of its table files: the NNNNN of
    ``cdx-NNNNN.gz`` (so that a shard's files are named as ``build --parquet`` names them,
    whichever shards hold no line), else its place in the index."""
    numbers = [shard_number(name) for name in names]
    if None in numbers or len(set(numbers)) < len(numbers):
        return list(range(len(names)))
    return numbers


def write_table(source, options, stdout=None):
    """The ``parquet`` format: the table of the cluster into the directory
    ``options.output`` (``columnar``); its ``table.TableSummary``."""
    check_table_place(options.output, source.directory)
    summary = TableSummary(storage.abspath(options.output))
    with staged_table(options.output, "export") as building:
        table = Table.of(building, options.crawl or default_collection(options.location),
                         options)
        numbers = _shard_numbers(source.shards)
        for number, (_, chunks) in zip(numbers, source.chunks_by_file()):
            summary.add(table.write_chunks(number, chunks))
        _check(source)
    return summary


FORMATS = {"cdx": write_cdx, "parquet": write_table}


class Withheld:
    """A cluster source whose chunks hold only the lines ``admits`` lets out (the rest of
    the source as it is)."""

    def __init__(self, source, admits):
        self._source, self._admits = source, admits

    def __getattr__(self, name):
        return getattr(self._source, name)

    def chunks_by_file(self, *args):
        for path, chunks in self._source.chunks_by_file(*args):
            yield path, (kept for chunk in chunks if (kept := list(filter(self._admits, chunk))))

    def chunks(self, *args):
        for _, chunks in self.chunks_by_file(*args):
            yield from chunks

    def write(self, out):
        for chunk in self.chunks():
            out.write(b"\n".join(chunk) + b"\n")


def export(options, stdout=None):
    """Write every line of the cluster ``options.location`` (an ``ExportOptions``) in format
    ``options.format`` to ``options.output`` (a path or URI; for ``cdx``, None: ``stdout``,
    a binary stream); an ``Exported``.

    ExportFailed, or the reader's IndexInputError or OSError, when it cannot; nothing is
    then written (``lock.Busy``: another process writes the table). UsageError for options that cannot work (a format not in ``FORMATS``, a
    table without a directory or in the cluster's); InputError for a FILE that is the
    cluster's index or inside the cluster.
    """
    if options.format not in FORMATS:
        raise UsageError(f"unknown export format {options.format!r}: choose one of "
                         f"{', '.join(FORMATS)}")
    check_table(options, options.format == "parquet", "--format parquet")
    if options.format == "parquet" and not options.output:
        raise UsageError("--format parquet writes a table: give its directory with -o DIR")
    started = time.monotonic()
    progress = Progress(enabled=options.progress)
    index = cluster_index(options.location)
    if storage.is_local(index):
        _check_not_an_archive(index, "export")
    if options.output and options.format == "cdx":
        check_output(options.output, [index])
    source = ZipNumCluster(index)
    through = permitting(options)
    permitted = through(source) if through else None
    if permitted is not None:
        source = Withheld(source, permitted.admits)
    progress.step(f"exporting {len(source.shards)} shards of {options.location}",
                  count=lambda: source.lines_read)
    try:
        table = FORMATS[options.format](source, options, stdout)
    finally:
        progress.done()
    withheld = permitted.withheld if permitted is not None else None
    return Exported(source.lines_read - sum((withheld or {}).values()), source.format, options.output,
                    time.monotonic() - started, table, withheld)
