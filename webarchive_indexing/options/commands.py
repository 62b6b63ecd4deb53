"""Each command's parser: its description, its epilog and which options of the table it
takes, as ``webarchive-index COMMAND --help`` shows them."""
import argparse

from .. import options as o


COPY_SELECTION_HELP = (
    "Selection: a bare name (example.com) or *.example.com is that domain and all its "
    "subdomains (www.example.com, a.b.example.com; not examples.com); anything with a / or "
    "ending in * (example.com/path, http://example.com/a*, www.example.com/*) is a URL "
    "prefix. Keys are SURT keys as in pywb and Common Crawl's index: http and https, "
    "'www.' and default ports make no difference, so www.example.com = example.com. "
    "Overlapping inputs are merged: a record is selected once.")


def parser(version, command=None):
    """The parser of the command line; of the subcommands, only ``command``'s arguments (all
    without one): building them all would add to the start-up time of every command.
    ``version``: the action of --version."""
    parser = argparse.ArgumentParser(
        prog="webarchive-index",
        description="Turn WARC/ARC collections into ZipNum CDX indexes that pywb, OpenWayback "
                    "and Common Crawl's index server read, and query them.",
        epilog="Exit status: 0 done, 1 failed (nothing published), 2 bad usage, "
               "3 done but some input could not be indexed.")
    parser.add_argument("--version", action=version)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (help_line, add) in PARSERS.items():
        if command in (None, name):
            add(sub, help_line)
        else:
            sub.add_parser(name, help=help_line)
    return parser


def _build_parser(sub, help_line):
    build = sub.add_parser(
        "build", help=help_line, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Index every archive (one sorted .cdx.gz each), read every index input,\n"
                    "sample split points (or take them from --splits) and write a ZipNum\n"
                    "cluster of --shards shards of all their lines into OUTDIR/cluster; or,\n"
                    "with --update, merge new inputs into the cluster in OUTDIR and take out\n"
                    "the archives --remove names. Malformed lines of index inputs are\n"
                    "problems as unreadable records are (--on-error).\n\n"
                    "Engines: --runner local (default) merges the sorted CDX files on this\n"
                    "machine's cores; mrjob and inline run the MRJob jobs of jobs/ as Hadoop\n"
                    "would (scripts/ run them on Hadoop and EMR); spark runs Spark jobs.\n"
                    "Their clusters are byte-identical for the same inputs and split points\n"
                    "(docs/local-engine.md).",
        epilog="output:\n" + o.BUILD_OUTPUT)
    o.add(build, o.BUILD_INPUTS.but(nargs="*"), o.OUTDIR, o.BUILD_SHARDS,
          o.BUILD_LINES_PER_BLOCK, o.BUILD_BLOCK_DEFLATE, o.SPLITS_FROM, o.UPDATE, o.REMOVE, o.ALLOW_EMPTY_REMOVE,
          o.RUNNER, o.WORKERS,
          o.FAN_IN, o.WORK_DIR, o.SPARK_MASTER, o.ON_ERROR, o.ROOT_INDEX, o.MRJOB_CONF,
          o.VERBOSE, o.PROGRESS, *o.BUILD_INDEXING, o.PARQUET, *o.TABLE)


def _cdx_parser(sub, help_line):
    cdx = sub.add_parser(
        "cdx", help=help_line,
        description="Index archives in this process, one after the other: to stdout (one "
                    "sorted index of them all, their sorted lines merged) or, with -o, into "
                    "one .cdx.gz per archive under OUTDIR.")
    o.add(cdx, o.INPUTS,
          o.OUTDIR.but(required=False,
                       help="write OUTDIR/<name>.cdx.gz per archive instead of printing"),
          o.ON_ERROR.but(help="fail (default): stop at the first unreadable archive; skip: "
                              "index what is readable and report the rest"),
          *o.INDEXING)


