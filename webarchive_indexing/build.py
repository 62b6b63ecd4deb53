"""``webarchive-index build``: index archives, sample split points, write and publish a
ZipNum cluster (the three steps, run by an engine), with a summary and an error report.

    summary = build(["warcs/"], "out", BuildOptions(shards=4))
    summary = build(["new/"], "out", BuildOptions(update=True, remove=["crawl-1/*"]))

Layout of the output directory::

    out/archives.txt             the archives indexed, one path per line
    out/cdx/<name>.cdx.gz        one sorted CDX per archive (+ .errors.json if it had problems)
    out/splits.txt, splits.seq   the shards-1 split points, as text and Hadoop SequenceFile
    out/cluster/                 cdx-NNNNN.gz, part-NNNNN, cluster.idx, cluster.loc, and
                                 contents.json, what it holds (``contents``)
    out/errors.json              every problem met, when there were any

Inputs and the output may be local, on S3 (``s3://bucket/prefix``) or, on a Hadoop
cluster, on HDFS (``hdfs:///path``, ``s3a://``; through ``hadoop fs``). The steps run
as tasks of the engine ``options.runner`` (``engines``), which read archives and write
CDX files, splits and shards themselves, through ``storage``. The cluster is published
only once it is complete (``publish``), so a failed build leaves the previous cluster
as it was.

The split points are sampled from the lines, or taken from ``options.splits``
(``splitsource``). ``options.update`` merges the inputs into the cluster published in
``out`` instead, with its split points and lines per block (``contents`` says what it
holds; the local engine merges), leaving out the lines of the archives that
``options.remove`` names; the result is the cluster a full build of the same lines with
the same split points writes.
"""
import json
import time
from dataclasses import dataclass, field

from . import cdxmeta, contents, steps, storage
from .engines import StepFailed, open_engine
from .inputs import ARCHIVE_EXTENSIONS, cdx_name, expand
from .options import LINES_PER_BLOCK_DEFAULT, BuildOptions, check_build
from .progress import Progress
from .publish import publish_cluster
from .shardrun import Removal
from .splitsource import SplitsError, load_splits
from .steps import ClusterIncomplete
from .zipnum import shard_name


@dataclass
class Summary:
    out_dir: str
    archives: int = 0
    archives_skipped: int = 0
    archives_reindexed: int = 0   # CDX files made again: stale (see cdxmeta.stale)
    records: int = 0
    lines: int = 0
    input_bytes: int = 0
    shards: int = 0
    blocks: int = 0
    cluster_bytes: int = 0
    errors: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    seconds: float = 0.0
    published: bool = False
    update: object = None         # an Update, for an update

    @property
    def cluster_dir(self):
        return storage.join(self.out_dir, "cluster")


