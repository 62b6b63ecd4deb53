"""Publishing a cluster: readers see the old one or the new one, never half of one, a
failed build leaves the published cluster as it was, and a rebuild never takes shards
from under a reader of the index it replaces.

    totals = publish_cluster(out_dir, shards, write=lambda directory: engine.write_cluster(...))

The same layout everywhere (local disks, S3, Hadoop file systems)::

    out/cluster/build-00002/      one build's cdx-NNNNN.gz and part-NNNNN
    out/cluster/cluster.loc       shard -> its path relative to cluster.loc: this build's
                                  shards, then those of the build it replaces
    out/cluster/cluster.root      the small index of cluster.idx (a hint, checked by readers)
    out/cluster/cluster.idx       written last, by one rename (one upload on S3)

Each build writes its shards under a fresh ``build-NNNNN/`` directory (numbered after the
published one, so that the same inputs give the same bytes), and the shard column of
``cluster.idx`` is the shard's path relative to ``cluster/`` (``build-00002/cdx-00000.gz``):
an index only ever names the shards it was made from, and readers without the .loc file
(OpenWayback's ZipNumIndex, ``query`` on S3 or HTTP) find them too. Publishing is the one
atomic replacement of ``cluster.idx``: before it every reader sees the old cluster, after
it the new one. ``cluster.loc`` is written before it and lists the shards of both, so
that either index works with it (pywb reads the .loc when it changes, the index at every
lookup); ``cluster.root`` describes the new index, and a reader that finds it does not fit
the index ignores it. A published build keeps the shards of the build it replaced (a
reader that loaded that index keeps working) and deletes every other ``build-...``
directory, such as what builds that were killed left, and the shards of a cluster
published directly in ``cluster/`` (as before builds had directories of their own).

Locations in ``cluster.loc`` are relative, so a cluster can be moved or copied whole
(pywb and ``query`` resolve them against the directory of the .loc).

A table (``build --parquet``, ``export --format parquet``) is published whole too:
on a local disk written into a fresh directory beside its place and exchanged with the
table there in one step (``storage.local.replace_tree``: a reader finds the old table or
the new one, never none), under a lock beside it (one writer of a table at a time;
``staged_table``), and the directories of writers that were killed (``.table-build-PID-...``,
and, where paths cannot be exchanged, a replaced table put aside, ``.table-old-PID-...``)
are cleared by the next writer; elsewhere written into
a prefix that must hold nothing yet (S3 has no rename with which to replace a table
whole), which a failure empties again.
"""
import contextlib
import glob
import os
import re

from ..storage import lock
from .. import storage
from .indexprep import INDEXES_DIR
from ..options import UsageError
from .tasks import finalize_cluster
from ..zipnum.layout import named_here
from ..zipnum.places import first_shard, loc_lines_of

BUILD_PREFIX = "build-"
_BUILD = re.compile(r"build-(\d{5,})$")
# Where earlier versions built a local cluster, and put the one it replaced
_OLD_SWAP_DIRS = (".cluster-build-", ".cluster-old-")
# Beside a local table: the tables being written and those being replaced, named after the
# process (the next writer removes only those of processes gone) and the table
_TABLE_ASIDE_PREFIX = ".table-"
# In every local table the tool publishes: a directory without it (and not empty) is not
# one of its tables, and is never replaced (readers pass over names starting with '.')
TABLE_MARK = ".webarchive-index-table"
_TABLE_ASIDE = re.compile(re.escape(_TABLE_ASIDE_PREFIX)
                          + r"(?P<kind>build|old)-(?P<pid>\d+)-[0-9a-f]{8}-(?P<name>.+)", re.S)