def _query_parser(sub, help_line):
    query = sub.add_parser(
        "query", help=help_line,
        description="Print the CDX lines of a cluster that match URL, as pywb's CDX server "
                    "returns them from the same cluster. A remote cluster is read with "
                    "ranged requests: with its cluster.root (see build --root-index), a "
                    "lookup needs 3 (root, a slice of cluster.idx, the blocks).",
        epilog="URL patterns as in the Common Crawl and pywb APIs: 'example.com/path*' is a "
               "prefix query, '*.example.com' a domain query. Filters as pywb's: "
               "'mime:html' (contains), '=status:200' (equals), '~url:.*\\.pdf$' (regex "
               "from the start), a leading '!' inverts; repeat --filter to require all. "
               "The options are the CDX API's parameters, as serve takes them: " +
               ", ".join(f"{option.name} = {'/'.join(option.params)}" for option in o.CDX_API)
               + ".")
    o.add(query, o.CLUSTER, *o.CDX_API, *o.ACCESS_CONTROL, o.QUERY_CHECK,
          o.VERBOSE.but(help="print every request made to a remote cluster on stderr",
                        off_help="print no requests (default)"))


def _export_parser(sub, help_line):
    export = sub.add_parser(
        "export", help=help_line,
        description="Stream every line of a ZipNum cluster (ours or one Common Crawl "
                    "publishes), in order, into another index. cdx: one flat sorted index (for "
                    "tools that read flat files: OpenWayback, pywb's CDX directories, "
                    "sort/grep), to stdout, or to FILE, which appears only once complete. "
                    "parquet: a table in Common Crawl's columnar schema (cc-index-table's flat "
                    "one, the same column names and types), partitioned as "
                    "crawl=NAME/subset=SUBSET/ directories, one part-NNNNN.parquet per shard "
                    "and partition, rows in URL key order, into DIR, published whole; DuckDB, "
                    "Spark SQL, Athena, pyarrow and Polars read it (see docs/columnar.md).",
        epilog="Exit status: 0 done; 1 failed, nothing written (a cluster with a malformed "
               "line or out of order fails); 2 bad usage; 3 (parquet) done, but some lines "
               "could not become rows (listed).")
    o.add(export, o.CLUSTER, o.EXPORT_OUTPUT, o.EXPORT_FORMAT, *o.TABLE, o.PROGRESS,
          *o.ACCESS_CONTROL)


def _serve_parser(sub, help_line):
    serve = sub.add_parser(
        "serve", help=help_line,
        description="Answer the CDX API (the parameters of query, named as pywb, the Wayback "
                    "Machine and Common Crawl name them) at /NAME/cdx and /NAME-index, list the "
                    "collections at /collinfo.json, and offer a search page at /. Answers "
                    "stream; errors are pywb's {\"message\": ...} with status 400 (a bad "
                    "parameter), 404, 500 (a damaged cluster), 502 (one that cannot be read) or "
                    "503 (over --timeout). Stop with SIGTERM or Ctrl-C: requests in flight finish.",
        epilog="Example: webarchive-index serve cc=out/cluster all=crawl1/,crawl2/ --port 8080; "
               "then curl 'http://127.0.0.1:8080/cc/cdx?url=*.example.com&output=json&limit=5'")
    o.add(serve, *o.SERVE)


def _finalize_parser(sub, help_line):
    finalize = sub.add_parser(
        "finalize", help=help_line,
        description="After jobs/zip_cluster.py ran on Hadoop/EMR: check that every shard "
                    "cdx-NNNNN.gz exists and matches its part-NNNNN, then write cluster.loc "
                    "and, last, cluster.idx. Nothing is written if a shard is missing.")
    o.add(finalize, o.Option("cluster_dir", metavar="CLUSTER_DIR",
                             help="the job's --cluster-dir, or the directory holding it as "
                                  "cluster/"),
          o.SHARDS.but(required=True, default=None, help="shards the job wrote"),
          o.Option("--location", metavar="URI",
                   help="where readers will find the shards, an absolute path or URI, for "
                        "cluster.loc (default: the shards' names, relative to cluster.loc: "
                        "the cluster can then be moved whole)"),
          o.ROOT_INDEX)


