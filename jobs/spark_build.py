"""``webarchive-index build`` on Spark: a spark-submit entry script (see docs/spark.md).

    PYSPARK_PYTHON=.venv/bin/python .venv/bin/spark-submit --master 'local[2]' \\
        jobs/spark_build.py warcs/ -o out --shards 4

The same INPUT arguments and options as ``webarchive-index build`` (less its
mrjob ones, ``--runner`` and ``--mrjob-conf``), the same outputs (byte-identical
to the mrjob build of the same input), summary and exit status: 0 done, 1 failed
(nothing published), 2 bad usage, 3 done with problems reported. Without a
master from spark-submit (``python jobs/spark_build.py ...``) it runs on
``local[*]``. Inputs and OUTDIR may be local or ``s3://`` (read and written with
boto3 by the driver and the tasks); driver and executors must see the same ones.
"""
import argparse
import logging
import sys

from webarchive_indexing import cli
from webarchive_indexing.spark import CDX_BYTES_PER_TASK


def parser():
    p = argparse.ArgumentParser(
        prog="spark_build.py",
        description="Index every archive (one sorted .cdx.gz each), sample split points and write "
                    "a ZipNum cluster of --shards shards into OUTDIR/cluster, as Spark jobs.",
        epilog="Exit status: 0 done, 1 failed (nothing published), 2 bad usage, "
               "3 done but some input could not be indexed.")
    p.add_argument("inputs", nargs="+", metavar="INPUT", help=cli.BUILD_INPUT_HELP)
    p.add_argument("-o", "--output", required=True, metavar="OUTDIR", help="output directory")
    p.add_argument("--shards", type=cli._positive, default=1,
                   help="shards in the cluster (default 1; Common Crawl uses 300)")
    p.add_argument("--lines-per-block", type=cli._positive, default=3000,
                   help="CDX lines per gzip block (default 3000)")
    p.add_argument("--on-error", choices=("fail", "skip"), default="fail",
                   help="fail (default): any unreadable input stops the build before a cluster "
                        "is written; skip: index every readable record and report the rest")
    p.add_argument("--archives-per-task", type=cli._positive, default=1,
                   help="archives indexed by one Spark task (default 1)")
    p.add_argument("--cdx-bytes-per-task", type=cli._positive, default=CDX_BYTES_PER_TASK,
                   help="per-archive CDX files read by one sampling/cluster map task, in "
                        f"(compressed) bytes (default {CDX_BYTES_PER_TASK})")
    cli._add_bool(p, "verbose", False, "Spark's INFO log", "Spark's errors only (default)", short="-v")
    cli._add_bool(p, "progress", None, "show progress (default: when stderr is a terminal)",
                  "never show progress")
    cli._add_index_options(p, with_index_inputs=True)
    return p


def main(argv=None):
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(format="%(message)s", level=logging.INFO if args.verbose else logging.ERROR)
    from webarchive_indexing.pipeline import Progress
    from webarchive_indexing.spark import build_with_spark, spark_context

    sc, made_here = spark_context(verbose=args.verbose)
    try:
        return cli.report_build(lambda: build_with_spark(
            sc, args.inputs, args.output, args.shards, args.lines_per_block, args.cdx_format,
            args.on_error, args.skip_existing, args.input_root, Progress(enabled=args.progress),
            args.archives_per_task, args.cdx_bytes_per_task, args.legacy_prefix), args.output)
    finally:
        if made_here:
            sc.stop()


if __name__ == "__main__":
    sys.exit(main())
