"""The steps of ``build`` and ``copy`` as Spark jobs, driven with pyspark.

    summary = build(["warcs/"], "out", BuildOptions(shards=4, runner="spark"))
    summary = build(["warcs/"], "out", BuildOptions(runner="spark", spark_context=sc))

The result is byte-identical to the mrjob engine's (mrjob's inline and local
runners) for the same input and options: the tasks call the same functions in
``tasks``, ``splits`` and ``copy``, and nothing about the output depends on how the
work was spread over tasks. This module does not use mrjob's Spark harness (see
docs/spark.md for why). The engine runs on the ``SparkContext`` it is handed
(``settings.spark_context``) and leaves it running; else on the active one, or on one
it makes when the first step runs (on ``settings.spark_master``, else spark-submit's
master, else ``local[*]``) and stops when it is closed.

1. **index** (:func:`index_archives`): the archives are parallelized
   ``archives_per_task`` per partition; each task runs ``tasks.index_archive``
   (with ``on_error="skip"``, as ``build`` hands it, so that every
   problem is listed) and returns its ``IndexStatus`` and the size of its CDX file.
2. **sample** (:func:`sample_splits`): the per-archive CDX files, grouped into
   partitions of about ``cdx_bytes_per_task`` (like the mrjob jobs'
   CombineTextInputFormat split size), are read line by line; each partition keeps
   a ``splits.Reservoir`` of ``shards x 100`` (key, line) pairs; the reservoirs are
   combined (a tree reduce, ending on the driver) into the bottom-k sample, which
   is the same whatever the partitioning; ``choose_splits``; ``tasks.write_splits``.
3. **cluster** (:func:`write_cluster`): each line is keyed ``(shard, line)``;
   ``repartitionAndSortWithinPartitions`` with exactly ``shards`` partitions, a
   partitioner that sends shard i to partition i, and a sort on the line (in
   Python: ``str`` order is code point order, i.e. UTF-8 byte order, the order of
   ``LC_ALL=C sort`` and of Hadoop's ``Text``; a JVM-side string sort would be
   UTF-16 order and differ for characters above U+FFFF); then every partition,
   empty ones included, writes its shard with ``tasks.write_shard`` (and, with
   ``build --parquet``, the shard's files of the table, from the same lines).

4. **copy** (``Engine.copy``, through :meth:`SparkEngine.each`): one task per planned
   chunk, ``copy.run_chunk``.

``build`` then publishes the cluster (``publish``), as with every engine.

CDX files are read in the tasks (not with ``sc.textFile``), a chunk at a time by
``cdx/cdxfile.py``, the reader of every engine: Hadoop's line reader also ends lines at
a bare ``\\r``, which may occur inside a CDX line; here, as in mrjob, lines end at
``\\n`` only and lose trailing ``\\r`` characters.

Inputs and output may be local or ``s3://`` (boto3, through ``storage``, in the
driver and in the tasks; Hadoop's file systems are not involved). Tasks write
their outputs (CDX files, shards) as side effects, atomically, so a retried task
rewrites the same bytes; the driver writes archives.txt, the splits,
cluster.idx/.loc and publishes. Driver and executors must therefore see the same
``out_dir``: any path on local[N]; ``s3://`` or a shared file system on a cluster.
"""
import heapq
import itertools
import logging
import math
import os
import signal
import subprocess
import sys
from dataclasses import dataclass

from ..cdx import cdxfile, splits
from ..build import tasks
from .. import storage
from .. import options
from ..options import DEFAULT_CDX_BYTES_PER_TASK as CDX_BYTES_PER_TASK
from ..util.wire import option_field
from ..zipnum.layout import LINES_PER_BLOCK
from . import Engine, Settings, StepFailed, task_failure

SCALER = 100


# -- reading CDX files in tasks ----------------------------------------------------------------

def read_cdx_lines(path):
    """The CDX lines (str) of one CDX file as the jobs read them (``cdxfile.read_chunks``:
    every engine's reader), streamed a chunk at a time, never the whole file at once."""
    for chunk in cdxfile.read_chunks(path):
        yield from map(bytes.decode, chunk)


def group_files(paths, max_bytes=CDX_BYTES_PER_TASK, sizes=None):
    """Consecutive runs of ``paths`` of at most ``max_bytes`` (a larger file is a run alone).

    ``sizes`` are the files' sizes if known (else each is asked for: a request per
    file on S3).
    """
    sizes = [storage.size(path) for path in paths] if sizes is None else sizes
    groups, current, total = [], [], 0
    for path, size in zip(paths, sizes, strict=True):
        if current and total + size > max_bytes:
            groups.append(current)
            current, total = [], 0
        current.append(path)
        total += size
    if current:
        groups.append(current)
    return groups


def cdx_lines_rdd(sc, cdx_files, cdx_bytes_per_task=CDX_BYTES_PER_TASK, sizes=None):
    """An RDD of every CDX line of ``cdx_files``, about ``cdx_bytes_per_task`` of files per partition."""
    groups = group_files(cdx_files, cdx_bytes_per_task, sizes)
    if not groups:
        return sc.parallelize([], 1)

    def lines(group):
        for path in group:
            yield from read_cdx_lines(path)

    return sc.parallelize(groups, len(groups)).flatMap(lines)


