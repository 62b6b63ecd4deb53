"""``webarchive-index build`` on Spark: a spark-submit entry script (see docs/spark.md).

    PYSPARK_PYTHON=.venv/bin/python .venv/bin/spark-submit --master 'local[2]' \\
        jobs/spark_build.py warcs/ -o out --shards 4

The same INPUT arguments and options as ``webarchive-index build`` (less
``--runner``, ``--mrjob-conf`` and ``--spark-master``: spark-submit's ``--master``
chooses; and less ``--update``, which runs on the local engine), declared once for both in ``options``, the same outputs (byte-identical
to the mrjob build of the same input), summary and exit status: 0 done, 1 failed
(nothing published), 2 bad usage, 3 done with problems reported. Without a
master from spark-submit (``python jobs/spark_build.py ...``) it runs on
``local[*]``. Inputs and OUTDIR may be local or ``s3://`` (read and written with
boto3 by the driver and the tasks); driver and executors must see the same ones.
"""
import argparse
import sys

from webarchive_indexing import options as o
from webarchive_indexing.commands.build import build
from webarchive_indexing.commands.report import log_to_stderr, report_build


def parser():
    p = argparse.ArgumentParser(
        prog="spark_build.py",
        description="Index every archive (one sorted .cdx.gz each), read every index input, "
                    "sample split points and write a ZipNum cluster of --shards shards of all "
                    "their lines into OUTDIR/cluster, as Spark jobs.",
        epilog="Exit status: 0 done, 1 failed (nothing published), 2 bad usage, "
               "3 done but some input could not be indexed.")
    o.add(p, o.BUILD_INPUTS, o.OUTDIR, o.BUILD_SHARDS, o.BUILD_LINES_PER_BLOCK, o.BUILD_BLOCK_DEFLATE,
          o.SPLITS_FROM,
          o.ON_ERROR, o.ROOT_INDEX,
          o.ARCHIVES_PER_TASK, o.CDX_BYTES_PER_TASK,
          o.VERBOSE.but(help="Spark's INFO log", off_help="Spark's errors only (default)"),
          o.PROGRESS, *o.BUILD_INDEXING, o.PARQUET, *o.TABLE)
    return p


def main(argv=None):
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    log_to_stderr(args.verbose)
    options = o.BuildOptions.from_args(args, runner="spark")
    return report_build(lambda: build(args.inputs, args.output, options), args.output)


if __name__ == "__main__":
    sys.exit(main())
