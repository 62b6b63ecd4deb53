"""Sorted runs of CDX lines (read by ``cdx/cdxfile.py``): checked, sorted in bounded memory,
merged, kept on disk.

Lines here are ``bytes`` without their newline, UTF-8, compared bytewise: the order of
``str`` code points, of ``LC_ALL=C sort`` and of Hadoop's ``Text``, which the jobs use.
They travel in *chunks*: lists of lines, each list sorted and each chunk of a sorted
stream starting at or after the end of the one before. Working a chunk at a time keeps
the per-line work in C (``bytes.split``, ``list.sort``, ``bisect``) and memory bounded
by the chunk size, whatever the input size.

* :func:`checked`: passes a stream's chunks on, raising :class:`NotSorted` before the
  first chunk out of order.
* :func:`merge`: the k-way merge of sorted streams, a round at a time: every line up to
  the smallest last line of the streams' current chunks is taken at once and sorted
  (timsort merges the already sorted pieces in C).
* :class:`RunWriter` / :class:`Run`: a sorted run in a local file, one line per line,
  with an index of every ``INDEX_EVERY``-th line's offset, so that the number of lines
  below any key and where they end are found by binary search (:meth:`Run.position`)
  and a run is read from there on (:meth:`Run.chunks`).
* :func:`spill`: an unsorted stream as sorted runs of at most ``memory`` bytes each;
  :func:`merge_runs`: runs merged into one, in rounds of at most ``fan_in`` open at once.

Usage::

    with RunWriter("/tmp/all.run") as out:
        for chunk in merge([checked(cdxfile.read_chunks(p), p) for p in paths]):
            out.write(chunk)
    run = out.run
    below, offset = run.position(b"com,example)/")
"""
import array
import bisect
import itertools
import mmap
import operator
import os

# Bytes read at a time from one stream; a merge of n streams reads less from each when
# n * CHUNK_BYTES * HELD_PER_CHUNK is more than its memory, but not under MIN_CHUNK_BYTES.
CHUNK_BYTES = 1 << 20
MIN_CHUNK_BYTES = 64 << 10
# What a stream being merged holds, in chunks: its chunk as lines (a bytes object each),
# the inflated piece being cut into lines, the compressed bytes being inflated, and its
# share of the merge's output (measured, tracemalloc: a gzipped CDX file read in 1 MiB
# chunks by cdxfile.read_chunks holds about 6 MiB; through inputs.indexes' checks, 7 MiB)
HELD_PER_CHUNK = 8
# Lines between two entries of a run's index: 8 bytes per entry, and a lookup reads at
# most this many lines after its binary search.
INDEX_EVERY = 256


class NotSorted(ValueError):
    """A stream that was to be sorted is not; ``name`` says which."""

    def __init__(self, name, line):
        super().__init__(f"{name} is not sorted: {line[:200]!r} comes after a greater line")
        self.name = name


def _is_sorted(chunk):
    return all(map(operator.le, chunk, itertools.islice(chunk, 1, None)))


def checked(chunks, name):
    """``chunks`` passed on unchanged; ``NotSorted(name)`` instead of the first one that
    is not sorted or starts below the end of the one before."""
    last = None
    for chunk in chunks:
        if chunk:
            if (last is not None and chunk[0] < last) or not _is_sorted(chunk):
                bad = chunk[0] if last is not None and chunk[0] < last else next(
                    b for a, b in zip(chunk, chunk[1:]) if b < a)
                raise NotSorted(name, bad)
            last = chunk[-1]
            yield chunk


def _next_chunk(chunks):
    for chunk in chunks:
        if chunk:
            return chunk
    return None


def merge(streams):
    """The sorted chunks of the k-way merge of sorted chunk ``streams`` (duplicates kept).

    Each round takes, from every stream, the lines up to the smallest of the streams'
    current last lines, so that a round consumes at least one whole chunk and holds at
    most one chunk per stream.
    """
    streams = [iter(stream) for stream in streams]
    try:
        yield from _merge(streams)
    finally:
        for stream in streams:
            if hasattr(stream, "close"):
                stream.close()


def _merge(streams):
    heads = []
    for chunks in streams:
        chunk = _next_chunk(chunks)
        if chunk is not None:
            heads.append([chunk, 0, chunks])
    while len(heads) > 1:
        bound = min(chunk[-1] for chunk, _, _ in heads)
        out, live = [], []
        for head in heads:
            chunk, start, chunks = head
            if chunk[-1] <= bound:
                out += chunk[start:] if start else chunk
                head[0], head[1] = _next_chunk(chunks), 0
                if head[0] is None:
                    continue
            else:
                end = bisect.bisect_right(chunk, bound, start)
                out += chunk[start:end]
                head[1] = end
            live.append(head)
        heads = live
        out.sort()
        yield out
    if heads:
        chunk, start, chunks = heads[0]
        yield chunk[start:] if start else chunk
        yield from filter(None, chunks)


