"""``webarchive-index export``: every line of a ZipNum cluster, in order, as one flat file.

    from webarchive_indexing.export import export
    export("out", "all.cdxj.gz")      # {'lines': ..., 'format': 'cdxj', 'output': ...}

The cluster (a build's output directory, its ``cluster/`` directory or a ``cluster.idx``;
local, ``s3://`` or ``http(s)://``) is read shard by shard as ``indexinputs`` reads a
cluster input, so nothing is held in memory. ``FORMATS`` maps each ``--format`` to the
function that writes it: ``cdx`` writes the lines as the cluster holds them (CDXJ, or
CDX11/CDX9 under their `` CDX`` header line, as a flat CDX file of those formats
starts). An output file (local or ``s3://``; gzipped when its name ends in ``.gz``)
appears only once complete, and not at all when the cluster has a malformed line or is
out of order: an export is a sorted flat index, or nothing.
"""
import gzip

from . import storage


class ExportFailed(Exception):
    pass


def write_cdx(source, out):
    """The ``cdx`` format: the cluster's own lines, after the header line of their format."""
    from .cdx import header_line
    out.write(header_line(source.format).encode("utf-8"))
    for line in source.lines():
        out.write(line)


FORMATS = {"cdx": write_cdx}


def open_cluster(location):
    """The cluster at ``location`` as an index source (``indexinputs.ZipNumCluster``)."""
    from .indexinputs import ZipNumCluster, cluster_index
    return ZipNumCluster(cluster_index(location))


def _write(source, fmt, out):
    FORMATS[fmt](source, out)
    if source.malformed:
        first = source.problems[0]
        raise ExportFailed(f"{source.malformed} malformed lines in the cluster, the first in "
                           f"{first['file']} line {first['line']}: {first['reason']}")
    if source.unsorted:
        raise ExportFailed(f"the cluster is not sorted: {source.unsorted['file']} line "
                           f"{source.unsorted['line']} sorts before the line above it")


def export(source, output=None, fmt="cdx", stdout=None):
    """Write every line of ``source`` (see ``open_cluster``) in format ``fmt`` to ``output``
    (a path or URI; None: ``stdout``, a binary stream). ExportFailed, or the reader's
    IndexInputError/OSError, when it cannot; an output file is then not written."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}: choose one of {', '.join(FORMATS)}")
    if output is None:
        _write(source, fmt, stdout)
    else:
        with storage.open_atomic(output) as raw:
            if output.endswith(".gz"):
                with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6, mtime=0) as out:
                    _write(source, fmt, out)
            else:
                _write(source, fmt, raw)
    return {"lines": source.lines_read, "format": source.format, "output": output}
