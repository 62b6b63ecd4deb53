"""A published cluster's shard read as a sorted run, for updates (``build --update``).

Shard ``i`` of a cluster holds the lines of shard ``i`` in order, in blocks of
``lines_per_block`` lines (the last one shorter): it is a sorted run of that shard
already, and it can be entered at any block through the cluster's index. A
:class:`ShardRun` gives what ``merge`` asks of a run (``lines``,
:meth:`position`, :meth:`chunks`) with the lines of removed archives left out, so an
update merges each old shard with the new lines' runs and writes the blocks a full
build would write, and a shard that gains and loses nothing is copied as it is.

:func:`survey` reads what a shard needs before that: its blocks from ``cluster.idx``,
the length of its last block, and (for ``--remove``) which of its lines name a removed
archive, found by a search of each block for the patterns' literal parts before any
line is parsed.
"""
import bisect
import fnmatch
import json
import re
from typing import NamedTuple

from .. import storage
from .layout import BadBlock, BadIdxLine, inflate_block, parse_idx_line

# Bytes of blocks fetched at once when a shard is read on
READ_BYTES = 1 << 20
_CDXJ_FILENAME = re.compile(rb'"filename": ("(?:[^"\\]|\\.)*")')


class ClusterChanged(ValueError):
    """The cluster is not what an update can extend (its blocks, order or split points)."""


def filename_of(line):
    """The ``filename`` field of a CDXJ, CDX11 or CDX9 line (bytes); None if it has none."""
    parts = line.split(b" ", 2)
    if len(parts) == 3 and parts[2].startswith(b"{"):
        found = _CDXJ_FILENAME.search(parts[2])
        return json.loads(found.group(1)) if found else None
    return line.rsplit(b" ", 1)[-1].decode("utf-8", "replace")


class Removal:
    """Which lines an update drops: those whose filename matches one of ``globs``
    (``--remove GLOB``; ``fnmatch``: ``*`` matches ``/`` too) or is one of ``names``
    (archives whose lines are replaced)."""

    def __init__(self, globs=(), names=()):
        self.globs, self.names = list(globs), set(names)
        patterns = [fnmatch.translate(g) for g in self.globs]
        patterns += [re.escape(name) + r"\Z" for name in sorted(self.names)]
        self._match = re.compile("|".join(patterns)).match if patterns else None
        # a block with none of a pattern's literal parts (as they appear in a line) has no
        # match
        self._needles = []
        for text in self.globs + sorted(self.names):
            literal = max(re.split(r"[*?\[\]]", text), key=len) if text in self.globs else text
            self._needles.append(literal.encode() if literal and literal.isascii()
                                 and json.dumps(literal)[1:-1] == literal else b"")

    def __bool__(self):
        return self._match is not None

    def __repr__(self):
        return f"Removal(globs={self.globs!r}, names={sorted(self.names)!r})"

    def of_globs(self):
        """This removal without its ``names``: what it removes from the new lines of an
        update (the new lines of a replaced archive stay)."""
        return Removal(self.globs)

    def matches(self, name):
        """Whether the lines of the archive ``name`` are removed."""
        return self._match is not None and self._match(name) is not None

    def pattern_of(self, name):
        """The first of ``globs`` that matches ``name``, else None (one of ``names``, or kept)."""
        return next((glob for glob in self.globs if fnmatch.fnmatchcase(name, glob)), None)

    def may_match(self, data):
        return any(needle in data for needle in self._needles)

    def kept(self, chunks):
        """``chunks`` without the lines removed."""
        for chunk in chunks:
            yield [line for line in chunk if not self.removed(line)] if self else chunk

    def removed(self, line):
        if not self:
            return False
        name = filename_of(line)
        return name is not None and self.matches(name)


class Block(NamedTuple):
    key: bytes
    offset: int
    length: int


