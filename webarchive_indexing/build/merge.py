"""A ZipNum cluster's shards written by merging sorted CDX files on a pool of processes.

Nothing is sorted globally: CDX files are sorted already (those found not to be are
sorted here, in bounded memory), so the work is merging, and compressing, which is
most of the time and runs on every core.

* **Phase A** (:func:`make_run`, one task per group of at most ``fan_in`` inputs, at
  least as many groups as workers): each input is read once and the group merged into
  one sorted run in the work directory (:mod:`runs`). An input found out of order is
  cut into sorted runs of at most ``memory`` bytes, and the task starts again with them.
  Where asked, the task samples its inputs on the way (:func:`sample_every`).
* **Rounds**: while there are more runs than ``fan_in``, groups of them are merged
  into one (:func:`merge_group`), so that no task holds more than ``fan_in`` files open.
* **Phase B** (:func:`plan_pieces`, :func:`write_piece`): each shard (the lines
  between two split points) is cut into *pieces* at lines of the sample, so that there
  are enough pieces for every worker even with one shard. A piece task finds, by
  binary search in every run (:meth:`runs.Run.position`), how many lines of its shard
  come before its range and so which whole blocks are its own (block ``j`` of a shard
  holds its lines ``j*B .. j*B+B-1``), merges the runs from there and writes those
  blocks. A shard of one piece is written in place; the pieces of a larger one are
  joined by :func:`join_shard`. The result is the bytes ``tasks.write_shard`` writes
  for the whole shard: the same lines, blocks and deflate.

Usage (``pool`` is a ``concurrent.futures`` executor, ``workers`` its processes)::

    merging = Merging(pool, work_dir, workers)
    run_list, pairs, unsorted, _ = make_runs(merging, paths, sizes,
                                             {p: SAMPLE_STRIDE for p in paths}, shards * 100)
    sample = splits.merge(pairs, shards * 100)
    written = write_shards(merging, run_list, splits.choose_splits(sample, shards), sample,
                           "out/.cluster-build-x", 3000)
    # {shard: {"shard", "lines", "blocks", "bytes"}}: for steps.finalize_cluster
"""
import bisect
import concurrent.futures
import errno
import heapq
import math
import os
import resource
import tempfile
from dataclasses import dataclass, replace
from typing import NamedTuple

from . import runs
from ..cdx import cdxfile, splits
from ..cdx.cdxfile import IndexInputError
from .. import storage
from ..options.table import BLOCK_DEFLATE_OLD
from ..zipnum import layout
from ..util.progress import counted
from ..util.workers import watching
from .indexprep import report

# Most inputs one task merges at once, or runs one piece reads: files open at once.
FAN_IN = 256
# Files a worker holds open besides the inputs of a merge (its interpreter, its pipes to
# the pool, a task's output, libraries' own), with room to spare
FD_MARGIN = 32
# Memory for the lines a task holds at once (read buffers, a chunk being sorted).
MEMORY = 256 << 20
# Pieces per worker, for an even load when pieces differ in size.
PIECES_PER_WORKER = 4
# Fewest blocks in a piece: a piece reads up to a block of lines it does not keep.
MIN_PIECE_BLOCKS = 16
# 1 in SAMPLE_STRIDE lines of each CDX input is offered to its sample.
SAMPLE_STRIDE = 16


@dataclass(frozen=True)
class Merging:
    """Where and how a merge runs (``make_runs``, ``write_shards``, an update's
    ``update.update_shards``): on ``pool`` (a ``concurrent.futures`` executor) of
    ``workers`` processes, its runs and pieces in ``work_dir``, at most ``fan_in`` files
    open in a task and ``memory`` bytes of lines held, each phase shown on ``progress`` (a
    ``Progress``, or None)."""
    pool: object
    work_dir: str
    workers: int = 1
    fan_in: int = FAN_IN
    memory: int = MEMORY
    progress: object = None


def fan_in_within_limit(fan_in):
    """``fan_in``, or fewer: as many files as a task may open at once, besides those a worker
    holds anyway (FD_MARGIN), under this process's limit of open files (which its workers
    inherit; macOS's default is 256). ``OSError`` (EMFILE) if too few are allowed to merge."""
    limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if limit == resource.RLIM_INFINITY:
        return fan_in
    if limit - FD_MARGIN < 2:
        raise OSError(errno.EMFILE, f"only {limit} files may be open at once: too few to "
                                    f"merge sorted files (at least {FD_MARGIN + 2})")
    return min(fan_in, limit - FD_MARGIN)


