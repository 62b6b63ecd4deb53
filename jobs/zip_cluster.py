"""Sort all CDX lines into the shards of a ZipNum cluster.

The mapper sends each line to its shard (the split points of ``--splits``
decide), keyed by the zero-padded shard number; with ``SORT_VALUES`` every
runner hands each shard's lines to one reducer call in bytewise order, so the
shard count holds on runners that ignore partitioners and reducer counts
(mrjob's local and inline ones). On Hadoop and EMR, ``--partitions`` (the
``partitions.seq`` written by sample_splits) makes TotalOrderPartitioner send
shard i to reducer i of ``--shards`` reducers. The reducer writes
``cdx-NNNNN.gz`` (gzip members of ``--lines-per-block`` lines) and
``part-NNNNN``; ``webarchive-index finalize`` (or ``build``) then checks the shards and
writes ``cluster.loc`` and ``cluster.idx``. With ``--table-dir`` the reducer also writes
each shard's files of a columnar table there, from the same lines
(``build --parquet``: ``columnar``).

    python jobs/zip_cluster.py -r local --splits job-out/splits.txt --shards 4 \\
        --cluster-dir job-out/cluster out/cdx/
    python jobs/zip_cluster.py -r hadoop --splits s3a://b/splits.txt \\
        --partitions s3a://b/partitions.seq#_partition.lst --shards 300 --cluster-dir s3://b/cluster s3a://b/cdx/

Identical lines (the same record indexed twice) are kept, one line each.
"""
import os

import webarchive_indexing.util.compat
from mrjob.job import MRJob
from mrjob.protocol import JSONValueProtocol, RawProtocol, RawValueProtocol

from webarchive_indexing import options
from webarchive_indexing.columnar.table import Table
from webarchive_indexing.cdx.splits import shard_of
from webarchive_indexing.cdx.cdxline import is_cdx_line
from webarchive_indexing.build.tasks import read_splits, shard_key, write_shard

TOTAL_ORDER = "org.apache.hadoop.mapred.lib.TotalOrderPartitioner"
PARTITION_FILE = "_partition.lst"
# TotalOrderPartitioner opens its path with SequenceFile.Reader.file(path), which resolves
# a relative path (its default, _partition.lst) against the default file system
# (hdfs://.../user/$USER/ on a cluster), not the task's working directory where -files put
# it. So it is named by its absolute local path: Hadoop expands ${user.dir} (the task
# JVM's working directory) from the system properties when the task reads the setting.
PARTITION_PATH = ("mapreduce.totalorderpartitioner.path", "file://${user.dir}/" + PARTITION_FILE)


class ZipClusterJob(options.AbsolutePaths, MRJob):
    INPUT_PROTOCOL = RawValueProtocol
    INTERNAL_PROTOCOL = RawProtocol
    OUTPUT_PROTOCOL = JSONValueProtocol
    SORT_VALUES = True
    # many small per-archive CDX files per map task
    HADOOP_INPUT_FORMAT = "org.apache.hadoop.mapred.lib.CombineTextInputFormat"
    JOBCONF = {
        "mapreduce.input.fileinputformat.split.maxsize": "50000000",
        # the CDX directory mirrors the archives' directories
        "mapreduce.input.fileinputformat.input.dir.recursive": "true",
        # CombineTextInputFormat's keys are byte offsets: hand the mapper the line alone
        "stream.map.input.ignoreKey": "true",
        # reducers write shard files as side effects: never run one twice at once
        "mapreduce.reduce.speculative": "false",
        "mapreduce.job.reduce.slowstart.completedmaps": "1.0",
        "mapreduce.output.fileoutputformat.compress": "false",
        "mapreduce.task.timeout": "9600000",
    }

    def configure_args(self):
        super().configure_args()
        options.add(self, options.SPLITS,
                    options.SHARDS.but(required=True, default=None,
                                       help="shards of the cluster: one more than the split "
                                            "points"),
                    options.LINES_PER_BLOCK, options.BLOCK_DEFLATE,
                    options.CLUSTER_DIR, options.PARTITIONS,
                    options.TABLE_DIR, *options.TABLE)

    def partitioner(self):
        if not self.options.partitions:
            return None
        if not self.options.partitions.endswith("#" + PARTITION_FILE):
            raise ValueError(f"ship the partitions file under the name TotalOrderPartitioner "
                             f"reads: --partitions {self.options.partitions}#{PARTITION_FILE}")
        return TOTAL_ORDER

    def jobconf(self):
        conf = dict(super().jobconf(), **{"mapreduce.job.reduces": str(self.options.shards)})
        if self.options.partitions:
            conf.update([PARTITION_PATH])
        return conf

    def mapper_init(self):
        self.splits = read_splits(self.options.splits)
        if len(self.splits) + 1 != self.options.shards:
            raise ValueError(f"{self.options.splits} holds {len(self.splits)} split points, "
                             f"which make {len(self.splits) + 1} shards, not --shards "
                             f"{self.options.shards}: sample again with --shards {self.options.shards}")

    def mapper(self, _, line):
        if is_cdx_line(line):
            yield shard_key(shard_of(line, self.splits)), line

    def reducer_init(self):
        self.wrote_shard = False
        self.table = None
        if self.options.table_dir:
            self.table = Table.of(self.options.table_dir, self.options.crawl, self.options)

    def reducer(self, shard, lines):
        self.wrote_shard = True
        # Hadoop streaming sorts on a two-field key (shard<TAB>line) with an empty value and
        # hands the reducer "shard<TAB>line<TAB>"; CDX lines never end in a TAB themselves
        lines = (line[:-1] if line.endswith("\t") else line for line in lines)
        yield None, write_shard(int(shard), lines, self.options.cluster_dir,
                                self.options.lines_per_block, self.table,
                                self.options.block_deflate)

    def reducer_final(self):
        # With TotalOrderPartitioner reducer i is shard i: one that got no lines writes
        # its shard empty, so that every shard exists and a missing one means a failure.
        if self.options.partitions and not self.wrote_shard:
            shard = int(os.environ["mapreduce_task_partition"])
            yield None, write_shard(shard, [], self.options.cluster_dir)


if __name__ == "__main__":
    ZipClusterJob.run()
