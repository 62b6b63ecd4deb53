"""The ``webarchive-index`` command.

    webarchive-index build warcs/ -o out --shards 4
    webarchive-index query out 'example.com/*'
    webarchive-index serve cc=out --port 8080
    webarchive-index cdx warcs/example.warc.gz
    webarchive-index export out -o all.cdxj.gz
    webarchive-index corpus --out corpus --files 2 --captures 500
    webarchive-index zstd-dict warcs/ -o crawl.dict
    webarchive-index recompress warcs/example.warc.gz -o example.warc.zst --dictionary crawl.dict

Exit status: 0 done; 1 failed (nothing published); 2 bad usage; 3 done, but
some input could not be indexed (see the error report).
"""
import argparse
import contextlib
import json
import os
import sys

from . import options as o
from .commands.report import (EXIT_FAILED, EXIT_OK, EXIT_PARTIAL, EXIT_USAGE, log_to_stderr,
                              print_problems, report_build)
from .util.errors import TaskFailed, describe

__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_PARTIAL", "EXIT_USAGE", "main", "version_line"]


def version_line():
    """This package's version, and which member walker indexing runs (the compiled one is
    built at install time only where ISA-L's headers are found)."""
    from importlib.metadata import version

    from .warc.walk import CompiledMembers
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


COPY_SELECTION_HELP = (
    "Selection: a bare name (example.com) or *.example.com is that domain and all its "
    "subdomains (www.example.com, a.b.example.com; not examples.com); anything with a / or "
    "ending in * (example.com/path, http://example.com/a*, www.example.com/*) is a URL "
    "prefix. Keys are SURT keys as in pywb and Common Crawl's index: http and https, "
    "'www.' and default ports make no difference, so www.example.com = example.com. "
    "Overlapping inputs are merged: a record is selected once.")


