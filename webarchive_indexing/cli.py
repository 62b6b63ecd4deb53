"""The ``webarchive-index`` command.

    webarchive-index build warcs/ -o out --shards 4
    webarchive-index query out 'example.com/*'
    webarchive-index cdx warcs/example.warc.gz
    webarchive-index corpus --out corpus --files 2 --captures 500

Exit status: 0 done; 1 failed (nothing published); 2 bad usage; 3 done, but
some input could not be indexed (see the error report).
"""
import argparse
import json
import os
import sys

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


def _non_negative(text):
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 0, got {text!r}")
    return int(text)


def _add_bool(parser, name, default, help_on, help_off, short=None):
    dest = name.replace("-", "_")
    flags = [short, f"--{name}"] if short else [f"--{name}"]
    parser.add_argument(*flags, dest=dest, action="store_true", default=default, help=help_on)
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


def _add_root_option(parser):
    _add_bool(parser, "root-index", True,
              "also write cluster.root, a small index of cluster.idx with which a remote "
              "lookup needs at most 3 requests (default; pywb and others ignore it)",
              "write no cluster.root: remote lookups binary-search cluster.idx with more requests")


def version_line():
    """This package's version, and which member walker indexing runs (the compiled one is
    built at install time only where ISA-L's headers are found)."""
    from importlib.metadata import version

    from .records import CompiledMembers
    walker = ("compiled (ISA-L)" if CompiledMembers is not None else
              "pure Python (ISA-L's headers were missing at install: install libisal-dev or "
              "isa-l, then reinstall, for the faster compiled one)")
    return f"webarchive-index {version('webarchive-indexing')}, member walker: {walker}"


