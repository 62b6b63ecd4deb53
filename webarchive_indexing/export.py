"""``webarchive-index export``: every line of a ZipNum cluster, in order, as another kind of
index: a Parquet table in Common Crawl's columnar schema (``columnar``).

    summary = export_table("out", "table", TableOptions(crawl="my-collection"))
    summary.rows, summary.files

The cluster (a build's output directory, its ``cluster/`` directory or a ``cluster.idx``;
ours or one Common Crawl publishes; local, ``s3://`` or ``http(s)://``) is read shard by
shard, block by block in index order (``query.Cluster.shards``), each shard's lines into
the files of that shard (``columnar.Table``), as ``build --parquet`` writes them. The
table is published whole or not at all (``publish.staged_table``).
"""
import time

from . import storage
from .columnar import Table, TableSummary, default_collection
from .options import TableOptions
from .publish import check_table_place, staged_table

# Blocks fetched per read of a cluster's shard (~10-20 MB of Common Crawl's blocks; a
# lookup reads at most 10)
BLOCKS_PER_READ = 64
# Lines between calls of ``progress``
PROGRESS_LINES = 10_000


def export_table(location, out_dir, options=None, progress=None):
    """Write the table of the cluster at ``location`` (as ``query.open_cluster`` takes it)
    into ``out_dir`` as ``options`` (``TableOptions``) say; a ``columnar.TableSummary``
    with ``seconds``.

    ``options.crawl`` is the crawl of rows that are not Common Crawl's (default:
    ``columnar.default_collection(location)``). ``progress(lines)`` is called now and
    then. Raises ``options.UsageError`` when ``out_dir`` would mix with the cluster,
    ``FileExistsError`` for a non-empty ``out_dir`` that cannot be replaced whole,
    ``OSError`` or ``ValueError`` (an unsorted cluster) with nothing published.
    """
    from .query import open_cluster
    options = options or TableOptions()
    started = time.monotonic()
    cluster = open_cluster(location, BLOCKS_PER_READ)
    check_table_place(out_dir, cluster.shard_dir)
    crawl = options.crawl or default_collection(location)
    out_dir = storage.abspath(out_dir)
    summary = TableSummary(out_dir)
    with staged_table(out_dir) as building:
        table = Table.of(building, crawl, options)
        for shard, (_, lines) in enumerate(cluster.shards()):
            with table.shard(shard) as rows:
                for count, line in enumerate(lines, 1):
                    rows.add(line)
                    if progress is not None and not count % PROGRESS_LINES:
                        progress(summary.lines + count)
            summary.add(rows.stats)
            if progress is not None:
                progress(summary.lines)
    summary.seconds = time.monotonic() - started
    return summary