def _parser(command=None):
    """The parser of the command line; of the subcommands, only ``command``'s arguments (all
    without one): building them all would add to the start-up time of every command."""
    parser = argparse.ArgumentParser(
        prog="webarchive-index",
        description="Turn WARC/ARC collections into ZipNum CDX indexes that pywb, OpenWayback "
                    "and Common Crawl's index server read, and query them.",
        epilog="Exit status: 0 done, 1 failed (nothing published), 2 bad usage, "
               "3 done but some input could not be indexed.")
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (help_line, add, _) in COMMANDS.items():
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
          o.BUILD_LINES_PER_BLOCK, o.SPLITS_FROM, o.UPDATE, o.REMOVE, o.ALLOW_EMPTY_REMOVE,
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
    o.add(query, o.CLUSTER, *o.CDX_API, *o.ACCESS_CONTROL,
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
    o.add(export, o.CLUSTER, o.EXPORT_OUTPUT, o.EXPORT_FORMAT, *o.TABLE, o.PROGRESS, *o.ACCESS_CONTROL)


def _wacz_parser(sub, help_line):
    wacz = sub.add_parser(
        "wacz", help=help_line,
        description="Pack WARC files into a WACZ 1.1.1 package (archive/, indexes/, pages/, "
                    "datapackage.json): the WARCs stored as they are, their captures indexed "
                    "by build (any --runner) into indexes/index.cdx.gz and index.idx "
                    "(cdxj-gzip-1.0, as ReplayWeb.page, pywb and py-wacz read it), the pages "
                    "(HTML captures answered 2xx) listed, every file hashed (SHA-256). "
                    "FILE.wacz appears only once complete. See docs/wacz.md.",
        epilog="Exit status: 0 done; 1 failed, nothing written; 2 bad usage; 3 written, but "
               "some records could not be indexed (--on-error skip; listed).")
    o.add(wacz, o.INPUTS, o.WACZ_OUTPUT, o.WACZ_LINES_PER_BLOCK, o.WACZ_TITLE, o.INPUT_ROOT,
          o.ON_ERROR, o.PROGRESS, *o.ENGINE)


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


def _acl(args):
    from .api import access
    from .commands import acl
    action = args.acl_command
    try:
        if action in ("add", "remove", "import"):
            return _acl_change(args, acl)
        if action == "list":
            for rule in acl.load(args.file):
                sys.stdout.write(rule.line() + "\n")
            return EXIT_OK
        if action == "validate":
            return _acl_validate(args, acl)
        embargo = access.Embargo(args.embargo, args.embargo_access)
        files = args.file if action == "match" else [args.file, *args.acl]
        rules = access.Rules([r for path in files for r in access.read_rules(path)], args.acl_default)
        if action == "match":
            answer, why = acl.match(rules, args.url, args.user, args.timestamp, embargo)
            sys.stdout.write(f"{answer['access']}: {args.url} at {answer['timestamp']}"
                             f"{' for ' + args.user if args.user else ''}\n")
            sys.stdout.writelines(f"  {line}\n" for line in why)
            return EXIT_OK
        checker = access.Checker(rules, args.user, embargo=embargo)
        stream = sys.stdin if args.urls == "-" else open(args.urls, encoding="utf-8")
        with stream:
            failed = 0
            for answer in access.check_lines(checker, stream):
                failed += "error" in answer
                sys.stdout.write(json.dumps(answer) + "\n")
        return EXIT_FAILED if failed else EXIT_OK
    except (access.RuleError, acl.AclError) as exc:
        sys.stderr.write(f"webarchive-index acl {action}: {exc}\n")
        return EXIT_FAILED
    except ValueError as exc:
        sys.stderr.write(f"webarchive-index acl {action}: {exc}\n")
        return EXIT_USAGE


def _acl_change(args, acl):
    if args.acl_command == "add":
        fields = {option.dest: getattr(args, option.dest) for option in o.RULE_FIELDS}
        for name in ("captured", "accessed"):
            if fields[name] is not None:
                start, comma, end = fields[name].partition(",")
                if not comma:
                    raise ValueError(f"--{name} {fields[name]!r}: expected START,END (either may be empty)")
                fields[name] = {"start": start or None, "end": end or None}
        done = acl.add(args.file, args.url, args.access, args.exact_match, args.user, fields, args.who, args.why)
        for line in done["replaced"]:
            sys.stdout.write(f"replaced: {line}\n")
        sys.stdout.writelines(f"added: {line}\n" for line in done["added"])
    elif args.acl_command == "remove":
        done = acl.remove(args.file, args.url, args.exact_match, args.user, args.who, args.why)
        sys.stdout.writelines(f"removed: {line}\n" for line in done["removed"])
    else:
        with open(args.source, encoding="utf-8") as lines:
            done = acl.import_list(args.file, lines, args.access, args.source, args.exact_match,
                                   args.user, args.who, args.why)
        sys.stdout.write(f"imported {args.source}: {done['added']} rules added, {done['replaced']} "
                         f"replaced, in {args.file}\n")
    return EXIT_OK


def _acl_validate(args, acl):
    rules = acl.load(args.file)
    found = acl.problems(rules, args.file)
    if args.fix and any("out of order" in p for p in found):
        acl.fix(args.file, args.who, args.why)
        sys.stdout.write(f"{args.file}: sorted as pywb needs\n")
        found = acl.problems(acl.load(args.file), args.file)
    for problem in found:
        sys.stdout.write(problem + "\n")
    if not found:
        sys.stdout.write(f"{args.file}: {len(rules)} rules, in order\n")
    return EXIT_FAILED if found else EXIT_OK


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


def _build(args):
    log_to_stderr(args.verbose)
    options = o.BuildOptions.from_args(args)
    from .commands.build import build
    return report_build(lambda: build(args.inputs, args.output, options), args.output)


def _cdx(args):
    from .inputs.discovery import InputError, check_output, dictionary_file, expand_named
    try:
        o.check_indexing(args.cdx_fields, args.cdx_format, args.post_append)
        if args.output:
            check_output(args.output)
        found = expand_named(args.inputs, args.input_root, [args.output] if args.output else ())
        zstd_dictionary = dictionary_file(args.zstd_dictionary)
    except (o.UsageError, InputError) as exc:
        sys.stderr.write(f"webarchive-index: {exc}\n")
        return EXIT_USAGE
    if found.indexes:
        sys.stderr.write(f"webarchive-index cdx: {found.indexes[0].path} is an index, not an "
                         "archive: cdx indexes archives (build takes indexes as input too)\n")
        return EXIT_USAGE
    errors = [{"file": m, "offset": 0, "reason": "no such file or directory"}
              for m in found.missing]
    if args.output:
        return _cdx_files(args, found, errors, zstd_dictionary)
    from .cdx.cdxline import header_line
    warnings = list(found.warnings)
    sys.stdout.write(header_line(args.cdx_format))
    if len(found.archives) == 1:
        for lines in _cdx_indexed(args, found.archives, errors, warnings, zstd_dictionary):
            sys.stdout.writelines(lines)
    else:
        _cdx_merged(args, found.archives, errors, warnings, zstd_dictionary)
    print_problems(errors, sys.stderr, warnings)
    return _cdx_status(errors, args.on_error)


def _cdx_indexed(args, archives, errors, warnings, zstd_dictionary):
    """The sorted lines of each archive indexed (up to the first problem, with ``--on-error
    fail``), one list at a time; its problems added to ``errors`` and ``warnings``."""
    from .cdx.indexer import index_file
    for archive in archives:
        if errors and args.on_error == "fail":
            return
        result = index_file(archive.path, archive.name, args.cdx_format,
                            cdx_fields=args.cdx_fields, zstd_dictionary=zstd_dictionary,
                            post_append=args.post_append)
        errors += [e.as_dict() for e in result.errors]
        warnings += result.warning_dicts()
        if result.errors and args.on_error == "fail":
            return
        yield result.lines


def _cdx_merged(args, archives, errors, warnings, zstd_dictionary):
    """Print the lines of several archives as one sorted index, as pywb reads one: each
    archive's, a sorted run on disk, then all merged, in bounded memory."""
    import tempfile
    from .build.merge import FAN_IN, MEMORY
    from .build.runs import chunk_bytes_for, merge, merge_runs, write_run
    with tempfile.TemporaryDirectory(prefix="webarchive-index-cdx-") as work_dir:
        runs = [write_run([[line[:-1].encode() for line in lines]],
                          os.path.join(work_dir, f"{i}.run"))
                for i, lines in enumerate(_cdx_indexed(args, archives, errors, warnings,
                                                       zstd_dictionary))]
        runs = merge_runs(runs, work_dir, FAN_IN, MEMORY)
        size = chunk_bytes_for(len(runs), MEMORY)
        for chunk in merge([run.chunks(0, size) for run in runs]):
            sys.stdout.write(b"\n".join(chunk).decode() + "\n")


def _cdx_files(args, found, errors, zstd_dictionary):
    """``cdx -o``: a .cdx.gz per archive, with progress and the summary ``build`` prints."""
    import time
    from . import storage
    from .commands.build import Summary
    from .storage.lock import hold
    from .util.progress import Progress
    from .commands.report import print_summary
    from .build.tasks import Indexing, index_archive
    started = time.monotonic()
    summary = Summary(storage.abspath(args.output), errors=errors, warnings=list(found.warnings))
    progress = Progress()
    with hold(summary.out_dir, "cdx"):
        storage.remove_temp_files(summary.out_dir, recursive=True)  # of a killed run
        progress.step(f"indexing {len(found.archives)} archives", count=lambda: summary.archives,
                      total=len(found.archives))
        try:
            for archive in found.archives:
                if summary.errors and args.on_error == "fail":
                    break
                summary.add(index_archive(archive.path, archive.name, summary.out_dir, Indexing.of(
                    args, on_error="skip", zstd_dictionary=zstd_dictionary)))
        finally:
            progress.done()
    summary.seconds = time.monotonic() - started
    print_problems(summary.errors, sys.stderr, summary.warnings)
    print_summary(summary, sys.stderr)
    return _cdx_status(summary.errors, args.on_error)


def _cdx_status(errors, on_error):
    if errors:
        return EXIT_FAILED if on_error == "fail" else EXIT_PARTIAL
    return EXIT_OK


def _query(args):
    from . import storage
    from .api import access
    from .api.request import BadParameter, CdxRequest
    from .api.collection import query
    try:
        request = CdxRequest.from_args(args, acl_user=args.acl_user)
        rules = access.from_options(args)
    except BadParameter as exc:
        sys.stderr.write(f"webarchive-index query: {exc.in_options()}\n")
        return EXIT_USAGE
    except access.RuleError as exc:
        sys.stderr.write(f"webarchive-index query: {exc}; fix the line (webarchive-index acl "
                         "validate FILE) and query again\n")
        return EXIT_FAILED
    except ValueError as exc:  # an embargo that is none
        sys.stderr.write(f"webarchive-index query: {exc}\n")
        return EXIT_USAGE

    def show(method, url, byte_range):
        shown = f" bytes={byte_range[0]}-{byte_range[1]}" if byte_range else ""
        sys.stderr.write(f"request: {method} {url}{shown}\n")

    if args.verbose:
        storage.add_request_listener(show)
    try:
        sys.stdout.buffer.writelines(query(args.location, request, access=rules))
    except BrokenPipeError:
        raise
    except BadParameter as exc:  # a page that is not there, too many lines to sort
        sys.stderr.write(f"webarchive-index query: {exc.in_options()}\n")
        return EXIT_FAILED
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"webarchive-index query: {exc}\n")
        return EXIT_FAILED
    finally:
        if args.verbose:
            storage.remove_request_listener(show)
    return EXIT_OK