def publish_cluster(out_dir, shards, write, root_index=True):
    """Write the shards with ``write(directory) -> {shard: stats}`` into a fresh build
    directory of ``out_dir/cluster`` and publish them there only if every shard is
    complete; the totals (``finalize_cluster``). Raises ``tasks.ClusterIncomplete`` (or
    what ``write`` raised) with nothing published."""
    cluster_dir = storage.join(out_dir, "cluster")
    published, published_loc = _published_build(cluster_dir)
    building = build_dir(cluster_dir, published)
    storage.remove_tree(building)  # what a build killed before publishing left
    storage.makedirs(building)
    done = False
    try:
        totals = finalize_cluster(building, shards, write(building), index_dir=cluster_dir,
                                  previous_loc=published_loc, root=root_index)
        done = True
    finally:
        if not done:
            storage.remove_tree(building)
    # readers of the replaced index still find its shards; what else is there goes
    directories, files = _stale(cluster_dir, keep={building, published})
    for directory in directories:
        storage.remove_tree(directory)
    for path in files:
        storage.remove(path)
    return totals


def remove_leftovers(out_dir):
    """Remove what builds into ``out_dir`` that were killed left on a local disk: the
    temporary files of writes (``.tmp-*``) in it, under ``cdx/`` and ``rewritten-indexes/``
    and in ``cluster/``, and the directories of earlier versions' swaps (a build's unpublished
    ``build-NNNNN/`` goes when the next build starts, on every store). Elsewhere a
    write leaves nothing (S3) or is not looked for (Hadoop file systems)."""
    if not storage.is_local(out_dir):
        return
    for directory in (out_dir, storage.join(out_dir, "cluster")):
        storage.remove_temp_files(directory)
    for directory in ("cdx", INDEXES_DIR):
        storage.remove_temp_files(storage.join(out_dir, directory), recursive=True)
    for prefix in _OLD_SWAP_DIRS:
        for path in glob.glob(os.path.join(glob.escape(out_dir), prefix + "*")):
            storage.remove_tree(path)


def build_dir(cluster_dir, published):
    """The directory of the next build: numbered after the ``published`` one."""
    match = _BUILD.match(storage.basename(published or ""))
    return storage.join(cluster_dir, f"{BUILD_PREFIX}{int(match[1]) + 1 if match else 1:05d}")


def _published_build(cluster_dir):
    """The directory of the build whose shards the published ``cluster.idx`` names
    (``cluster_dir`` itself for shards published directly in it), and their
    ``cluster.loc`` lines: (None, b"") when it names none."""
    idx, loc = storage.join(cluster_dir, "cluster.idx"), storage.join(cluster_dir, "cluster.loc")
    try:
        shard = first_shard(idx)
    except FileNotFoundError:
        return None, b""
    if shard is None:
        return None, b""
    name, slash, _ = shard.rpartition("/")
    if slash and not _BUILD.match(name):
        return None, b""  # not a layout of ours: nothing of it is taken over
    try:
        data = storage.read_bytes(loc)
    except FileNotFoundError:
        data = b""
    if not slash:
        return cluster_dir, loc_lines_of(data)
    return storage.join(cluster_dir, name), loc_lines_of(data, name)


def _stale(cluster_dir, keep):
    """``(directories, files)`` in ``cluster_dir`` that no reader needs: those of builds
    other than ``keep``, and shards published directly in it unless ``cluster_dir`` is in
    ``keep``."""
    directories, files = set(), []
    for path in storage.list_files(cluster_dir):
        name, slash, _ = path[len(cluster_dir) + 1:].partition("/")
        if slash:
            directory = storage.join(cluster_dir, name)
            if _BUILD.match(name) and directory not in keep:
                directories.add(directory)
        elif cluster_dir not in keep and named_here(name):
            files.append(path)
    return sorted(directories), files


def check_table_place(table_dir, *kept):
    """``UsageError`` if writing a table into ``table_dir`` would replace or mix with one of
    the directories ``kept`` (a cluster, CDX files): the same, inside one, or holding one."""
    table = storage.abspath(table_dir).rstrip("/") + "/"
    for keep in kept:
        keep = storage.abspath(keep).rstrip("/") + "/"
        if table.startswith(keep) or keep.startswith(table):
            raise UsageError(f"the table's directory {table_dir} would mix with or replace "
                             f"{keep.rstrip('/')}: give the table a directory of its own")


