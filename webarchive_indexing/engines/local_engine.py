"""The local engine: the steps on a pool of processes on this machine, merging sorted CDX
files instead of sorting every line (``--runner local``, the default of ``build``).

    with open_engine("local", BuildOptions(shards=4, workers=2)) as engine:
        statuses = engine.index(archives, "out/cdx", tasks.Indexing(cdx_format="cdxj"))
        split_lines = engine.sample(cdx_files, 4, "out")
        stats = engine.write_cluster(cdx_files, split_lines, 4, 3000, cluster_dir)

1. **index**: each archive is indexed by ``tasks.index_archive`` in a worker, which
   also keeps, beside its CDX file, a sample of its lines (``cdxmeta``): the
   bottom-k by ``splits.sample_key``, with k from :func:`archive_sample_size`.
2. **sample**: the archives' samples are merged (``cdxmeta.combine``) into the bottom
   ``shards x 100`` pairs, exactly the sample job's, so the split points are the same.
   On the way the CDX files are merged into sorted runs (``merge.make_runs``,
   phase A); files whose stored sample cannot prove its part (too small) are sampled
   whole then, so nothing is read twice. Index inputs are read once, when they are
   handed over (``read_indexes``: through their own readers, ``inputs.indexes``, merged
   into runs on the pool), and sampled one line in ``merge.SAMPLE_STRIDE`` (see
   docs/local-engine.md); their runs go into every cluster the engine writes.
3. **write_cluster**: the shards, from the runs, in pieces on every worker
   (``merge.write_shards``, phase B). **update_cluster**: a published cluster's
   shards merged with the runs of new lines (``update.update_shards``).
4. **copy**: one task per planned chunk (``copy.run_chunk``), as the copy job.

The cluster is byte-identical to the one mrjob's runners and Spark write from the same
inputs and split points. Settings (``LocalEngine.Settings``): ``workers`` (default: the
cores this process may use), ``fan_in`` (files a task opens at once; fewer where the limit
of open files is lower) and ``work_dir`` (where
the runs go: as much room as the CDX lines uncompressed; deleted when the engine closes).
"""
import math
import os
import re
import shutil
import tempfile
from dataclasses import dataclass

from ..cdx import cdxmeta, splits
from ..build import merge, tasks
from .. import storage
from ..storage.lock import running
from ..zipnum.shardrun import ClusterChanged, Removal
from .. import options
from ..util.workers import process_pool
from ..util.wire import option_field
from . import Engine, Settings, StepFailed
from ..build.update import update_shards

SCALER = 100
# Each archive's stored sample holds this many times its share of the cluster's sample
# (plus SAMPLE_SLACK): enough that a file of ordinary size never needs reading again.
SAMPLE_MARGIN = 4
SAMPLE_SLACK = 64


# Work directories: WORK_PREFIX, the id of the process of the engine, a random part
WORK_PREFIX = "webarchive-index-"
_WORK_DIR = re.compile(re.escape(WORK_PREFIX) + r"(\d+)-[^/]+\Z")


def remove_abandoned(parent):
    """Remove the work directories in ``parent`` of engines whose process is gone (a
    build that was killed leaves its runs there, as large as its CDX lines)."""
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        match = _WORK_DIR.match(name)
        if match and not running(int(match[1])):
            shutil.rmtree(os.path.join(parent, name), ignore_errors=True)


def workers_available():
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def archive_sample_size(shards, archives, scaler=SCALER):
    """Pairs each archive's meta keeps: its share of ``shards x scaler`` with a margin."""
    size = shards * scaler
    return min(size, SAMPLE_MARGIN * math.ceil(size / max(1, archives)) + SAMPLE_SLACK)


def _index(path, name, cdx_dir, settings, sample_size):
    status = tasks.index_archive(path, name, cdx_dir, settings, sample_size)
    return status, cdxmeta.read(status.cdx), storage.size(status.cdx)


def _size(path):
    """Bytes of an input, to deal inputs evenly (0 if unknown: a cluster directory)."""
    try:
        return storage.size(path)
    except OSError:
        return 0


@dataclass(frozen=True)
class LocalSettings(Settings):
    workers: int = option_field(options.WORKERS)
    fan_in: int = option_field(options.FAN_IN)
    work_dir: str = option_field(options.WORK_DIR)
    # sizes the archives' stored samples; a later build with more shards still gets
    # exact split points, by sampling some CDX files whole
    shards: int = None
    # lines of archives an update takes out, left out of index inputs as they are read
    remove: tuple = ()


