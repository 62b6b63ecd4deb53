"""What a published cluster holds: the record ``contents.json`` published with its shards,
which ``build --update`` reads back.

    {"format": "cdxj", "lines_per_block": 3000, "block_deflate": "libdeflate-5",
     "splits": ["com,a)/ 2024...", ...],
     "archives": {"crawl/a.warc.gz": {"path": "/data/crawl/a.warc.gz", "cdx": "crawl/a.cdx.gz",
                                      "source": {"size": 1234, "mtime_ns": ...}}, ...},
     "indexes": {"/data/old.cdxj.gz": {"name": "old.cdxj.gz", "kind": "cdx"}, ...}}

The record is written into the directory the shards are written to, before the cluster
is published, so it is published with them in the same step (``publish``): it always
describes the cluster that ``cluster.idx`` indexes, also after a build that failed. It
is found beside the shards that the first line of ``cluster.idx`` names (``cluster/``
itself, or a ``build-...`` prefix on S3), or in ``cluster/`` when the cluster is empty.

``archives`` maps the name of each archive whose lines the cluster holds (the
``filename`` of its lines) to its path, its CDX file (under ``OUTDIR/cdx/``) and what
that was made from (``cdxmeta.source_of``). An update sorts the archives it is given with
:func:`sort_statuses`: those held already, with the same source, are not added again;
those held but indexed again (changed since, or ``--no-skip-existing``) replace their
lines; the others are new. ``indexes`` are the index inputs (existing CDX files,
clusters, legacy indexes) whose lines it holds: an update does not read them again.
``post_append``: whether its archives' captures have POST keys (``--post-append``; a
record without it, of a cluster built before the option, has none); an update keeps it.
``block_deflate``: the deflate of its blocks (``--block-deflate``; a record without it,
of a cluster built before the option, zlib-6: ``block_deflate``); an update keeps it, so
that an updated shard is the bytes a rebuild with the same setting writes.
"""
import json

from .. import storage
from ..options.table import BLOCK_DEFLATE_OLD, BLOCK_DEFLATES
from ..zipnum.places import first_shard

RECORD = "contents.json"


class NoRecord(ValueError):
    """A cluster that an update cannot extend: none, or one without a record."""


class NoCluster(NoRecord):
    """No cluster at all where an update was asked for."""


def make(fmt, lines_per_block, split_lines, archives, indexes, post_append=False,
         block_deflate=BLOCK_DEFLATE_OLD):
    return {"format": fmt, "lines_per_block": lines_per_block, "splits": list(split_lines),
            "archives": archives, "indexes": indexes, "post_append": post_append,
            "block_deflate": block_deflate}


def block_deflate(record):
    """The deflate the blocks of the cluster of ``record`` were written with."""
    return record.get("block_deflate", BLOCK_DEFLATE_OLD)


def entry(status, cdx_dir):
    """The record of the archive of an indexing ``status``: its CDX file, relative to
    ``cdx_dir``, and what that was made from."""
    return {"path": status.path, "cdx": status.cdx[len(cdx_dir.rstrip("/")) + 1:],
            "source": status.source}


def index_entry(source):
    """The record of an index input (``inputs.indexes``): its name and kind."""
    return {"name": source.name, "kind": source.kind}


def write(directory, record):
    storage.write_atomic(storage.join(directory, RECORD),
                         json.dumps(record, indent=0, sort_keys=True).encode("utf-8"))


def _record_dir(cluster_dir):
    idx = storage.join(cluster_dir, "cluster.idx")
    try:
        shard = first_shard(idx)
    except FileNotFoundError:
        raise NoCluster(f"there is no cluster in {cluster_dir} to update: build one first "
                        "(without --update)") from None
    if shard is None:
        return cluster_dir
    try:
        return storage.dirname(storage.below(cluster_dir, shard))
    except storage.Outside:
        raise NoRecord(f"{idx} names shards outside {cluster_dir} ({shard}): not a cluster "
                       "this build wrote") from None


def read(cluster_dir):
    """The record of the cluster published in ``cluster_dir``; NoRecord if there is none."""
    path = storage.join(_record_dir(cluster_dir), RECORD)
    try:
        record = json.loads(storage.read_bytes(path))
    except FileNotFoundError:
        raise NoRecord(f"{cluster_dir} has no record of what it holds ({RECORD}): it was not "
                       "built by `webarchive-index build` (or by an older version); build it "
                       "anew once, then update it") from None
    except ValueError as exc:
        raise NoRecord(f"{path} cannot be read ({exc}): build the cluster anew") from None
    if not (isinstance(record, dict) and isinstance(record.get("splits"), list)
            and isinstance(record.get("archives"), dict)
            and isinstance(record.get("indexes"), dict)
            and isinstance(record.get("lines_per_block"), int)):
        raise NoRecord(f"{path} is not a record of a cluster: build the cluster anew")
    if block_deflate(record) not in BLOCK_DEFLATES:
        raise NoRecord(f"{path} says that the cluster's blocks were compressed by "
                       f"{block_deflate(record)!r}, which this version does not write: update "
                       "it with the version that built it, or build the cluster anew")
    return record


def sort_statuses(record, statuses):
    """``(new, replaced, held)``: the statuses of archives the cluster does not hold, of
    those it holds whose CDX file was made again since, and of those it holds as they are."""
    new, replaced, held = [], [], []
    for status in statuses:
        known = record["archives"].get(status.name)
        if known is None:
            new.append(status)
        elif status.skipped and known.get("source") == status.source:
            held.append(status)
        else:
            replaced.append(status)
    return new, replaced, held


def drop_cdx(cdx_dir, entries, suffixes):
    """Remove the CDX files of ``entries`` (records of archives) from ``cdx_dir``, and the
    files beside each that end in ``suffixes``; never outside ``cdx_dir``, whatever the
    record says (``safe_path``)."""
    for found in entries:
        path = storage.join(cdx_dir, storage.safe_path(found["cdx"]))
        for suffix in suffixes:
            storage.remove(path + suffix)
        storage.remove(path)
