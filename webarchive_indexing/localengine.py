"""The local engine: the build's steps on a pool of processes on this machine, merging
sorted CDX files instead of sorting every line.

    from webarchive_indexing.localengine import LocalSteps
    from webarchive_indexing.pipeline import build

    summary = build(["warcs/"], "out", shards=4, engine=LocalSteps(shards=4))

1. **index**: each archive is indexed by ``steps.index_archive`` in a worker, which
   also keeps, beside its CDX file, a sample of its lines (``cdxmeta``): the
   bottom-k by ``splits.sample_key``, with k from :func:`archive_sample_size`.
2. **sample**: the archives' samples are merged (``cdxmeta.combine``) into the bottom
   ``shards x 100`` pairs, exactly the sample job's, so the split points are the same.
   The CDX files are then merged into sorted runs (``mergebuild.make_runs``); files
   whose stored sample cannot prove its part (none stored, or too small) are sampled
   whole on the way, so nothing is read twice.
3. **write_cluster**: the shards, from the runs, in pieces on every worker
   (``mergebuild.write_shards``).

The cluster is byte-identical to the one mrjob's runners and Spark write from the same
inputs. Runs take as much room in the work directory (``tempfile``'s, or ``work_dir``)
as the CDX lines uncompressed; they are deleted when the engine closes.
"""
import math
import multiprocessing
import os
import shutil
import tempfile
from concurrent.futures import ProcessPoolExecutor

from . import cdxmeta, mergebuild, splits, steps, storage

SCALER = 100
# Each archive's stored sample holds this many times its share of the cluster's sample
# (plus SAMPLE_SLACK): enough that a file of ordinary size never needs reading again.
SAMPLE_MARGIN = 4
SAMPLE_SLACK = 64


def workers_available():
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def process_pool(workers):
    """The engine's pool: ``spawn``ed workers, children of this process, which inherit
    none of its threads (a progress display) and whose CPU time and memory are counted
    as its children's (a forkserver's workers would be the server's)."""
    return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))


def archive_sample_size(shards, archives, scaler=SCALER):
    """Pairs each archive's meta keeps: its share of ``shards x scaler`` with a margin."""
    size = shards * scaler
    return min(size, SAMPLE_MARGIN * math.ceil(size / max(1, archives)) + SAMPLE_SLACK)


def _index(path, name, cdx_dir, fmt, skip_existing, sample_size):
    status = steps.index_archive(path, name, cdx_dir, fmt, skip_existing, "skip", sample_size)
    return status, cdxmeta.read(status["cdx"]), storage.size(status["cdx"])


class LocalSteps:
    """The three steps for ``pipeline.build(..., engine=LocalSteps(...))``.

    ``shards`` sizes the archives' stored samples (a later build with more shards
    still gets exact split points, by sampling some CDX files whole). ``workers``
    processes (default: the cores this process may use) share the work; ``fan_in``
    bounds the files a task opens at once, ``memory`` the lines it holds.
    """

    def __init__(self, shards=1, workers=None, fan_in=mergebuild.FAN_IN,
                 memory=mergebuild.MEMORY, work_dir=None):
        self.shards, self.workers = shards, workers or workers_available()
        self.fan_in, self.memory, self.work_parent = fan_in, memory, work_dir
        self.metas, self.sizes = {}, {}
        self.runs = self.sample_lines = None

    def __enter__(self):
        self.work = tempfile.mkdtemp(prefix="webarchive-index-", dir=self.work_parent)
        self.pool = process_pool(self.workers)
        return self

    def __exit__(self, *exc):
        self.pool.shutdown(cancel_futures=True)
        shutil.rmtree(self.work, ignore_errors=True)

    def index(self, archives, cdx_dir, roots, cdx_format, skip_existing):
        size = archive_sample_size(self.shards, len(archives))
        done = mergebuild.run_tasks(self.pool, _index, [
            (a.path, a.name, cdx_dir, cdx_format, skip_existing, size) for a in archives])
        statuses = []
        for status, meta, cdx_size in done:
            self.metas[status["cdx"]], self.sizes[status["cdx"]] = meta, cdx_size
            statuses.append(status)
        return statuses

    def sample(self, cdx_files, shards, splits_dir):
        size = shards * SCALER
        metas = [self.metas.get(path) or cdxmeta.read(path) for path in cdx_files]
        pairs, whole = cdxmeta.combine(metas, size)
        sizes = [self.sizes[path] if path in self.sizes else storage.size(path)
                 for path in cdx_files]
        self.runs, found, _ = mergebuild.make_runs(
            self.pool, cdx_files, sizes, self.work, self.workers,
            {cdx_files[i]: 1 for i in whole}, size, self.fan_in, self.memory)
        self.sample_lines = splits.merge(pairs + found, size)
        chosen = splits.choose_splits(self.sample_lines, shards)
        steps.write_splits(chosen, splits_dir)
        return chosen

    def write_cluster(self, cdx_files, split_lines, splits_dir, shards, lines_per_block,
                      cluster_dir):
        return mergebuild.write_shards(self.pool, self.runs, split_lines, self.sample_lines,
                                       cluster_dir, self.work, lines_per_block, self.workers,
                                       self.memory)