def _export(args):
    from .commands.export import ExportFailed, export
    from .inputs.indexes import IndexInputError
    from .inputs.discovery import InputError
    from .storage.lock import Busy
    from .commands.report import print_table, query_table_hint
    try:
        done = export(o.ExportOptions.from_args(args), sys.stdout.buffer)
    except (BrokenPipeError, Busy):  # as every command: a reader that stopped (| head), a
        raise                          # table another process writes
    except (o.UsageError, InputError) as exc:
        sys.stderr.write(f"webarchive-index export: {exc}\n")
        return EXIT_USAGE
    except (ExportFailed, IndexInputError, OSError, ValueError) as exc:
        written = "" if args.output else " (what was printed is incomplete)"
        sys.stderr.write(f"webarchive-index export: {exc}{written}\n")
        return EXIT_FAILED
    if done.table is not None:
        print_table(done.table, sys.stderr)
    rate = done.lines / done.seconds if done.seconds else 0
    sys.stderr.write(f"exported: {done.lines} lines ({done.format}) from {args.location} "
                     f"to {done.output or 'stdout'} in {done.seconds:.1f} s ({rate:.0f} "
                     "lines/s)\n")
    if done.withheld:
        sys.stderr.write(f"withheld by the access rules: {done.withheld['excluded']} excluded, "
                         f"{done.withheld['blocked']} blocked\n")
    if done.table is None:
        return EXIT_OK
    sys.stderr.write(f"\nquery it: {query_table_hint(done.table)}\n")
    return EXIT_PARTIAL if done.table.error_count else EXIT_OK


