"""Engines: what runs the steps of a build and of a copy as tasks, and where.

``open_engine(name, settings)`` is the one place an engine is chosen, by name: ``local``
runs the tasks on a pool of processes on this machine, merging sorted CDX files instead
of sorting their lines (``local_engine``, the default); ``mrjob`` (mrjob's local runner),
``inline``, ``hadoop`` and ``emr`` run the MRJob jobs of ``jobs/`` on mrjob's runners
(``mrjob_engine``); ``spark`` runs the same tasks on Spark (``spark_engine``). Each
engine does each step with the same functions (``tasks``, ``splits``, ``extract``), so the
outputs are the same bytes whichever runs them. A new engine is a module of this package
with an ``Engine`` subclass, and a line in ``ENGINES``; it writes ``build --parquet``'s
table with nothing more (``Engine.write_tables``), and in its shard tasks if it wants to.

    with open_engine("spark", BuildOptions(spark_master="local[2]")) as engine:
        statuses = engine.index(archives, cdx_dir, tasks.Indexing(cdx_format="cdxj"))
        split_lines = engine.sample(cdx_files, shards, splits_dir)
        engine.table = columnar.Table("table", "my-crawl", 100_000, "zstd")  # or None
        stats = engine.write_cluster(cdx_files, split_lines, shards, 3000, cluster_dir)
        # the table's files of the shards whose task did not write them
        tables = engine.write_tables(cluster_dir, [s for s in stats if "table" not in stats[s]])

Settings are dataclasses. An engine is made with its ``Settings`` (``Engine.Settings``,
or a subclass of it that adds what the engine reads: ``LocalEngine.Settings``...), which
``open_engine`` makes from an options object (``options.BuildOptions``, ``CopyOptions``:
the attributes named as its fields). The settings of a step's tasks are objects too,
handed to every task as they are: ``tasks.Indexing`` (``index``), ``write.ChunkSettings``
(``copy``); the mrjob engine hands them to a job as its command line (``command_line``).
So an option that a task reads is declared in ``options``, given a field in its task's
settings and read by the task; no engine names it.
"""
import importlib
import os
import re
from dataclasses import dataclass

from .. import options
from ..copy.write import run_chunk
from ..util.errors import TaskFailed
from ..util.wire import Wire, option_field
from ..build.indexprep import prepare
from ..build.tasks import write_shard_table
from ..util.workers import process_pool, watching

# Engine name -> the module of this package that runs it
ENGINES = {
    "local": "local_engine",
    "mrjob": "mrjob_engine",
    "inline": "mrjob_engine",
    "hadoop": "mrjob_engine",
    "emr": "mrjob_engine",
    "spark": "spark_engine",
}


class StepFailed(Exception):
    """A step could not be done: an input could not be read to its end, a cluster being
    updated is damaged. Nothing was published."""


# The last line of a Python traceback: the exception, and an OSError's errno, text and file
_RAISED = re.compile(r"^(?:[\w.]+\.)?(\w+): (?:\[Errno (\d+)\] ([^:]*)(?:: '(.*)')?|.*)$")


def task_failure(traceback, what):
    """What a task that failed in another process raised, from the ``traceback`` it
    printed: an ``OSError`` (a full disk, a read-only output...) as such, with its errno
    and file, anything else as ``TaskFailed`` saying ``what`` failed and its last line."""
    lines = [line.rstrip() for line in traceback.splitlines() if line.strip()]
    last = next((line for line in reversed(lines) if _RAISED.match(line)), None)
    if last is None:
        return TaskFailed(f"{what} failed: {lines[-1] if lines else 'no message'}")
    match = _RAISED.match(last)
    if match[2]:
        return OSError(int(match[2]), match[3], match[4])
    return TaskFailed(f"{what} failed: {last}")


@dataclass(frozen=True)
class Settings(Wire):
    """What every engine is made with (an engine's own ``Settings`` adds to it)."""
    verbose: bool = option_field(options.VERBOSE)


