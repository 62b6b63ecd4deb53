"""``webarchive-index build``: the three jobs in order, with an mrjob runner, and a summary.

    summary = build(["warcs/"], "out", shards=4, runner="local")

Layout of the output directory::

    out/archives.txt             the archives indexed, one path per line
    out/cdx/<name>.cdx.gz        one sorted CDX per archive (+ .errors.json if it had problems)
    out/splits.txt, splits.seq   the shards-1 split points, as text and Hadoop SequenceFile
    out/cluster/                 cdx-NNNNN.gz, part-NNNNN, cluster.idx, cluster.loc
    out/errors.json              every problem met, when there were any

The cluster is built in a fresh directory and swapped in only once it is
complete, so a failed build leaves the previous cluster as it was.
"""
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

from . import storage
from .inputs import ARCHIVE_EXTENSIONS, cdx_name, expand
from .steps import ClusterIncomplete, finalize_cluster
from .zipnum import shard_name

RUNNERS = ("inline", "local")


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
        return os.path.join(self.out_dir, "cluster")


class BuildFailed(Exception):
    def __init__(self, message, summary):
        super().__init__(message)
        self.summary = summary


def run_job(job_class, args, runner, conf_path=None):
    """Run an MRJob job with the given runner; return its output values."""
    conf = ["--conf-path", conf_path] if conf_path else ["--no-conf"]
    job = job_class(args=["-r", runner, *conf, *args])
    with job.make_runner() as mr:
        mr.run()
        # RawValueProtocol hands back each output line with its newline
        return [value.rstrip("\n") if isinstance(value, str) else value
                for _, value in job.parse_output(mr.cat_output())]


class Progress:
    """One status line on a terminal, redrawn while a step runs; silent elsewhere."""

    def __init__(self, stream=sys.stderr, enabled=None):
        self.stream = stream
        self.enabled = stream.isatty() if enabled is None else enabled
        self._stop = threading.Event()
        self._thread = None

    def step(self, label, count=None, total=None):
        """Start showing ``label``; ``count()`` (if given) is polled for ``n/total``."""
        self.done()
        self._stop.clear()
        started = time.monotonic()

        def draw():
            while True:
                shown = f"{label}: {count()}/{total}" if count else label
                self.stream.write(f"\r\x1b[K{shown}  {time.monotonic() - started:.0f}s")
                self.stream.flush()
                if self._stop.wait(0.5):
                    return

        if self.enabled:
            self._thread = threading.Thread(target=draw, daemon=True)
            self._thread.start()
        else:
            self.stream.write(label + "\n")

    def done(self):
        if self._thread:
            self._stop.set()
            self._thread.join()
            self._thread = None
            self.stream.write("\r\x1b[K")


def _count_existing(paths):
    return lambda: sum(1 for p in paths if os.path.exists(p))


def build(inputs, out_dir, shards=1, lines_per_block=3000, cdx_format="cdxj", runner="local",
          on_error="fail", skip_existing=True, input_roots=(), conf_path=None, progress=None):
    """Index ``inputs`` and build a ZipNum cluster in ``out_dir``; return a Summary.

    Raises BuildFailed (with the summary) when ``on_error="fail"`` and any
    archive had a problem, or when the cluster could not be completed; nothing
    is published then.
    """
    from .jobs.index_warcs import IndexWarcsJob
    from .jobs.sample_splits import SampleSplitsJob
    from .jobs.zip_cluster import ZipClusterJob

    started = time.monotonic()
    progress = progress or Progress(enabled=False)
    out_dir = os.path.abspath(out_dir)
    summary = Summary(out_dir)
    archives, missing, roots = expand(inputs, input_roots)
    summary.errors = [{"file": path, "offset": 0, "reason": "no such file or directory"}
                      for path in missing]
    if not archives and not missing:
        raise BuildFailed(f"no WARC/ARC files ({', '.join(ARCHIVE_EXTENSIONS)}) found in "
                          f"{' '.join(inputs)}", summary)
    storage.makedirs(out_dir)
    manifest = os.path.join(out_dir, "archives.txt")
    storage.write_atomic(manifest, "".join(a.path + "\n" for a in archives).encode("utf-8"))

    cdx_dir = os.path.join(out_dir, "cdx")
    args = ["--cdx-dir", cdx_dir, "--cdx-format", cdx_format, "--on-error", "skip",
            "--skip-existing" if skip_existing else "--no-skip-existing"]
    for root in roots:
        args += ["--input-root", root]
    expected = [os.path.join(cdx_dir, cdx_name(a.name)) for a in archives]
    progress.step(f"[1/3] indexing {len(archives)} archives", _count_existing(expected), len(archives))
    statuses = run_job(IndexWarcsJob, args + [manifest], runner, conf_path) if archives else []
    progress.done()
    for status in statuses:
        summary.archives += 1
        summary.archives_skipped += status["skipped"]
        for key, total in (("records", "records"), ("lines", "lines"), ("bytes", "input_bytes")):
            setattr(summary, total, getattr(summary, total) + status[key])
        summary.errors += status["errors"]
        summary.warnings += status["warnings"]
    _write_report(summary)
    if summary.errors and on_error == "fail":
        summary.seconds = time.monotonic() - started
        raise BuildFailed(f"{len(summary.errors)} problems in the input; no cluster was built "
                          "(use --on-error skip to index what is readable)", summary)

    cdx_files = [s["cdx"] for s in statuses]
    progress.step(f"[2/3] sampling split points for {shards} shards")
    run_job(SampleSplitsJob, ["--shards", str(shards), "--splits-dir", out_dir, *cdx_files],
            runner, conf_path)
    progress.done()

    building = storage.make_temp_dir(out_dir, ".cluster-build-")
    try:
        progress.step(f"[3/3] writing {shards} shards",
                      _count_existing([os.path.join(building, shard_name(i)) for i in range(shards)]),
                      shards)
        written = run_job(ZipClusterJob, ["--splits", os.path.join(out_dir, "splits.txt"),
                                          "--shards", str(shards),
                                          "--lines-per-block", str(lines_per_block),
                                          "--cluster-dir", building, *cdx_files], runner, conf_path)
        progress.done()
        totals = finalize_cluster(building, shards, {s["shard"]: s for s in written},
                                  location=summary.cluster_dir)
        _swap_in(building, summary.cluster_dir)
    except ClusterIncomplete as exc:
        raise BuildFailed(f"the cluster is incomplete, nothing was published: {exc}", summary) from exc
    finally:
        progress.done()
        shutil.rmtree(building, ignore_errors=True)
    summary.shards, summary.blocks, summary.cluster_bytes = totals["shards"], totals["blocks"], totals["bytes"]
    summary.published = True
    summary.seconds = time.monotonic() - started
    return summary


def _swap_in(new_dir, final_dir):
    old = None
    if os.path.exists(final_dir):
        old = tempfile.mkdtemp(dir=os.path.dirname(final_dir), prefix=".cluster-old-")
        os.rename(final_dir, os.path.join(old, "cluster"))
    os.rename(new_dir, final_dir)
    if old:
        shutil.rmtree(old)


def _write_report(summary):
    path = os.path.join(summary.out_dir, "errors.json")
    if summary.errors or summary.warnings:
        report = {"errors": summary.errors, "warnings": summary.warnings}
        storage.write_atomic(path, json.dumps(report, indent=1).encode("utf-8"))
    else:
        storage.remove(path)