def _serve(args):
    import logging
    from .api.serve import serve
    logging.basicConfig(format="webarchive-index serve: %(message)s", level=logging.WARNING)

    def ready(url, collections):
        for name, collection in collections.items():
            count = len(collection.clusters)
            sys.stderr.write(f"serving {name} ({count} cluster{'s' if count > 1 else ''}) at "
                             f"{url}/{name}/cdx\n")
        sys.stderr.write(f"search page {url}/ ; stop with Ctrl-C or SIGTERM\n")
        sys.stderr.flush()

    from .api.access import RuleError
    try:
        return serve(o.ServeOptions.from_args(args), ready)
    except RuleError as exc:
        sys.stderr.write(f"webarchive-index serve: {exc}; fix it (webarchive-index acl validate "
                         "FILE) and start again\n")
        return EXIT_FAILED
    except ValueError as exc:
        sys.stderr.write(f"webarchive-index serve: {exc}\n")
        return EXIT_USAGE
    except OSError as exc:
        sys.stderr.write(f"webarchive-index serve: {exc}\n")
        return EXIT_FAILED


def _finalize(args):
    from . import storage
    from .util.progress import human
    from .build.tasks import ClusterIncomplete, finalize_cluster, shards_dir
    cluster_dir = shards_dir(args.cluster_dir)
    try:
        totals = finalize_cluster(cluster_dir, args.shards, root=args.root_index,
                                  location=args.location and storage.abspath(args.location))
    except (ClusterIncomplete, ValueError) as exc:
        sys.stderr.write(f"webarchive-index finalize: {exc}; nothing was published\n")
        return EXIT_FAILED
    sys.stderr.write(f"cluster:  {totals['shards']} shards, {totals['blocks']} blocks, "
                     f"{human(totals['bytes'])} in {cluster_dir}\n")
    return EXIT_OK


