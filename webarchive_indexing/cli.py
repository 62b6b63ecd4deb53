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
import json
import sys

from . import options as o
from .options import commands as parsers
from .commands.report import (EXIT_FAILED, EXIT_OK, EXIT_PARTIAL, EXIT_USAGE, fail, log_to_stderr,
                              print_problems, print_summary, print_table, query_table_hint,
                              report_build)
from .util.errors import TaskFailed, describe
from .util.streams import Unbroken, reader_gone, to_devnull

__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_PARTIAL", "EXIT_USAGE", "main", "version_line"]


def version_line():
    """This package's version, and which member walker indexing runs, with which inflater (the
    compiled one is built at install time wherever a C extension builds: linked to ISA-L where
    its headers are found, else through python-isal), or why the pure Python one."""
    from importlib.metadata import version

    from .warc.walk import CompiledMembers, describe_walker
    walker = describe_walker(CompiledMembers is not None)
    return f"webarchive-index {version('webarchive-indexing')}, member walker: {walker}"


class _Version(argparse.Action):
    """--version, its line made only when asked (the metadata lookup costs start-up time)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="print the version and which member walker indexing runs (and "
                         "its inflater), and exit")

    def __call__(self, parser, namespace, values, option_string=None):
        print(version_line())
        parser.exit()


def _parser(command=None):
    return parsers.parser(_Version, command)


def _build(args):
    log_to_stderr(args.verbose)
    options = o.BuildOptions.from_args(args)
    from .commands.build import build
    return report_build(lambda: build(args.inputs, args.output, options), args.output)


def _cdx(args):
    from .commands import cdx
    from .inputs.discovery import InputError, check_output, dictionary_file, expand_named
    try:
        o.check_indexing(args.cdx_fields, args.cdx_format, args.post_append)
        if args.output:
            check_output(args.output)
        found = expand_named(args.inputs, args.input_root, [args.output] if args.output else ())
        zstd_dictionary = dictionary_file(args.zstd_dictionary)
    except (o.UsageError, InputError) as exc:
        return fail(None, exc, EXIT_USAGE)
    if found.indexes:
        return fail("cdx", f"{found.indexes[0].path} is an index, not an archive: cdx indexes "
                           "archives (build takes indexes as input too)", EXIT_USAGE)
    errors = [{"file": m, "offset": 0, "reason": "no such file or directory"}
              for m in found.missing]
    if args.output:
        summary = cdx.index_files(found, args, errors, zstd_dictionary)
        print_problems(summary.errors, sys.stderr, summary.warnings)
        print_summary(summary, sys.stderr)
        return _cdx_status(summary.errors, args.on_error)
    warnings = list(found.warnings)
    sys.stdout.writelines(cdx.lines(found.archives, args, errors, warnings, zstd_dictionary))
    print_problems(errors, sys.stderr, warnings)
    return _cdx_status(errors, args.on_error)


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
        if args.check is None:
            if args.url is None:
                raise o.UsageError("no URL to query: give one (example.com/path, example.com/* "
                                   "or *.example.com), or --check URLS")
            request = CdxRequest.from_args(args, acl_user=args.acl_user)
        else:
            _check_alone(args)
        rules = access.from_options(args)
        checker = access.checker_of(rules, args.acl_user) if args.check is not None else None
    except BadParameter as exc:
        return fail("query", exc.in_options(), EXIT_USAGE)
    except access.RuleError as exc:
        return fail("query", f"{exc}; fix the line (webarchive-index acl validate FILE) and query again")
    except ValueError as exc:  # an embargo that is none, no URL, options --check does not take
        return fail("query", exc, EXIT_USAGE)
    if checker is not None:
        from .commands.acl import print_checks
        return print_checks("query", checker, args.check)

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
        return fail("query", exc.in_options())
    except (OSError, ValueError) as exc:
        return fail("query", exc)
    finally:
        if args.verbose:
            storage.remove_request_listener(show)
    return EXIT_OK


def _check_alone(args):
    """UsageError for the options of a query given with ``--check``, which answers from
    the rules alone."""
    given = [option.name for option in o.CDX_API if getattr(args, option.dest) != option.default]
    if given:
        raise o.UsageError(f"--check answers from the rules alone: {', '.join(given)} would not "
                           "apply (leave out, or query without --check)")


def _export(args):
    from .commands.export import ExportFailed, export
    from .inputs.indexes import IndexInputError
    from .inputs.discovery import InputError
    from .storage.lock import Busy
    try:
        done = export(o.ExportOptions.from_args(args), sys.stdout.buffer)
    except (BrokenPipeError, Busy):  # as every command: a reader that stopped (| head), a
        raise                          # table another process writes
    except (o.UsageError, InputError) as exc:
        return fail("export", exc, EXIT_USAGE)
    except (ExportFailed, IndexInputError, OSError, ValueError) as exc:
        written = "" if args.output else " (what was printed is incomplete)"
        return fail("export", f"{exc}{written}")
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
        return fail("serve", f"{exc}; fix it (webarchive-index acl validate FILE) and start again")
    except ValueError as exc:
        return fail("serve", exc, EXIT_USAGE)
    except OSError as exc:
        return fail("serve", exc)


def _finalize(args):
    from . import storage
    from .util.progress import human
    from .build.tasks import ClusterIncomplete, finalize_cluster, shards_dir
    cluster_dir = shards_dir(args.cluster_dir)
    try:
        totals = finalize_cluster(cluster_dir, args.shards, root=args.root_index,
                                  location=args.location and storage.abspath(args.location))
    except (ClusterIncomplete, ValueError) as exc:
        return fail("finalize", f"{exc}; nothing was published")
    sys.stderr.write(f"cluster:  {totals['shards']} shards, {totals['blocks']} blocks, "
                     f"{human(totals['bytes'])} in {cluster_dir}\n")
    return EXIT_OK


def _copy_check(args):
    from .commands.copy import count
    from .util.progress import human
    per_input, total, withheld = count(args)
    out = sys.stdout
    if args.json:
        json.dump({"inputs": [{"input": text, "kind": kind, **t.as_dict()}
                              for (text, kind), t in per_input],
                   "total": total.as_dict(), **({"withheld": withheld} if withheld else {})},
                  out, indent=1)
        out.write("\n")
        return EXIT_OK
    rows = [(t.captures, t.warc_files, t.bytes, human(t.bytes), text)
            for (text, _), t in per_input]
    rows.append((total.captures, total.warc_files, total.bytes, human(total.bytes),
                 "total (each record once)"))
    out.write(f"{'captures':>10} {'WARC files':>10} {'bytes':>14} {'size':>9}  input\n")
    for captures, files, size, shown, text in rows:
        out.write(f"{captures:>10} {files:>10} {size:>14} {shown:>9}  {text}\n")
    if total.arc_captures:
        out.write(f"(and {total.arc_captures} captures in ARC files, which a copy leaves out: "
                  "it writes WARC files)\n")
    if withheld:
        out.write(f"(and {withheld['excluded']} captures excluded, {withheld['blocked']} blocked "
                  "by the access rules, which a copy leaves out)\n")
    return EXIT_OK


def _copy_plan(args):
    from .commands.copy import write_plan
    from .copy.plan import listing_path
    plan = write_plan(args)
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
        return fail(f"copy {args.copy_command}", exc, EXIT_USAGE)
    except BrokenPipeError:
        raise
    except OSError as exc:  # an unreadable cluster, source or output
        return fail(f"copy {args.copy_command}", describe(exc, getattr(args, 'output', None)))
    except ValueError as exc:  # a cluster that is none
        return fail(f"copy {args.copy_command}", exc)


def _summary(command, run, failures=()):
    """(the summary ``run()`` returns, with the problems it lists printed, None); or (None,
    the exit status) when it could not run: options that cannot work (bad usage), or one of
    ``failures``. Either way, what went wrong is said on stderr."""
    from .inputs.discovery import InputError
    try:
        summary = run()
    except (InputError, o.UsageError) as exc:
        return None, fail(command, exc, EXIT_USAGE)
    except failures as exc:
        return None, fail(command, exc)
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


def _acl(args):
    from .commands.acl import run
    return run(args)


def _wacz(args):
    log_to_stderr(args.verbose)
    from .commands.build import BuildFailed
    from .commands.wacz import pack
    from .inputs.discovery import InputError
    try:
        summary = pack(args.inputs, args.output, o.WaczOptions.from_args(args))
    except (InputError, o.UsageError) as exc:
        return fail(None, exc, EXIT_USAGE)
    except BuildFailed as exc:
        print_problems(exc.summary.errors, sys.stderr, exc.summary.warnings)
        return fail("wacz", f"{exc} (nothing was written)")
    print_problems(summary.errors, sys.stderr, summary.warnings)
    sys.stderr.write(summary.describe() + "\n")
    return EXIT_PARTIAL if summary.errors else EXIT_OK


# What runs each command (options.commands.PARSERS has their parsers)
COMMANDS = {"build": _build, "cdx": _cdx, "query": _query, "export": _export, "serve": _serve,
            "finalize": _finalize, "corpus": _corpus, "copy": _copy, "zstd-dict": _zstd_dict,
            "recompress": _recompress, "acl": _acl, "wacz": _wacz}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    command = next((arg for arg in argv if not arg.startswith("-")), None)
    args = _parser(command).parse_args(argv)
    streams = sys.stdout, sys.stderr
    prints_output = _prints_output(args)
    # What only tells how a command goes (progress, the summary, problems) goes nowhere
    # once its reader is gone (build ... 2>&1 | head -1): the command goes on.
    sys.stderr = Unbroken(sys.stderr)
    if not prints_output:
        sys.stdout = Unbroken(sys.stdout)
    try:
        return _run(args, prints_output)
    finally:
        sys.stdout, sys.stderr = streams


def _run(args, prints_output):
    try:
        return COMMANDS[args.command](args)
    except BrokenPipeError as exc:
        if prints_output and reader_gone(sys.stdout):
            # the reader of the output went away (query ... | head): done. What is still
            # buffered for it goes nowhere, rather than fail again as Python flushes
            # stdout on its way out.
            to_devnull(sys.stdout)
            return EXIT_OK
        return fail(args.command, f"{describe(exc)}: a process it started ended, or could not "
                                  "start (run it again)")
    except OSError as exc:  # of the environment: a full disk, no credentials, another build
        return fail(args.command, describe(exc, getattr(args, 'output', None)))
    except TaskFailed as exc:
        return fail(args.command, exc)


def _prints_output(args):
    """Whether what the command prints on stdout is its output, not an account of it."""
    if args.command == "copy":
        return args.copy_command != "copy"
    if args.command == "acl":
        return args.acl_command in ("list", "match", "check")
    return args.command == "query" or (args.command in ("cdx", "export") and not args.output)


if __name__ == "__main__":
    sys.exit(main())
