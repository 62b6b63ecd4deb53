"""Copy the records of a planned selection into new WARC files: one chunk per map task.

Input: the plan's ``chunks.txt`` (``OUT/plan/chunks.txt``, one chunk file a line, written
by ``webarchive-index copy plan``). Each map task copies its chunk's records, with one
ranged read each (``--threads`` in flight), from ``--warc-prefix`` + the CDX
``filename`` into ``OUT/<name>.warc.gz`` (or ``.warc.zst``, as the plan says), then writes ``<name>.failures.json`` (if any
record could not be copied) and, last, ``<name>.cdxj``; complete outputs are skipped.
Output: one JSON status line per chunk (records, copied, failed, bytes, skipped).

    webarchive-index copy plan s3://bucket/index --domains example.com,example.org \\
        -o s3://bucket/extract --records-per-file 10000
    python jobs/remote_copy.py -r emr --conf-path mrjob.conf --copy-dir s3://bucket/extract \\
        --warc-prefix s3://commoncrawl/ --threads 16 s3://bucket/extract/plan/chunks.txt
    webarchive-index copy status s3://bucket/extract

(``scripts/runremotecopy.sh`` runs the three; ``webarchive-index copy copy`` runs the
plan and this job on mrjob's inline or local runner, or on Spark.)
"""
import webarchive_indexing.util.compat
from mrjob.job import MRJob
from mrjob.protocol import JSONValueProtocol, RawValueProtocol

from webarchive_indexing import options
from webarchive_indexing.copy import ChunkSettings, run_chunk

COUNTERS = "webarchive-index copy"


class RemoteCopyJob(options.AbsolutePaths, MRJob):
    INPUT_PROTOCOL = RawValueProtocol
    OUTPUT_PROTOCOL = JSONValueProtocol
    # one chunk (one output file) per map task
    HADOOP_INPUT_FORMAT = "org.apache.hadoop.mapred.lib.NLineInputFormat"
    JOBCONF = {
        "mapreduce.input.lineinputformat.linespermap": "1",
        # tasks write their outputs as side effects: never run one twice at once
        "mapreduce.map.speculative": "false",
        "mapreduce.task.timeout": "9600000",
    }

    def configure_args(self):
        super().configure_args()
        options.add(self, *ChunkSettings.options(
            zstd_dictionary="the zstd dictionary of .warc.zst sources without a dictionary "
                            "frame (a path or URI every task can read)"))

    def mapper_init(self):
        self.reported = 0

    def _progress(self, records, _size):
        # counters also tell Hadoop that the task is alive
        if records - self.reported >= 100:
            self.increment_counter(COUNTERS, "records done", records - self.reported)
            self.reported = records

    def mapper(self, _, line):
        # NLineInputFormat hands the mapper "offset<TAB>path"
        path = line.split("\t")[-1].strip()
        if not path:
            return
        self.reported = 0
        status = run_chunk(path, ChunkSettings.parsed(self.options), self._progress)
        self.increment_counter(COUNTERS, "records done", status.records - self.reported)
        self.increment_counter(COUNTERS,
                               "outputs skipped" if status.skipped else "outputs written")
        self.increment_counter(COUNTERS, "records copied", status.copied)
        if status.failed:
            self.increment_counter(COUNTERS, "records failed", status.failed)
        yield None, status.as_dict()


if __name__ == "__main__":
    RemoteCopyJob.run()