class ShardRun:
    """Shard ``shard`` of a cluster as a run: ``blocks`` of ``lines_per_block`` lines but
    the last, which has ``last_lines``; ``removed`` the sorted numbers (in the shard,
    from 0) of lines left out, and ``removed_by`` how many of them each glob of the
    removal took out."""

    def __init__(self, shard, path, blocks, lines_per_block, last_lines, removed=(),
                 removed_by=None):
        self.shard, self.path, self.blocks = shard, path, list(blocks)
        self.lines_per_block, self.last_lines = lines_per_block, last_lines
        self.removed, self.removed_by = list(removed), dict(removed_by or {})
        self.stored = (len(self.blocks) - 1) * lines_per_block + last_lines if self.blocks else 0
        self.lines = self.stored - len(self.removed)
        self.size = sum(block.length for block in self.blocks)

    def _inflate(self, first, end):
        """The lines of blocks ``first`` to ``end - 1``, fetched in one read; ClusterChanged
        if the index does not place whole gzip members there."""
        offset = self.blocks[first].offset
        length = self.blocks[end - 1].offset + self.blocks[end - 1].length - offset
        try:
            data = storage.read_range(self.path, offset, length) if length >= 0 else b""
            if len(data) != length:
                raise EOFError(f"{len(data)} bytes where the index says {length}")
            return _inflated_lines(data, [(block.offset - offset, block.length)
                                          for block in self.blocks[first:end]])
        except (OSError, EOFError, BadBlock) as exc:
            raise ClusterChanged(f"{self.path}: the blocks at bytes {offset}-{offset + length - 1} "
                                 f"cannot be read ({exc}): the cluster is damaged") from None

    def _block_lines(self, number):
        return self._inflate(number, number + 1)

    def position(self, key):
        """``(n, (block, line))``: the lines (not removed) below ``key``, and where the
        first line at or above it is."""
        if key is None or not self.blocks:
            return 0, (0, 0)
        firsts = {}

        def first_line(number):
            if number not in firsts:
                firsts[number] = self._block_lines(number)[0]
            return firsts[number]

        # blocks whose first line is below the key: the key's place is in the last of them
        below = bisect.bisect_left(range(len(self.blocks)), key, key=first_line)
        if below == 0:
            return 0, (0, 0)
        lines = self._block_lines(below - 1)
        inside = bisect.bisect_left(lines, key)
        stored = (below - 1) * self.lines_per_block + inside
        place = (below, 0) if inside == len(lines) else (below - 1, inside)
        return stored - bisect.bisect_left(self.removed, stored), place

    def chunks(self, place=(0, 0), chunk_bytes=READ_BYTES):
        """The shard's lines (not removed) from ``place`` on, a fetch of blocks at a time."""
        number, skip = place
        while number < len(self.blocks):
            first = number
            end = self.blocks[number].offset
            while number < len(self.blocks) and end - self.blocks[first].offset < chunk_bytes:
                end = self.blocks[number].offset + self.blocks[number].length
                number += 1
            lines = self._inflate(first, number)
            self._check(first, number, len(lines))
            start = first * self.lines_per_block + skip
            lines = lines[skip:] if skip else lines
            drop = self.removed[bisect.bisect_left(self.removed, start):
                                bisect.bisect_left(self.removed, start + len(lines))]
            if drop:
                drop = set(drop)
                lines = [line for i, line in enumerate(lines, start) if i not in drop]
            yield lines
            skip = 0

    def _check(self, first, end, count):
        expected = (end - first) * self.lines_per_block
        if end == len(self.blocks):
            expected += self.last_lines - self.lines_per_block
        if count != expected:
            raise ClusterChanged(f"{self.path}: blocks {first}-{end - 1} hold {count} lines, not "
                                 f"{expected} ({self.lines_per_block} a block): the cluster was "
                                 "not built with these lines per block")


def _inflated_lines(data, blocks):
    """The lines (without ``\\n``; what follows the last one left out) of the gzip blocks
    ``blocks`` ((offset, length) in ``data``, as the index places them), each inflated by
    ``layout.inflate_block`` into a buffer of its own (a whole fetch in one, ~8 MB, would
    be mapped afresh and faulted in a page at a time: half the cost of reading a shard)."""
    lines, carry, view = [], b"", memoryview(data)
    for at, length in blocks:
        if at < 0 or at + length > len(data):
            raise BadBlock(f"the index places a block at {at}-{at + length - 1} of the "
                           f"{len(data)} bytes fetched")
        part = (carry + inflate_block(view[at:at + length])).split(b"\n")
        carry = part.pop()
        lines += part
    return lines


def survey(shard, path, blocks, lines_per_block, removal):
    """The ShardRun of shard number ``shard`` at ``path`` with its ``blocks`` (from the
    cluster's index): its last block counted, its removed lines found."""
    blocks = [Block(*block) for block in blocks]
    run = ShardRun(shard, path, blocks, lines_per_block, 0)
    if not blocks:
        return run
    last = len(run._block_lines(len(blocks) - 1))
    if last > lines_per_block or (len(blocks) > 1 and len(run._block_lines(0)) != lines_per_block):
        raise ClusterChanged(f"{path} was not built with {lines_per_block} lines per block")
    removed, removed_by = [], {}
    if removal:
        whole = ShardRun(shard, path, blocks, lines_per_block, last)
        for number in range(len(blocks)):
            data_lines = whole._block_lines(number)
            joined = b"\n".join(data_lines)
            if removal.may_match(joined):
                start = number * lines_per_block
                for i, line in enumerate(data_lines):
                    if removal.removed(line):
                        removed.append(start + i)
                        glob = removal.pattern_of(filename_of(line))
                        removed_by[glob] = removed_by.get(glob, 0) + 1
    return ShardRun(shard, path, blocks, lines_per_block, last, removed, removed_by)


def read_index(cluster_dir):
    """``{shard name: [Block, ...]}`` from a cluster's ``cluster.idx``, in index order."""
    shards = {}
    idx = storage.join(cluster_dir, "cluster.idx")
    for number, line in enumerate(storage.read_bytes(idx).split(b"\n")[:-1], 1):
        try:
            entry = parse_idx_line(line)
        except BadIdxLine as exc:
            raise ClusterChanged(f"{idx}, line {number}: not a cluster.idx line: {exc}") from None
        shards.setdefault(entry.shard, []).append(Block(entry.key, entry.offset, entry.length))
    return shards