class LocalEngine(Engine):
    """The steps on ``settings.workers`` processes (see the module)."""
    Settings = LocalSettings

    def __init__(self, name, settings=None):
        super().__init__(name, settings)
        settings = self.settings
        self.workers = settings.workers or workers_available()
        self.asked_fan_in, self.work_parent = settings.fan_in, settings.work_dir
        self.shards = settings.shards or 1
        self.memory = merge.MEMORY
        self.remove = list(settings.remove or ())
        self.metas, self.sizes = {}, {}
        self._pool = self._work = None
        self._runs = None  # (the CDX files, their runs, a sample of their lines)
        self._indexes = ([], [])  # the runs of the index inputs, a sample of their lines

    @property
    def pool(self):
        """The process pool, started when first needed."""
        if self._pool is None:
            self._pool = process_pool(self.workers)
        return self._pool

    @property
    def merging(self):
        """How this engine merges (``merge.Merging``): the pool and the work directory made
        when first needed."""
        return merge.Merging(self.pool, self.work, self.workers, self.fan_in, self.memory,
                             self.substeps)

    @property
    def fan_in(self):
        """Files a task merges at once: as asked, within the limit of open files."""
        return merge.fan_in_within_limit(self.asked_fan_in)

    @property
    def work(self):
        """The work directory of the runs, made when first needed; those that engines of
        processes no longer running left (killed builds) are removed first."""
        if self._work is None:
            parent = self.work_parent or tempfile.gettempdir()
            remove_abandoned(parent)
            self._work = tempfile.mkdtemp(prefix=f"{WORK_PREFIX}{os.getpid()}-", dir=parent)
        return self._work

    def close(self):
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None
        if self._work is not None:
            shutil.rmtree(self._work, ignore_errors=True)
            self._work = None

    @property
    def substeps(self):
        """Where the phases of a step show their progress: indented under the step."""
        return _Indented(self.progress) if self.progress is not None else None

    def _tasks(self, function, calls):
        return merge.run_tasks(self.pool, function, calls)

    def each(self, step, task, items, settings):
        return self._tasks(task, [(item, settings) for item in items])

    def index(self, archives, cdx_dir, settings):
        if not archives:
            return []
        size = archive_sample_size(self.shards, len(archives))
        statuses = []
        for status, meta, cdx_size in self._tasks(_index, [
                (a.path, a.name, cdx_dir, settings, size) for a in archives]):
            self.metas[status.cdx], self.sizes[status.cdx] = meta, cdx_size
            statuses.append(status)
        return statuses

    def read_indexes(self, sources, out_dir, on_error, done=None):
        """The index inputs read now, once, on the pool: merged into sorted runs (phase A)
        that every cluster this engine writes then holds, with a sample one line in
        ``merge.SAMPLE_STRIDE``; nothing for the other steps to read."""
        if not sources:
            return [], [], [], 0
        made = self._make_runs(sources, {s.path: merge.SAMPLE_STRIDE for s in sources},
                               self.shards * SCALER, Removal(self.remove) or None)
        self._indexes = (made.runs, made.sample)
        errors, warnings, lines = [], [], 0
        for source in sources:
            found_errors, found_warnings, read = made.reports[source.path]
            errors, warnings, lines = errors + found_errors, warnings + found_warnings, lines + read
            if done is not None:
                done.append(source.path)
        return [], errors, warnings, lines

    def _make_runs(self, inputs, sampled, sample_size, removal=None):
        sizes = [self.sizes.get(item) or _size(merge.input_key(item)) for item in inputs]
        try:
            return merge.make_runs(self.merging, inputs, sizes, sampled, sample_size, removal)
        except merge.InputFailed as exc:
            raise StepFailed(f"cannot read the CDX file {exc}") from None

    def _with_indexes(self, run_list, pairs):
        """``run_list`` and the runs of the index inputs, merged down to the fan-in; and
        ``pairs`` with the index inputs' sample."""
        index_runs, index_pairs = self._indexes
        if index_runs:
            run_list = merge.merge_rounds(self.merging, run_list + index_runs)
        return run_list, pairs + index_pairs

    def sample(self, cdx_files, shards, splits_dir):
        size = shards * SCALER
        metas = {path: self.metas[path] if path in self.metas else cdxmeta.read(path)
                 for path in cdx_files}
        recorded = [path for path in cdx_files if metas[path] is not None]
        pairs, whole = cdxmeta.combine([metas[path] for path in recorded], size)
        sampled = {path: merge.SAMPLE_STRIDE for path in cdx_files if metas[path] is None}
        sampled.update({recorded[i]: 1 for i in whole})
        made = self._make_runs(cdx_files, sampled, size)
        run_list, pairs = self._with_indexes(made.runs, pairs + made.sample)
        sample_lines = splits.merge(pairs, size)
        self._runs = (list(cdx_files), run_list, sample_lines)
        chosen = splits.choose_splits(sample_lines, shards)
        tasks.write_splits(chosen, splits_dir)
        return chosen

    def _runs_of(self, cdx_files, shards, removal=None):
        """The runs of ``cdx_files`` and a sample of their lines (where to cut pieces):
        those ``sample`` made, or made now."""
        if not removal and self._runs is not None and self._runs[0] == list(cdx_files):
            return self._runs[1:]
        sampled = {path: merge.SAMPLE_STRIDE for path in cdx_files}
        made = self._make_runs(cdx_files, sampled, shards * SCALER, removal or None)
        run_list, pairs = self._with_indexes(made.runs, made.sample)
        return run_list, splits.merge(pairs, shards * SCALER)

    def write_cluster(self, cdx_files, split_lines, shards, lines_per_block, cluster_dir,
                      deflate=options.BLOCK_DEFLATE_OLD):
        run_list, sample_lines = self._runs_of(cdx_files, shards)
        try:
            return merge.write_shards(self.merging, run_list, split_lines, sample_lines,
                                      cluster_dir, lines_per_block, deflate=deflate)
        except merge.InputFailed as exc:
            raise StepFailed(f"cannot read {exc}") from None

    def update_cluster(self, cdx_files, old_cluster, split_lines, removal, lines_per_block,
                       cluster_dir, deflate=options.BLOCK_DEFLATE_OLD):
        run_list, sample_lines = self._runs_of(cdx_files, len(split_lines) + 1,
                                               removal.of_globs())
        try:
            return update_shards(self.merging, run_list, sample_lines, old_cluster, split_lines,
                                 removal, cluster_dir, lines_per_block, deflate)
        except ClusterChanged as exc:
            raise StepFailed(str(exc)) from None



class _Indented:
    """A ``Progress`` whose steps are shown indented: the phases of a step of the driver."""

    def __init__(self, progress):
        self.progress = progress

    def step(self, label, **counts):
        self.progress.step(f"  {label}", **counts)

    def done(self):
        self.progress.done()


ENGINE = LocalEngine
