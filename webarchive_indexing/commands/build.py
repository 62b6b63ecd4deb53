"""``webarchive-index build``: index archives, sample split points, write and publish a
ZipNum cluster (the three steps, run by an engine), with a summary and an error report.

    summary = build(["warcs/"], "out", BuildOptions(shards=4))
    summary = build(["new/"], "out", BuildOptions(update=True, remove=["crawl-1/*"]))

The output directory holds what ``options.BUILD_OUTPUT`` lists (``--help`` and the
README show it too).

Inputs and the output may be local, on S3 (``s3://bucket/prefix``) or, on a Hadoop
cluster, on HDFS (``hdfs:///path``, ``s3a://``; through ``hadoop fs``). The steps run
as tasks of the engine ``options.runner`` (``engines``), which read archives and write
CDX files, splits and shards themselves, through ``storage``. Existing indexes among
the inputs (``inputs.indexes``) add their lines to the cluster: read and checked first
(``Engine.read_indexes``), then sampled and written with the archives' CDX files. The
cluster is published only once it is complete (``publish``), so a failed build leaves
the previous cluster as it was.

The split points are sampled from the lines, or taken from ``options.splits``
(``splitsource``). ``options.update`` merges the inputs into the cluster published in
``out`` instead, with its split points and lines per block (``contents`` says what it
holds; the local engine merges), leaving out the lines of the archives that
``options.remove`` names; the result is the cluster a full build of the same lines with
the same split points writes.
"""
import contextlib
import json
import time
from dataclasses import dataclass, field

from ..cdx import cdxmeta
from ..build import contents, tasks
from ..build.summary import Summary
from ..storage import lock
from .. import storage
from ..engines import StepFailed, open_engine
from ..build.indexprep import INDEXES_DIR, check_work, open_sources
from ..inputs.discovery import cdx_name, dictionary_file, expand, expand_named
from ..options import (BLOCK_DEFLATE_DEFAULT, LINES_PER_BLOCK_DEFAULT, BuildOptions, UsageError,
                       check_build, check_indexing, check_table)
from ..util.progress import Progress, counted
from ..build.publish import check_table_place, publish_cluster, remove_leftovers, staged_table
from ..zipnum.shardrun import Removal
from ..build.splitsource import SplitsError, load_splits
from ..build.tasks import ClusterIncomplete
from ..zipnum.layout import shard_name
from ..columnar.table import Table, TableSummary, default_collection


@dataclass
class Update:
    """What an update did to the cluster."""
    added: int = 0                # archives it did not hold
    replaced: int = 0             # archives it held, indexed again since: their lines replaced
    held: int = 0                 # archives it held as they are: not added again
    indexes_added: int = 0        # index inputs
    indexes_held: int = 0         # index inputs it held: not added again
    removed: int = 0              # archives whose lines --remove took out
    lines_removed: int = 0        # lines --remove took out (not those of archives replaced)
    shards_copied: int = 0        # shards that gained and lost nothing
    # what each --remove GLOB took out: {glob: (names of archives, lines)}
    removed_by: dict = field(default_factory=dict)
    published: bool = True        # False: nothing to add, replace or remove


class BuildFailed(Exception):
    def __init__(self, message, summary):
        super().__init__(message)
        self.summary = summary


def _progress_count(out_dir, paths):
    """How progress counts the outputs written so far: only locally, where asking
    costs no request (S3) or process (HDFS) per path and poll."""
    if not storage.is_local(out_dir):
        return {}
    return {"count": lambda: sum(1 for p in paths if storage.exists(p)), "total": len(paths)}