@dataclass
class Update:
    """What an update did to the cluster."""
    added: int = 0                # archives it did not hold
    replaced: int = 0             # archives it held, indexed again since: their lines replaced
    held: int = 0                 # archives it held as they are: not added again
    removed: int = 0              # archives whose lines --remove took out
    lines_removed: int = 0
    shards_copied: int = 0        # shards that gained and lost nothing


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

    Every engine gives the same bytes. Raises ``options.UsageError`` for options that
    cannot go together, BuildFailed (with the summary) when ``options.on_error`` is
    "fail" and any archive had a problem, or when the cluster could not be completed;
    nothing is published then. ``options.root_index`` publishes ``cluster.root`` beside
    ``cluster.idx`` (see ``zipnum.root_index``).
    """
    options = options or BuildOptions()
    check_build(options, inputs)
    started = time.monotonic()
    progress = Progress(enabled=options.progress)
    out_dir = storage.abspath(out_dir)
    summary = Summary(out_dir)
    archives, missing, _ = expand(inputs, options.input_root)
    summary.errors = [{"file": path, "offset": 0, "reason": "no such file or directory"}
                      for path in missing]
    if inputs and not archives and not missing:
        raise BuildFailed(f"no WARC/ARC files ({', '.join(ARCHIVE_EXTENSIONS)}) found in "
                          f"{' '.join(inputs)}", summary)
    try:
        record = contents.read(summary.cluster_dir) if options.update else None
    except contents.NoRecord as exc:
        raise BuildFailed(str(exc), summary) from None
    cdx_format = record["format"] if record else options.cdx_format
    storage.makedirs(out_dir)
    if not record:
        _write_archives(out_dir, [a.path for a in archives])
    with open_engine(options.runner, options) as engine:
        engine.progress = progress
        cdx_dir = storage.join(out_dir, "cdx")
        statuses = _index(engine, archives, cdx_dir, cdx_format, options, summary, progress)
        try:
            if record:
                kept = _update(engine, record, statuses, cdx_dir, options, summary, progress)
            else:
                kept = _write(engine, statuses, cdx_dir, cdx_format, options, summary, progress)
        except ClusterIncomplete as exc:
            summary.seconds = time.monotonic() - started
            raise BuildFailed(f"the cluster is incomplete, nothing was published: {exc}",
                              summary) from exc
        except StepFailed as exc:
            summary.seconds = time.monotonic() - started
            raise BuildFailed(f"nothing was published: {exc}", summary) from exc
        except SplitsError as exc:
            raise BuildFailed(f"--splits: {exc}", summary) from None
    if record:
        # what the published cluster holds now, and the split points it has
        steps.write_splits(kept["splits"], out_dir)
        _write_archives(out_dir, [entry["path"] for entry in kept["archives"].values()])
    summary.published = True
    summary.seconds = time.monotonic() - started
    return summary


def _write_archives(out_dir, paths):
    storage.write_atomic(storage.join(out_dir, "archives.txt"),
                         "".join(path + "\n" for path in paths).encode("utf-8"))


def _index(engine, archives, cdx_dir, cdx_format, options, summary, progress):
    """Step 1: the archives indexed (those with an up-to-date CDX file kept); statuses."""
    statuses = []
    if archives:
        expected = [storage.join(cdx_dir, cdx_name(a.name)) for a in archives]
        progress.step(f"[1/3] indexing {len(archives)} archives",
                      **_progress_count(summary.out_dir, expected))
        statuses = engine.index(archives, cdx_dir, cdx_format, options.skip_existing)
        progress.done()
    for status in statuses:
        summary.archives += 1
        summary.archives_skipped += status["skipped"]
        if status.get("stale"):
            summary.archives_reindexed += 1
            summary.warnings.append({"file": status["path"], "offset": 0,
                                     "message": f"indexed again: {status['stale']}"})
        for key, total in (("records", "records"), ("lines", "lines"), ("bytes", "input_bytes")):
            setattr(summary, total, getattr(summary, total) + status[key])
        summary.errors += status["errors"]
        summary.warnings += status["warnings"]
    _write_report(summary)
    if summary.errors and options.on_error == "fail":
        raise BuildFailed(f"{len(summary.errors)} problems in the input; no cluster was built "
                          "(use --on-error skip to index what is readable)", summary)
    return statuses


def _publish(write, shards, options, summary, progress, label):
    """Step 3: the shards written by ``write(directory) -> stats``, published."""
    def written(directory):
        progress.step(label, **_progress_count(
            summary.out_dir, [storage.resolve(directory, shard_name(i)) for i in range(shards)]))
        try:
            return write(directory)
        finally:
            progress.done()

    totals = publish_cluster(summary.out_dir, shards, written, options.root_index)
    summary.shards, summary.blocks, summary.cluster_bytes = \
        totals["shards"], totals["blocks"], totals["bytes"]


def _write(engine, statuses, cdx_dir, cdx_format, options, summary, progress):
    """Steps 2 and 3 of a build: split points (sampled, or from ``options.splits``), then
    the shards; the record of what the cluster holds."""
    cdx_files = [s["cdx"] for s in statuses]
    lines_per_block = options.lines_per_block or LINES_PER_BLOCK_DEFAULT
    if options.splits:
        split_lines = load_splits(options.splits, options.shards)
        steps.write_splits(split_lines, summary.out_dir)
        progress.step(f"[2/3] split points from {options.splits}: {len(split_lines) + 1} shards")
    else:
        shards = options.shards or 1
        progress.step(f"[2/3] sampling split points for {shards} shards")
        split_lines = engine.sample(cdx_files, shards, summary.out_dir)
    progress.done()
    shards = len(split_lines) + 1
    record = contents.make(cdx_format, lines_per_block, split_lines,
                           {s["name"]: contents.entry(s, cdx_dir) for s in statuses})

    def write(directory):
        stats = engine.write_cluster(cdx_files, split_lines, shards, lines_per_block, directory)
        contents.write(directory, record)
        return stats

    _publish(write, shards, options, summary, progress, f"[3/3] writing {shards} shards")
    return record


def _update(engine, record, statuses, cdx_dir, options, summary, progress):
    """Steps 2 and 3 of an update: the new lines merged into the published cluster, the
    lines of removed and replaced archives left out; the record of what it holds now."""
    new, replaced, held = contents.sort_statuses(record, statuses)
    removal = Removal(options.remove, [s["name"] for s in replaced])
    split_lines, lines_per_block = record["splits"], record["lines_per_block"]
    shards = len(split_lines) + 1
    archives = {**record["archives"],
                **{s["name"]: contents.entry(s, cdx_dir) for s in new + replaced}}
    removed = {name: found for name, found in archives.items()
               if removal.of_globs().matches(name)}
    for name in removed:
        del archives[name]
    update = summary.update = Update(added=len(new), replaced=len(replaced), held=len(held),
                                     removed=len(removed))
    progress.step(f"[2/3] the cluster's split points and lines per block: {shards} shards, "
                  f"{lines_per_block} lines a block")
    progress.done()
    kept = contents.make(record["format"], lines_per_block, split_lines, archives)
    cdx_files = [s["cdx"] for s in new + replaced]

    def write(directory):
        stats, update.shards_copied, update.lines_removed = engine.update_cluster(
            cdx_files, summary.cluster_dir, split_lines, removal, lines_per_block, directory)
        contents.write(directory, kept)
        return stats

    _publish(write, shards, options, summary, progress,
             f"[3/3] updating the {shards} shards: {len(cdx_files)} CDX files merged in")
    contents.drop_cdx(cdx_dir, removed.values(), (cdxmeta.SUFFIX, steps.ERRORS_SUFFIX))
    return kept


def _write_report(summary):
    path = storage.join(summary.out_dir, "errors.json")
    if summary.errors or summary.warnings:
        report = {"errors": summary.errors, "warnings": summary.warnings}
        storage.write_atomic(path, json.dumps(report, indent=1).encode("utf-8"))
    else:
        storage.remove(path)