def _copy_check(args):
    from .util.progress import human
    from .copy import check, check_source, read_selection
    from .copy.csvrecords import check as check_csv
    from .zipnum.reader import open_cluster
    from .api.access import permitting
    check_source(args.location, args.domains, args.domains_file, args.records_csv)
    through = permitting(args)
    withheld = None
    if args.records_csv and through is not None:
        raise o.UsageError("access rules (--acl, --embargo) go with a cluster, not --records-csv")
    if args.records_csv:
        total = check_csv(args.records_csv)
        inputs = [(args.records_csv, "records")]
        per_input = [total]
    else:
        selection = read_selection(args.domains, args.domains_file)
        cluster = open_cluster(args.location)
        if through is not None:
            cluster = through(cluster)
        per_input, total = check(cluster, selection)
        withheld = cluster.withheld if through is not None else None
        inputs = [(i.text, i.kind) for i in selection]
    out = sys.stdout
    if args.json:
        json.dump({"inputs": [{"input": text, "kind": kind, **t.as_dict()}
                              for (text, kind), t in zip(inputs, per_input)],
                   "total": total.as_dict(), **({"withheld": withheld} if withheld else {})}, out, indent=1)
        out.write("\n")
        return EXIT_OK
    rows = [(t.captures, t.warc_files, t.bytes, human(t.bytes), text)
            for (text, _), t in zip(inputs, per_input)]
    rows.append((total.captures, total.warc_files, total.bytes, human(total.bytes),
                 "total (each record once)"))
    out.write(f"{'captures':>10} {'WARC files':>10} {'bytes':>14} {'size':>9}  input\n")
    for captures, files, size, shown, text in rows:
        out.write(f"{captures:>10} {files:>10} {size:>14} {shown:>9}  {text}\n")
    if total.arc_captures:
        out.write(f"(and {total.arc_captures} captures in ARC files, which a copy leaves out: "
                  "it writes WARC files)\n")
    if withheld:
        out.write(f"(and {withheld['excluded']} captures excluded, {withheld['blocked']} blocked by the "
                  "access rules, which a copy leaves out)\n")
    return EXIT_OK


def _copy_plan(args):
    from . import storage
    from .copy.plan import copy_planner, listing_path
    from .storage.lock import hold
    from .api.access import permitting
    planner = copy_planner(args, permitting(args))
    with hold(storage.abspath(args.output), "copy plan"):
        plan = planner()
    _print_copy_plan(plan, sys.stderr)
    if plan.chunks:  # nothing printed: nothing to copy
        sys.stdout.write(listing_path(plan.output) + "\n")
    return EXIT_OK


