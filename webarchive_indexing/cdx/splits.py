"""Choosing shard split points from a deterministic, unbiased sample of CDX lines.

Each line gets a pseudo-random sort key, :func:`sample_key`, a hash of the line: the
sample is the ``size`` lines with the smallest ``(key, line)`` pairs ("bottom-k").  That
set does not depend on how the lines were spread over mappers or in which order they
came, so a rebuild, another runner or another partitioning gives the same sample and
hence byte-identical clusters; and since the hash is unrelated to CDX order, every line
is equally likely to be sampled.  Each mapper keeps a bounded :class:`Reservoir`, one
reducer combines them with :func:`merge`, and :func:`choose_splits` turns the sample
into the ``shards - 1`` strictly increasing split lines that Hadoop's
``TotalOrderPartitioner`` demands.

Lines are CDX lines as ``str`` without the trailing newline.  Python orders ``str`` by
code point, which is the byte order of their UTF-8 encodings, i.e. the order in which
Hadoop compares ``Text`` keys.

Usage::

    from webarchive_indexing.cdx import splits

    reservoir = splits.Reservoir(300 * 100)        # in each mapper
    for line in cdx_lines:
        reservoir.add(line)
    pairs = reservoir.items()                      # emitted as (key, line)

    sample = splits.merge(all_pairs, 300 * 100)    # in the one reducer
    points = splits.choose_splits(sample, 300)     # 299 split lines
    text = splits.format_splits(points)            # splits.txt
    assert splits.parse_splits(text) == points
    shard = splits.shard_of(line, points)          # 0..299
"""

import bisect
import hashlib
import heapq

# Sorts after every CDX line (they start with a SURT host, never with U+10FFFF, the
# largest code point) and is still valid UTF-8 for Hadoop's Text.
PAST_END = "\U0010ffff"


def sample_key(line: str) -> str:
    """The line's sampling key: 16 lowercase hex digits of its 8-byte blake2b hash.

    Fixed width, so text order equals numeric order wherever the keys get sorted (the
    original job wrote random floats as JSON text and Hadoop sorted them as text).
    """
    return hashlib.blake2b(line.encode("utf-8"), digest_size=8).hexdigest()


class _Largest:
    """Heap entry with inverted order, so that heapq's min-heap has the largest pair on top."""

    __slots__ = ("pair",)

    def __init__(self, pair: tuple[str, str]):
        self.pair = pair

    def __lt__(self, other: "_Largest") -> bool:
        return other.pair < self.pair


class Reservoir:
    """The ``size`` smallest ``(key, line)`` pairs seen, in memory bounded by ``size``.

    Ties in the key (hash collisions, a line seen twice) are broken by the line itself,
    so what is kept never depends on the order of :meth:`add` calls.
    """

    def __init__(self, size: int):
        if size < 1:
            raise ValueError(f"reservoir size must be at least 1, got {size}")
        self.size = size
        self._heap: list[_Largest] = []

    def add(self, line: str, key: str | None = None) -> None:
        """Offer ``line``; ``key`` defaults to :func:`sample_key` (pass it when already known)."""
        pair = (sample_key(line) if key is None else key, line)
        if len(self._heap) < self.size:
            heapq.heappush(self._heap, _Largest(pair))
        elif pair < self._heap[0].pair:
            heapq.heapreplace(self._heap, _Largest(pair))

    def items(self) -> list[tuple[str, str]]:
        """The kept ``(key, line)`` pairs, sorted by key."""
        return sorted(entry.pair for entry in self._heap)


def merge(items_iter, size: int) -> list[str]:
    """The lines of the ``size`` smallest ``(key, line)`` pairs of many reservoirs, by key.

    Since each reservoir holds the bottom of its own part, this is the bottom of all of
    the input: the same sample as one reservoir over every line.
    """
    reservoir = Reservoir(size)
    for key, line in items_iter:
        reservoir.add(line, key)
    return [line for _, line in reservoir.items()]


def choose_splits(sample_lines, shards: int) -> list[str]:
    """Exactly ``shards - 1`` unique, strictly increasing split lines from a sample.

    With ``m >= shards`` distinct sample lines, sorted, the split lines are those at
    index ``floor(i * m / shards)`` for ``i`` in ``1..shards-1`` (for a sample of
    ``shards * scaler`` lines: every scaler-th line, the first dropped).

    With fewer distinct lines (a tiny input), every distinct line but the smallest is a
    split line and the missing ones are synthetic keys, :data:`PAST_END` followed by a
    zero-padded counter, which sort after every CDX line: the LAST shards then receive
    no lines and come out empty, rather than the job failing.  ``shards == 1`` gives no
    split lines.
    """
    if shards < 1:
        raise ValueError(f"shards must be at least 1, got {shards}")
    distinct = sorted(set(sample_lines))
    m = len(distinct)
    if m >= shards:
        return [distinct[i * m // shards] for i in range(1, shards)]
    real = distinct[1:]
    width = len(str(shards))
    return real + [f"{PAST_END}{n:0{width}d}" for n in range(shards - 1 - len(real))]


def shard_of(line: str, splits: list[str]) -> int:
    """The shard of ``line``: shard ``i`` holds ``splits[i-1] <= line < splits[i]``."""
    return bisect.bisect_right(splits, line)


def _short(line: str) -> str:
    return repr(line if len(line) <= 80 else line[:77] + "...")


def _check_increasing(splits: list[str]) -> None:
    for number in range(1, len(splits)):
        if not splits[number - 1] < splits[number]:
            raise ValueError(f"line {number + 1}: split {_short(splits[number])} is not greater "
                             f"than line {number}, {_short(splits[number - 1])}")


def format_splits(splits: list[str]) -> str:
    """splits.txt: one split line per line, each terminated by ``'\\n'``."""
    _check_increasing(splits)
    for number, line in enumerate(splits, 1):
        if "\n" in line:
            raise ValueError(f"line {number}: split {_short(line)} contains a newline")
    return "".join(f"{line}\n" for line in splits)


def parse_splits(text: str) -> list[str]:
    """Read splits.txt; ``ValueError`` naming the line if it is not strictly increasing.

    A missing final newline is an error too: it is how a truncated file looks.
    """
    if not text:
        return []
    if not text.endswith("\n"):
        raise ValueError("splits text does not end with a newline (truncated?)")
    # not splitlines(): it also splits at \r, \x1c, \x85, \u2028..., which CDX lines may hold
    splits = text[:-1].split("\n")
    _check_increasing(splits)
    return splits
