"""The MRJob jobs of ``jobs/``, run with one of mrjob's runners (``RUNNERS``: the engine
``mrjob`` is mrjob's local runner; ``inline``, ``hadoop``, ``emr``; ``settings.mrjob_conf``
is the mrjob.conf, else none). A task's settings (``tasks.Indexing``, ``write.ChunkSettings``)
reach its job as options (``command_line``), which the job reads back (``parsed``).

The tasks read archives and write CDX files, splits, shards and copies themselves,
through ``storage``; what a job takes as input (the list of archives, the CDX files, the
split points, the chunks of a copy) is staged in a local work directory first, because
mrjob's inline and local runners read job input from local disk only.
"""
import os
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from mrjob.step import StepFailedException

from .. import options, storage
from ..build.tasks import IndexStatus
from ..cdx.splits import format_splits
from ..copy.write import ChunkStatus
from ..util.wire import option_field
from . import Engine, Settings, task_failure
from ..jobs.index_warcs import IndexWarcsJob
from ..jobs.remote_copy import RemoteCopyJob
from ..jobs.sample_splits import SampleSplitsJob
from ..jobs.zip_cluster import ZipClusterJob

# Parallel downloads of CDX files from S3 to local disk
STAGING_THREADS = 16
# Engine name -> mrjob's runner
RUNNERS = {"mrjob": "local", "inline": "inline", "hadoop": "hadoop", "emr": "emr"}


def run_job(job_class, args, runner, conf_path=None):
    """Run an MRJob job with the given runner; return its output values.

    A task that failed in a process of its own (the local runner) is raised as what it
    raised: an ``OSError`` (a full disk...) as one, anything else as ``TaskFailed``.
    """
    conf = ["--conf-path", conf_path] if conf_path else ["--no-conf"]
    job = job_class(args=["-r", runner, *conf, *args])
    with job.make_runner() as mr:
        try:
            mr.run()
        except StepFailedException as exc:
            failure = _task_failure(mr, exc, job_class.__name__)
            if failure is None:
                raise
            raise failure from None
        # RawValueProtocol hands back each output line with its newline
        return [value.rstrip("\n") if isinstance(value, str) else value
                for _, value in job.parse_output(mr.cat_output())]


def _task_failure(runner, exc, job):
    """What the task whose failure ``exc`` reports raised, from its stderr (as ``OSError``
    or ``TaskFailed``); None where no task says (the inline runner raises it itself)."""
    task_type, task_num = getattr(exc, "task_type", None), getattr(exc, "task_num", None)
    if task_type is None:
        return None
    try:
        with open(runner._task_stderr_path(task_type, exc.step_num, task_num)) as stderr:
            return task_failure(stderr.read(), f"a {task_type} task of {job}")
    except OSError:
        return None


@dataclass(frozen=True)
class MrjobSettings(Settings):
    mrjob_conf: str = option_field(options.MRJOB_CONF)


class MrjobEngine(Engine):
    Settings = MrjobSettings

    def __init__(self, name, settings=None):
        super().__init__(name, settings)
        self.conf_path = self.settings.mrjob_conf
        self.staged = {}
        self._work = None

    @property
    def work(self):
        """A local work directory for job input, made when first needed."""
        if self._work is None:
            self._work = tempfile.mkdtemp(prefix="webarchive-index-")
        return self._work

    def close(self):
        if self._work is not None:
            shutil.rmtree(self._work)
            self._work = None

    @property
    def tasks_here(self):
        return RUNNERS[self.name] in ("inline", "local")

    def _run(self, job_class, args):
        return run_job(job_class, args, RUNNERS[self.name], self.conf_path)

    def _manifest(self, name, paths):
        """A local file listing ``paths``, one a line: a job's input."""
        manifest = os.path.join(self.work, name)
        with open(manifest, "w", encoding="utf-8") as fh:
            fh.writelines(path + "\n" for path in paths)
        return manifest

    def _local(self, paths):
        """Local paths for ``paths`` as job input: local ones as they are, others downloaded
        into the work directory (once)."""
        missing = [p for p in paths if p not in self.staged]
        here = [storage.local_path(p) for p in missing]
        staged = [os.path.join(self.work, f"{i:06d}-{storage.basename(p)}") if local is None
                  else local for i, (p, local) in enumerate(zip(missing, here), len(self.staged))]
        with ThreadPoolExecutor(STAGING_THREADS) as pool:
            downloads = [pool.submit(storage.download, p, s)
                         for p, local, s in zip(missing, here, staged) if local is None]
            for download in downloads:
                download.result()  # raises what went wrong
        self.staged.update(zip(missing, staged))
        return [self.staged[p] for p in paths]

    def index(self, archives, cdx_dir, settings):
        if not archives:
            return []
        args = ["--cdx-dir", cdx_dir, *settings.command_line()]
        # the job names each archive again from its path, relative to the longest root
        # holding it: the root each name was made relative to is that root
        for root in sorted({archive.root for archive in archives if archive.root}):
            args += ["--input-root", root]
        return [IndexStatus.from_dict(status) for status in self._run(
            IndexWarcsJob, args + [self._manifest("archives.txt", (a.path for a in archives))])]

    def sample(self, cdx_files, shards, splits_dir):
        return self._run(SampleSplitsJob, ["--shards", str(shards), "--splits-dir", splits_dir,
                                           *self._local(cdx_files)])

    def write_cluster(self, cdx_files, split_lines, shards, lines_per_block, cluster_dir,
                      deflate=options.BLOCK_DEFLATE_OLD):
        splits_file = os.path.join(self.work, "splits.txt")
        with open(splits_file, "w", encoding="utf-8") as fh:
            fh.write(format_splits(split_lines))
        args = ["--splits", splits_file, "--shards", str(shards),
                "--lines-per-block", str(lines_per_block), "--block-deflate", deflate,
                "--cluster-dir", cluster_dir]
        table = self.table
        if table is not None:  # the reducers write it
            args += ["--table-dir", table.dir, "--crawl", table.crawl,
                     "--row-group-rows", str(table.row_group_rows),
                     "--parquet-compression", table.compression]
        written = self._run(ZipClusterJob, args + self._local(cdx_files))
        return {s["shard"]: s for s in written}

    def each(self, step, task, items, settings):
        """The job of ``step`` (``JOBS``), whose tasks run ``task``, with ``settings`` as its
        options, over a manifest of ``items``."""
        job, status = JOBS[step]
        return [status.from_dict(value) for value in self._run(
            job, settings.command_line() + [self._manifest(f"{step}.txt", items)])]


# Step -> the job (of ``jobs``) that runs its tasks, and what they hand back
JOBS = {"copy": (RemoteCopyJob, ChunkStatus)}


ENGINE = MrjobEngine
