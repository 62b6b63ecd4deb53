"""ZipNum cluster format: gzip blocks of sorted CDX lines plus a secondary index.

A cluster is what pywb, OpenWayback and Common Crawl's index server read:

* shards ``cdx-00000.gz ...``: concatenated gzip members, each holding
  ``LINES_PER_BLOCK`` consecutive sorted lines (the last block of a shard may be
  shorter; a shard without lines is an empty file);
* ``part-00000 ...``: one line per block of that shard,
  ``urlkey timestamp<TAB>shard<TAB>offset<TAB>length`` (``idx_line`` writes one,
  ``parse_idx_line`` is every reader's parser of one: pywb's ``IDXObject``);
* ``cluster.idx``: all part files in shard order with the 1-based block number across
  the whole cluster appended (pywb's page API needs it);
* ``cluster.loc``: ``shard<TAB>location[<TAB>fallback...]``, a location relative to
  the directory of the .loc (as pywb resolves it), an absolute path or a URI;
* ``cluster.root`` (ours; readers that do not know it ignore it): the first key and
  the byte range of every ~64 KiB slice of ``cluster.idx``, so that a reader of a
  remote cluster finds the slice it needs in memory and fetches only that slice.

Everything here is bytes in / bytes out except ``write_cluster``, a local convenience
that lays a whole cluster out in one directory. Distributed builds use ``ShardWriter``
per reducer, then ``number_parts`` and ``loc_line`` once all shards exist.

Usage::

    from webarchive_indexing.zipnum.layout import write_cluster

    with open("sorted.cdxj", "rb") as lines:
        stats = write_cluster(lines, "/data/cluster", splits=[b"com,example)/ 2024"])
    # {'shards': 2, 'lines': ..., 'blocks': ..., 'bytes': ...}

    # or, per shard, streaming into any binary file object:
    with open("cdx-00000.gz", "wb") as out:
        writer = ShardWriter(out, shard_name(0))
        for line in lines_of_shard_0:
            writer.add(line)
        part = writer.close()          # content of part-00000
"""

import bisect
import functools
import itertools
import os
import re
import zlib
from typing import NamedTuple

import deflate
from isal import isal_zlib

from ..options.table import BLOCK_DEFLATE_OLD, BLOCK_DEFLATES

__all__ = [
    "LINES_PER_BLOCK",
    "shard_name",
    "part_name",
    "block_key",
    "DEFLATES",
    "gzip_block",
    "inflate_block",
    "BadBlock",
    "idx_line",
    "IdxLine",
    "BadIdxLine",
    "parse_idx_line",
    "part_end",
    "with_shard",
    "shard_stats",
    "cluster_totals",
    "ShardWriter",
    "number_parts",
    "loc_line",
    "root_index",
    "parse_root",
    "write_cluster",
]

# Common Crawl and the Internet Archive both use 3000: large enough for good
# compression, small enough that one lookup decompresses little.
LINES_PER_BLOCK = 3000

# A slice of cluster.idx per root entry: one ranged read of a remote index fetches
# about this much. Common Crawl's 300-shard index (~1M blocks) gets a root of ~2000
# entries (~150 KB) and slices of ~700 block lines.
ROOT_SLICE_BYTES = 64 * 1024
ROOT_MAGIC = b"#webarchive-indexing cluster.root 1"

_GZIP_WBITS = 31  # zlib's gzip wrapper writes mtime 0 and no file name: reproducible


def _zlib_like(module, level, data):
    compressor = module.compressobj(level, module.DEFLATED, _GZIP_WBITS)
    return compressor.compress(data) + compressor.flush()


def _deflate_of(name):
    """The function that makes one gzip member of its bytes as ``name`` (``NAME-LEVEL``,
    of ``options.BLOCK_DEFLATES``) says. Each writes mtime 0 and no file name, so the
    same bytes for the same input wherever it runs with the same library version."""
    library, level = name.rsplit("-", 1)
    if library == "libdeflate":
        return functools.partial(deflate.gzip_compress, compresslevel=int(level))
    return functools.partial(_zlib_like, {"zlib": zlib, "isal": isal_zlib}[library], int(level))


# The deflate of a block by its name (build --block-deflate; what contents.json records)
DEFLATES = {name: _deflate_of(name) for name in BLOCK_DEFLATES}


# The file names of a shard and of its part file, as this tool writes them (5 digits, more
# past 99999) and as Common Crawl publishes its shards (cdx-00000.gz)
SHARD_FILE = re.compile(r"cdx-(\d+)\.gz\Z")
PART_FILE = re.compile(r"part-(\d+)\Z")


def shard_name(i: int) -> str:
    return f"cdx-{i:05d}.gz"