class InputFailed(Exception):
    """An input could not be read to its end; ``path`` says which."""

    def __init__(self, path, reason):
        super().__init__(f"{path}: {reason}")
        self.path, self.reason = path, reason


def run_tasks(pool, function, calls, progress=None, label=None):
    """``function(*args)`` for each ``args`` of ``calls`` on the pool, the results in that
    order; ``progress`` (a ``Progress``) shows ``label: done/total`` meanwhile (if there
    is anything to do)."""
    with watching(pool):
        futures = [pool.submit(function, *args) for args in calls]
        if progress is not None and futures:
            finished = [0]
            progress.step(label, count=lambda: finished[0], total=len(futures))
            for _ in concurrent.futures.as_completed(futures):
                finished[0] += 1
            progress.done()
        return [future.result() for future in futures]


class RunTask(NamedTuple):
    inputs: tuple          # paths of CDX files, or index sources (``inputs.indexes``)
    sampled: dict          # input key -> stride, for the inputs to sample (see sample_every)
    path: str              # the run to write
    work_dir: str          # for runs of unsorted inputs
    fan_in: int = FAN_IN
    memory: int = MEMORY
    sample_size: int = 0
    removal: object = None  # a shardrun.Removal: lines it removes are left out


class RunResult(NamedTuple):
    run: runs.Run
    sample: list           # (key, line) pairs of the sampled inputs' bottom-k
    unsorted: list         # keys of the inputs that were not sorted
    reports: dict          # index source path -> (errors, warnings, lines read)


class Made(NamedTuple):
    """What phase A made: the runs, the sample, the inputs found unsorted, and what was
    found reading each index source."""
    runs: list
    sample: list
    unsorted: list
    reports: dict


def input_key(item):
    """What names an input of phase A: a CDX file's path, or an index source's."""
    return item if isinstance(item, str) else item.path


def sample_every(chunks, reservoir, stride):
    """``chunks`` passed on, offering to ``reservoir`` the lines at positions 0, stride,
    2*stride... of the stream: every line (stride 1, as the sample job), or a fixed
    subset that spares hashing every line (SAMPLE_STRIDE, for CDX inputs)."""
    position = 0
    for chunk in chunks:
        for line in chunk[-position % stride::stride]:
            reservoir.add(line.decode("utf-8"))
        position += len(chunk)
        yield chunk


def make_run(task):
    """Phase A: merge ``task.inputs`` into the sorted run ``task.path``; a RunResult."""
    unsorted = []
    while True:
        try:
            return _make_run(task, unsorted)
        except runs.NotSorted as exc:
            unsorted.append(exc.name)


def _read(path, size):
    try:
        yield from cdxfile.read_chunks(path, size)
    except IndexInputError as exc:
        raise InputFailed(path, exc.reason) from exc
    except OSError as exc:
        if storage.of_environment(exc):
            raise
        raise InputFailed(path, str(exc) or type(exc).__name__) from exc


def _read_source(source, size, ordered, reports):
    """The chunks of an index source through its own reader (``inputs.indexes``):
    ``NotSorted`` when ``ordered`` and it is not; once read whole, or until a failure
    (the lines before it are kept, as the jobs get them), what was found goes to
    ``reports``."""
    failed = None
    try:
        for chunk in source.chunks(size):
            if ordered and source.unsorted is not None:
                raise runs.NotSorted(source.path, chunk[0])
            yield chunk
    except (IndexInputError, OSError) as exc:
        if storage.of_environment(exc):
            raise
        failed = exc
    reports[source.path] = (*report(source, failed), source.lines_read)