def _print_copy_plan(plan, stream):
    from .util.progress import human
    from .copy.plan import plan_path
    stream.write(f"plan:     {plan.records} records, {human(plan.bytes)} from {plan.warc_files} "
                 f"WARC files -> {len(plan.chunks)} output files ({plan_path(plan.output)})\n")
    if plan.arc_records:
        stream.write(f"          {plan.arc_records} records of ARC files left out (a copy writes "
                     "WARC files)\n")


# What retries the outputs missing or failed: the command that copied (``copy copy``), or
# after ``status``, which copies nothing, the copy itself
RERUN = "rerun the same command to retry what is missing or failed"
RERUN_COPY = ("to copy what is missing or failed, run `webarchive-index copy copy` with the "
              "arguments of the plan (`copy plan`'s) and --warc-prefix, or "
              "scripts/runremotecopy.sh: complete outputs are kept")


def _print_copy_survey(found, stream, skipped=None, rerun=RERUN):
    from .util.progress import human
    plan = found.plan
    already = f" ({skipped} files were complete already)" if skipped else ""
    stream.write(f"copied:   {found.copied} of {plan.records} records, "
                 f"{human(found.copied_bytes)}, {len(found.complete)} of {len(plan.chunks)} "
                 f"output files complete{already}\n")
    if found.failed:
        for_good = (f" ({found.failed_for_good} of them fail however often they are tried)"
                    if found.failed_for_good else "")
        stream.write(f"failed:   {found.failed} records in {len(found.with_failures)} files"
                     f"{for_good}; the reasons are in:\n")
        for report in found.reports[:20]:
            stream.write(f"  {report}\n")
        if len(found.reports) > 20:
            stream.write(f"  ... and {len(found.reports) - 20} more\n")
    if found.missing:
        stream.write(f"missing:  {len(found.missing)} output files were not written "
                     f"({', '.join(found.missing[:5])}{', ...' if len(found.missing) > 5 else ''})\n")
    if found.missing or found.failed > found.failed_for_good:
        stream.write(rerun + "\n")


def _copy_copy(args):
    from . import storage
    from .commands.copy import copy
    log_to_stderr(args.verbose)
    result = copy(o.CopyOptions.from_args(args),
                          planned=lambda plan: _print_copy_plan(plan, sys.stderr))
    plan = result.plan
    if result.after is None:
        sys.stderr.write("nothing to copy: the selection matches no capture in the index\n")
        return EXIT_OK
    if result.failure is not None:
        if args.verbose:
            import traceback
            traceback.print_exception(result.failure)
        sys.stderr.write(f"webarchive-index copy: the copy job failed: {result.failure}\n")
    _print_copy_survey(result.after, sys.stderr, len(result.before.complete) or None)
    sys.stderr.write(f"time:     {result.seconds:.1f} s\n")
    if result.done:
        sys.stderr.write(f"\nindex:    {storage.join(plan.output, plan.name_prefix)}-*.cdxj\n")
        return EXIT_OK
    return EXIT_FAILED