def build(inputs, out_dir, options=None):
    """Index ``inputs`` and build a ZipNum cluster in ``out_dir`` as ``options`` (a
    ``BuildOptions``) say, or update the one there (``options.update``); return a Summary.

    Every engine gives the same bytes. Raises, before anything is written, ``InputError``
    when an input names nothing or inputs cannot go in one cluster, and
    ``options.UsageError`` for options that cannot go together or cannot work (a bad
    ``--splits``, no cluster to update, another format than its); ``lock.Busy`` when
    another build or copy writes into ``out_dir`` (or another process the table of
    ``options.parquet``); and BuildFailed (with the summary) when
    ``options.on_error`` is "fail" and any input had a problem, when no input gave a line,
    or when the cluster could not be completed; nothing is published then.
    ``options.root_index`` publishes ``cluster.root`` beside ``cluster.idx`` (see
    ``layout.root_index``). Index inputs go into the cluster beside the archives' lines;
    ``options.cdx_format`` (None: the index inputs' format, else cdxj; an update's
    cluster's) is what those of another format are converted to, ``options.rekey`` makes
    their URL keys SURT keys, and ``options.legacy_prefix`` restricts legacy URL indexes
    to the keys starting with it.
    """
    options = options or BuildOptions()
    check_build(options, inputs)
    started = time.monotonic()
    out_dir = storage.abspath(out_dir)
    check_table(options, options.parquet, "--parquet DIR")
    if options.parquet:
        check_table_place(options.parquet, storage.join(out_dir, "cluster"),
                          storage.join(out_dir, "cdx"))
    if options.cdx_format:  # (else known once the index inputs are read, below)
        check_indexing(options.cdx_fields, options.cdx_format, options.post_append)
    summary = Summary(out_dir)
    # (an update that only removes names no input)
    # (what the build writes is never read back: a rerun into OUTDIR below an INPUT, or
    # equal to it, reads what it read before)
    found = (expand_named(inputs, options.input_root,
                          [storage.join(out_dir, part) for part in ("cdx", "cluster", INDEXES_DIR)])
             if inputs else expand([]))
    # made absolute once read and found usable: before anything is written
    options = type(options)(**{**vars(options),
                               "zstd_dictionary": dictionary_file(options.zstd_dictionary)})
    try:
        split_lines = load_splits(options.splits, options.shards) if options.splits else None
    except SplitsError as exc:
        raise UsageError(f"--splits: {exc}") from None
    summary.errors = [{"file": path, "offset": 0, "reason": "no such file or directory"}
                      for path in found.missing]
    summary.warnings = list(found.warnings)
    with lock.hold(out_dir, "build"):
        remove_leftovers(out_dir)
        try:
            record = contents.read(summary.cluster_dir) if options.update else None
        except contents.NoCluster as exc:
            raise UsageError(str(exc)) from None
        except contents.NoRecord as exc:
            raise BuildFailed(str(exc), summary) from None
        requested = options.cdx_format
        if record:
            _check_names(found.archives, record)
            if requested not in (None, record["format"]):
                raise UsageError(f"--cdx-format {requested}, but the cluster in {out_dir} is "
                                 f"{record['format']}: an update keeps the format of the "
                                 "cluster (leave --cdx-format out)")
            requested = record["format"]
            held = record.get("post_append", False)
            if options.post_append not in (None, held):
                raise UsageError(f"--{'' if options.post_append else 'no-'}post-append, but the "
                                 f"cluster in {out_dir} was built with"
                                 f"{'' if held else 'out'} it: an update keeps the cluster's "
                                 "keys (leave the option out)")
            deflate = contents.block_deflate(record)
            if options.block_deflate not in (None, deflate):
                raise UsageError(f"--block-deflate {options.block_deflate}, but the cluster in "
                                 f"{out_dir} was built with --block-deflate {deflate}: an update "
                                 "keeps the cluster's blocks (leave the option out, or build "
                                 "anew)")
            options = type(options)(**{**vars(options), "post_append": held,
                                       "block_deflate": deflate})
        sources, open_errors, cdx_format = open_sources(found.indexes, requested,
                                                        options.legacy_prefix.encode("utf-8"),
                                                        options.rekey)
        if record and not (record["indexes"] or sources):
            # no line but the archives' can match: a GLOB that names none removes nothing
            _check_removal(options, _removed_by(options.remove, list(record["archives"])
                                                + [a.name for a in found.archives]))
        if sources and options.runner != "local":  # (which rewrites none: it reads them)
            check_work(sources, out_dir)  # before anything is written
        check_indexing(options.cdx_fields, cdx_format, options.post_append)
        summary.errors += open_errors
        try:
            return _build(found.archives, sources, cdx_format, record, split_lines, options,
                          summary, started)
        except BuildFailed:
            summary.seconds = time.monotonic() - started
            raise