# -- the three steps -------------------------------------------------------------------------

def index_archives(sc, archives, cdx_dir, settings=tasks.Indexing(), archives_per_task=1):
    """Step 1: index each ``discovery.Archive`` into ``cdx_dir`` as ``settings`` (a
    ``tasks.Indexing``) say; ``(statuses, sizes)``: the ``tasks.IndexStatus`` of each
    archive and the size of its CDX file, in input order.

    With ``on_error="skip"`` (``build``'s) problems never fail a task: they are in each
    status's ``errors`` (the caller decides, as ``build`` does with ``--on-error``). The sizes (for
    grouping CDX files into tasks) are taken in the tasks, not by the driver one
    request at a time.
    """
    work = [(archive.path, archive.name) for archive in archives]
    if not work:
        return [], []

    def index(item):
        path, name = item
        status = tasks.index_archive(path, name, cdx_dir, settings)
        return status, storage.size(status.cdx)

    done = sc.parallelize(work, math.ceil(len(work) / archives_per_task)).map(index).collect()
    return [status for status, _ in done], [size for _, size in done]


def _bottom(size):
    def combine(a, b):
        # both are sorted (key, line) lists, each the bottom of its part: so is this of both
        return list(itertools.islice(heapq.merge(a, b), size))
    return combine


def sample_splits(sc, cdx_files, shards, splits_dir, scaler=SCALER,
                  cdx_bytes_per_task=CDX_BYTES_PER_TASK, sizes=None, depth=2):
    """Step 2: sample ``shards x scaler`` lines, choose ``shards - 1`` split lines, write
    ``splits.txt``, ``splits.seq`` and ``partitions.seq`` into ``splits_dir``; return them."""
    size = shards * scaler

    def reservoir(lines):
        kept = splits.Reservoir(size)
        for line in lines:
            kept.add(line)
        yield kept.items()

    pairs = []
    if cdx_files:
        pairs = (cdx_lines_rdd(sc, cdx_files, cdx_bytes_per_task, sizes)
                 .mapPartitions(reservoir).treeReduce(_bottom(size), depth))
    chosen = splits.choose_splits(splits.merge(pairs, size), shards)
    tasks.write_splits(chosen, splits_dir)
    return chosen


def _shard_of_key(key):
    return key[0]


def _line_of_key(key):
    return key[1]


def write_cluster(sc, cdx_files, split_lines, shards, cluster_dir,
                  lines_per_block=LINES_PER_BLOCK, cdx_bytes_per_task=CDX_BYTES_PER_TASK,
                  sizes=None, table=None, deflate=options.BLOCK_DEFLATE_OLD):
    """Step 3: write the ``shards`` shards (``cdx-NNNNN.gz`` + ``part-NNNNN``) of every
    line of ``cdx_files`` into ``cluster_dir``, their blocks compressed by ``deflate`` (and, with ``table``, each shard's files of
    that ``table.Table`` in the same task); the stats of each, by shard number."""
    points = list(split_lines)
    if len(points) + 1 != shards:
        raise ValueError(f"{len(points)} split points make {len(points) + 1} shards, "
                         f"not {shards}: sample again with {shards} shards")

    def keyed(line):
        return (splits.shard_of(line, points), line), None

    def write(shard, pairs):
        def lines():
            for (line_shard, line), _ in pairs:
                if line_shard != shard:
                    raise RuntimeError(f"a line of shard {line_shard} reached partition {shard}")
                yield line
        yield tasks.write_shard(shard, lines(), cluster_dir, lines_per_block, table, deflate)

    written = (cdx_lines_rdd(sc, cdx_files, cdx_bytes_per_task, sizes)
               .map(keyed)
               .repartitionAndSortWithinPartitions(shards, _shard_of_key, True, _line_of_key)
               .mapPartitionsWithIndex(write)
               .collect())
    stats = {s["shard"]: s for s in written}
    if sorted(stats) != list(range(shards)):
        raise RuntimeError(f"expected stats of shards 0..{shards - 1}, got {sorted(stats)}")
    return stats


# -- the engine ------------------------------------------------------------------------------

@dataclass(frozen=True)
class SparkSettings(Settings):
    spark_master: str = option_field(options.SPARK_MASTER)
    archives_per_task: int = option_field(options.ARCHIVES_PER_TASK)
    cdx_bytes_per_task: int = option_field(options.CDX_BYTES_PER_TASK)
    # a SparkContext to run on (and leave running), else the active one or one made here
    spark_context: object = None