@contextlib.contextmanager
def staged_table(table_dir, command):
    """The directory to write a table into that is then published as ``table_dir``, when
    the block ends without an error (and removed after one). On a local disk, under the
    table's lock (``lock.Busy`` if another ``command`` holds it), what killed writers of
    the table left is cleared first; elsewhere ``UsageError`` if ``table_dir`` holds
    something already (directories are not renamed there)."""
    table_dir = storage.abspath(table_dir)
    if not storage.is_local(table_dir):
        if next(iter(storage.list_files(table_dir)), None) is not None:
            raise UsageError(f"{table_dir} is not empty: write the table to a new prefix "
                             "(there is no rename there with which to replace one whole)")
        with _removed_unless_done(table_dir):
            yield table_dir
        return
    parent, name = os.path.split(table_dir)
    # The lock is beside the table, named after it: the table's directory is replaced
    # whole (a lock in it would go with it), and is not made before a table is complete.
    with lock.hold(table_dir, command, os.path.join(parent, f".{name}{lock.LOCK_NAME}")):
        _clear_killed_tables(table_dir)
        _check_ours(table_dir)
        building = os.path.join(parent, _table_aside("build", name))
        os.mkdir(building)
        with _removed_unless_done(building):
            with open(os.path.join(building, TABLE_MARK), "w", encoding="utf-8") as mark:
                mark.write(f"a table written by webarchive-index {command}: replaced whole "
                           "by the next one written here\n")
            yield building
            storage.local.replace_tree(building, table_dir,
                                       os.path.join(parent, _table_aside("old", name)))


def _check_ours(table_dir):
    """``UsageError`` unless ``table_dir`` is a table the tool wrote (it holds the mark),
    empty, or not there: a table's directory is replaced whole, with all it holds."""
    if not os.path.lexists(table_dir):
        return
    if not os.path.isdir(table_dir) or os.path.islink(table_dir):
        raise UsageError(f"{table_dir} is not a directory: give the table a directory of "
                         "its own")
    if os.listdir(table_dir) and not os.path.isfile(os.path.join(table_dir, TABLE_MARK)):
        raise UsageError(f"{table_dir} holds files that webarchive-index did not write "
                         f"(it has no {TABLE_MARK}), and a table's directory is replaced "
                         "whole: give the table a new directory, or empty this one")


@contextlib.contextmanager
def _removed_unless_done(directory):
    """``directory`` removed if the block raises."""
    done = False
    try:
        yield
        done = True
    finally:
        if not done:
            storage.remove_tree(directory)


def _table_aside(kind, name):
    """A new name beside the table ``name`` for a directory of this process: ``build``,
    the table being written; ``old``, the one it replaces, for a moment."""
    return f"{_TABLE_ASIDE_PREFIX}{kind}-{os.getpid()}-{os.urandom(4).hex()}-{name}"


def _clear_killed_tables(table_dir):
    """What writers of ``table_dir`` that were killed left beside it: the tables they were
    writing, removed, and one put aside to be replaced, put back if they were killed
    before the new one took its place (the table is as it was before them). Those of
    running processes are theirs: a writer that went on without a lock (a file system
    without locks) is not disturbed."""
    parent, name = os.path.split(table_dir)
    for entry in sorted(os.listdir(parent)):
        match = _TABLE_ASIDE.fullmatch(entry)
        if not match or match["name"] != name or lock.running(int(match["pid"])):
            continue
        path = os.path.join(parent, entry)
        if match["kind"] == "old" and not os.path.lexists(table_dir):
            os.rename(path, table_dir)
        else:
            storage.remove_tree(path)