def part_name(i: int) -> str:
    return f"part-{i:05d}"


def shard_number(name, pattern=SHARD_FILE):
    """The number of a shard whose file is named ``cdx-NNNNN.gz`` (also under a directory:
    ``build-x/cdx-00042.gz``; with ``pattern=PART_FILE``, of a part file), else None."""
    match = pattern.match(name.rsplit("/", 1)[-1])
    return int(match[1]) if match else None


def named_here(name):
    """Whether ``name`` (a file name) is a shard or part file as ``shard_name`` and
    ``part_name`` name them: one that a build may have written, and may remove."""
    number = shard_number(name)
    if number is not None:
        return name == shard_name(number)
    number = shard_number(name, PART_FILE)
    return number is not None and name == part_name(number)


def shard_stats(shard, lines, blocks, size):
    """What a task reports of a shard it wrote (JSON, for every engine):
    ``{"shard", "lines", "blocks", "bytes"}``."""
    return {"shard": shard, "lines": lines, "blocks": blocks, "bytes": size}


def cluster_totals(shards, stats):
    """``{"shards", "lines", "blocks", "bytes"}`` of a cluster of ``shards`` shards from
    the ``shard_stats`` of its shards."""
    totals = {"shards": shards, "lines": 0, "blocks": 0, "bytes": 0}
    for one in stats:
        totals["lines"] += one["lines"]
        totals["blocks"] += one["blocks"]
        totals["bytes"] += one["bytes"]
    return totals


def block_key(line: bytes) -> bytes:
    """``urlkey timestamp`` of a CDX/CDXJ line: what the secondary index is sorted on."""
    return b" ".join(line.split(b" ", 2)[:2]).rstrip(b"\r\n")


def gzip_block(lines, deflate=BLOCK_DEFLATE_OLD) -> bytes:
    """One gzip member holding the concatenated ``lines``, compressed by the deflate named
    ``deflate`` (of ``DEFLATES``); same input, same bytes."""
    return DEFLATES[deflate](b"".join(lines))


# deflate's utmost ratio: a member whose trailer gives a larger size is damaged, and is not
# given a buffer of that size
MAX_RATIO = 1032


class BadBlock(ValueError):
    """Bytes that are not one whole gzip member (a block)."""


def inflate_block(member: bytes) -> bytes:
    """The text of ``member`` (bytes-like), a block: one whole gzip member, its CRC and size checked;
    ``BadBlock`` saying why not. libdeflate inflates into a buffer of the size the trailer
    gives (a third faster than ISA-L's stream, which a size no member can have gets)."""
    size = int.from_bytes(member[-4:], "little")
    try:
        if size <= MAX_RATIO * len(member):
            text = deflate.gzip_decompress(member)
        else:
            text = isal_zlib.decompress(member, wbits=31)
    except (deflate.DeflateError, ValueError, isal_zlib.error) as exc:  # (ValueError: a bad header)
        raise BadBlock(f"not a gzip block ({exc})") from None
    # inflating stops at the member's end: bytes after it (or fewer) mean the length is wrong
    if len(text) & 0xFFFFFFFF != size:
        raise BadBlock("not one whole gzip block")
    return text


def idx_line(key: bytes, shard: str, offset: int, length: int, lineno: int | None = None) -> bytes:
    """A ``cluster.idx`` line (with the block number) or part-file line (without)."""
    fields = [key, shard.encode(), b"%d" % offset, b"%d" % length]
    if lineno is not None:
        fields.append(b"%d" % lineno)
    return b"\t".join(fields) + b"\n"


# What a cluster.idx line is, as messages say it
IDX_SHAPE = "'urlkey timestamp<TAB>shard<TAB>offset<TAB>length[<TAB>block number]'"


class IdxLine(NamedTuple):
    """A ``cluster.idx`` (or part-file) line: the block at ``offset`` (``length`` bytes) of
    ``shard``, whose first line starts with ``key``; ``lineno`` its number in the cluster
    (None in a part file). ``idx_line(*line)`` writes it back."""
    key: bytes
    shard: str
    offset: int
    length: int
    lineno: int | None = None


class BadIdxLine(ValueError):
    """A line that is not a ``cluster.idx`` line; readers say where it is."""


def part_end(part):
    """The end offset of the last block the part file content ``part`` indexes (0 for an
    empty shard); BadIdxLine if its last line is no index line."""
    last = part.rstrip(b"\n").rsplit(b"\n", 1)[-1]
    if not last:
        return 0
    entry = parse_idx_line(last)
    return entry.offset + entry.length