def _build(archives, sources, cdx_format, record, split_lines, options, summary, started):
    out_dir = summary.out_dir
    progress = Progress(enabled=options.progress)
    with contextlib.ExitStack() as stack:
        table = None
        if options.parquet:
            table = Table.of(stack.enter_context(staged_table(options.parquet, "build")),
                             options.crawl or default_collection(out_dir), options)
        if not record:
            _write_archives(out_dir, [a.path for a in archives])
        engine = stack.enter_context(open_engine(options.runner, options))
        if table is not None and storage.is_local(table.dir) and not engine.tasks_here:
            raise UsageError(f"--parquet {options.parquet}: the tasks that write the table run "
                             "on other machines: give an s3:// or hdfs:// directory")
        engine.progress = progress
        cdx_dir = storage.join(out_dir, "cdx")
        try:
            if record:
                kept = _update(engine, record, archives, sources, cdx_dir, options, summary,
                               progress)
            else:
                index_files = _read_indexes(engine, sources, options, summary, progress)
                statuses = _index(engine, archives, cdx_dir, cdx_format, options, summary,
                                  progress)
                _write(engine, statuses, index_files, sources, cdx_dir, cdx_format, split_lines,
                       table, options, summary, progress)
        except ClusterIncomplete as exc:
            raise BuildFailed(f"the cluster is incomplete, nothing was published: {exc}",
                              summary) from exc
        except StepFailed as exc:
            raise BuildFailed(f"nothing was published: {exc}", summary) from exc
    if record and not summary.update.published:
        summary.seconds = time.monotonic() - started
        return summary
    if record:
        # what the published cluster holds now, and the split points it has
        tasks.write_splits(kept["splits"], out_dir)
        _write_archives(out_dir, [entry["path"] for entry in kept["archives"].values()])
    summary.published = True
    summary.seconds = time.monotonic() - started
    return summary


def _check_names(archives, record):
    """``UsageError`` if an archive to add to the cluster of ``record`` is not the one the
    cluster holds under its name, or would be indexed into the CDX file of another: an
    archive in a cluster is the file it was read from (a full build refuses such pairs
    too, in ``discovery.expand``), and indexing it would replace the other's lines."""
    held = record["archives"]
    by_cdx = {entry["cdx"]: name for name, entry in held.items()}
    for archive in archives:
        known, target = held.get(archive.name), cdx_name(archive.name)
        if known is not None and known["path"] != archive.path:
            raise UsageError(f"{archive.path} and {known['path']} (in the cluster) are both "
                             f"named {archive.name!r}: give --input-root so that their names "
                             "differ, or take the one in the cluster out first (--update "
                             f"--remove '{archive.name}'), then add this one")
        other = by_cdx.get(target)
        if other is not None and other != archive.name:
            raise UsageError(f"{archive.path} and {held[other]['path']} (in the cluster, named "
                             f"{other!r}) would both be indexed into cdx/{target}: give "
                             "--input-root so that their names differ, or rename one")


def _removed_by(globs, names):
    """``{glob: [names it matches]}`` for each of ``globs``."""
    removal = Removal(globs)
    found = {glob: [] for glob in globs}
    for name in names:
        glob = removal.pattern_of(name)
        if glob is not None:
            found[glob].append(name)
    return found


def _check_removal(options, removed_by, lines_by=None):
    """``UsageError`` for a GLOB of ``options.remove`` that removes no archive
    (``removed_by``) and no line (``lines_by``, ``{glob: lines}``), unless
    ``options.allow_empty_remove``: a takedown that names nothing is a mistake."""
    empty = [glob for glob, names in removed_by.items()
             if not names and not (lines_by or {}).get(glob)]
    if empty and not options.allow_empty_remove:
        raise UsageError(f"--remove {' '.join(repr(g) for g in empty)}: matches no archive and "
                         "no line of the cluster, nothing was published (check the GLOB "
                         "against archives.txt; give --allow-empty-remove to go on without it)")


