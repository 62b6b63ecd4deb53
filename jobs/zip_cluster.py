"""Sort all CDX lines into the shards of a ZipNum cluster.

The mapper sends each line to its shard (the split points of ``--splits``
decide), keyed by the zero-padded shard number; with ``SORT_VALUES`` every
runner hands each shard's lines to one reducer call in bytewise order, so the
shard count holds on runners that ignore partitioners and reducer counts
(mrjob's local and inline ones). The reducer writes ``cdx-NNNNN.gz`` (gzip
members of ``--lines-per-block`` lines) and ``part-NNNNN``; ``webarchive-index
build`` then checks the shards and writes ``cluster.idx`` and ``cluster.loc``.

    python jobs/zip_cluster.py -r local --splits out/splits.txt --shards 4 \\
        --cluster-dir out/cluster out/cdx/

Identical lines (the same record indexed twice) are kept, one line each.
"""
from mrjob.job import MRJob
from mrjob.protocol import JSONValueProtocol, RawProtocol, RawValueProtocol

from webarchive_indexing.splits import shard_of
from webarchive_indexing.steps import is_cdx_line, read_splits, write_shard
from webarchive_indexing.zipnum import LINES_PER_BLOCK


class ZipClusterJob(MRJob):
    INPUT_PROTOCOL = RawValueProtocol
    INTERNAL_PROTOCOL = RawProtocol
    OUTPUT_PROTOCOL = JSONValueProtocol
    SORT_VALUES = True
    JOBCONF = {
        # reducers write shard files as side effects: never run one twice at once
        "mapreduce.reduce.speculative": "false",
        "mapreduce.job.reduce.slowstart.completedmaps": "1.0",
        "mapreduce.output.fileoutputformat.compress": "false",
        "mapreduce.task.timeout": "9600000",
    }

    def configure_args(self):
        super().configure_args()
        self.add_file_arg("--splits", required=True, help="splits.txt from sample_splits")
        self.add_passthru_arg("--shards", type=int, required=True,
                              help="shards of the cluster: one more than the split points")
        self.add_passthru_arg("--lines-per-block", type=int, default=LINES_PER_BLOCK,
                              help=f"CDX lines per gzip block (default {LINES_PER_BLOCK})")
        self.add_passthru_arg("--cluster-dir", required=True,
                              help="where cdx-NNNNN.gz and part-NNNNN are written")

    def mapper_init(self):
        self.splits = read_splits(self.options.splits)
        if len(self.splits) + 1 != self.options.shards:
            raise ValueError(f"{self.options.splits} holds {len(self.splits)} split points, "
                             f"which make {len(self.splits) + 1} shards, not --shards "
                             f"{self.options.shards}: sample again with --shards {self.options.shards}")

    def mapper(self, _, line):
        if is_cdx_line(line):
            yield "%05d" % shard_of(line, self.splits), line

    def reducer(self, shard, lines):
        yield None, write_shard(int(shard), lines, self.options.cluster_dir,
                                self.options.lines_per_block)


if __name__ == "__main__":
    ZipClusterJob.run()