def _copy_status(args):
    from .commands.copy import survey
    found = survey(args.output)
    if args.json:
        json.dump({"records": found.plan.records, "copied": found.copied, "failed": found.failed,
                   "complete": found.complete, "with_failures": found.with_failures,
                   "missing": found.missing, "reports": found.reports}, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        _print_copy_plan(found.plan, sys.stdout)
        _print_copy_survey(found, sys.stdout, rerun=RERUN_COPY)
    return EXIT_OK if found.done else EXIT_FAILED


def _copy(args):
    from .copy import PlanMismatch, SelectionError
    action = {"check": _copy_check, "plan": _copy_plan, "copy": _copy_copy,
              "status": _copy_status}[args.copy_command]
    try:
        return action(args)
    except (SelectionError, PlanMismatch, o.UsageError) as exc:
        sys.stderr.write(f"webarchive-index copy {args.copy_command}: {exc}\n")
        return EXIT_USAGE
    except BrokenPipeError:
        raise
    except OSError as exc:  # an unreadable cluster, source or output
        sys.stderr.write(f"webarchive-index copy {args.copy_command}: "
                         f"{describe(exc, getattr(args, 'output', None))}\n")
        return EXIT_FAILED
    except ValueError as exc:  # a cluster that is none
        sys.stderr.write(f"webarchive-index copy {args.copy_command}: {exc}\n")
        return EXIT_FAILED


def _summary(command, run, failures=()):
    """(the summary ``run()`` returns, with the problems it lists printed, None); or (None,
    the exit status) when it could not run: options that cannot work (bad usage), or one of
    ``failures``. Either way, what went wrong is said on stderr."""
    from .inputs.discovery import InputError
    try:
        summary = run()
    except (InputError, o.UsageError) as exc:
        sys.stderr.write(f"webarchive-index {command}: {exc}\n")
        return None, EXIT_USAGE
    except failures as exc:
        sys.stderr.write(f"webarchive-index {command}: {exc}\n")
        return None, EXIT_FAILED
    print_problems(summary.errors, sys.stderr, summary.warnings)
    return summary, None


def _zstd_dict(args):
    from .util.progress import human
    from .commands.zstd_dict import TrainingFailed, train
    summary, status = _summary("zstd-dict", lambda: train(args.inputs, args.output,
                                                          o.ZstdDictOptions.from_args(args)),
                               (TrainingFailed, OSError))
    if summary is None:
        return status
    arcs = (f" ({summary.arc_files} ARC files left out: they hold no WARC records)"
            if summary.arc_files else "")
    sys.stderr.write(f"archives: {summary.archives}{arcs}, {summary.samples} samples "
                     f"({human(summary.sample_bytes)})\n"
                     f"dictionary: {args.output}, {summary.size} bytes, id {summary.dict_id}\n"
                     f"errors:   {len(summary.errors)}\ntime:     {summary.seconds:.1f} s\n")
    return EXIT_PARTIAL if summary.errors else EXIT_OK


def _wacz(args):
    log_to_stderr(args.verbose)
    from .commands.build import BuildFailed
    from .commands.wacz import pack
    from .inputs.discovery import InputError
    try:
        summary = pack(args.inputs, args.output, o.WaczOptions.from_args(args))
    except (InputError, o.UsageError) as exc:
        sys.stderr.write(f"webarchive-index: {exc}\n")
        return EXIT_USAGE
    except BuildFailed as exc:
        print_problems(exc.summary.errors, sys.stderr, exc.summary.warnings)
        sys.stderr.write(f"webarchive-index wacz: {exc} (nothing was written)\n")
        return EXIT_FAILED
    print_problems(summary.errors, sys.stderr, summary.warnings)
    sys.stderr.write(summary.describe() + "\n")
    return EXIT_PARTIAL if summary.errors else EXIT_OK


def _recompress(args):
    from .util.progress import human
    from .commands.recompress import recompress
    summary, status = _summary("recompress", lambda: recompress(
        args.inputs, args.output, o.RecompressOptions.from_args(args)))
    if summary is None:
        return status
    share = (f" ({100 * summary.output_bytes / summary.input_bytes:.1f}% of the input)"
             if summary.input_bytes else "")
    sys.stderr.write(f"archives: {summary.archives} ({summary.skipped} there already), "
                     f"{summary.records} records\n"
                     f"size:     {human(summary.input_bytes)} in, "
                     f"{human(summary.output_bytes)} out{share}\n"
                     f"errors:   {len(summary.errors)}\ntime:     {summary.seconds:.1f} s\n")
    if summary.errors:
        return EXIT_PARTIAL if summary.outputs else EXIT_FAILED
    return EXIT_OK


def _corpus(args):
    from .commands.corpus import write_corpus
    return write_corpus(args)


# Each command: its help, what adds its parser, what runs it
COMMANDS = {
    "build": ("index archives (and add existing indexes) into a ZipNum cluster", _build_parser,
              _build),
    "cdx": ("write the sorted CDX of each archive (no cluster)", _cdx_parser, _cdx),
    "query": ("look up captures in a cluster", _query_parser, _query),
    "export": ("write every line of a cluster as one flat sorted CDX file, or as a columnar "
               "table", _export_parser, _export),
    "serve": ("serve clusters over HTTP with the CDX API (pywb's, Common Crawl's)",
              _serve_parser, _serve),
    "finalize": ("check the shards of a cluster job's output and publish its index",
                 _finalize_parser, _finalize),
    "corpus": ("generate a Common-Crawl-shaped test corpus", _corpus_parser, _corpus),
    "copy": ("copy the captures of some domains or URL prefixes into new WARC files",
             _copy_parser, _copy),
    "zstd-dict": ("train a zstd dictionary for .warc.zst files on many archives",
                  _zstd_dict_parser, _zstd_dict),
    "recompress": ("recompress WARC files into .warc.zst or per-record .warc.gz",
                   _recompress_parser, _recompress),
    "acl": ("manage access rule files (pywb's .aclj), match and check URLs", _acl_parser, _acl),
    "wacz": ("pack WARC files into a WACZ package indexed for replay", _wacz_parser, _wacz),
}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    command = next((arg for arg in argv if not arg.startswith("-")), None)
    args = _parser(command).parse_args(argv)
    streams = sys.stdout, sys.stderr
    prints_output = _prints_output(args)
    # What only tells how a command goes (progress, the summary, problems) goes nowhere
    # once its reader is gone (build ... 2>&1 | head -1): the command goes on.
    sys.stderr = _Unbroken(sys.stderr)
    if not prints_output:
        sys.stdout = _Unbroken(sys.stdout)
    try:
        return _run(args, prints_output)
    finally:
        sys.stdout, sys.stderr = streams


def _run(args, prints_output):
    try:
        return COMMANDS[args.command][2](args)
    except BrokenPipeError as exc:
        if prints_output and _reader_gone(sys.stdout):
            # the reader of the output went away (query ... | head): done. What is still
            # buffered for it goes nowhere, rather than fail again as Python flushes
            # stdout on its way out.
            _to_devnull(sys.stdout)
            return EXIT_OK
        sys.stderr.write(f"webarchive-index {args.command}: {describe(exc)}: a process it "
                         "started ended, or could not start (run it again)\n")
        return EXIT_FAILED
    except OSError as exc:  # of the environment: a full disk, no credentials, another build
        sys.stderr.write(f"webarchive-index {args.command}: "
                         f"{describe(exc, getattr(args, 'output', None))}\n")
        return EXIT_FAILED
    except TaskFailed as exc:
        sys.stderr.write(f"webarchive-index {args.command}: {exc}\n")
        return EXIT_FAILED


def _prints_output(args):
    """Whether what the command prints on stdout is its output, not an account of it."""
    if args.command == "copy":
        return args.copy_command != "copy"
    if args.command == "acl":
        return args.acl_command in ("list", "match", "check")
    return args.command == "query" or (args.command in ("cdx", "export") and not args.output)


def _reader_gone(stream):
    """Whether ``stream`` is a pipe (or socket) that no one reads any more."""
    import select
    try:
        poller = select.poll()
        poller.register(stream.fileno(), select.POLLOUT)
    except (AttributeError, OSError, ValueError):
        return False
    return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))


def _to_devnull(stream):
    with contextlib.suppress(AttributeError, OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, stream.fileno())
        finally:
            os.close(devnull)


class _Unbroken:
    """A text stream (stderr, or the stdout of a command whose output is not printed) whose
    reader may go away: from then on what is written goes nowhere, instead of raising
    ``BrokenPipeError`` where the command is at."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text):
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            _to_devnull(self._stream)
            return len(text)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        try:
            self._stream.flush()
        except BrokenPipeError:
            _to_devnull(self._stream)

    def __getattr__(self, name):
        return getattr(self._stream, name)


if __name__ == "__main__":
    sys.exit(main())