def _make_run(task, unsorted):
    reservoir = splits.Reservoir(task.sample_size) if task.sampled else None
    reports = {}

    def lines_of(item, size, ordered):
        key = input_key(item)
        if isinstance(item, str):
            chunks = _read(item, size)
            chunks = runs.checked(chunks, key) if ordered else chunks
        else:
            chunks = _read_source(item, size, ordered, reports)
        if task.removal:
            chunks = task.removal.kept(chunks)
        return sample_every(chunks, reservoir, task.sampled[key]) if key in task.sampled \
            else chunks

    in_order = [item for item in task.inputs if input_key(item) not in unsorted]
    spilled = []
    for item in task.inputs:
        if input_key(item) in unsorted:
            spilled += runs.spill(lines_of(item, runs.CHUNK_BYTES, False), task.work_dir,
                                  task.memory)
    spilled = runs.merge_runs(spilled, task.work_dir, task.fan_in, task.memory,
                              limit=max(1, task.fan_in - len(in_order)))
    size = runs.chunk_bytes_for(len(in_order) + len(spilled), task.memory)
    streams = [lines_of(item, size, True) for item in in_order]
    streams += [run.chunks(0, size) for run in spilled]
    try:
        run = runs.write_run(runs.merge(streams), task.path)
    finally:
        for spilled_run in spilled:
            spilled_run.remove()
    return RunResult(run, reservoir.items() if reservoir else [], list(unsorted), reports)


def merge_group(group, path, memory=MEMORY):
    """A round above the fan-in: the runs of ``group`` merged into the run ``path``
    (and removed)."""
    size = runs.chunk_bytes_for(len(group), memory)
    merged = runs.write_run(runs.merge([run.chunks(0, size) for run in group]), path)
    for run in group:
        run.remove()
    return merged


def group_inputs(paths, sizes, groups, fan_in=FAN_IN):
    """``paths`` dealt into at least ``groups`` groups (fewer only if there are fewer
    paths) of at most ``fan_in``, about even in bytes: largest first, each to the
    group with the fewest bytes so far (a heap: 100,000 files are dealt at once)."""
    count = max(min(groups, len(paths)), math.ceil(len(paths) / fan_in))
    dealt = [[] for _ in range(count)]
    open_groups = [(0, number) for number in range(count)]
    for size, path in sorted(zip(sizes, paths), key=lambda pair: -pair[0]):
        total, number = heapq.heappop(open_groups)
        dealt[number].append(path)
        if len(dealt[number]) < fan_in:
            heapq.heappush(open_groups, (total + size, number))
    return [group for group in dealt if group]


class Piece(NamedTuple):
    shard: int
    number: int            # within its shard
    shard_low: bytes       # None: from the first line
    shard_high: bytes      # None: to the last line
    low: bytes
    high: bytes


