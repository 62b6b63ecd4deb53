"""What the build commands (``webarchive-index build``, ``jobs/spark_build.py``) print when
a build ends: the problems met, the summary and how to query the result; the exit
statuses of every command, and how each says what stopped it (``fail``).
"""
import sys

from ..options import UsageError

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_PARTIAL = 0, 1, 2, 3


def fail(command, message, status=EXIT_FAILED):
    """Say what stopped ``command`` (``"query"``, ``"acl check"``; None: the tool before
    a command ran) on stderr, as every command says it; ``status``, the exit status to
    return."""
    sys.stderr.write(f"webarchive-index{' ' + command if command else ''}: {message}\n")
    return status


def log_to_stderr(verbose):
    """Where the libraries' log goes: mrjob's own warnings (no mrjob.conf, Hadoop-only
    options ignored locally) are noise unless ``verbose``; a failing step still raises and
    is reported."""
    import logging
    logging.basicConfig(format="%(message)s", level=logging.INFO if verbose else logging.ERROR)
    # a failed task: what it raised is reported in a line (--verbose: mrjob's account)
    logging.getLogger("mrjob").setLevel(logging.INFO if verbose else logging.CRITICAL)


def _where(problem):
    """Where in its file a problem is: a line of an index, an offset of an archive."""
    return f"line {problem['line']}" if "line" in problem else f"offset {problem['offset']}"


def print_problems(errors, stream, warnings=()):
    """The first 20 errors, and the first 5 warnings (all are in errors.json)."""
    for error in errors[:20]:
        stream.write(f"error: {error['file']}: {_where(error)}: {error['reason']}\n")
    if len(errors) > 20:
        stream.write(f"error: ... and {len(errors) - 20} more\n")
    for warning in warnings[:5]:
        stream.write(f"warning: {warning['file']}: {_where(warning)}: {warning['message']}\n")
    if len(warnings) > 5:
        stream.write(f"warning: ... and {len(warnings) - 5} more\n")


def print_summary(summary, stream):
    from ..util.progress import counted, human
    again = (f", {summary.archives_reindexed} indexed again: their CDX was stale"
             if summary.archives_reindexed else "")
    indexed = summary.archives - summary.archives_skipped
    update = summary.update
    if summary.archives or not (summary.indexes or update):
        stream.write(
            f"archives: {summary.archives} ({summary.archives_skipped} already indexed{again}), "
            f"{human(summary.input_bytes)} read\n"
            f"records:  {summary.records} read, {summary.lines} CDX lines"
            + (f" (of the {counted(indexed, 'archive')} indexed now)" if summary.archives_skipped
               else "")
            + "\n")
    if summary.indexes:
        stream.write(f"indexes:  {summary.indexes} read, {summary.index_lines} CDX lines\n")
    if update is not None:
        stream.write(f"update:   {counted(update.added, 'archive')} added, {update.replaced} "
                     f"replaced (indexed again), {update.held} already in the cluster; "
                     f"{update.removed} removed ({counted(update.lines_removed, 'line')} "
                     "taken out)\n")
        for glob, (names, lines) in update.removed_by.items():
            shown = ", ".join(names[:5]) + (f", ... ({len(names) - 5} more)" if len(names) > 5
                                            else "")
            stream.write(f"removed:  {glob!r}: {counted(len(names), 'archive')}"
                         + (f" ({shown})" if names else "") + f", {counted(lines, 'line')}\n")
        if not update.published:
            stream.write(f"cluster:  unchanged, nothing published: nothing to add, replace or "
                         f"remove (the cluster in {summary.cluster_dir} is as it was)\n")
    if summary.published:
        copied = f" ({update.shards_copied} copied unchanged)" if update is not None else ""
        stream.write(f"cluster:  {summary.shards} shards{copied}, {summary.cluster_lines} lines, "
                     f"{summary.blocks} blocks, {human(summary.cluster_bytes)} in "
                     f"{summary.cluster_dir}\n")
        if summary.table is not None:
            print_table(summary.table, stream)
    stream.write(f"errors:   {len(summary.errors)}"
                 + (f", warnings: {len(summary.warnings)}" if summary.warnings else "")
                 + (f" (see {summary.report})" if (summary.errors or summary.warnings)
                    and summary.report else "")
                 + f"\ntime:     {summary.seconds:.1f} s\n")


def print_table(table, stream):
    """The lines of a columnar table's summary (``table.TableSummary``): its problems,
    then what it holds."""
    from ..util.progress import human
    for error in table.errors[:20]:
        stream.write(f"error: shard {error['shard']} line {error['line']} "
                     f"({error['key']}): {error['reason']}\n")
    if table.error_count > 20:
        stream.write(f"error: ... and {table.error_count - 20} more\n")
    stream.write(f"table:    {table.rows} rows from {table.lines} lines, {len(table.files)} "
                 f"Parquet files, {human(table.bytes)} in {table.table_dir}"
                 + (f" ({table.error_count} lines made no row)" if table.error_count else "")
                 + "\n")


def query_table_hint(table):
    """How to look at a table with DuckDB."""
    return (f"duckdb -c \"SELECT crawl, subset, count(*) FROM read_parquet("
            f"'{table.table_dir}/*/*/*.parquet', hive_partitioning = true) GROUP BY ALL\"")


def report_build(run, output):
    """Run ``run() -> Summary`` (a build) and report it the way ``build`` does; the exit status."""
    from .build import BuildFailed
    from ..inputs.discovery import InputError
    try:
        summary = run()
    except (InputError, UsageError) as exc:
        return fail(None, exc, EXIT_USAGE)
    except BuildFailed as exc:
        print_problems(exc.summary.errors, sys.stderr, exc.summary.warnings)
        print_summary(exc.summary, sys.stderr)
        return fail(None, exc)
    print_problems(summary.errors, sys.stderr, summary.warnings)
    print_summary(summary, sys.stderr)
    sys.stderr.write(f"\nquery it:  webarchive-index query {output} '{_example_pattern(summary)}'"
                     " --limit 10\n")
    if summary.table is not None:
        sys.stderr.write(f"           {query_table_hint(summary.table)}\n")
    return EXIT_PARTIAL if summary.errors or (summary.table and summary.table.error_count) else EXIT_OK


def _example_pattern(summary):
    """A query that finds something in the new cluster, of the host of its first key: a
    domain query; a URL prefix query for an IP address (which has no subdomains; its key
    is reversed as a name is, ``136,48,187,91)``) or a host with a port (which follows it
    in the key, ``com,example:8080)``, where no domain query finds it)."""
    from .. import storage
    try:
        first = storage.read_range(storage.join(summary.cluster_dir, "cluster.idx"), 0, 4096)
    except OSError:
        first = b""
    host, bracket, _ = first.split(b" ", 1)[0].decode("utf-8", "replace").partition(")")
    if not bracket or not host:
        return "example.com/*"
    if host.count(":") > 1:  # IPv6 (with its port, if any: the query's key is the same)
        return f"http://[{host}]/*"
    labels, colon, port = host.partition(":")
    labels = labels.split(",")
    name = ".".join(reversed(labels))
    if colon or all(label.isdigit() for label in labels):
        return f"http://{name}{colon}{port}/*"
    return "*." + name