def _read_indexes(engine, sources, options, summary, progress):
    """Step 1 for index inputs: read and checked by the engine; the files it then reads."""
    if not sources:
        return []
    done = []
    progress.step(f"[1/3] reading {counted(len(sources), 'index input')}",
                  count=lambda: len(done), total=len(sources))
    files, errors, warnings, summary.index_lines = engine.read_indexes(
        sources, summary.out_dir, options.on_error, done)
    progress.done()
    summary.indexes = len(sources)
    summary.errors += errors
    summary.warnings += warnings
    return files


def _write_archives(out_dir, paths):
    storage.write_atomic(storage.join(out_dir, "archives.txt"),
                         "".join(path + "\n" for path in paths).encode("utf-8"))


def _index(engine, archives, cdx_dir, cdx_format, options, summary, progress):
    """Step 1: the archives indexed (those with an up-to-date CDX file kept); statuses."""
    statuses = []
    if archives:
        expected = [storage.join(cdx_dir, cdx_name(a.name)) for a in archives]
        progress.step(f"[1/3] indexing {counted(len(archives), 'archive')}",
                      **_progress_count(summary.out_dir, expected))
        # every problem listed (then --on-error decides)
        statuses = engine.index(archives, cdx_dir, tasks.Indexing.of(
            options, cdx_format=cdx_format, on_error="skip"))
        progress.done()
    for status in statuses:
        summary.add(status)
    _write_report(summary)
    if summary.errors and options.on_error == "fail":
        raise BuildFailed(f"{len(summary.errors)} problems in the input; no cluster was built "
                          "(use --on-error skip to index what is readable)", summary)
    return statuses


def _publish(write, shards, options, summary, progress, label, then=None):
    """Step 3: the shards written by ``write(directory) -> stats`` (and what
    ``then(directory, stats) -> stats`` does after), published."""
    def written(directory):
        progress.step(label, **_progress_count(
            summary.out_dir, [storage.resolve(directory, shard_name(i)) for i in range(shards)]))
        try:
            stats = write(directory)
        finally:
            progress.done()
        return then(directory, stats) if then else stats

    totals = publish_cluster(summary.out_dir, shards, written, options.root_index)
    summary.shards, summary.blocks, summary.cluster_bytes = \
        totals["shards"], totals["blocks"], totals["bytes"]
    summary.cluster_lines = totals["lines"]


def _write(engine, statuses, index_files, sources, cdx_dir, cdx_format, split_lines, table,
           options, summary, progress):
    """Steps 2 and 3 of a build: split points (sampled, or ``split_lines``, those of
    ``options.splits``), then the shards (and with ``table``, a ``table.Table``, its
    files of each shard); the record of what the cluster holds."""
    if not summary.lines and not summary.archives_skipped and not summary.index_lines:
        raise BuildFailed("no input gave a CDX line: there is nothing to publish (a "
                          "published cluster is left as it was)", summary)
    cdx_files = [s.cdx for s in statuses] + index_files
    lines_per_block = options.lines_per_block or LINES_PER_BLOCK_DEFAULT
    deflate = options.block_deflate or BLOCK_DEFLATE_DEFAULT
    if split_lines is not None:
        tasks.write_splits(split_lines, summary.out_dir)
        progress.step(f"[2/3] split points from {options.splits}: "
                      f"{counted(len(split_lines) + 1, 'shard')}")
    else:
        shards = options.shards or 1
        progress.step(f"[2/3] sampling split points for {counted(shards, 'shard')}")
        split_lines = engine.sample(cdx_files, shards, summary.out_dir)
    progress.done()
    shards = len(split_lines) + 1
    record = contents.make(cdx_format, lines_per_block, split_lines,
                           {s.name: contents.entry(s, cdx_dir) for s in statuses},
                           {s.path: contents.index_entry(s) for s in sources},
                           bool(options.post_append), deflate)

    def write(directory):
        engine.table = table
        stats = engine.write_cluster(cdx_files, split_lines, shards, lines_per_block, directory,
                                     deflate)
        contents.write(directory, record)
        return stats

    def tables(directory, written):
        left = [shard for shard, stats in written.items() if "table" not in stats]
        if left:
            progress.step(f"[3/3] writing the Parquet files of {counted(len(left), 'shard')}")
            try:
                for shard, stats in engine.write_tables(directory, left).items():
                    written[shard]["table"] = stats
            finally:
                progress.done()
        summary.table = TableSummary(storage.abspath(options.parquet),
                                     [stats["table"] for stats in written.values()])
        return written

    _publish(write, shards, options, summary, progress,
             f"[3/3] writing {counted(shards, 'shard')}"
             + (" and their Parquet files" if table else ""),
             tables if table is not None else None)
    return record