class _Version(argparse.Action):
    """--version, its line made only when asked (the metadata lookup costs start-up time)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="print the version and which member walker indexing runs, and exit")

    def __call__(self, parser, namespace, values, option_string=None):
        print(version_line())
        parser.exit()


# What ``export --format`` writes (the table of a cluster in Common Crawl's columnar schema)
EXPORT_FORMATS = ("parquet",)
EXPORT_HELP = "write a cluster's lines as another kind of index (a Parquet table)"


def _parser(argv=()):
    parser = argparse.ArgumentParser(
        prog="webarchive-index",
        description="Turn WARC/ARC collections into ZipNum CDX indexes that pywb, OpenWayback "
                    "and Common Crawl's index server read, and query them.",
        epilog="Exit status: 0 done, 1 failed (nothing published), 2 bad usage, "
               "3 done but some input could not be indexed.")
    parser.add_argument("--version", action=_Version)
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
    _add_root_option(build)
    build.add_argument("--mrjob-conf", metavar="PATH", help="mrjob.conf to use (default: none)")
    _add_bool(build, "verbose", False, "show what mrjob does (runner, steps, counters)",
              "only progress and the summary (default)", short="-v")
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
    cdx.add_argument("--cdx-fields", choices=("pywb", "cc"), default="pywb",
                     help="pywb (default): the lines pywb's indexer writes, byte for byte; cc: "
                          "also Common Crawl's fields where the WARC has them: charset and "
                          "languages (from the metadata record after a response), truncated "
                          "(WARC-Truncated) and redirect (a 3xx's Location, made absolute); "
                          "CDXJ only")
    _add_index_options(cdx)

    query = sub.add_parser(
        "query", help="look up captures in a cluster",
        description="Print the CDX lines of a cluster that match URL, as pywb's CDX server "
                    "returns them from the same cluster. A remote cluster is read with "
                    "ranged requests: with its cluster.root (see build --root-index), a "
                    "lookup needs 3 (root, a slice of cluster.idx, the blocks).",
        epilog="URL patterns as in the Common Crawl and pywb APIs: 'example.com/path*' is a "
               "prefix query, '*.example.com' a domain query. Filters as pywb's: "
               "'mime:html' (contains), '=status:200' (equals), '~url:.*\\.pdf$' (regex "
               "from the start), a leading '!' inverts; repeat --filter to require all.")
    query.add_argument("location", metavar="CLUSTER",
                       help="a build's output directory, its cluster/ directory or cluster.idx: "
                            "a local path, s3://bucket/prefix or http(s)://host/path")
    query.add_argument("url", metavar="URL")
    query.add_argument("--match-type", choices=("exact", "prefix", "host", "domain"),
                       default="exact", help="how URL matches, unless it has a wildcard "
                                             "(default exact)")
    query.add_argument("--from", dest="from_ts", metavar="TS",
                       help="captures at or after timestamp TS (1-14 digits: 2024, 20240131...)")
    query.add_argument("--to", dest="to_ts", metavar="TS",
                       help="captures at or before timestamp TS (2023 means up to 20231231235959)")
    query.add_argument("--filter", action="append", default=[], metavar="[!][=|~]FIELD:VALUE",
                       help="keep captures whose FIELD (url, mime, status, digest, filename...) "
                            "contains VALUE, equals it (=) or matches the regex (~); repeatable")
    query.add_argument("--limit", type=_positive, help="print at most this many lines")
    query.add_argument("--output", choices=("cdxj", "json", "cdx11"), default="cdxj",
                       help="cdxj (default; the lines as stored in a CDXJ cluster), json (one "
                            "object per line) or cdx11 (classic 11-field CDX)")
    query.add_argument("--page", type=_non_negative, metavar="N",
                       help="only page N (from 0) of the result, in pages of --page-size blocks "
                            "of cluster.idx, as pywb's page= (without: every page)")
    query.add_argument("--page-size", type=_positive, metavar="BLOCKS",
                       help="blocks per page with --page or --show-num-pages (default 10, "
                            "as pywb)")
    _add_bool(query, "show-num-pages", False,
              "print only the page count as pywb's showNumPages does: "
              '{"pages": ..., "pageSize": ..., "blocks": ...}', "print the lines (default)")
    _add_bool(query, "verbose", False, "print every request made to a remote cluster on stderr",
              "print no requests (default)", short="-v")

    if "export" in argv:
        _add_export_parser(sub)
    else:
        sub.add_parser("export", help=EXPORT_HELP)
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
    _add_root_option(finalize)

    corpus = sub.add_parser(
        "corpus", help="generate a Common-Crawl-shaped test corpus",
        description="Write deterministic WARC/ARC files with a ground-truth manifest per file.",
        add_help=False)
    corpus.add_argument("corpus_args", nargs=argparse.REMAINDER)
    if "copy" in argv:
        _add_copy_parser(sub)
    else:
        # copy's options take their defaults from its module, whose import would add to the
        # start-up time of every other command; listed here only, for the overview
        sub.add_parser("copy", help=COPY_HELP)
    return parser


def _add_export_parser(sub):
    # columnar's defaults; imported only for this command (the others start faster)
    from .columnar import COMPRESSIONS, DEFAULT_COMPRESSION, ROW_GROUP_ROWS
    export = sub.add_parser(
        "export", help=EXPORT_HELP,
        description="Read every line of a cluster (ours or one Common Crawl publishes), in "
                    "order, block by block, and write it as --format. parquet: a table in "
                    "Common Crawl's columnar schema (cc-index-table's flat one, the same "
                    "column names and types), partitioned as crawl=NAME/subset=SUBSET/ "
                    "directories, one part-NNNNN.parquet per cluster shard and partition, "
                    "rows in URL key order; DuckDB, Spark SQL, Athena, pyarrow and Polars "
                    "read it (see docs/columnar.md).",
        epilog="Exit status: 0 done, 1 failed (no table written), 2 bad usage, 3 done but "
               "some lines could not become rows (listed).")
    export.add_argument("location", metavar="CLUSTER",
                        help="a build's output directory, its cluster/ directory or "
                             "cluster.idx: a local path, s3://bucket/prefix or http(s)://...")
    export.add_argument("--format", choices=EXPORT_FORMATS, required=True,
                        help="parquet: a table in Common Crawl's columnar schema")
    export.add_argument("-o", "--output", required=True, metavar="DIR",
                        help="the table's directory: local (replaced once the new table is "
                             "complete) or an empty s3://bucket/prefix")
    export.add_argument("--crawl", metavar="NAME",
                        help="the crawl partition of rows from archives other than Common "
                             "Crawl's (theirs, with segment and subset, comes from the WARC "
                             "path) (default: the name of the cluster's output directory)")
    export.add_argument("--row-group-rows", type=_positive, default=ROW_GROUP_ROWS, metavar="N",
                        help=f"rows per Parquet row group (default {ROW_GROUP_ROWS}: a few MB, "
                             "fine enough for a one-host query to skip most of a file)")
    export.add_argument("--compression", choices=COMPRESSIONS, default=DEFAULT_COMPRESSION,
                        help="Parquet compression (default zstd; Common Crawl's files use gzip)")
    _add_bool(export, "progress", None, "show progress (default: when stderr is a terminal)",
              "never show progress")


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
    import logging
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
            Progress(enabled=args.progress), engine, args.root_index), args.output)
    finally:
        if stop:
            stop()


def _cdx(args):
    from .cdx import header_line, index_file
    from .inputs import InputError, expand
    if args.output:
        from .steps import index_archive
    if args.cdx_fields == "cc" and args.cdx_format != "cdxj":
        sys.stderr.write("webarchive-index cdx: --cdx-fields cc needs --cdx-format cdxj (CDX11 "
                         "and CDX9 have no columns for charset and languages)\n")
        return EXIT_USAGE
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
                                   args.skip_existing, "skip", args.cdx_fields)
            errors += status["errors"]
            continue
        result = index_file(archive.path, archive.name, args.cdx_format,
                            cdx_fields=args.cdx_fields)
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
    from . import cdxapi, storage
    from .query import DEFAULT_PAGE_SIZE, open_cluster, search_range
    try:
        if args.page is not None and args.show_num_pages:
            raise ValueError("--page and --show-num-pages exclude each other: ask for the count first")
        if args.page_size and args.page is None and not args.show_num_pages:
            raise ValueError("--page-size goes with --page N or --show-num-pages")
        start, end = (key.encode() for key in search_range(args.url, args.match_type))
        filters = [cdxapi.parse_filter(spec) for spec in args.filter]
        cdxapi.check_timestamp(args.from_ts, "--from")
        cdxapi.check_timestamp(args.to_ts, "--to")
    except ValueError as exc:
        sys.stderr.write(f"webarchive-index query: {exc}\n")
        return EXIT_USAGE
    page_size = args.page_size or DEFAULT_PAGE_SIZE

    def show(method, url, byte_range):
        shown = f" bytes={byte_range[0]}-{byte_range[1]}" if byte_range else ""
        sys.stderr.write(f"request: {method} {url}{shown}\n")

    if args.verbose:
        storage.add_request_listener(show)
    try:
        cluster = open_cluster(args.location)
        out = sys.stdout.buffer
        if args.show_num_pages:
            out.write((json.dumps(cluster.page_info(start, end, page_size)) + "\n").encode())
            return EXIT_OK
        lines = (cluster.page(start, end, args.page, page_size) if args.page is not None
                 else cluster.lookup_range(start, end))
        out.writelines(cdxapi.process(lines, filters, args.from_ts, args.to_ts, args.limit,
                                      args.output))
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"webarchive-index query: {exc}\n")
        return EXIT_FAILED
    finally:
        if args.verbose:
            storage.remove_request_listener(show)
    return EXIT_OK


def _export(args):
    from .columnar import export_cluster
    from .pipeline import Progress
    progress = Progress(enabled=args.progress)
    lines = [0]

    def show(count):
        lines[0] = count

    progress.step("exporting", lambda: f"{lines[0]} lines")
    try:
        summary = export_cluster(args.location, args.output, args.crawl, args.row_group_rows,
                                 args.compression, show)
    except FileExistsError as exc:
        sys.stderr.write(f"webarchive-index export: {exc}\n")
        return EXIT_USAGE
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"webarchive-index export: {exc}; no table was written\n")
        return EXIT_FAILED
    finally:
        progress.done()
    for error in summary.errors[:20]:
        sys.stderr.write(f"error: shard {error['shard']} line {error['line']} "
                         f"({error['key']}): {error['reason']}\n")
    if summary.error_count > 20:
        sys.stderr.write(f"error: ... and {summary.error_count - 20} more\n")
    rate = summary.lines / summary.seconds if summary.seconds else 0
    sys.stderr.write(
        f"table:    {summary.rows} rows from {summary.lines} lines of {summary.shards} shards, "
        f"{len(summary.files)} files, {_human(summary.bytes)} in {summary.out_dir}\n"
        f"errors:   {summary.error_count}\n"
        f"time:     {summary.seconds:.1f} s ({rate:.0f} lines/s)\n"
        f"\nquery it: duckdb -c \"SELECT crawl, subset, count(*) FROM read_parquet("
        f"'{summary.out_dir}/*/*/*.parquet', hive_partitioning = true) GROUP BY ALL\"\n")
    return EXIT_PARTIAL if summary.error_count else EXIT_OK


def _finalize(args):
    from .steps import ClusterIncomplete, finalize_cluster
    try:
        totals = finalize_cluster(args.cluster_dir, args.shards, location=args.location,
                                  root=args.root_index)
    except ClusterIncomplete as exc:
        sys.stderr.write(f"webarchive-index finalize: {exc}; nothing was published\n")
        return EXIT_FAILED
    sys.stderr.write(f"cluster:  {totals['shards']} shards, {totals['blocks']} blocks, "
                     f"{_human(totals['bytes'])} in {args.cluster_dir}\n")
    return EXIT_OK


COPY_SELECTION_HELP = (
    "Selection: a bare name (example.com) or *.example.com is that domain and all its "
    "subdomains (www.example.com, a.b.example.com; not examples.com); anything with a / or "
    "ending in * (example.com/path, http://example.com/a*, www.example.com/*) is a URL "
    "prefix. Keys are SURT keys as in pywb and Common Crawl's index: http and https, "
    "'www.' and default ports make no difference, so www.example.com = example.com. "
    "Overlapping inputs are merged: a record is selected once.")


def _add_copy_selection(parser):
    parser.add_argument("location", metavar="CLUSTER",
                        help="the cluster: a build's output directory, its cluster/ directory "
                             "or cluster.idx (local, s3:// or http(s)://)")
    parser.add_argument("--domains", action="append", default=[], metavar="LIST",
                        help="comma-separated domains, host names or URL prefixes (repeatable)")
    parser.add_argument("--domains-file", action="append", default=[], metavar="FILE",
                        help="a file (local or s3://) of domains, host names or URL prefixes, "
                             "one a line, '#' starts a comment (repeatable)")


def _add_copy_plan_options(parser):
    from .copy import DEFAULT_NAME_PREFIX, DEFAULT_RECORDS_PER_FILE
    parser.add_argument("-o", "--output", required=True, metavar="OUT",
                        help="output directory, local or s3://bucket/prefix (the plan goes to "
                             "OUT/plan/)")
    parser.add_argument("--records-per-file", type=_positive, default=DEFAULT_RECORDS_PER_FILE,
                        help=f"records per output WARC file (default {DEFAULT_RECORDS_PER_FILE})")
    parser.add_argument("--name-prefix", default=DEFAULT_NAME_PREFIX, metavar="NAME",
                        help=f"output files are NAME-00000.warc.gz, ... (default "
                             f"{DEFAULT_NAME_PREFIX})")


COPY_HELP = "copy the captures of some domains or URL prefixes into new WARC files"


def _add_copy_parser(sub):
    from .copy import DEFAULT_RETRIES, DEFAULT_THREADS
    copy = sub.add_parser(
        "copy", help=COPY_HELP,
        description="Find the captures of domains, host names or URL prefixes in a cluster "
                    "and copy their records (one ranged read each) into new .warc.gz files, "
                    "each with its own CDXJ index. 'check' counts what a copy takes; 'copy' "
                    "plans and copies; 'plan' and 'status' are the first and last steps on "
                    "their own (scripts/runremotecopy.sh runs the copy job on Hadoop/EMR "
                    "between them).",
        epilog=COPY_SELECTION_HELP)
    actions = copy.add_subparsers(dest="copy_command", required=True, metavar="ACTION")

    check = actions.add_parser(
        "check", help="count the captures, WARC files and bytes a copy would take",
        description="Print, per input and in total (each record once), the captures, the "
                    "distinct WARC files and the bytes to copy, from the index alone.",
        epilog=COPY_SELECTION_HELP)
    _add_copy_selection(check)
    _add_bool(check, "json", False, "print JSON instead of a table", "print a table (default)")

    plan = actions.add_parser(
        "plan", help="write the plan of a copy (OUT/plan/) and print its chunk list",
        description="Split the selected index lines, in index order, into chunks of at most "
                    "--records-per-file lines (OUT/plan/NAME-NNNNN.cdx, one per output file) "
                    "and write OUT/plan/chunks.txt (the copy job's input) and plan.json. An "
                    "existing plan of the same copy is kept; one of another copy is refused. "
                    "Prints the URI of chunks.txt.",
        epilog=COPY_SELECTION_HELP)
    _add_copy_selection(plan)
    _add_copy_plan_options(plan)

    run = actions.add_parser(
        "copy", help="plan and copy the records into new WARC files",
        description="Plan the copy (or reuse the plan in OUT), then copy every planned "
                    "record: one ranged read each from --warc-prefix + its CDX filename, "
                    "--threads in flight per task, into OUT/NAME-NNNNN.warc.gz (a warcinfo "
                    "record, then the original gzip members byte for byte), each followed by "
                    "its index NAME-NNNNN.cdxj. Transient errors (503 SlowDown, resets, short "
                    "reads) are retried with backoff; records that still fail are listed in "
                    "NAME-NNNNN.failures.json. Rerunning the same command skips complete "
                    "outputs and redoes the rest.",
        epilog=COPY_SELECTION_HELP + " Exit status: 0 every record copied, 1 some records "
               "failed or outputs are missing (rerun to retry them), 2 bad usage.")
    _add_copy_selection(run)
    _add_copy_plan_options(run)
    run.add_argument("--warc-prefix", required=True, metavar="PREFIX",
                     help="where the archives named by the CDX 'filename' are: s3://bucket/ "
                          "(Common Crawl: s3://commoncrawl/), https://host/path/ or a local "
                          "directory")
    run.add_argument("--threads", type=_positive, default=DEFAULT_THREADS,
                     help=f"range requests in flight per task (default {DEFAULT_THREADS})")
    run.add_argument("--retries", type=_non_negative, default=DEFAULT_RETRIES,
                     help="further reads of a record after a transient error, with backoff "
                          f"(default {DEFAULT_RETRIES})")
    run.add_argument("--runner", choices=("inline", "local", "spark"), default="local",
                     help="local (default): mrjob's local runner, on all cores; inline: mrjob "
                          "in one process; spark: one Spark task per output file (pyspark). "
                          "Hadoop/EMR: scripts/runremotecopy.sh")
    run.add_argument("--spark-master", metavar="URL",
                     help="with --runner spark: the Spark master (default local[*])")
    run.add_argument("--mrjob-conf", metavar="PATH", help="mrjob.conf to use (default: none)")
    _add_bool(run, "verbose", False, "show what mrjob or Spark do",
              "only progress and the summary (default)", short="-v")
    _add_bool(run, "progress", None, "show progress (default: when stderr is a terminal)",
              "never show progress")

    status = actions.add_parser(
        "status", help="what an output holds of its plan",
        description="Count the complete outputs, those with failures (listing their reports) "
                    "and those not written. Exit status 0 when every record was copied, 1 "
                    "otherwise.")
    status.add_argument("output", metavar="OUT", help="the copy's output directory")
    _add_bool(status, "json", False, "print JSON", "print a summary (default)")


class _CopyUsage(ValueError):
    """Options of ``copy`` that cannot work, found before anything runs."""


def _copy_inputs(args):
    from .copy import SelectionError, parse_selection, read_selection_file, split_list
    items = []
    for value in args.domains:
        items += split_list(value)
    for path in args.domains_file:
        items += read_selection_file(path)
    if not items:
        raise SelectionError("nothing selected: give --domains example.com,example.org "
                             "or --domains-file FILE (one domain, host or URL prefix a line)")
    return parse_selection(items)


def _copy_check_output(output, name):
    from . import storage
    if "://" in output and not storage.is_s3(output):
        raise _CopyUsage(f"{name} {output}: expected a local directory or s3://bucket/prefix")


def _copy_check(args):
    import json
    from .copy import check, human
    from .query import open_cluster
    inputs = _copy_inputs(args)
    per_input, total = check(open_cluster(args.location), inputs)
    out = sys.stdout
    if args.json:
        json.dump({"inputs": [{"input": i.text, "kind": i.kind, **t.as_dict()}
                              for i, t in zip(inputs, per_input)],
                   "total": total.as_dict()}, out, indent=1)
        out.write("\n")
        return EXIT_OK
    rows = [(t.captures, t.warc_files, t.bytes, human(t.bytes), i.text)
            for i, t in zip(inputs, per_input)]
    rows.append((total.captures, total.warc_files, total.bytes, human(total.bytes),
                 "total (each record once)"))
    out.write(f"{'captures':>10} {'WARC files':>10} {'bytes':>14} {'size':>9}  input\n")
    for captures, files, size, shown, text in rows:
        out.write(f"{captures:>10} {files:>10} {size:>14} {shown:>9}  {text}\n")
    return EXIT_OK


def _copy_plan(args):
    from . import storage
    from .copy import ensure_plan
    from .query import open_cluster
    inputs = _copy_inputs(args)
    _copy_check_output(args.output, "-o/--output")
    plan = ensure_plan(lambda: open_cluster(args.location), args.location, inputs, args.output,
                       args.records_per_file, args.name_prefix)
    _print_copy_plan(plan, sys.stderr)
    if plan.chunks:  # nothing printed: nothing to copy
        sys.stdout.write(storage.join(plan.output, "plan", "chunks.txt") + "\n")
    return EXIT_OK


def _print_copy_plan(plan, stream):
    from . import storage
    from .copy import human
    stream.write(f"plan:     {plan.records} records, {human(plan.bytes)} from {plan.warc_files} "
                 f"WARC files -> {len(plan.chunks)} output files "
                 f"({storage.join(plan.output, 'plan', 'plan.json')})\n")


def _print_copy_survey(found, stream, skipped=None):
    from .copy import human
    plan = found.plan
    already = f" ({skipped} files were complete already)" if skipped else ""
    stream.write(f"copied:   {found.copied} of {plan.records} records, "
                 f"{human(found.copied_bytes)}, {len(found.complete)} of {len(plan.chunks)} "
                 f"output files complete{already}\n")
    if found.failed:
        stream.write(f"failed:   {found.failed} records in {len(found.with_failures)} files; "
                     "the reasons are in:\n")
        for report in found.reports[:20]:
            stream.write(f"  {report}\n")
        if len(found.reports) > 20:
            stream.write(f"  ... and {len(found.reports) - 20} more\n")
    if found.missing:
        stream.write(f"missing:  {len(found.missing)} output files were not written "
                     f"({', '.join(found.missing[:5])}{', ...' if len(found.missing) > 5 else ''})\n")
    if not found.done:
        stream.write("rerun the same command to retry what is missing or failed\n")


def _copy_copy(args):
    import logging
    import os
    import shutil
    import tempfile
    import time
    from . import storage
    from .copy import CopyProgress, ensure_plan, read_progress, run_copy, survey
    from .query import open_cluster
    started = time.monotonic()
    logging.basicConfig(format="%(message)s", level=logging.INFO if args.verbose else logging.ERROR)
    inputs = _copy_inputs(args)
    _copy_check_output(args.output, "-o/--output")
    prefix = args.warc_prefix
    if prefix.startswith(("hdfs://", "s3a://")):
        raise _CopyUsage(f"--warc-prefix {prefix}: hdfs:// and s3a:// have no ranged reads here "
                         "(every record would read its archive from the start); use s3:// for "
                         "S3, or https://")
    if "://" in prefix and not prefix.startswith(("s3://", "http://", "https://")):
        raise _CopyUsage(f"--warc-prefix {prefix}: expected s3://bucket/, http(s)://host/ or a "
                         "local directory")
    if "://" not in prefix and not os.path.isdir(prefix):
        raise _CopyUsage(f"--warc-prefix {prefix}: no such directory (a local prefix is the "
                         "directory the CDX filenames are relative to)")
    if args.spark_master and args.runner != "spark":
        raise _CopyUsage("--spark-master goes with --runner spark")
    if args.mrjob_conf and args.runner == "spark":
        raise _CopyUsage("--mrjob-conf goes with --runner inline or local")

    progress = CopyProgress(enabled=args.progress)
    plan = ensure_plan(lambda: open_cluster(args.location), args.location, inputs, args.output,
                       args.records_per_file, args.name_prefix)
    _print_copy_plan(plan, sys.stderr)
    if not plan.chunks:
        sys.stderr.write("nothing to copy: the selection matches no capture in the index\n")
        return EXIT_OK
    before = survey(plan.output, plan)
    todo = [path for path, chunk in zip(plan.chunk_paths(), plan.chunks)
            if chunk["name"] not in before.complete]
    sc = stop = None
    if args.runner == "spark" and todo:
        from .spark import spark_context
        sc, made_here = spark_context(args.spark_master, args.verbose)
        stop = sc.stop if made_here else None
    master = sc.master if sc else "local"
    work = tempfile.mkdtemp(prefix="webarchive-copy-progress-")
    failed_job = None
    try:
        complete = [c for c in plan.chunks if c["name"] in before.complete]
        base = (sum(c["records"] for c in complete), sum(c["bytes"] for c in complete))

        def done():
            records, size = read_progress(work)
            return base[0] + records, base[1] + size

        progress.start("copying", done, plan.records, plan.bytes)
        run_copy(todo, plan.output, prefix, args.threads, args.retries, args.runner,
                 args.mrjob_conf, sc, work if master.startswith("local") else None)
    except Exception as exc:  # a task that failed whole: say so, then show what is there
        failed_job = exc
    finally:
        progress.stop()
        shutil.rmtree(work, ignore_errors=True)
        if stop:
            stop()
    if failed_job is not None:
        if args.verbose:
            import traceback
            traceback.print_exception(failed_job)
        sys.stderr.write(f"webarchive-index copy: the copy job failed: {failed_job}\n")
    found = survey(plan.output, plan)
    _print_copy_survey(found, sys.stderr, len(before.complete) or None)
    sys.stderr.write(f"time:     {time.monotonic() - started:.1f} s\n")
    if found.done and failed_job is None:
        sys.stderr.write(f"\nindex:    {storage.join(plan.output, plan.name_prefix)}-*.cdxj\n")
        return EXIT_OK
    return EXIT_FAILED


def _copy_status(args):
    import json
    from .copy import survey
    found = survey(args.output)
    if args.json:
        json.dump({"records": found.plan.records, "copied": found.copied, "failed": found.failed,
                   "complete": found.complete, "with_failures": found.with_failures,
                   "missing": found.missing, "reports": found.reports}, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        _print_copy_plan(found.plan, sys.stdout)
        _print_copy_survey(found, sys.stdout)
    return EXIT_OK if found.done else EXIT_FAILED


def _copy(args):
    from .copy import PlanMismatch, SelectionError
    action = {"check": _copy_check, "plan": _copy_plan, "copy": _copy_copy,
              "status": _copy_status}[args.copy_command]
    try:
        return action(args)
    except (SelectionError, PlanMismatch, _CopyUsage) as exc:
        sys.stderr.write(f"webarchive-index copy {args.copy_command}: {exc}\n")
        return EXIT_USAGE
    except (OSError, ValueError) as exc:  # an unreadable cluster, source or output
        sys.stderr.write(f"webarchive-index copy {args.copy_command}: {exc}\n")
        return EXIT_FAILED

def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = _parser(argv).parse_args(argv)
    if args.command == "corpus":
        from .corpus import main as corpus_main
        return corpus_main(args.corpus_args)
    command = {"build": _build, "cdx": _cdx, "query": _query, "export": _export,
               "finalize": _finalize, "copy": _copy}[args.command]
    try:
        return command(args)
    except BrokenPipeError:
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