class SparkEngine(Engine):
    """The steps as Spark jobs (see the module)."""
    Settings = SparkSettings

    def __init__(self, name, settings=None):
        super().__init__(name, settings)
        settings = self.settings
        self.master, self.verbose = settings.spark_master, settings.verbose
        self.archives_per_task = settings.archives_per_task
        self.cdx_bytes_per_task = settings.cdx_bytes_per_task
        self._sc, self._made_here = settings.spark_context, False
        self._jvm_died = False
        self.sizes = None  # of the CDX files, in the order of the statuses, from step 1

    @property
    def sc(self):
        """The SparkContext, made when first needed: a run with nothing to do starts none."""
        if self._sc is None:
            self._sc, self._made_here = spark_context(self.master, self.verbose)
        return self._sc

    def close(self):
        if self._made_here:
            if not self._jvm_died:  # a dead JVM cannot be asked to stop
                self._sc.stop()
            self._sc, self._made_here = None, False

    @property
    def tasks_here(self):
        return self.sc.master.startswith("local")

    def _run(self, step, function, *args, **kwargs):
        """``function(self.sc, *args, **kwargs)``; a task that failed raised as what it
        raised (``engines.task_failure``)."""
        from py4j.protocol import Py4JError, Py4JJavaError
        try:
            return function(self.sc, *args, **kwargs)
        except Py4JJavaError as exc:
            # the Python traceback of the task, inside the JVM's report
            text = str(exc)
            start = text.rfind("Traceback (most recent call last):")
            if start < 0:
                raise
            raise task_failure(text[start:].split("\n\tat ", 1)[0],
                               f"a Spark task of the {step} step") from None
        except (Py4JError, ConnectionError):
            # py4j's words for a JVM that is gone ("Connection refused", "PythonRDD does
            # not exist in the JVM") would blame the network or the installation
            death = self._jvm_death()
            if death is None:
                raise
            raise StepFailed(f"Spark's JVM {death} during the {step} step (killed, or out "
                             "of memory: see the system log, or rerun with --verbose for "
                             "Spark's own messages)") from None

    def _jvm_death(self):
        """How the JVM this process started (``pyspark``'s gateway) ended, or None while
        it runs (or when it was not started here: spark-submit's)."""
        process = getattr(getattr(self._sc, "_gateway", None), "proc", None)
        if process is None:
            return None
        try:  # py4j may see the socket close before the killed JVM can be reaped
            status = process.wait(timeout=3)
        except subprocess.TimeoutExpired:
            return None
        self._jvm_died = True
        if status < 0:
            return f"(pid {process.pid}) was killed by {signal.Signals(-status).name}"
        return f"(pid {process.pid}) exited with status {status}"

    def each(self, step, task, items, settings):
        def run(sc):
            return sc.parallelize(items, len(items)).map(lambda item: task(item, settings)).collect()
        return self._run(step, run)

    def index(self, archives, cdx_dir, settings):
        statuses, self.sizes = self._run("index", index_archives, archives, cdx_dir, settings,
                                         self.archives_per_task)
        return statuses

    def _sizes(self, cdx_files):
        """The sizes of ``cdx_files``: the archives' CDX files first, known from ``index``,
        then the files of index inputs (``build`` adds them after), asked for once."""
        known = self.sizes or []
        if len(known) < len(cdx_files):
            self.sizes = known = known + [storage.size(p) for p in cdx_files[len(known):]]
        return known

    def sample(self, cdx_files, shards, splits_dir):
        return self._run("sample", sample_splits, cdx_files, shards, splits_dir,
                         cdx_bytes_per_task=self.cdx_bytes_per_task, sizes=self._sizes(cdx_files))

    def write_cluster(self, cdx_files, split_lines, shards, lines_per_block, cluster_dir,
                      deflate=options.BLOCK_DEFLATE_OLD):
        return self._run("cluster", write_cluster, cdx_files, split_lines, shards, cluster_dir,
                         lines_per_block, self.cdx_bytes_per_task, self._sizes(cdx_files),
                         self.table, deflate)


def _not_from_py4j(record):
    return f"{os.sep}py4j{os.sep}" not in record.pathname


def spark_context(master=None, verbose=False):
    """The active SparkContext, or a new one (on ``master``, else the one spark-submit set,
    else ``local[*]``); and whether it was made here (so that the caller stops only that)."""
    from pyspark import SparkConf, SparkContext
    active = SparkContext._active_spark_context
    if active is not None:
        return active, False
    conf = SparkConf().setAppName("webarchive-index build")
    if not verbose:  # our own progress, and a failed task reported in a line
        conf.set("spark.ui.showConsoleProgress", "false")
    if master:
        conf.setMaster(master)
    conf.setIfMissing("spark.master", "local[*]")
    if conf.get("spark.master").startswith("local"):
        # local Python workers: the interpreter that has this package (spark-submit's
        # default is whatever `python3` is on the PATH)
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    sc = SparkContext(conf=conf)
    sc.setLogLevel("INFO" if verbose else "OFF")
    if not verbose:
        # A JVM that dies is reported in a line (SparkEngine._run), not in the
        # tracebacks of py4j's loggers and of pyspark's accumulator server thread
        # (py4j logs a lost connection on the root logger itself)
        logging.getLogger().addFilter(_not_from_py4j)
        sc._accumulatorServer.handle_error = lambda request, address: None
    return sc, True


ENGINE = SparkEngine
