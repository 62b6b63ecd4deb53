"""Index WARC/ARC files: one sorted ``.cdx.gz`` per archive, beside a mirrored path.

Input: a manifest of archive paths, one per line. Output: one JSON status line
per archive (records, lines, errors), which ``webarchive-index build`` reads for
its summary and error report.

    python jobs/index_warcs.py -r local --cdx-dir out/cdx --input-root /data/crawl \\
        --cdx-format cdxj --on-error skip warcs.txt

``/data/crawl/seg/a.warc.gz`` is indexed into ``out/cdx/seg/a.cdx.gz`` with
``filename`` ``seg/a.warc.gz``.
"""
import webarchive_indexing.util.compat
from mrjob.job import MRJob
from mrjob.protocol import JSONValueProtocol, RawValueProtocol

from webarchive_indexing import options
from webarchive_indexing.inputs.discovery import relative_name
from webarchive_indexing.build.tasks import index_archive

COUNTERS = "webarchive-index"


class IndexWarcsJob(options.AbsolutePaths, MRJob):
    INPUT_PROTOCOL = RawValueProtocol
    OUTPUT_PROTOCOL = JSONValueProtocol
    # one archive or two per map task, however short the manifest lines are
    HADOOP_INPUT_FORMAT = "org.apache.hadoop.mapred.lib.NLineInputFormat"
    JOBCONF = {
        "mapreduce.input.lineinputformat.linespermap": "2",
        # tasks write their CDX files as side effects: never run one twice at once
        "mapreduce.map.speculative": "false",
        "mapreduce.task.timeout": "9600000",
    }

    def configure_args(self):
        super().configure_args()
        options.add(
            self, options.CDX_DIR, options.CDX_FORMAT, options.CDX_FIELDS, options.POST_APPEND,
            options.INPUT_ROOT.but(help="archive names (the CDX filename field) are relative to "
                                        "the longest matching root, else base names; repeatable"),
            options.SKIP_EXISTING,
            options.ON_ERROR.but(help="fail: a bad archive fails its task (default); skip: index "
                                      "what is readable and report the problems"),
            options.ZSTD_DICTIONARY.but(help="the zstd dictionary of .warc.zst files without a "
                                             "dictionary frame (a path or URI every task can "
                                             "read)"))

    def mapper(self, _, line):
        # NLineInputFormat hands the mapper "offset<TAB>path"
        path = line.split("\t")[-1].strip()
        if not path:
            return
        status = index_archive(path, relative_name(path, self.options.input_root),
                               self.options.cdx_dir, self.options.cdx_format,
                               self.options.skip_existing, self.options.on_error,
                               cdx_fields=self.options.cdx_fields,
                               zstd_dictionary=self.options.zstd_dictionary,
                               post_append=self.options.post_append)
        self.increment_counter(COUNTERS, "archives skipped" if status["skipped"] else "archives indexed")
        self.increment_counter(COUNTERS, "records", status["records"])
        self.increment_counter(COUNTERS, "cdx lines", status["lines"])
        if status["errors"]:
            self.increment_counter(COUNTERS, "archives with errors")
        yield None, status


if __name__ == "__main__":
    IndexWarcsJob.run()