def _update(engine, record, archives, sources, cdx_dir, options, summary, progress):
    """The steps of an update: the new inputs read, indexed and merged into the published
    cluster, the lines of removed and replaced archives left out; the record of what the
    cluster holds now. Index inputs it holds already are not read again."""
    held_indexes = [s for s in sources if s.path in record["indexes"]]
    summary.warnings += [{"file": s.path, "offset": 0, "message": "already in the cluster: "
                          "not added again"} for s in held_indexes]
    sources = [s for s in sources if s.path not in record["indexes"]]
    index_files = _read_indexes(engine, sources, options, summary, progress)
    statuses = _index(engine, archives, cdx_dir, record["format"], options, summary, progress)
    new, replaced, held = contents.sort_statuses(record, statuses)
    removal = Removal(options.remove, [s.name for s in replaced])
    split_lines, lines_per_block = record["splits"], record["lines_per_block"]
    shards = len(split_lines) + 1
    archives = {**record["archives"],
                **{s.name: contents.entry(s, cdx_dir) for s in new + replaced}}
    removed = {name: found for name, found in archives.items()
               if removal.of_globs().matches(name)}
    for name in removed:
        del archives[name]
    removed_by = _removed_by(options.remove, removed)
    update = summary.update = Update(added=len(new), replaced=len(replaced), held=len(held),
                                     removed=len(removed), indexes_added=len(sources),
                                     indexes_held=len(held_indexes),
                                     removed_by={glob: (names, 0)
                                                 for glob, names in removed_by.items()})
    if not (new or replaced or sources or removed or (options.remove and record["indexes"])):
        # the cluster would be published again as it is, as a new build under its readers
        update.published = False
        return None
    progress.step(f"[2/3] the cluster's split points and lines per block: "
                  f"{counted(shards, 'shard')}, {lines_per_block} lines a block, "
                  f"compressed by {options.block_deflate}")
    progress.done()
    kept = contents.make(record["format"], lines_per_block, split_lines, archives,
                         {**record["indexes"], **{s.path: contents.index_entry(s) for s in sources}},
                         bool(options.post_append), options.block_deflate)
    cdx_files = [s.cdx for s in new + replaced] + index_files

    def write(directory):
        stats, update.shards_copied, lines_by = engine.update_cluster(
            cdx_files, summary.cluster_dir, split_lines, removal, lines_per_block, directory,
            options.block_deflate)
        _check_removal(options, removed_by, lines_by)
        update.removed_by = {glob: (names, lines_by.get(glob, 0))
                             for glob, names in removed_by.items()}
        update.lines_removed = sum(lines for glob, lines in lines_by.items()
                                   if glob is not None)
        contents.write(directory, kept)
        return stats

    merged = [counted(len(new + replaced), "CDX file")] if new or replaced else []
    merged += [counted(len(sources), "index input")] if sources else []
    doing = [" and ".join(merged) + " merged in"] if merged else []
    doing += [f"the lines of {counted(len(removed), 'archive')} taken out"] if removed else []
    _publish(write, shards, options, summary, progress,
             f"[3/3] updating the {counted(shards, 'shard')}"
             + (f": {'; '.join(doing)}" if doing else ""))
    contents.drop_cdx(cdx_dir, removed.values(), (cdxmeta.SUFFIX, tasks.ERRORS_SUFFIX))
    return kept


def _write_report(summary):
    path = storage.join(summary.out_dir, "errors.json")
    if summary.errors or summary.warnings:
        report = {"errors": summary.errors, "warnings": summary.warnings}
        storage.write_atomic(path, json.dumps(report, indent=1).encode("utf-8"))
        summary.report = path
    else:
        storage.remove(path)