class Run:
    """A sorted run in a local file (``lines`` lines, ``size`` bytes), with its index
    beside it in ``path + ".idx"``. Small and picklable: tasks hand runs to each other."""

    def __init__(self, path, lines, size):
        self.path, self.lines, self.size = path, lines, size

    def __repr__(self):
        return f"Run({self.path!r}, lines={self.lines}, size={self.size})"

    def __getstate__(self):
        return self.path, self.lines, self.size

    def __setstate__(self, state):
        self.path, self.lines, self.size = state

    def position(self, key):
        """``(n, offset)``: the number of lines below ``key`` (bytes) and the byte offset
        of the first line at or above it (``(lines, size)`` when there is none)."""
        if key is None or self.lines == 0:
            return 0, 0
        index = array.array("Q")
        with open(self.path + ".idx", "rb") as fh:
            index.frombytes(fh.read())
        with open(self.path, "rb") as fh, \
                mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
            def line_at(offset):
                return data[offset:data.find(b"\n", offset)]

            entry = bisect.bisect_left(range(len(index)), key, key=lambda i: line_at(index[i]))
            if entry == 0:
                return 0, 0
            lineno, offset = (entry - 1) * INDEX_EVERY, index[entry - 1]
            while offset < self.size:
                end = data.find(b"\n", offset)
                if data[offset:end] >= key:
                    break
                lineno, offset = lineno + 1, end + 1
            return lineno, offset

    def chunks(self, offset=0, chunk_bytes=CHUNK_BYTES):
        """The run's lines from byte ``offset`` (a line start) on, in chunks."""
        carry = b""
        with open(self.path, "rb") as fh:
            fh.seek(offset)
            while data := fh.read(chunk_bytes):
                lines = data.split(b"\n")
                lines[0] = carry + lines[0]
                carry = lines.pop()
                if lines:
                    yield lines

    def remove(self):
        for path in (self.path, self.path + ".idx"):
            try:
                os.remove(path)
            except FileNotFoundError:
                pass


class RunWriter:
    """Writes sorted chunks into a run file and its index; ``run`` once closed.

    The caller guarantees the order (runs are written from merged or sorted chunks).
    """

    def __init__(self, path):
        self.path = path
        self._fh = open(path, "wb")
        self._index = array.array("Q")
        self.lines = self.size = 0
        self.run = None

    def __enter__(self):
        return self

    def __exit__(self, kind, *_):
        if kind is None:
            self.close()
        else:
            self._fh.close()
            Run(self.path, 0, 0).remove()

    def write(self, chunk):
        # written INDEX_EVERY lines at a time, from one entry of the index to the next: no
        # line is measured alone, and no copy is the size of a merge's chunk (tens of MB,
        # which the allocator maps afresh from the kernel and faults in a page at a time)
        at = 0
        while at < len(chunk):
            if not self.lines % INDEX_EVERY:
                self._index.append(self.size)
            lines = chunk[at:at + INDEX_EVERY - self.lines % INDEX_EVERY]
            at += len(lines)
            self.lines += len(lines)
            data = b"\n".join(lines) + b"\n"
            self._fh.write(data)
            self.size += len(data)

    def close(self):
        self._fh.close()
        with open(self.path + ".idx", "wb") as fh:
            self._index.tofile(fh)
        self.run = Run(self.path, self.lines, self.size)
        return self.run


def write_run(chunks, path):
    """A run made of sorted ``chunks``."""
    with RunWriter(path) as out:
        for chunk in chunks:
            out.write(chunk)
    return out.run


def _spill_file(directory, counter=itertools.count()):
    return os.path.join(directory, f"spill-{os.getpid()}-{next(counter)}.run")


def spill(chunks, directory, memory):
    """Sorted runs (in ``directory``) of the lines of ``chunks``, in any order: lines are
    gathered up to about ``memory`` bytes, sorted and written as one run."""
    runs, gathered, size = [], [], 0
    for chunk in chunks:
        gathered += chunk
        size += sum(map(len, chunk)) + len(chunk)
        if size >= memory:
            gathered.sort()
            runs.append(write_run([gathered], _spill_file(directory)))
            gathered, size = [], 0
    if gathered:
        gathered.sort()
        runs.append(write_run([gathered], _spill_file(directory)))
    return runs


def chunk_bytes_for(streams, memory):
    """How much to read from each of ``streams`` merged at once within ``memory`` bytes
    (no more than CHUNK_BYTES: larger reads are no faster)."""
    return max(MIN_CHUNK_BYTES, min(CHUNK_BYTES, memory // (max(1, streams) * HELD_PER_CHUNK)))


def merge_runs(runs, directory, fan_in, memory, limit=None):
    """``runs`` merged into new ones (the merged runs removed), at most ``fan_in`` at a
    time, until at most ``limit`` (default ``fan_in``) are left; the runs left.

    Each merge takes the smallest runs, and the first as few as will do, so that the
    fewest lines are written again (the optimal merge pattern).
    """
    limit = fan_in if limit is None else limit
    if fan_in < 2 or limit < 1:
        raise ValueError(f"cannot merge {fan_in} runs at a time down to {limit}")
    runs = list(runs)
    while len(runs) > limit:
        runs.sort(key=lambda run: run.size)
        width = min(fan_in, len(runs) - limit + 1)
        group, runs = runs[:width], runs[width:]
        size = chunk_bytes_for(width, memory)
        runs.append(write_run(merge([run.chunks(0, size) for run in group]),
                              _spill_file(directory)))
        for run in group:
            run.remove()
    return runs