def with_shard(part, shard):
    """The part file content ``part`` with ``shard`` in the shard column of every line
    (as fast as splitting each line: a cluster of Common Crawl's size has a million)."""
    name = shard.encode()
    return b"".join(b"\t".join([f[0], name, *f[2:]]) + b"\n"
                    for f in (line.split(b"\t") for line in part.splitlines() if line))


def parse_idx_line(line: bytes) -> IdxLine:
    """``line`` (without its newline; a trailing CR is dropped) as an ``IdxLine``; every
    reader of ``cluster.idx`` and part files parses with this one. Stricter than pywb's
    ``IDXObject`` in one way: 4 or 5 fields, a key holding a space (``urlkey timestamp``),
    whole numbers, a UTF-8 shard name; else ``BadIdxLine`` (what was expected, what came).
    """
    fields = line.removesuffix(b"\r").split(b"\t")
    if len(fields) in (4, 5) and b" " in fields[0] and all(f.isdigit() for f in fields[2:]):
        try:
            return IdxLine(fields[0], fields[1].decode("utf-8"), *map(int, fields[2:]))
        except UnicodeDecodeError:
            pass
    raise BadIdxLine(f"expected {IDX_SHAPE}, found {line[:200]!r}")


class ShardWriter:
    """Writes one shard block by block; ``close()`` returns its part-file content.

    Holds at most one block of lines. Lines must end with ``\\n`` and come sorted:
    a violation raises ``ValueError`` at once, because a shard built from unsorted or
    unterminated lines is silently unreadable by binary-searching readers.
    """

    def __init__(self, fileobj, shard: str, lines_per_block=LINES_PER_BLOCK, index_line=None,
                 deflate=BLOCK_DEFLATE_OLD):
        if lines_per_block < 1:
            raise ValueError(f"lines_per_block must be >= 1, got {lines_per_block}")
        self.fileobj = fileobj
        self.shard = shard
        self.lines_per_block = lines_per_block
        if deflate not in DEFLATES:
            raise ValueError(f"no deflate {deflate!r}: expected one of {', '.join(DEFLATES)}")
        self.deflate = deflate
        self.lines = 0
        self.blocks = 0
        self.bytes_written = 0
        self._block = []
        self._last = None
        self._part = []
        # the secondary index's line of a block (key, its gzip member, offset): ZipNum's
        # ``idx_line`` unless another format of it is wanted (a WACZ's ``index.idx``)
        self._index_line = index_line or (
            lambda key, member, offset: idx_line(key, shard, offset, len(member)))

    def add(self, line: bytes):
        if not line.endswith(b"\n"):
            raise ValueError(f"CDX line does not end with a newline: {line[:200]!r}")
        if self._last is not None and line < self._last:
            raise ValueError(f"CDX lines not sorted in {self.shard}: {line[:200]!r} after {self._last[:200]!r}")
        self._last = line
        self._block.append(line)
        self.lines += 1
        if len(self._block) >= self.lines_per_block:
            self._flush()

    def close(self) -> bytes:
        if self._block:
            self._flush()
        return b"".join(self._part)

    def stats(self, shard):
        """The ``shard_stats`` of what was written, as shard number ``shard``."""
        return shard_stats(shard, self.lines, self.blocks, self.bytes_written)

    def _flush(self):
        member = gzip_block(self._block, self.deflate)
        self.fileobj.write(member)
        self._part.append(self._index_line(block_key(self._block[0]), member, self.bytes_written))
        self.bytes_written += len(member)
        self.blocks += 1
        self._block = []


def number_parts(parts):
    """Yield ``cluster.idx`` lines: the part lines with the cluster-wide block number.

    ``parts`` are part-file contents in shard order; the number is 1-based and runs
    across shards, because pywb computes page counts as differences of these numbers.
    """
    lineno = 0
    for part in parts:
        for line in part.splitlines():
            if not line:
                continue
            if line.count(b"\t") != 3:
                raise ValueError(f"not a part-file line (key, shard, offset, length): {line[:200]!r}")
            lineno += 1
            yield line + b"\t%d\n" % lineno


def loc_line(shard: str, *locations: str) -> bytes:
    """``cluster.loc`` line; each location is an absolute path, a URI, or a path relative
    to the .loc's directory that stays below it (pywb resolves those against it;
    OpenWayback takes every location as it is, so relative ones only where it runs in
    that directory: see the README).
    """
    if not locations:
        raise ValueError(f"no location given for {shard}")
    for location in locations:
        if any(c in location for c in "\t\r\n"):
            raise ValueError(f"cluster.loc location contains a tab or newline: {location!r}")
        if "://" not in location and not os.path.isabs(location) and (
                not location or ".." in location.split("/")):
            raise ValueError(f"cluster.loc location outside the .loc's directory: {location!r}")
    return "\t".join((shard,) + locations).encode() + b"\n"