def _corpus_parser(sub, help_line):
    corpus = sub.add_parser(
        "corpus", help=help_line,
        description="Write deterministic WARC/ARC files with a ground-truth manifest per file.")
    o.add(corpus, *o.CORPUS)


def _copy_parser(sub, help_line):
    copy = sub.add_parser(
        "copy", help=help_line,
        description="Find the captures of domains, host names or URL prefixes in a cluster "
                    "(or take the records a CSV file names, such as a query of a columnar "
                    "index gives) and copy their records (one ranged read each) into new "
                    ".warc.gz files (or .warc.zst: --output-format zst), each with its own "
                    "CDXJ index. 'check' counts what a copy takes; 'copy' "
                    "plans and copies; 'plan' and 'status' are the first and last steps on "
                    "their own (scripts/runremotecopy.sh runs the copy job on Hadoop/EMR "
                    "between them).",
        epilog=COPY_SELECTION_HELP)
    actions = copy.add_subparsers(dest="copy_command", required=True, metavar="ACTION")
    selection = (o.COPY_CLUSTER, o.DOMAINS, o.DOMAINS_FILE, o.RECORDS_CSV, *o.ACCESS_CONTROL)
    plan_options = (o.COPY_OUTPUT, o.RECORDS_PER_FILE, o.NAME_PREFIX, *o.COPY_WARC_OUTPUT)

    check = actions.add_parser(
        "check", help="count the captures, WARC files and bytes a copy would take",
        description="Print, per input and in total (each record once), the captures, the "
                    "distinct WARC files and the bytes to copy, from the index alone.",
        epilog=COPY_SELECTION_HELP)
    o.add(check, *selection, o.Flag("json", False, "print JSON instead of a table",
                                    "print a table (default)"))

    plan = actions.add_parser(
        "plan", help="write the plan of a copy (OUT/plan/) and print its chunk list",
        description="Split the selected index lines, in index order, into chunks of at most "
                    "--records-per-file lines (OUT/plan/NAME-NNNNN.cdx, one per output file) "
                    "and write OUT/plan/chunks.txt (the copy job's input) and plan.json. An "
                    "existing plan of the same copy is kept; one of another copy is refused. "
                    "Prints the URI of chunks.txt.",
        epilog=COPY_SELECTION_HELP)
    o.add(plan, *selection, *plan_options)

    run = actions.add_parser(
        "copy", help="plan and copy the records into new WARC files",
        description="Plan the copy (or reuse the plan in OUT), then copy every planned "
                    "record: one ranged read each from --warc-prefix + its CDX filename, "
                    "--threads in flight per task, into OUT/NAME-NNNNN.warc.gz (a warcinfo "
                    "record, then the original gzip members byte for byte; the records of "
                    ".warc.zst and .warc sources compressed into members of their own, their "
                    "bytes unchanged) or, with --output-format zst, OUT/NAME-NNNNN.warc.zst (a "
                    "zstd frame per record, after the file's dictionary), each followed by "
                    "its index NAME-NNNNN.cdxj. Transient errors (503 SlowDown, resets, short "
                    "reads) are retried with backoff; records that still fail are listed in "
                    "NAME-NNNNN.failures.json. Rerunning the same command skips complete "
                    "outputs and redoes the rest.",
        epilog=COPY_SELECTION_HELP + " Exit status: 0 every record copied, 1 some records "
               "failed or outputs are missing (rerun to retry them), 2 bad usage.")
    o.add(run, *selection, *plan_options, o.WARC_PREFIX, o.ZSTD_DICTIONARY, o.THREADS,
          o.RETRIES,
          o.RUNNER.but(help="local (default): one task per output file on a pool of "
                            "processes, on all cores; mrjob: the copy job on mrjob's local "
                            "runner; inline: the same in one process; spark: one Spark task "
                            "per output file (pyspark). Hadoop/EMR: scripts/runremotecopy.sh"),
          o.WORKERS, o.SPARK_MASTER, o.MRJOB_CONF,
          o.VERBOSE.but(help="show what mrjob or Spark do"), o.PROGRESS)

    status = actions.add_parser(
        "status", help="what an output holds of its plan",
        description="Count the complete outputs, those with failures (listing their reports) "
                    "and those not written. Exit status 0 when every record was copied, 1 "
                    "otherwise.")
    o.add(status, o.Option("output", metavar="OUT", help="the copy's output directory"),
          o.Flag("json", False, "print JSON", "print a summary (default)"))


