"""Pools of worker processes: every pool of the package is made here (``process_pool``) and
its tasks run ``watching`` it, so that workers die with the process that started them and
a worker that dies is said in one line.

    for result in run_each(work, [(path,) for path in paths]):   # recompress, zstd-dict
        ...
    with process_pool(4) as pool, watching(pool):                 # the local engine
        value = pool.submit(work, path).result()

A worker asks the kernel for SIGKILL when its parent dies (Linux: ``PR_SET_PDEATHSIG``;
elsewhere it polls its parent once a second): a build or copy killed with ``kill -9``
leaves no workers behind that go on writing and hold the caller's pipes open. A worker
that dies (the out-of-memory killer's SIGKILL) fails the task it ran with ``WorkerDied``,
naming its process and the signal.
"""
import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
import threading
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool

from .errors import TaskFailed, describe

# <linux/prctl.h>
PR_SET_PDEATHSIG = 1


class WorkerDied(TaskFailed):
    """A worker process died while the pool ran tasks: killed (by the out-of-memory killer,
    by someone), or could not start."""


def process_pool(workers):
    """A pool of ``workers`` ``spawn``ed processes, children of this process, which inherit
    none of its threads (a progress display), whose CPU time and memory are counted as its
    children's (a forkserver's workers would be the server's), and which die with it.

    (The parent death signal is sent when the thread that started a worker ends: pools
    are used from the thread that makes them.)"""
    with _starting():
        return _Pool(workers, mp_context=multiprocessing.get_context("spawn"),
                     initializer=_die_with_parent, initargs=(os.getpid(),))


class _Pool(ProcessPoolExecutor):
    def submit(self, fn, /, *args, **kwargs):
        with _starting():  # (a submit starts a worker when one is wanted)
            return super().submit(fn, *args, **kwargs)


@contextlib.contextmanager
def _starting():
    """Where processes start (a pool's helper process, its workers): what fails there is
    ``WorkerDied``."""
    try:
        yield
    except OSError as exc:
        raise WorkerDied(f"a worker process could not start: {describe(exc)}") from None


def _die_with_parent(parent):
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0:
            if os.getppid() != parent:  # gone before the signal was asked for
                os._exit(1)
            return
    threading.Thread(target=_watch, args=(parent,), daemon=True).start()


def _watch(parent):
    while os.getppid() == parent:
        threading.Event().wait(1)
    os._exit(1)


@contextlib.contextmanager
def watching(pool):
    """The block, in which ``pool``'s tasks are submitted and their results taken, raising
    ``WorkerDied``, saying which worker died and how, where the pool finds one dead."""
    try:
        yield
    except BrokenProcessPool:
        raise WorkerDied(died(pool)) from None


def died(pool):
    """What ended a worker of the broken ``pool``: one line."""
    # The pool's processes, which it only lists privately; the one that died first is
    # not one the pool terminated (SIGTERM) on finding it broken.
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown()  # (once every worker ended, how each did is known)
    ended = sorted((p for p in processes if p.exitcode is not None),
                   key=lambda p: p.exitcode == -signal.SIGTERM)
    if not ended:
        return "a worker process died (or could not start); nothing more is known of it"
    process = ended[0]
    if process.exitcode >= 0:
        return f"a worker process (pid {process.pid}) exited with status {process.exitcode}"
    try:
        name = signal.Signals(-process.exitcode).name
    except ValueError:  # a signal without a name (real-time signals)
        name = f"signal {-process.exitcode}"
    why = (" (as the out-of-memory killer does: see `dmesg`; run fewer workers (--workers) "
           "or give it more memory)" if process.exitcode == -signal.SIGKILL else "")
    return f"a worker process (pid {process.pid}) was killed by {name}{why}"


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
    with process_pool(workers) as pool, watching(pool):
        for future in as_completed([pool.submit(fn, *job) for job in jobs]):
            yield future.result()