def root_index(idx: bytes, slice_bytes=ROOT_SLICE_BYTES) -> bytes:
    """The root index of ``cluster.idx`` content ``idx``.

    A header ``#webarchive-indexing cluster.root 1<TAB>idx size<TAB>slice bytes``, then
    per slice ``first key<TAB>offset<TAB>length``. Slices hold whole lines, each at
    least ``slice_bytes`` long except the last; the key is the slice's first line up to
    its first TAB (``urlkey timestamp``), which orders like the whole line against any
    search key without a TAB or control character.
    """
    if slice_bytes < 1:
        raise ValueError(f"slice_bytes must be >= 1, got {slice_bytes}")
    entries = [ROOT_MAGIC + b"\t%d\t%d\n" % (len(idx), slice_bytes)]
    start = 0
    while start < len(idx):
        end = idx.find(b"\n", start + slice_bytes - 1)
        end = len(idx) if end < 0 else end + 1
        tab = idx.find(b"\t", start, end)
        if tab < 0:
            raise ValueError(f"not a cluster.idx line at byte {start}: {idx[start:start + 200]!r}")
        entries.append(b"%s\t%d\t%d\n" % (idx[start:tab], start, end - start))
        start = end
    return b"".join(entries)


def parse_root(data: bytes):
    """``(idx size, [(key, offset, length), ...])`` of a root index; ValueError if it is none."""
    lines = data.split(b"\n")
    header = lines[0].split(b"\t")
    if header[0] != ROOT_MAGIC or len(header) != 3 or lines[-1] != b"":
        raise ValueError("not a cluster.root of this version (or cut short)")
    entries = []
    for line in lines[1:-1]:
        key, offset, length = line.rsplit(b"\t", 2)
        entries.append((key, int(offset), int(length)))
    return int(header[1]), entries


def write_cluster(sorted_lines, out_dir, splits, lines_per_block=LINES_PER_BLOCK,
                  root_slice_bytes=ROOT_SLICE_BYTES, deflate=BLOCK_DEFLATE_OLD) -> dict:
    """Write a complete cluster of ``len(splits) + 1`` shards into ``out_dir``.

    Shard ``i`` gets the lines ``L`` with ``bisect_right(splits, L) == i``, i.e.
    ``splits[i-1] <= L < splits[i]`` comparing whole lines. Shards without lines are
    written as empty files with empty part files; blocks compressed by ``deflate`` (of
    ``DEFLATES``). Returns ``{"shards", "lines", "blocks", "bytes"}``.
    """
    splits = list(splits)
    if any(a >= b for a, b in zip(splits, splits[1:])):
        raise ValueError("splits must be strictly increasing")
    out_dir = os.path.abspath(out_dir)
    os.makedirs(out_dir, exist_ok=True)

    parts, stats = [], []
    for i, lines in _shard_groups(sorted_lines, splits):
        with open(os.path.join(out_dir, shard_name(i)), "wb") as out:
            writer = ShardWriter(out, shard_name(i), lines_per_block, deflate=deflate)
            for line in lines:
                writer.add(line)
            parts.append(writer.close())
        with open(os.path.join(out_dir, part_name(i)), "wb") as out:
            out.write(parts[-1])
        stats.append(writer.stats(i))

    idx = b"".join(number_parts(parts))
    with open(os.path.join(out_dir, "cluster.root"), "wb") as out:
        out.write(root_index(idx, root_slice_bytes))
    with open(os.path.join(out_dir, "cluster.idx"), "wb") as out:
        out.write(idx)
    with open(os.path.join(out_dir, "cluster.loc"), "wb") as out:
        for i in range(len(splits) + 1):
            out.write(loc_line(shard_name(i), shard_name(i)))
    return cluster_totals(len(splits) + 1, stats)


def _shard_groups(sorted_lines, splits):
    """Yield ``(shard index, lines)`` for every shard in order, empty shards included.

    Each ``lines`` must be consumed before the next pair is requested (groupby). A line
    routed to an earlier shard than its predecessor means unsorted input.
    """
    groups = itertools.groupby(sorted_lines, key=lambda line: bisect.bisect_right(splits, line))
    next_shard = 0
    for shard, lines in groups:
        if shard < next_shard:
            raise ValueError(f"input lines not sorted: a line of {shard_name(shard)} follows {shard_name(next_shard - 1)}")
        for empty in range(next_shard, shard):
            yield empty, ()
        yield shard, lines
        next_shard = shard + 1
    for empty in range(next_shard, len(splits) + 1):
        yield empty, ()