def _zstd_dict_parser(sub, help_line):
    zdict = sub.add_parser(
        "zstd-dict", help=help_line,
        description="Train a zstd dictionary on the starts of records (their first 16 KiB) "
                    "from the start of every archive, about 100 times its size in all, at "
                    "least 128 KiB a file; write it as `zstd --train` does (`zstd -D DICT` "
                    "and `recompress --dictionary DICT` take it). ARC files are left out: a "
                    ".warc.zst holds WARC records.",
        epilog="Exit status: 0 done, 1 no dictionary could be made, 2 bad usage, 3 written, "
               "but some archives could not be read whole (their samples up to the problem "
               "are used).")
    o.add(zdict, o.INPUTS, o.DICT_OUTPUT, o.DICT_SIZE, o.ZSTD_DICTIONARY,
          o.PROCESSES.but(help="archives read at once (default: one per core)"), o.PROGRESS)


def _recompress_parser(sub, help_line):
    rec = sub.add_parser(
        "recompress", help=help_line,
        description="Recompress WARC files (.warc.gz compressed per record or as a whole, "
                    ".warc, .warc.zst) record by record, their bytes unchanged: into .warc.zst "
                    "(a zstd frame per record, with its size and checksum, the dictionary "
                    "embedded in a dictionary frame) or into .warc.gz (a gzip member per "
                    "record), as OUTPUT's name says. Each output is read back and indexed: its "
                    "CDX goes beside it (NAME.cdxj) or to --cdx. Archives are recompressed in "
                    "parallel, one per core.",
        epilog="Exit status: 0 done, 1 nothing could be recompressed, 2 bad usage, 3 some "
               "inputs could not be recompressed (their outputs are not written).")
    o.add(rec, o.INPUTS, o.RECOMPRESS_OUTPUT, o.OUTPUT_FORMAT, o.DICTIONARY, o.LEVEL,
          o.CDX_PATH, o.CDX_FORMAT, o.ZSTD_DICTIONARY,
          o.INPUT_ROOT.but(help="name the outputs of archives under DIR by their path below "
                                "it; repeatable"),
          o.RECOMPRESS_SKIP_EXISTING,
          o.PROCESSES.but(help="archives recompressed at once (default: one per core)"),
          o.PROGRESS)


