"""The ``webarchive-index`` command.

    webarchive-index build warcs/ -o out --shards 4
    webarchive-index query out 'example.com/*'
    webarchive-index cdx warcs/example.warc.gz
    webarchive-index corpus --out corpus --files 2 --captures 500

Exit status: 0 done; 1 failed (nothing published); 2 bad usage; 3 done, but
some input could not be indexed (see the error report).
"""
import argparse
import logging
import os
import sys
import tempfile

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_PARTIAL = 0, 1, 2, 3

INPUT_HELP = ("WARC/ARC files (.warc.gz .warc .arc.gz .arc), directories (searched recursively), "
              "glob patterns, or manifest files listing one archive path per line; files, "
              "manifests and directories may be s3://bucket/key URLs (s3://bucket/prefix/ is "
              "listed like a directory)")


def _positive(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


def _add_bool(parser, name, default, help_on, help_off):
    dest = name.replace("-", "_")
    parser.add_argument(f"--{name}", dest=dest, action="store_true", default=default, help=help_on)
    parser.add_argument(f"--no-{name}", dest=dest, action="store_false", help=help_off)


def _add_index_options(parser):
    from .cdx import FORMATS
    parser.add_argument("--cdx-format", choices=FORMATS, default="cdxj",
                        help="CDXJ (default, as Common Crawl and pywb write it) or classic CDX11/CDX9")
    parser.add_argument("--input-root", action="append", default=[], metavar="DIR",
                        help="make the CDX 'filename' of archives under DIR relative to it "
                             "(directory inputs and manifests are roots already); repeatable")
    _add_bool(parser, "skip-existing", True,
              "keep CDX files from an earlier run and index only new archives (default)",
              "index every archive again")


def _parser():
    parser = argparse.ArgumentParser(
        prog="webarchive-index",
        description="Turn WARC/ARC collections into ZipNum CDX indexes that pywb, OpenWayback "
                    "and Common Crawl's index server read, and query them.",
        epilog="Exit status: 0 done, 1 failed (nothing published), 2 bad usage, "
               "3 done but some input could not be indexed.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    build = sub.add_parser(
        "build", help="index archives and build a ZipNum cluster",
        description="Index every archive (one sorted .cdx.gz each), sample split points and "
                    "write a ZipNum cluster of --shards shards into OUTDIR/cluster.",
        epilog="Output: OUTDIR/cdx/ (per-archive CDX), OUTDIR/splits.txt and splits.seq, "
               "OUTDIR/cluster/ (cdx-NNNNN.gz, part-NNNNN, cluster.idx, cluster.loc), "
               "OUTDIR/errors.json when there were problems.")
    build.add_argument("inputs", nargs="+", metavar="INPUT", help=INPUT_HELP)
    build.add_argument("-o", "--output", required=True, metavar="OUTDIR",
                       help="output directory, or s3://bucket/prefix")
    build.add_argument("--shards", type=_positive, default=1,
                       help="shards in the cluster (default 1; Common Crawl uses 300)")
    build.add_argument("--lines-per-block", type=_positive, default=3000,
                       help="CDX lines per gzip block (default 3000, as Common Crawl and the "
                            "Internet Archive)")
    build.add_argument("--runner", choices=("inline", "local", "spark"), default="local",
                       help="local (default): mrjob's local runner, on all cores; inline: "
                            "mrjob in one process, for debugging; spark: Spark jobs (pyspark), "
                            "the same output")
    build.add_argument("--spark-master", metavar="URL",
                       help="with --runner spark: the Spark master (default local[*])")
    build.add_argument("--on-error", choices=("fail", "skip"), default="fail",
                       help="fail (default): any unreadable input stops the build before a "
                            "cluster is written; skip: index every readable record and report "
                            "the rest")
    build.add_argument("--mrjob-conf", metavar="PATH", help="mrjob.conf to use (default: none)")
    build.add_argument("-v", "--verbose", action="store_true",
                       help="show what mrjob does (runner, steps, counters)")
    _add_bool(build, "progress", None, "show progress (default: when stderr is a terminal)",
              "never show progress")
    _add_index_options(build)

    cdx = sub.add_parser(
        "cdx", help="write the sorted CDX of each archive (no cluster)",
        description="Index archives in this process, one after the other: to stdout (one "
                    "sorted index per archive, in input order) or, with -o, into one .cdx.gz "
                    "per archive under OUTDIR.")
    cdx.add_argument("inputs", nargs="+", metavar="INPUT", help=INPUT_HELP)
    cdx.add_argument("-o", "--output", metavar="OUTDIR",
                     help="write OUTDIR/<name>.cdx.gz per archive instead of printing")
    cdx.add_argument("--on-error", choices=("fail", "skip"), default="fail",
                     help="fail (default): stop at the first unreadable archive; skip: index "
                          "what is readable and report the rest")
    _add_index_options(cdx)

    query = sub.add_parser(
        "query", help="look up captures in a cluster",
        description="Print the CDX lines of a cluster that match URL.",
        epilog="URL patterns as in the Common Crawl and pywb APIs: 'example.com/path*' is a "
               "prefix query, '*.example.com' a domain query.")
    query.add_argument("location", metavar="CLUSTER",
                       help="a build's output directory, its cluster/ directory or cluster.idx "
                            "(local, or s3://bucket/prefix)")
    query.add_argument("url", metavar="URL")
    query.add_argument("--match-type", choices=("exact", "prefix", "host", "domain"),
                       default="exact", help="how URL matches (default exact)")
    query.add_argument("--limit", type=_positive, help="print at most this many lines")

    finalize = sub.add_parser(
        "finalize", help="check the shards of a cluster job's output and publish its index",
        description="After jobs/zip_cluster.py ran on Hadoop/EMR: check that every shard "
                    "cdx-NNNNN.gz exists and matches its part-NNNNN, then write cluster.loc "
                    "and, last, cluster.idx. Nothing is written if a shard is missing.")
    finalize.add_argument("cluster_dir", metavar="CLUSTER_DIR")
    finalize.add_argument("--shards", type=_positive, required=True, help="shards the job wrote")
    finalize.add_argument("--location", metavar="URI",
                          help="where readers will find the shards (default: CLUSTER_DIR, "
                               "made absolute)")

    corpus = sub.add_parser(
        "corpus", help="generate a Common-Crawl-shaped test corpus",
        description="Write deterministic WARC/ARC files with a ground-truth manifest per file.",
        add_help=False)
    corpus.add_argument("corpus_args", nargs=argparse.REMAINDER)
    return parser


def _print_problems(summary_errors, stream):
    for error in summary_errors[:20]:
        stream.write(f"error: {error['file']}: offset {error['offset']}: {error['reason']}\n")
    if len(summary_errors) > 20:
        stream.write(f"error: ... and {len(summary_errors) - 20} more\n")


def _human(size):
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if size < 1000 or unit == "TB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000


def _print_summary(summary, stream):
    stream.write(
        f"archives: {summary.archives} ({summary.archives_skipped} already indexed), "
        f"{_human(summary.input_bytes)} read\n"
        f"records:  {summary.records} read, {summary.lines} CDX lines\n")
    if summary.published:
        stream.write(f"cluster:  {summary.shards} shards, {summary.blocks} blocks, "
                     f"{_human(summary.cluster_bytes)} in {summary.cluster_dir}\n")
    stream.write(f"errors:   {len(summary.errors)}"
                 + (f" (see {os.path.join(summary.out_dir, 'errors.json')})" if summary.errors else "")
                 + f"\ntime:     {summary.seconds:.1f} s\n")


def report_build(run, output):
    """Run ``run() -> Summary`` (a build) and report it the way ``build`` does; the exit status."""
    from .inputs import InputError
    from .pipeline import BuildFailed
    try:
        summary = run()
    except InputError as exc:
        sys.stderr.write(f"webarchive-index: {exc}\n")
        return EXIT_USAGE
    except BuildFailed as exc:
        _print_problems(exc.summary.errors, sys.stderr)
        _print_summary(exc.summary, sys.stderr)
        sys.stderr.write(f"webarchive-index: {exc}\n")
        return EXIT_FAILED
    _print_problems(summary.errors, sys.stderr)
    _print_summary(summary, sys.stderr)
    sys.stderr.write(f"\nquery it:  webarchive-index query {output} '{_example_pattern(summary)}'"
                     " --limit 10\n")
    return EXIT_PARTIAL if summary.errors else EXIT_OK


def _example_pattern(summary):
    """A domain query that finds something in the new cluster: the host of its first key."""
    from . import storage
    try:
        first = storage.read_range(storage.join(summary.cluster_dir, "cluster.idx"), 0, 4096)
    except OSError:
        first = b""
    host, bracket, _ = first.split(b" ", 1)[0].decode("utf-8", "replace").partition(")")
    if not bracket or not host:
        return "example.com/*"
    return "*." + ".".join(reversed(host.split(",")))


def _build(args):
    # mrjob's own warnings (no mrjob.conf, Hadoop-only options ignored locally) are noise here;
    # a failing step still raises and is reported
    logging.basicConfig(format="%(message)s", level=logging.INFO if args.verbose else logging.ERROR)
    from .pipeline import Progress, build
    engine, stop = None, None
    if args.runner == "spark":
        from .spark import SparkSteps, spark_context
        sc, made_here = spark_context(args.spark_master, args.verbose)
        engine, stop = SparkSteps(sc), sc.stop if made_here else None
    elif args.spark_master:
        sys.stderr.write("webarchive-index: --spark-master goes with --runner spark\n")
        return EXIT_USAGE
    try:
        return report_build(lambda: build(
            args.inputs, args.output, args.shards, args.lines_per_block, args.cdx_format,
            args.runner, args.on_error, args.skip_existing, args.input_root, args.mrjob_conf,
            Progress(enabled=args.progress), engine), args.output)
    finally:
        if stop:
            stop()


def _cdx(args):
    from .cdx import header_line, index_file
    from .inputs import InputError, expand
    from .steps import index_archive
    try:
        archives, missing, _ = expand(args.inputs, args.input_root)
    except InputError as exc:
        sys.stderr.write(f"webarchive-index: {exc}\n")
        return EXIT_USAGE
    errors = [{"file": m, "offset": 0, "reason": "no such file or directory"} for m in missing]
    out = sys.stdout
    for archive in archives:
        if errors and args.on_error == "fail":
            break
        if args.output:
            status = index_archive(archive.path, archive.name, args.output, args.cdx_format,
                                   args.skip_existing, "skip")
            errors += status["errors"]
            continue
        result = index_file(archive.path, archive.name, args.cdx_format)
        errors += [e.as_dict() for e in result.errors]
        if result.errors and args.on_error == "fail":
            break
        out.write(header_line(args.cdx_format))
        out.writelines(result.lines)
    _print_problems(errors, sys.stderr)
    if errors:
        return EXIT_FAILED if args.on_error == "fail" else EXIT_PARTIAL
    return EXIT_OK


def _query(args):
    from .query import open_cluster
    try:
        with tempfile.TemporaryDirectory(prefix="webarchive-index-query-") as work:
            cluster = open_cluster(args.location, work)
            out = sys.stdout.buffer
            for line in cluster.lookup(args.url, args.match_type, args.limit):
                out.write(line)
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"webarchive-index query: {exc}\n")
        return EXIT_FAILED
    return EXIT_OK


def _finalize(args):
    from .steps import ClusterIncomplete, finalize_cluster
    try:
        totals = finalize_cluster(args.cluster_dir, args.shards, location=args.location)
    except ClusterIncomplete as exc:
        sys.stderr.write(f"webarchive-index finalize: {exc}; nothing was published\n")
        return EXIT_FAILED
    sys.stderr.write(f"cluster:  {totals['shards']} shards, {totals['blocks']} blocks, "
                     f"{_human(totals['bytes'])} in {args.cluster_dir}\n")
    return EXIT_OK


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = _parser().parse_args(argv)
    if args.command == "corpus":
        from .corpus import main as corpus_main
        return corpus_main(args.corpus_args)
    command = {"build": _build, "cdx": _cdx, "query": _query, "finalize": _finalize}[args.command]
    try:
        return command(args)
    except BrokenPipeError:
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
