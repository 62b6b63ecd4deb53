"""``webarchive-index export``: every line of a ZipNum cluster, in order, as one flat file.

    from webarchive_indexing.export import export
    from webarchive_indexing.options import ExportOptions
    export(ExportOptions(location="out", output="all.cdxj.gz"))   # an Exported

The cluster (a build's output directory, its ``cluster/`` directory or a ``cluster.idx``;
local, ``s3://`` or ``http(s)://``) is read shard by shard as ``indexinputs`` reads a
cluster input, a chunk of lines at a time, so nothing is held in memory. ``FORMATS``
maps each ``--format`` to the function that writes it (a new format is one more entry,
and its name in ``options.EXPORT_FORMATS``): ``cdx`` writes the lines as the cluster
holds them (CDXJ, or CDX11/CDX9 under their `` CDX`` header line, as a flat CDX file of
those formats starts). An output file (local or ``s3://``; gzipped when its name ends
in ``.gz``) appears only once complete, and not at all when the cluster has a malformed
line or is out of order: an export is a sorted flat index, or nothing.
"""
import gzip
import time
from dataclasses import dataclass

from . import storage
from .indexinputs import ZipNumCluster, cluster_index
from .options import UsageError
from .progress import Progress


class ExportFailed(Exception):
    pass


@dataclass
class Exported:
    """What an export wrote."""
    lines: int
    format: str
    output: str
    seconds: float


def write_cdx(source, out):
    """The ``cdx`` format: the cluster's own lines, after the header line of their format."""
    from .cdxline import header_line
    out.write(header_line(source.format).encode("utf-8"))
    source.write(out)


FORMATS = {"cdx": write_cdx}


def _write(source, fmt, out):
    FORMATS[fmt](source, out)
    if source.malformed:
        first = source.problems[0]
        raise ExportFailed(f"{source.malformed} malformed lines in the cluster, the first in "
                           f"{first['file']} line {first['line']}: {first['reason']}")
    if source.unsorted:
        raise ExportFailed(f"the cluster is not sorted: {source.unsorted['file']} line "
                           f"{source.unsorted['line']} sorts before the line above it")


def export(options, stdout=None):
    """Write every line of the cluster ``options.location`` (an ``ExportOptions``) in format
    ``options.format`` to ``options.output`` (a path or URI; None: ``stdout``, a binary
    stream); an ``Exported``.

    ExportFailed, or the reader's IndexInputError or OSError, when it cannot; an output
    file is then not written. UsageError for a format not in ``FORMATS``.
    """
    if options.format not in FORMATS:
        raise UsageError(f"unknown export format {options.format!r}: choose one of "
                         f"{', '.join(FORMATS)}")
    started = time.monotonic()
    progress = Progress(enabled=options.progress)
    source = ZipNumCluster(cluster_index(options.location))
    progress.step(f"exporting {len(source.shards)} shards of {options.location}",
                  count=lambda: source.lines_read)
    try:
        if options.output is None:
            _write(source, options.format, stdout)
        else:
            with storage.open_atomic(options.output) as raw:
                if options.output.endswith(".gz"):
                    with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6, mtime=0) as out:
                        _write(source, options.format, out)
                else:
                    _write(source, options.format, raw)
    finally:
        progress.done()
    return Exported(source.lines_read, source.format, options.output,
                    time.monotonic() - started)