def _acl_parser(sub, help_line):
    acl = sub.add_parser(
        "acl", help=help_line,
        description="Keep access rule files as wb-manager acl keeps them (pywb's .aclj, sorted "
                    "as pywb needs, written whole or not at all, each change logged with who, "
                    "when and why in FILE.log), see which rule wins for a URL and why, and "
                    "check many URLs at once. query, serve, copy and export apply them with "
                    "--acl (docs/access-control.md).")
    actions = acl.add_subparsers(dest="acl_command", required=True, metavar="ACTION")
    change = (o.WHO, o.WHY)
    add = actions.add_parser("add", help="add a rule (or replace the one of its URL and user)")
    o.add(add, o.ACL_FILE, o.ACL_URL, o.ACL_ACCESS, o.EXACT_MATCH, o.RULE_USER, *o.RULE_FIELDS, *change)
    remove = actions.add_parser("remove", help="remove the rule of a URL (and user)")
    o.add(remove, o.ACL_FILE, o.ACL_URL, o.EXACT_MATCH, o.RULE_USER, *change)
    listing = actions.add_parser("list", help="print the rules")
    o.add(listing, o.ACL_FILE)
    validate = actions.add_parser("validate", help="check every line, the order pywb needs, "
                                                   "duplicates (exit status 1 if any)")
    o.add(validate, o.ACL_FILE, o.FIX, *change)
    match = actions.add_parser("match", help="which rule wins for a URL, and why")
    o.add(match, o.ACL_FILE.but(nargs="+", help="rule files (merged)"), o.ACL_URL,
          o.RULE_USER, o.MATCH_TIMESTAMP, o.EMBARGO, o.EMBARGO_ACCESS, o.ACL_DEFAULT)
    imports = actions.add_parser("import", help="add a rule for each line of OpenWayback's "
                                                "exclusions.txt or a URL or SURT list")
    o.add(imports, o.ACL_FILE, o.IMPORT_SOURCE, o.ACL_ACCESS.but(nargs="?", default="exclude",
          help="the access of every line (default exclude)"), o.EXACT_MATCH, o.RULE_USER, *change)
    check = actions.add_parser("check", help="the access of many URLs for a user or access point")
    o.add(check, o.ACL_FILE.but(help="a rule file (more with --acl)"), o.CHECK_URLS, o.ACL,
          o.RULE_USER, o.EMBARGO, o.EMBARGO_ACCESS, o.ACL_DEFAULT)


def _wacz_parser(sub, help_line):
    wacz = sub.add_parser(
        "wacz", help=help_line,
        description="Pack WARC files into a WACZ 1.1.1 package (archive/, indexes/, pages/, "
                    "datapackage.json): the WARCs stored as they are, their captures indexed "
                    "by build (any --runner) into indexes/index.cdx.gz and index.idx "
                    "(cdxj-gzip-1.0, as ReplayWeb.page, pywb and py-wacz read it), the pages "
                    "(HTML captures answered 2xx) listed with their <title>, every file "
                    "hashed (SHA-256). INPUT may instead be one cluster (a build's output, "
                    "its cluster directory or cluster.idx): its lines are packed as they are, "
                    "with the WARC files they name, found below --warc-prefix. FILE.wacz "
                    "appears only once complete. See docs/wacz.md.",
        epilog="Exit status: 0 done; 1 failed, nothing written; 2 bad usage; 3 written, but "
               "some records could not be indexed (--on-error skip; listed).")
    o.add(wacz, o.INPUTS, o.WACZ_OUTPUT, o.WACZ_LINES_PER_BLOCK, o.WACZ_TITLE, o.WACZ_WARC_PREFIX,
          o.WACZ_PAGE_TITLES, o.INPUT_ROOT,
          o.ON_ERROR, o.PROGRESS, *o.ENGINE)


# Each command: its help, and what adds its parser
PARSERS = {
    "build": ("index archives (and add existing indexes) into a ZipNum cluster", _build_parser),
    "cdx": ("write the sorted CDX of each archive (no cluster)", _cdx_parser),
    "query": ("look up captures in a cluster", _query_parser),
    "export": ("write every line of a cluster as one flat sorted CDX file, or as a columnar "
               "table", _export_parser),
    "serve": ("serve clusters over HTTP with the CDX API (pywb's, Common Crawl's)",
              _serve_parser),
    "finalize": ("check the shards of a cluster job's output and publish its index",
                 _finalize_parser),
    "corpus": ("generate a Common-Crawl-shaped test corpus", _corpus_parser),
    "copy": ("copy the captures of some domains or URL prefixes into new WARC files",
             _copy_parser),
    "zstd-dict": ("train a zstd dictionary for .warc.zst files on many archives",
                  _zstd_dict_parser),
    "recompress": ("recompress WARC files into .warc.zst or per-record .warc.gz",
                   _recompress_parser),
    "acl": ("manage access rule files (pywb's .aclj), match and check URLs", _acl_parser),
    "wacz": ("pack WARC files into a WACZ package indexed for replay", _wacz_parser),
}
