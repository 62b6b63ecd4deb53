"""One function run over many archives, a process per core (``recompress``, ``zstd-dict``).

    for result in run_each(work, [(path,) for path in paths]):
        ...
"""
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor, as_completed


def run_each(fn, jobs, processes=None):
    """Yield ``fn(*job)`` for every job (a tuple of arguments), each as it is done, from
    ``processes`` worker processes (default: one per core), or in this process when one
    is enough. ``fn`` must be importable (the workers are started afresh, not forked from
    a process that may run threads)."""
    jobs = list(jobs)
    workers = max(1, min(len(jobs), processes or os.cpu_count() or 1))
    if workers == 1:
        for job in jobs:
            yield fn(*job)
        return
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        for future in as_completed([pool.submit(fn, *job) for job in jobs]):
            yield future.result()