class Engine:
    """Runs steps as tasks; a context manager, whose end frees what the engine holds.

    Each step's tasks write their outputs themselves (through ``storage``, atomically),
    and the step returns what the tasks returned.
    """
    Settings = Settings

    def __init__(self, name, settings=None):
        """``settings``: an options object, or settings, whose attributes named as the
        fields of ``self.Settings`` give them (the others keep their defaults)."""
        self.name = name
        self.settings = self.Settings.of(settings)
        # a progress.Progress the driver shows its steps on: an engine may show what a
        # step is doing on it (a line of its own where it is not drawn)
        self.progress = None
        # the columnar.Table that the cluster's shards also go into (build --parquet): set
        # by the driver before write_cluster
        self.table = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        pass

    @property
    def tasks_here(self):
        """Whether the tasks run on this machine (and can report progress in local files)."""
        return True

    def read_indexes(self, sources, out_dir, on_error, done=None):
        """Read the index inputs ``sources`` (``inputs.indexes``) for the steps that follow:
        ``(files, errors, warnings, lines)`` as ``indexprep.prepare`` gives them, the files
        to hand to ``sample`` and ``write_cluster`` with the CDX files (an engine that
        keeps what it read itself gives none). ``done`` gets each source once read."""
        return prepare(sources, out_dir, on_error, done)

    def index(self, archives, cdx_dir, settings):
        """Index each ``discovery.Archive`` into ``cdx_dir`` (``tasks.index_archive``) as
        ``settings`` (a ``tasks.Indexing``) say; the ``tasks.IndexStatus`` of each archive,
        in any order."""
        raise NotImplementedError

    def sample(self, cdx_files, shards, splits_dir):
        """Sample the lines of ``cdx_files`` (the CDX files of ``index``'s statuses, in their
        order) into ``shards - 1`` split lines, published in ``splits_dir``
        (``tasks.write_splits``); the split lines."""
        raise NotImplementedError

    def write_cluster(self, cdx_files, split_lines, shards, lines_per_block, cluster_dir,
                      deflate=options.BLOCK_DEFLATE_OLD):
        """Write the ``shards`` shards of every line of ``cdx_files`` into ``cluster_dir``
        (``tasks.write_shard``), their blocks compressed by ``deflate`` (of
        ``layout.DEFLATES``; the same bytes on every engine); the stats of each shard written, by shard number. With
        ``self.table``, an engine may have the task writing a shard write the shard's files
        of that table from the same lines (their stats under ``"table"``); the driver has
        ``write_tables`` write those of the shards whose stats lack them."""
        raise NotImplementedError

    def update_cluster(self, cdx_files, old_cluster, split_lines, removal, lines_per_block,
                       cluster_dir, deflate=options.BLOCK_DEFLATE_OLD):
        """Write into ``cluster_dir`` the shards of the published cluster in ``old_cluster``
        (a ``cluster/`` directory) with every line of ``cdx_files`` merged in and the lines
        that ``removal`` (a ``shardrun.Removal``) removes left out, by its split points,
        lines per block and deflate: the bytes ``write_cluster`` writes for the same lines.
        ``(stats of each shard, shards copied unchanged, lines removed)``. Only engines
        that merge sorted runs do this (``options.check_build`` says which)."""
        raise NotImplementedError(f"the {self.name} engine does not update clusters")

    def write_tables(self, cluster_dir, shards):
        """Write the files of ``self.table`` of each shard numbered in ``shards``, from the
        lines of that shard as ``write_cluster`` wrote it in ``cluster_dir`` (read back:
        ``tasks.write_shard_table``), one task per shard on this machine's cores; their
        stats, by shard number. What every engine does without writing the table in its
        shard tasks; one that writes it there does this for none."""
        calls = [(shard, cluster_dir, self.table) for shard in shards]
        workers = min(len(calls), len(os.sched_getaffinity(0)))
        if workers < 2:
            return {shard: write_shard_table(*call) for shard, call in zip(shards, calls)}
        with process_pool(workers) as pool, watching(pool):
            return dict(zip(shards, pool.map(write_shard_table, *zip(*calls))))

    def copy(self, chunk_paths, settings):
        """Copy each planned chunk as ``settings`` (a ``write.ChunkSettings``: its
        ``progress_dir`` only if ``tasks_here``) say, a task each (``write.run_chunk``);
        the ``write.ChunkStatus`` of each, in order."""
        chunk_paths = list(chunk_paths)
        if not chunk_paths:
            return []
        return self.each("copy", run_chunk, chunk_paths, settings)

    def each(self, step, task, items, settings):
        """``task(item, settings)`` for each of ``items``, a task each, as this engine runs
        tasks; what each returned, in order. ``step`` names the step (the mrjob engine runs
        its job)."""
        raise NotImplementedError


def open_engine(name, settings=None):
    """The engine called ``name`` (see ``ENGINES``), made with ``settings`` (an options
    object: see ``Engine``; None: the defaults)."""
    if name not in ENGINES:
        raise ValueError(f"unknown engine {name!r}: expected one of {', '.join(ENGINES)}")
    module = importlib.import_module(f"{__name__}.{ENGINES[name]}")
    return module.ENGINE(name, settings)
