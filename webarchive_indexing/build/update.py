"""An update's shards: a published cluster merged with the runs of new lines, lines of
removed archives left out, by the split points, lines per block and deflate it was built with.

    written = update_shards(merge.Merging(pool, work_dir), new_runs, new_sample, "out/cluster",
                            split_lines, Removal(["crawl-1/*"]), "out/.cluster-build-x", 3000)

Each old shard is a sorted run of its own shard (``shardrun``): the new runs' lines of
that shard are merged into it, in pieces on every worker as a build writes shards
(``merge.write_shards``), so the result is byte for byte the cluster a full build
of the same lines with the same split points writes. Reading the old cluster costs an
inflate of each block that is merged, never a sort. A shard that gains no line and
loses none is copied as it is, with its part file, without being inflated.
"""
import re

from . import merge, runs
from .. import storage
from ..zipnum import layout
from ..util.progress import counted
from ..zipnum.shardrun import ClusterChanged, read_index, survey

# The directory of one build in cluster/, where cluster.idx may name a shard (as this and
# earlier versions publish: build-00001/, build-20261125T010203Z-x/)
BUILD_DIR = re.compile(r"build-[A-Za-z0-9-]+\Z")
CUTS_PER_SHARD = 100


def old_shards(cluster_dir, shards):
    """``[(path, blocks)]`` of each of the ``shards`` shards of the cluster in
    ``cluster_dir`` (an empty shard has no index lines: no blocks)."""
    found = [(storage.join(cluster_dir, layout.shard_name(i)), []) for i in range(shards)]
    for name, blocks in read_index(cluster_dir).items():
        number = layout.shard_number(name)
        folder, _, file = name.rpartition("/")
        try:
            # a name from the index never leads outside the cluster
            path = storage.below(cluster_dir, name)
        except storage.Outside:
            path = None
        if (path is None or number is None or number >= shards or file != layout.shard_name(number)
                or folder and not BUILD_DIR.match(folder)):
            raise ClusterChanged(f"{cluster_dir}/cluster.idx names {name!r}, which is not one of "
                                 f"the {shards} shards the split points make")
        found[number] = (path, blocks)
    return found


def _lines_below(run_list, key):
    return sum(run.position(key)[0] for run in run_list)


def _check_range(run, low, high):
    """A shard's lines must lie between its split points: else the cluster was built with
    other split points than the ones given."""
    if not run.blocks:
        return
    first = run._block_lines(0)[0]
    last = run._block_lines(len(run.blocks) - 1)[-1]
    if (low is not None and first < low) or (high is not None and last >= high):
        raise ClusterChanged(f"{run.path} holds lines outside its split points: the cluster was "
                             "built with other split points")


def copy_shard(run, cluster_dir):
    """An unchanged shard and its part file, copied into ``cluster_dir``."""
    name = layout.shard_name(run.shard)
    with storage.open_atomic(storage.join(cluster_dir, name)) as out:
        if run.blocks:
            with storage.open_read(run.path) as fh:
                while data := fh.read(runs.CHUNK_BYTES):
                    out.write(data)
    blocks = [(block.key, block.length) for block in run.blocks]
    storage.write_atomic(storage.join(cluster_dir, layout.part_name(run.shard)),
                         merge.part_file(blocks, name))
    return layout.shard_stats(run.shard, run.lines, len(blocks), run.size)


def update_shards(merging, new_runs, new_sample, old_cluster, split_lines, removal, cluster_dir,
                  lines_per_block, deflate=merge.BLOCK_DEFLATE_OLD):
    """Every shard of the updated cluster, written into ``cluster_dir`` as ``merging`` (a
    ``merge.Merging``) says, the blocks of those it writes compressed by ``deflate`` (that
    of the cluster: a copied shard keeps its bytes): ``{shard: stats}`` as ``merge.write_shards`` gives them, the
    number of shards copied, and the cluster's lines removed, ``{glob: lines}`` by the
    glob of ``removal`` that removed them (None: the old lines of the archives it names)."""
    pool, progress = merging.pool, merging.progress
    shards = len(split_lines) + 1
    bounds = [None] + [line.encode("utf-8") for line in split_lines] + [None]
    located = old_shards(old_cluster, shards)
    surveyed = merge.run_tasks(
        pool, survey, [(i, path, blocks, lines_per_block, removal)
                       for i, (path, blocks) in enumerate(located)],
        progress, f"reading the {shards} shards of {old_cluster}"
        + (" for lines to remove" if removal else ""))
    for run in surveyed:
        _check_range(run, bounds[run.shard], bounds[run.shard + 1])
    below = [0] + merge.run_tasks(pool, _lines_below,
                                       [(new_runs, bound) for bound in bounds[1:-1]]) \
        + [sum(run.lines for run in new_runs)]
    unchanged = {run.shard for run in surveyed
                 if below[run.shard + 1] == below[run.shard] and not run.removed}
    copies = merge.run_tasks(
        pool, copy_shard, [(surveyed[i], cluster_dir) for i in sorted(unchanged)], progress,
        f"copying {counted(len(unchanged), 'shard')} with nothing new")
    # where pieces may be cut: the new lines' sample, and about CUTS_PER_SHARD block keys
    # of each changed shard (each stands for a block of lines)
    sample = list(new_sample) + [
        block.key.decode("utf-8") for run in surveyed if run.shard not in unchanged
        for block in run.blocks[::max(1, len(run.blocks) // CUTS_PER_SHARD)]]
    written = merge.write_shards(
        merging, new_runs, split_lines, sample, cluster_dir, lines_per_block,
        old={run.shard: run for run in surveyed if run.shard not in unchanged}, skip=unchanged,
        deflate=deflate)
    written.update({stats["shard"]: stats for stats in copies})
    removed = {}
    for run in surveyed:
        for glob, lines in run.removed_by.items():
            removed[glob] = removed.get(glob, 0) + lines
    return written, len(unchanged), removed
