"""``webarchive-index build``: index archives, sample split points, write and publish a
ZipNum cluster (the three steps, run by an engine), with a summary and an error report.

    summary = build(["warcs/"], "out", BuildOptions(shards=4, runner="local"))

Layout of the output directory::

    out/archives.txt             the archives indexed, one path per line
    out/cdx/<name>.cdx.gz        one sorted CDX per archive (+ .errors.json if it had problems)
    out/splits.txt, splits.seq   the shards-1 split points, as text and Hadoop SequenceFile
    out/cluster/                 cdx-NNNNN.gz, part-NNNNN, cluster.idx, cluster.loc
    out/errors.json              every problem met, when there were any

Inputs and the output may be local, on S3 (``s3://bucket/prefix``) or, on a Hadoop
cluster, on HDFS (``hdfs:///path``, ``s3a://``; through ``hadoop fs``). The steps run
as tasks of the engine ``options.runner`` (``engines``), which read archives and write
CDX files, splits and shards themselves, through ``storage``. The cluster is published
only once it is complete (``publish``), so a failed build leaves the previous cluster
as it was.
"""
import json
import time
from dataclasses import dataclass, field

from . import storage
from .engines import open_engine
from .inputs import ARCHIVE_EXTENSIONS, cdx_name, expand
from .options import BuildOptions
from .progress import Progress
from .publish import publish_cluster
from .steps import ClusterIncomplete
from .zipnum import shard_name


@dataclass
class Summary:
    out_dir: str
    archives: int = 0
    archives_skipped: int = 0
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

    @property
    def cluster_dir(self):
        return storage.join(self.out_dir, "cluster")


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
    ``BuildOptions``) say; return a Summary.

    Every engine gives the same bytes. Raises BuildFailed (with the summary) when
    ``options.on_error`` is "fail" and any archive had a problem, or when the cluster
    could not be completed; nothing is published then. ``options.root_index`` publishes
    ``cluster.root`` beside ``cluster.idx`` (see ``zipnum.root_index``).
    """
    options = options or BuildOptions()
    started = time.monotonic()
    progress = Progress(enabled=options.progress)
    out_dir = storage.abspath(out_dir)
    summary = Summary(out_dir)
    archives, missing, _ = expand(inputs, options.input_root)
    summary.errors = [{"file": path, "offset": 0, "reason": "no such file or directory"}
                      for path in missing]
    if not archives and not missing:
        raise BuildFailed(f"no WARC/ARC files ({', '.join(ARCHIVE_EXTENSIONS)}) found in "
                          f"{' '.join(inputs)}", summary)
    storage.makedirs(out_dir)
    storage.write_atomic(storage.join(out_dir, "archives.txt"),
                         "".join(a.path + "\n" for a in archives).encode("utf-8"))
    shards = options.shards
    with open_engine(options.runner, options) as engine:
        cdx_dir = storage.join(out_dir, "cdx")
        expected = [storage.join(cdx_dir, cdx_name(a.name)) for a in archives]
        progress.step(f"[1/3] indexing {len(archives)} archives", **_progress_count(out_dir, expected))
        statuses = engine.index(archives, cdx_dir, options.cdx_format, options.skip_existing)
        progress.done()
        for status in statuses:
            summary.archives += 1
            summary.archives_skipped += status["skipped"]
            for key, total in (("records", "records"), ("lines", "lines"), ("bytes", "input_bytes")):
                setattr(summary, total, getattr(summary, total) + status[key])
            summary.errors += status["errors"]
            summary.warnings += status["warnings"]
        _write_report(summary)
        if summary.errors and options.on_error == "fail":
            summary.seconds = time.monotonic() - started
            raise BuildFailed(f"{len(summary.errors)} problems in the input; no cluster was built "
                              "(use --on-error skip to index what is readable)", summary)

        cdx_files = [s["cdx"] for s in statuses]
        progress.step(f"[2/3] sampling split points for {shards} shards")
        split_lines = engine.sample(cdx_files, shards, out_dir)
        progress.done()

        def write(cluster_dir):
            progress.step(f"[3/3] writing {shards} shards",
                          **_progress_count(out_dir, [storage.resolve(cluster_dir, shard_name(i))
                                                      for i in range(shards)]))
            try:
                return engine.write_cluster(cdx_files, split_lines, shards,
                                            options.lines_per_block, cluster_dir)
            finally:
                progress.done()

        try:
            totals = publish_cluster(out_dir, shards, write, options.root_index)
        except ClusterIncomplete as exc:
            raise BuildFailed(f"the cluster is incomplete, nothing was published: {exc}",
                              summary) from exc
    summary.published = True
    summary.shards, summary.blocks, summary.cluster_bytes = totals["shards"], totals["blocks"], totals["bytes"]
    summary.seconds = time.monotonic() - started
    return summary


def _write_report(summary):
    path = storage.join(summary.out_dir, "errors.json")
    if summary.errors or summary.warnings:
        report = {"errors": summary.errors, "warnings": summary.warnings}
        storage.write_atomic(path, json.dumps(report, indent=1).encode("utf-8"))
    else:
        storage.remove(path)
