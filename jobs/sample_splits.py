"""Sample CDX lines into the split points of a ZipNum cluster of N shards.

Each mapper keeps the ``shards x scaler`` lines with the smallest sample keys
(a hash of the line: unbiased, and the same on every runner); one reducer
merges them, picks exactly ``shards - 1`` split lines and writes them to
``--splits-dir`` as ``splits.txt`` and ``splits.seq`` (a Hadoop SequenceFile),
with ``partitions.seq`` for the cluster job's TotalOrderPartitioner.

    python jobs/sample_splits.py -r local --shards 4 --splits-dir job-out out/cdx/
"""
import webarchive_indexing.util.compat
from mrjob.job import MRJob
from mrjob.protocol import JSONProtocol, RawValueProtocol

from webarchive_indexing import options
from webarchive_indexing.cdx.splits import Reservoir, choose_splits, merge
from webarchive_indexing.cdx.cdxline import is_cdx_line
from webarchive_indexing.build.tasks import write_splits


class SampleSplitsJob(options.AbsolutePaths, MRJob):
    INPUT_PROTOCOL = RawValueProtocol
    INTERNAL_PROTOCOL = JSONProtocol
    OUTPUT_PROTOCOL = RawValueProtocol
    # many small per-archive CDX files per map task
    HADOOP_INPUT_FORMAT = "org.apache.hadoop.mapred.lib.CombineTextInputFormat"
    JOBCONF = {
        "mapreduce.input.fileinputformat.split.maxsize": "50000000",
        # the CDX directory mirrors the archives' directories
        "mapreduce.input.fileinputformat.input.dir.recursive": "true",
        # CombineTextInputFormat's keys are byte offsets: hand the mapper the line alone
        "stream.map.input.ignoreKey": "true",
        "mapreduce.job.reduces": "1",
        # the single reducer receives every mapper's sample: keep that transfer small
        "mapreduce.map.output.compress": "true",
        "mapreduce.output.fileoutputformat.compress": "false",
        "mapreduce.job.reduce.slowstart.completedmaps": "1.0",
        "mapreduce.task.timeout": "9600000",
    }

    def configure_args(self):
        super().configure_args()
        options.add(self, options.SHARDS.but(required=True, default=None,
                                             help="shards of the cluster"),
                    options.SCALER, options.SPLITS_DIR)

    def mapper_init(self):
        self.reservoir = Reservoir(self.options.shards * self.options.scaler)

    def mapper(self, _, line):
        if is_cdx_line(line):
            self.reservoir.add(line)

    def mapper_final(self):
        # an empty marker, so that the reducer runs (and writes splits) even for no lines
        yield "sample", None
        for pair in self.reservoir.items():
            yield "sample", pair

    def reducer(self, _, pairs):
        sample = merge((tuple(pair) for pair in pairs if pair), self.options.shards * self.options.scaler)
        chosen = choose_splits(sample, self.options.shards)
        write_splits(chosen, self.options.splits_dir)
        for line in chosen:
            yield None, line


if __name__ == "__main__":
    SampleSplitsJob.run()
