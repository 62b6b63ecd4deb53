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

Inputs and the output may be on S3 (``s3://bucket/prefix``) or, on a Hadoop
cluster, on HDFS (``hdfs:///path``, ``s3a://``; through ``hadoop fs``), which
are handled alike here ("on S3" below). The tasks read
archives and write CDX files, splits and shards there themselves, through
``storage``; what a job takes as input (the list of archives, the CDX files,
``splits.txt``) is staged in a local work directory first, because mrjob's
inline and local runners read job input from local disk only. S3 has no
rename, so there a cluster is published by writing its index last::

    out/cluster/build-<time>-<id>/   one build's cdx-NNNNN.gz and part-NNNNN
    out/cluster/cluster.loc          shard -> absolute s3:// URI: this build's shards,
                                     then those of the build it replaces
    out/cluster/cluster.idx          written last, once every shard was checked

Each build writes its shards under a fresh ``build-...`` prefix, and the shard
column of ``cluster.idx`` is the shard's path relative to ``cluster/``
(``build-.../cdx-00000.gz``), so an index only ever names the shards it was
made from, and readers without the .loc file find them too. Because
``cluster.loc`` still lists the shards of the index it replaces, either index
works with it: for a reader that fetches the new .loc with the old .idx, and
when a build fails after writing the .loc. A failed build deletes its prefix
and leaves the published ``cluster.idx`` and its shards as they were. A
published build keeps the shards of the build it replaced (a reader that loaded
that index keeps working) and deletes every other ``build-...`` prefix, such as
the leftovers of builds that died. One build at a time per output.
"""
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from . import storage
from .inputs import ARCHIVE_EXTENSIONS, cdx_name, expand
from .steps import ClusterIncomplete, finalize_cluster
from .zipnum import shard_name

# Prefix of a build's shards on S3: out/cluster/build-<UTC time>-<random>/
BUILD_PREFIX = "build-"
# Parallel downloads of CDX files from S3 to local disk
STAGING_THREADS = 16
# Bytes read from the start of a published cluster.idx to find the build it names
# (one index line: a URL key, a timestamp and the shard)
IDX_LINE_MAX = 1 << 16


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
        """Start showing ``label``; ``count()`` (if given) is polled for ``n/total`` (``n``
        without a total)."""
        self.done()
        self._stop.clear()
        started = time.monotonic()

        def draw():
            while True:
                shown = f"{label}: {count()}" + ("" if total is None else f"/{total}") if count else label
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


def _progress_count(out_dir, paths):
    """How progress counts the outputs written so far: only locally, where asking
    costs no request (S3) or process (HDFS) per path and poll."""
    if storage.is_remote(out_dir):
        return {}
    return {"count": lambda: sum(1 for p in paths if os.path.exists(p)), "total": len(paths)}


def _stage(paths, work, first=0):
    """Local paths for ``paths`` as job input: local ones as they are, S3 ones downloaded
    into ``work``, numbered from ``first`` (mrjob's inline and local runners read job
    input from local disk only)."""
    staged = [os.path.join(work, f"{i:06d}-{p.rsplit('/', 1)[-1]}") if storage.is_remote(p) else p
              for i, p in enumerate(paths, first)]
    with ThreadPoolExecutor(STAGING_THREADS) as pool:
        downloads = [pool.submit(storage.download, p, s) for p, s in zip(paths, staged) if p != s]
        for download in downloads:
            download.result()  # raises what went wrong
    return staged


class MrjobSteps:
    """The three steps as the MRJob jobs of ``jobs/``, run with an mrjob runner.

    What a job reads as input (the list of archives, the CDX files, splits.txt)
    is staged in a local work directory, because mrjob's inline and local runners
    read job input from local disk only.
    """

    def __init__(self, runner="local", conf_path=None):
        self.runner, self.conf_path = runner, conf_path
        self.staged = {}

    def __enter__(self):
        self.work = tempfile.mkdtemp(prefix="webarchive-index-")
        return self

    def __exit__(self, *exc):
        shutil.rmtree(self.work)

    def _run(self, job_class, args):
        return run_job(job_class, args, self.runner, self.conf_path)

    def _local(self, paths):
        missing = [p for p in paths if p not in self.staged]
        for path, local in zip(missing, _stage(missing, self.work, len(self.staged))):
            self.staged[path] = local
        return [self.staged[p] for p in paths]

    def index(self, archives, cdx_dir, roots, cdx_format, skip_existing):
        from .jobs.index_warcs import IndexWarcsJob
        if not archives:
            return []
        manifest = os.path.join(self.work, "archives.txt")
        with open(manifest, "w", encoding="utf-8") as fh:
            fh.writelines(a.path + "\n" for a in archives)
        args = ["--cdx-dir", cdx_dir, "--cdx-format", cdx_format, "--on-error", "skip",
                "--skip-existing" if skip_existing else "--no-skip-existing"]
        for root in roots:
            args += ["--input-root", root]
        return self._run(IndexWarcsJob, args + [manifest])

    def sample(self, cdx_files, shards, splits_dir):
        from .jobs.sample_splits import SampleSplitsJob
        return self._run(SampleSplitsJob, ["--shards", str(shards), "--splits-dir", splits_dir,
                                           *self._local(cdx_files)])

    def write_cluster(self, cdx_files, split_lines, splits_dir, shards, lines_per_block, cluster_dir):
        from .jobs.zip_cluster import ZipClusterJob
        [splits_file] = self._local([storage.join(splits_dir, "splits.txt")])
        written = self._run(ZipClusterJob, ["--splits", splits_file, "--shards", str(shards),
                                            "--lines-per-block", str(lines_per_block),
                                            "--cluster-dir", cluster_dir, *self._local(cdx_files)])
        return {s["shard"]: s for s in written}


def build(inputs, out_dir, shards=1, lines_per_block=3000, cdx_format="cdxj", runner="local",
          on_error="fail", skip_existing=True, input_roots=(), conf_path=None, progress=None,
          engine=None, root_index=True):
    """Index ``inputs`` and build a ZipNum cluster in ``out_dir``; return a Summary.

    The steps run as mrjob jobs with ``runner``, or with ``engine`` (e.g.
    ``spark.SparkSteps``), which gives the same bytes. Raises BuildFailed (with
    the summary) when ``on_error="fail"`` and any archive had a problem, or when
    the cluster could not be completed; nothing is published then. ``root_index``
    publishes ``cluster.root`` beside ``cluster.idx`` (see ``zipnum.root_index``).
    """
    started = time.monotonic()
    progress = progress or Progress(enabled=False)
    out_dir = storage.abspath(out_dir)
    summary = Summary(out_dir)
    archives, missing, roots = expand(inputs, input_roots)
    summary.errors = [{"file": path, "offset": 0, "reason": "no such file or directory"}
                      for path in missing]
    if not archives and not missing:
        raise BuildFailed(f"no WARC/ARC files ({', '.join(ARCHIVE_EXTENSIONS)}) found in "
                          f"{' '.join(inputs)}", summary)
    storage.makedirs(out_dir)
    storage.write_atomic(storage.join(out_dir, "archives.txt"),
                         "".join(a.path + "\n" for a in archives).encode("utf-8"))
    with engine or MrjobSteps(runner, conf_path) as steps:
        cdx_dir = storage.join(out_dir, "cdx")
        expected = [storage.join(cdx_dir, cdx_name(a.name)) for a in archives]
        progress.step(f"[1/3] indexing {len(archives)} archives", **_progress_count(out_dir, expected))
        statuses = steps.index(archives, cdx_dir, roots, cdx_format, skip_existing)
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
        split_lines = steps.sample(cdx_files, shards, out_dir)
        progress.done()

        def write(cluster_dir):
            return steps.write_cluster(cdx_files, split_lines, out_dir, shards, lines_per_block,
                                       cluster_dir)

        totals = _write_cluster(summary, shards, progress, write, root_index)
    summary.shards, summary.blocks, summary.cluster_bytes = totals["shards"], totals["blocks"], totals["bytes"]
    summary.seconds = time.monotonic() - started
    return summary


def _write_cluster(summary, shards, progress, write, root_index):
    """Write the shards with ``write(cluster_dir) -> {shard: stats}`` into a fresh directory
    (on S3, a fresh prefix) and publish the cluster only if every shard is complete;
    return its totals."""
    out_dir, cluster_dir = summary.out_dir, summary.cluster_dir
    if storage.is_remote(out_dir):
        building = storage.make_temp_dir(
            cluster_dir, time.strftime(BUILD_PREFIX + "%Y%m%dT%H%M%SZ-", time.gmtime()))
    else:
        building = storage.make_temp_dir(out_dir, ".cluster-build-")
    try:
        progress.step(f"[3/3] writing {shards} shards",
                      **_progress_count(out_dir, [os.path.join(building, shard_name(i))
                                                  for i in range(shards)]))
        written = write(building)
        progress.done()
        if storage.is_remote(out_dir):
            previous, previous_loc = _published_build(cluster_dir)
            totals = finalize_cluster(building, shards, written, index_dir=cluster_dir,
                                      previous_loc=previous_loc, root=root_index)
        else:
            totals = finalize_cluster(building, shards, written, location=cluster_dir,
                                      root=root_index)
            _swap_in(building, cluster_dir)
        summary.published = True
    except ClusterIncomplete as exc:
        raise BuildFailed(f"the cluster is incomplete, nothing was published: {exc}", summary) from exc
    finally:
        progress.done()
        if not summary.published:
            storage.remove_tree(building)
    if storage.is_remote(out_dir):
        # readers of the replaced index still find its shards; older builds and the
        # leftovers of failed ones go
        for stale in _builds_under(cluster_dir) - {building, previous}:
            storage.remove_tree(stale)
    return totals


def _published_build(cluster_dir):
    """The build whose shards the published ``cluster.idx`` names, and their
    ``cluster.loc`` lines: (None, b"") when it names none."""
    idx, loc = storage.join(cluster_dir, "cluster.idx"), storage.join(cluster_dir, "cluster.loc")
    if not storage.exists(idx):
        return None, b""
    fields = storage.read_range(idx, 0, IDX_LINE_MAX).split(b"\n", 1)[0].split(b"\t")
    if len(fields) < 2 or b"/" not in fields[1]:
        return None, b""
    name = fields[1].split(b"/", 1)[0]
    lines = storage.read_bytes(loc).splitlines(True) if storage.exists(loc) else []
    return (storage.join(cluster_dir, name.decode("utf-8")),
            b"".join(line for line in lines if line.startswith(name + b"/")))


def _builds_under(cluster_dir):
    builds = set()
    for path in storage.list_files(cluster_dir):
        name, slash, _ = path[len(cluster_dir) + 1:].partition("/")
        if slash and name.startswith(BUILD_PREFIX):
            builds.add(storage.join(cluster_dir, name))
    return builds


def _swap_in(new_dir, final_dir):
    old = None
    if os.path.exists(final_dir):
        old = tempfile.mkdtemp(dir=os.path.dirname(final_dir), prefix=".cluster-old-")
        os.rename(final_dir, os.path.join(old, "cluster"))
    os.rename(new_dir, final_dir)
    if old:
        shutil.rmtree(old)


def _write_report(summary):
    path = storage.join(summary.out_dir, "errors.json")
    if summary.errors or summary.warnings:
        report = {"errors": summary.errors, "warnings": summary.warnings}
        storage.write_atomic(path, json.dumps(report, indent=1).encode("utf-8"))
    else:
        storage.remove(path)
