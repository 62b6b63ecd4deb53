"""Publishing a cluster: readers see the old one or the new one, never half of one, and a
failed build leaves the published cluster as it was.

    totals = publish_cluster(out_dir, shards, write=lambda directory: engine.write_cluster(...))

Where a directory can be swapped in with renames (``storage.renames_directories``: on
local file systems) the shards are written into a fresh directory beside ``cluster/``,
checked and indexed there (``steps.finalize_cluster``), and the new directory then
takes the place of ``cluster/``.

Elsewhere (S3, and Hadoop file systems, handled alike: S3 has no rename) a cluster is
published by writing its index last::

    out/cluster/build-<time>-<id>/   one build's cdx-NNNNN.gz and part-NNNNN
    out/cluster/cluster.loc          shard -> absolute URI: this build's shards,
                                     then those of the build it replaces
    out/cluster/cluster.idx          written last, once every shard was checked

Each build writes its shards under a fresh ``build-...`` prefix, and the shard
column of ``cluster.idx`` is the shard's path relative to ``cluster/``
(``build-.../cdx-00000.gz``), so an index only ever names the shards it was
made from, and readers without the .loc file find them too. Because
``cluster.loc`` still lists the shards of the index it replaces, either index
works with it: for a reader that fetches the new .loc with the old .idx, and
when a build fails after writing the .loc. A failed build deletes its prefix
and leaves the published ``cluster.idx`` and its shards as they were. A
published build keeps the shards of the build it replaced (a reader that loaded
that index keeps working) and deletes every other ``build-...`` prefix, such as
the leftovers of builds that died. One build at a time per output.
"""
import time

from . import storage
from .steps import finalize_cluster

# Prefix of a build's shards on S3: out/cluster/build-<UTC time>-<random>/
BUILD_PREFIX = "build-"
# Bytes read from the start of a published cluster.idx to find the build it names
# (one index line: a URL key, a timestamp and the shard)
IDX_LINE_MAX = 1 << 16


def publish_cluster(out_dir, shards, write, root_index=True):
    """Write the shards with ``write(directory) -> {shard: stats}`` into a fresh directory
    (elsewhere than on local file systems, a fresh prefix) and publish the cluster in
    ``out_dir/cluster`` only if every shard is complete; its totals (``finalize_cluster``).
    Raises ``steps.ClusterIncomplete`` (or what ``write`` raised) with nothing published."""
    cluster_dir = storage.join(out_dir, "cluster")
    swap = storage.renames_directories(out_dir)
    if swap:
        building = storage.make_temp_dir(out_dir, ".cluster-build-")
    else:
        building = storage.make_temp_dir(
            cluster_dir, time.strftime(BUILD_PREFIX + "%Y%m%dT%H%M%SZ-", time.gmtime()))
    published = False
    try:
        written = write(building)
        if swap:
            totals = finalize_cluster(building, shards, written, location=cluster_dir,
                                      root=root_index)
            storage.replace_tree(building, cluster_dir)
        else:
            previous, previous_loc = _published_build(cluster_dir)
            totals = finalize_cluster(building, shards, written, index_dir=cluster_dir,
                                      previous_loc=previous_loc, root=root_index)
        published = True
    finally:
        if not published:
            storage.remove_tree(building)
    if not swap:
        # readers of the replaced index still find its shards; older builds and the
        # leftovers of failed ones go
        for stale in _builds_under(cluster_dir) - {building, previous}:
            storage.remove_tree(stale)
    return totals


def _published_build(cluster_dir):
    """The build whose shards the published ``cluster.idx`` names, and their
    ``cluster.loc`` lines: (None, b"") when it names none."""
    idx, loc = storage.join(cluster_dir, "cluster.idx"), storage.join(cluster_dir, "cluster.loc")
    if not storage.exists(idx):
        return None, b""
    fields = storage.read_range(idx, 0, IDX_LINE_MAX).split(b"\n", 1)[0].split(b"\t")
    if len(fields) < 2 or b"/" not in fields[1]:
        return None, b""
    name = fields[1].split(b"/", 1)[0]
    lines = storage.read_bytes(loc).splitlines(True) if storage.exists(loc) else []
    return (storage.join(cluster_dir, name.decode("utf-8")),
            b"".join(line for line in lines if line.startswith(name + b"/")))


def _builds_under(cluster_dir):
    builds = set()
    for path in storage.list_files(cluster_dir):
        name, slash, _ = path[len(cluster_dir) + 1:].partition("/")
        if slash and name.startswith(BUILD_PREFIX):
            builds.add(storage.join(cluster_dir, name))
    return builds