def plan_pieces(split_lines, sample_lines, total_lines, workers, lines_per_block):
    """The pieces of every shard, in order: each shard cut at lines of the (sorted)
    sample into about ``total_lines / (workers * PIECES_PER_WORKER)`` lines a piece,
    and no piece smaller than MIN_PIECE_BLOCKS blocks."""
    bounds = [None] + [line.encode("utf-8") for line in split_lines] + [None]
    sample = sorted(line.encode("utf-8") for line in set(sample_lines))
    target = max(total_lines / max(1, workers * PIECES_PER_WORKER),
                 MIN_PIECE_BLOCKS * lines_per_block)
    pieces = []
    for shard in range(len(bounds) - 1):
        low, high = bounds[shard], bounds[shard + 1]
        inside = sample[0 if low is None else bisect.bisect_right(sample, low):
                        len(sample) if high is None else bisect.bisect_left(sample, high)]
        estimate = total_lines * len(inside) / max(1, len(sample))
        count = min(len(inside) + 1, max(1, round(estimate / target)))
        # distinct sample lines strictly inside the shard: the cuts strictly increase
        cuts = [low] + [inside[i * len(inside) // count] for i in range(1, count)] + [high]
        pieces += [Piece(shard, n, low, high, cuts[n], cuts[n + 1]) for n in range(len(cuts) - 1)]
    return pieces


class PieceTask(NamedTuple):
    piece: Piece
    runs: tuple
    lines_per_block: int
    path: str              # where its blocks go (a shard of one piece: the shard itself)
    part_path: str = None  # the shard's part file, for a shard of one piece
    memory: int = MEMORY
    deflate: str = BLOCK_DEFLATE_OLD  # of layout.DEFLATES


class PieceResult(NamedTuple):
    piece: Piece
    path: str
    lines: int
    blocks: list           # (block key, compressed length) in order


def write_piece(task):
    """Phase B: the whole blocks of the shard that begin inside the piece's range, from
    the merged runs, written to ``task.path``; a PieceResult."""
    piece, block = task.piece, task.lines_per_block
    total = sum(run.lines for run in task.runs)
    places = {}

    def where(key):
        """Each run's ``(lines below key, where its first line at or above it is)``."""
        if key not in places:
            places[key] = [run.position(key) for run in task.runs]
        return places[key]

    def below(key, at_none):
        """Lines of all runs below ``key``; ``at_none`` for None (the start or the end)."""
        return at_none if key is None else sum(n for n, _ in where(key))

    shard_start, shard_end = below(piece.shard_low, 0), below(piece.shard_high, total)
    low, high = below(piece.low, 0), below(piece.high, total)
    # block j of the shard holds its lines j*block .. j*block+block-1 (counted from 0)
    first = shard_start + -(-(low - shard_start) // block) * block
    end = min(shard_start + -(-(high - shard_start) // block) * block, shard_end)
    blocks = []
    with storage.open_atomic(task.path) as out:
        if end > first:
            size = runs.chunk_bytes_for(len(task.runs), task.memory)
            merged = runs.merge([run.chunks(place, size)
                                 for run, (_, place) in zip(task.runs, where(piece.low))])
            for lines in _blocks(merged, first - low, end - first, block):
                member = layout.gzip_block([b"\n".join(lines) + b"\n"], task.deflate)
                out.write(member)
                blocks.append((layout.block_key(lines[0]), len(member)))
    if task.part_path:
        storage.write_atomic(task.part_path, part_file(blocks, layout.shard_name(piece.shard)))
    return PieceResult(piece, task.path, max(0, end - first), blocks)


def _blocks(chunks, skip, count, block):
    """``count`` lines after the first ``skip`` of the chunked stream, in lists of ``block``."""
    pending = []
    chunks = iter(chunks)
    try:
        for chunk in chunks:
            if skip:
                taken = min(skip, len(chunk))
                chunk, skip = chunk[taken:], skip - taken
            if len(chunk) > count:
                chunk = chunk[:count]
            count -= len(chunk)
            pending += chunk
            while len(pending) >= block:
                yield pending[:block]
                del pending[:block]
            if not count:
                break
    finally:
        chunks.close()
    if pending:
        yield pending


def part_file(blocks, shard):
    """A shard's part file from its blocks' ``(key, length)``, in order."""
    offset, lines = 0, []
    for key, length in blocks:
        lines.append(layout.idx_line(key, shard, offset, length))
        offset += length
    return b"".join(lines)


def join_shard(pieces, shard_path, part_path):
    """A shard made of its pieces' files (in order, then removed), and its part file."""
    blocks = []
    with storage.open_atomic(shard_path) as out:
        for piece in pieces:
            with open(piece.path, "rb") as fh:
                while data := fh.read(runs.CHUNK_BYTES):
                    out.write(data)
            blocks += piece.blocks
    storage.write_atomic(part_path, part_file(blocks, layout.shard_name(pieces[0].piece.shard)))
    for piece in pieces:
        os.remove(piece.path)
    return shard_stats(pieces[0].piece.shard, pieces)


def shard_stats(shard, pieces):
    """What ``tasks.write_shard`` returns for a shard, from its pieces."""
    return layout.shard_stats(shard, sum(p.lines for p in pieces),
                              sum(len(p.blocks) for p in pieces),
                              sum(length for p in pieces for _, length in p.blocks))


def make_runs(merging, inputs, sizes, sampled=None, sample_size=0, removal=None):
    """Phase A and the rounds above ``merging.fan_in``: a ``Made``.

    ``inputs`` are paths of CDX files or index sources (``input_key`` names them),
    ``sizes`` their sizes in bytes (to deal them evenly); ``sampled`` maps the keys of
    the inputs to sample to their stride (``sample_every``), into a bottom-k of
    ``sample_size`` pairs; lines that ``removal`` removes are left out. The runs go to a
    directory of their own in ``merging.work_dir``.
    """
    sampled = sampled or {}
    merging = replace(merging, work_dir=tempfile.mkdtemp(prefix="runs-", dir=merging.work_dir))
    work_dir, fan_in, memory = merging.work_dir, merging.fan_in, merging.memory
    groups = group_inputs(list(inputs), list(sizes), merging.workers, fan_in)
    tasks = [RunTask(tuple(group), {input_key(p): sampled[input_key(p)] for p in group
                                    if input_key(p) in sampled},
                     os.path.join(work_dir, f"run-{i:06d}.run"), work_dir, fan_in, memory,
                     sample_size, removal)
             for i, group in enumerate(groups)]
    noun = "CDX file" if all(isinstance(item, str) for item in inputs) else "index input"
    results = run_tasks(merging.pool, make_run, [(task,) for task in tasks], merging.progress,
                        f"merging {counted(len(inputs), noun)} into {counted(len(tasks), 'sorted run')}")
    run_list = merge_rounds(merging, [result.run for result in results])
    return Made(run_list, [pair for result in results for pair in result.sample],
                [key for result in results for key in result.unsorted],
                {path: found for result in results for path, found in result.reports.items()})


def merge_rounds(merging, run_list):
    """``run_list`` merged on ``merging``'s pool, the fewest lines again, until at most its
    ``fan_in`` runs are left (in its ``work_dir``); the runs left."""
    fan_in, memory = merging.fan_in, merging.memory
    run_list = list(run_list)
    round_number = 0
    while len(run_list) > fan_in:
        round_number += 1
        run_list.sort(key=lambda run: run.size)
        merges = math.ceil((len(run_list) - fan_in) / (fan_in - 1))
        if merges <= fan_in:
            # one round: the smallest runs, in ``merges`` groups, leave exactly fan_in
            merged = len(run_list) - fan_in + merges
            chosen, run_list = run_list[:merged], run_list[merged:]
        else:
            chosen, run_list = run_list, []
            merges = math.ceil(len(chosen) / fan_in)
        groups = [chosen[i::merges] for i in range(merges)]
        work = tempfile.mkdtemp(prefix=f"round{round_number}-", dir=merging.work_dir)
        paths = [os.path.join(work, f"run-{i:06d}.run") for i in range(merges)]
        run_list += run_tasks(merging.pool, merge_group,
                              [(g, p, memory) for g, p in zip(groups, paths)],
                              merging.progress, f"merging runs above the fan-in of {fan_in}, "
                                                f"round {round_number}")
    return run_list


def write_shards(merging, run_list, split_lines, sample_lines, cluster_dir,
                 lines_per_block=layout.LINES_PER_BLOCK, old=None, skip=(),
                 deflate=BLOCK_DEFLATE_OLD):
    """Phase B: every shard of the cluster (``cdx-NNNNN.gz`` and ``part-NNNNN`` in
    ``cluster_dir``) from the merged runs, its blocks compressed by ``deflate`` (of
    ``layout.DEFLATES``); ``{shard: stats}`` as ``tasks.write_shard`` gives them, empty
    shards included.

    ``old`` maps shard numbers to a run of that shard alone (an update's
    ``shardrun.ShardRun``), merged in with the others; shards in ``skip`` are not
    written (an update copies them).
    """
    pool, progress, old = merging.pool, merging.progress, old or {}
    total = sum(run.lines for run in run_list) + sum(run.lines for run in old.values())
    pieces = [piece for piece in plan_pieces(split_lines, sample_lines, total, merging.workers,
                                             lines_per_block) if piece.shard not in skip]
    counts = {}
    for piece in pieces:
        counts[piece.shard] = counts.get(piece.shard, 0) + 1
    tasks = []
    for piece in pieces:
        if counts[piece.shard] == 1:
            path = storage.join(cluster_dir, layout.shard_name(piece.shard))
            part = storage.join(cluster_dir, layout.part_name(piece.shard))
        else:
            path = os.path.join(merging.work_dir,
                                f"piece-{piece.shard:05d}-{piece.number:06d}.gz")
            part = None
        own = (old[piece.shard],) if piece.shard in old else ()
        tasks.append(PieceTask(piece, tuple(run_list) + own, lines_per_block, path, part,
                               merging.memory, deflate))
    by_shard = {}
    label = f"compressing {counted(len(counts), 'shard')} in {counted(len(tasks), 'piece')}"
    for result in run_tasks(pool, write_piece, [(task,) for task in tasks], progress, label):
        by_shard.setdefault(result.piece.shard, []).append(result)
    written = {shard: shard_stats(shard, found) for shard, found in by_shard.items()
               if counts[shard] == 1}
    joined = [shard for shard in by_shard if counts[shard] > 1]
    calls = [(by_shard[shard], storage.join(cluster_dir, layout.shard_name(shard)),
              storage.join(cluster_dir, layout.part_name(shard))) for shard in joined]
    for shard, stats in zip(joined, run_tasks(pool, join_shard, calls, progress,
                                              f"joining the pieces of {counted(len(joined), 'shard')}")):
        written[shard] = stats
    return written
