"""Look up URLs in a ZipNum cluster, local or remote, with pywb's semantics.

``search_range`` turns a URL (or a CDX-API pattern) and a match type into the SURT key
range ``[start, end)`` exactly as pywb's ``calc_search_range`` does. A ``Cluster``
finds the blocks that can hold the range through ``cluster.idx``, reads only those
and streams the matching lines: ``lookup``/``lookup_range`` return what pywb's
``ZipNumIndexSource`` returns over all pages, ``page``/``page_info`` what it returns
for ``page=``/``showNumPages``, without holding the index or the result in memory;
``lookup_range_back`` the same lines last first, and ``count_range`` their exact number
from the blocks at the ends of the range. Blocks are inflated whole (``layout.inflate_block``,
libdeflate) and kept, as their text, in a ``BlockCache`` where one is given; a block's
lines are found by bisecting its bytes (``Block``).

Every block read is checked against its index line (its first key, its gzip member
whole), and the index lines against each other (order, block numbers, offsets): a
damaged cluster, or one replaced while being read, raises ``DamagedCluster`` naming
the file and offset instead of answering wrongly.

A remote cluster (``s3://``, ``http(s)://``) is read with ranged requests only. With
its ``cluster.root`` a cold lookup makes three: the root, one slice of
``cluster.idx``, and one run of blocks (up to ``MAX_BLOCKS_PER_READ`` adjacent blocks
of one shard; a result spread wider takes a request per further run or slice).

Usage::

    from webarchive_indexing.zipnum.reader import open_cluster, search_range

    search_range("http://www.example.com/path", "prefix")
    # ('com,example)/path', 'com,example)/pati')
    search_range("*.example.com", "exact")        # the wildcard wins: domain
    # ('com,example)/', 'com,example-')

    # a build's output, its cluster/ directory or a cluster.idx; local, s3:// or https://
    cluster = open_cluster("https://data.example.org/cc-index/cluster.idx")
    for line in cluster.lookup("example.com/", "host", limit=100):
        print(line.decode().rstrip("\n"))

    start, end = (k.encode() for k in search_range("*.example.com"))
    cluster.page_info(start, end, page_size=5)    # {'pages': 3, 'pageSize': 5, 'blocks': 12}
    list(cluster.page(start, end, 1, page_size=5))
"""

import collections
import io
import itertools
import logging
import os

from .. import storage
from ..util.recent import Recent
# surt.surt, quicker, and without importing tldextract (a tenth of a second) at start
from ..cdx.urlkey import url_key
from .idxfile import DamagedCluster, IdxFile
from . import places
from ..warc.magic import PLAIN_STARTS, compression
from .layout import BadBlock, block_key, inflate_block

__all__ = ["MATCH_TYPES", "search_range", "open_cluster", "Cluster", "IdxFile", "BlockCache",
           "DamagedCluster"]

log = logging.getLogger(__name__)
# numbers the clusters opened, whose blocks a shared BlockCache tells apart
_GENERATIONS = itertools.count()

MATCH_TYPES = ("exact", "prefix", "host", "domain")

# pywb's ZipNumIndexSource.DEFAULT_MAX_BLOCKS: bounds the bytes held per read while
# still fetching neighbouring blocks with one request.
MAX_BLOCKS_PER_READ = 10
# pywb's pageSize when none is given is its max_blocks
DEFAULT_PAGE_SIZE = MAX_BLOCKS_PER_READ
# Lines looked at one by one for the end of a range before bisecting (Block.bisect)
NEAR_LINES = 4
# Shard files a BlockCache keeps open, the least recently read closed (ShardFiles; within
# the files serve's connections.SPARE_FILES leaves a worker)
OPEN_SHARDS = 32
# A BlockCache's bound when none is given: ~50 blocks of 3000 CDXJ lines
BLOCK_CACHE_BYTES = 64 * 1024 * 1024


def search_range(url: str, match_type: str = "exact") -> tuple[str, str]:
    """SURT key range ``(start, end)`` of ``url`` for ``match_type``, end exclusive.

    Patterns follow the pywb / Common Crawl CDX APIs: ``example.com/path*`` means
    prefix and ``*.example.com`` means domain. A wildcard always decides the match type;
    ``match_type`` applies only to a URL without one. (pywb strips the wildcard only
    when no ``matchType`` is given; with one it canonicalizes the ``*`` into the key,
    e.g. ``com,example,*)/`` for ``*.example.com``, and finds nothing.)
    """
    if match_type not in MATCH_TYPES:
        raise ValueError(f"unknown match type {match_type!r}: expected one of {', '.join(MATCH_TYPES)}")
    url, match_type = _apply_wildcard(url, match_type)
    if not url:
        raise ValueError("empty URL: give a URL or a pattern such as 'example.com/*' or '*.example.com'")
    key = url_key(url)

    if match_type == "exact":
        # '!' is the first printable byte after ' ', which follows the key in a line
        return key, key + "!"
    if match_type == "prefix":
        # surt drops a trailing '/' or '?' that the user meant as part of the prefix
        if url.endswith("/") and not key.endswith("/"):
            key += "/"
        if url.endswith("?") and not key.endswith("?"):
            key += "?"
        return key, key[:-1] + chr(ord(key[-1]) + 1)

    host = key.split(")/")[0]
    if match_type == "host":
        return host + ")/", host + "*"  # '*' follows ')' and precedes ','
    # domain: the host's own keys and every subdomain's 'host,sub...' key, both
    # below 'host-' ('-' follows ',' and ')'); a bare TLD has no own keys
    return (host + "," if "," not in host else host + ")/"), host + "-"


def _apply_wildcard(url, match_type):
    if url.startswith("*."):
        return url[2:], "domain"
    if url.endswith("*"):
        return url[:-1], "prefix"
    return url, match_type


def open_cluster(location, max_blocks_per_read=MAX_BLOCKS_PER_READ, cache=None):
    """The ``Cluster`` at ``location``: a build's output directory, its ``cluster/``
    directory or a ``cluster.idx``; a local path, ``s3://`` or ``http(s)://`` URL, its
    index found as ``places.cluster_index`` finds it.

    Nothing is downloaded whole but the small ``cluster.root``: a remote
    ``cluster.idx`` is read in ranges.
    """
    def opened(path):
        if storage.is_local(path):
            _check_not_an_archive(path)
        return Cluster(IdxFile.open(path), max_blocks_per_read, cache)
    return places.cluster_index(location, opened)


def _check_not_an_archive(path, command="query"):
    """``ValueError`` for a file given as a cluster that is an archive or a CDX file, which
    a user may well give (``query`` would print their bytes as lines; ``export`` asks too)."""
    with open(path, "rb") as fh:
        head = fh.read(16)
    compressed = compression(head)
    if compressed == "gz":
        kind = "gzip data (a WARC or ARC file, a .cdx.gz?)"
    elif compressed == "zst":
        kind = "zstd data (a .warc.zst file?)"
    elif compressed == "zip":
        kind = "a ZIP file (a WACZ?)"
    elif head.startswith(PLAIN_STARTS):
        kind = "a WARC or ARC file"
    else:
        return
    raise ValueError(f"{path} is {kind}, not a ZipNum index (cluster.idx): {command} reads the "
                     "clusters that `webarchive-index build` writes (`webarchive-index cdx` "
                     "indexes an archive)")


class Block:
    """A block's inflated ``text``, its lines found in it where asked (by bisecting its
    bytes): a block split into 3000 line objects cost a lookup more than inflating it.
    A line ends after its ``\n`` (the last one may have none) and is compared whole,
    ``\n`` included, as a list of ``readlines()`` would be."""

    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text

    def first_line(self):
        return self.text[:self.text.find(b"\n") + 1 or len(self.text)]

    def bisect(self, key, lo=0, near=0):
        """The offset of the first line at or after ``lo`` (a line's start) that is not
        below ``key``; ``len(text)`` if none. The first ``near`` lines are looked at one by
        one: the end of an exact lookup's captures is most often a line or two on."""
        text, hi = self.text, len(self.text)
        for _ in range(near):
            end = text.find(b"\n", lo) + 1 or hi
            if lo == hi or not text[lo:end] < key:
                return lo
            lo = end
        while lo < hi:
            # the line holding the middle byte, compared whole
            mid = (lo + hi) // 2
            start = text.rfind(b"\n", lo, mid) + 1 or lo
            end = text.find(b"\n", start) + 1 or hi
            if text[start:end] < key:
                lo = end
            else:
                hi = start
        return lo

    def lines(self, start=0, stop=None):
        """The lines between offsets ``start`` and ``stop`` (lines' starts), one by one."""
        return io.BytesIO(self.text[start:stop])

    def count(self, start=0, stop=None):
        """How many lines there are between offsets ``start`` and ``stop`` (lines' starts)."""
        stop = len(self.text) if stop is None else stop
        return self.text.count(b"\n", start, stop) + (start < stop and self.text[stop - 1] != 10)

    def __len__(self):
        return len(self.text)


class ShardFiles(Recent):
    """Local shard files kept open by cluster and shard, the least recently read closed
    beyond ``bound`` of them. A block is then read from a file whose place was judged once
    (``places.Shards``: ~50 µs of following links), and a shard a rebuild replaced is read
    as the build its cluster is of. (A file dropped here is closed when the last read of it
    ends.)"""

    def __init__(self, most=OPEN_SHARDS):
        super().__init__(most)

    def forget(self, generation):
        """Let go of the files of the cluster opened as ``generation``: a newer build
        replaced it, and the shards a later build removes must not stay held open."""
        self._forget(lambda key: key[0] == generation)


class BlockCache(Recent):
    """Inflated blocks (``Block``) by shard and offset, the least recently used dropped
    beyond ``bound`` bytes (their text's bytes plus ``BLOCK_OVERHEAD`` each), and the local
    shard files they are read from (``files``)."""

    BLOCK_OVERHEAD = 200

    def __init__(self, max_bytes=BLOCK_CACHE_BYTES):
        super().__init__(max_bytes)
        self.files = ShardFiles()

    def put(self, key, block):
        super().put(key, block, len(block) + self.BLOCK_OVERHEAD)


class _Entry(collections.namedtuple("_Entry", "key shard offset length lineno line")):
    """One line of ``cluster.idx``: the block at ``offset`` (``length`` bytes) of ``shard``."""


class Cluster:
    """A ZipNum cluster: its ``IdxFile`` and where its shards are.

    Shards of a local cluster are found through the ``.loc`` file beside the index
    (``cluster.loc`` for ``cluster.idx``; first readable location wins, relative
    ones resolved against its directory as pywb does), else next to the index. A
    remote cluster's shards are read next to its index, where its shard column
    names them (a ``.loc`` file would cost a request per lookup, and its locations
    are often the builder's local paths); that is how Common Crawl publishes its
    indexes, and how ``build`` lays out one on S3.

    A shard is only ever read below the cluster's own directory, whoever wrote the
    index (``places.Shards``, the rule of ``export`` and ``build``): a shard name with
    ``..``, a scheme or an absolute path is refused (``DamagedCluster``), so is a shard
    whose symbolic link leads out of it; a ``.loc`` location outside that directory is
    ignored.

    ``cache``, a ``BlockCache`` (a server shares one), keeps inflated blocks for the
    next lookups; without one every lookup reads and inflates its blocks.
    """

    def __init__(self, idx, max_blocks_per_read=MAX_BLOCKS_PER_READ, cache=None):
        if not isinstance(idx, IdxFile):
            idx = open_cluster(idx, max_blocks_per_read).idx
        self.idx = idx
        self.max_blocks_per_read = max_blocks_per_read
        self.cache = cache
        # blocks in a shared cache are this cluster's only: a rebuild may name its shards alike
        self._generation = next(_GENERATIONS)
        try:
            self.shards = places.Shards(idx.path)
        except storage.Outside as exc:
            raise DamagedCluster(str(exc)) from None
        self.shard_dir = self.shards.directory
        self._lines_per_block = None
        self._keeps_files = cache is not None  # (ShardFiles: until a newer build is served)

    def let_go(self):
        """Keep no shard file of this cluster open beyond the reads in flight (a newer build
        of it is served)."""
        self._keeps_files = False
        if self.cache is not None:
            self.cache.files.forget(self._generation)

    def lookup(self, url, match_type="exact", limit=None):
        """Iterate the lines (bytes, ``\\n``-terminated) matching ``url``, in index order.

        Raises ``ValueError`` at once for a bad match type; reading is lazy.
        """
        start, end = search_range(url, match_type)
        return self.lookup_range(start.encode(), end.encode(), limit)

    def lookup_range(self, start: bytes, end: bytes, limit=None):
        """Iterate the lines ``start <= line < end`` (whole lines compared, as pywb does)."""
        if limit is not None and limit <= 0:
            return
        # Block keys are only 'urlkey timestamp': a start reaching past that (a whole
        # line) is located by that part, else copies of a block's first line that end
        # the previous block would be skipped. URL keys have no space and are used as is.
        entries = self._entries(self.idx.scan(block_key(start), end, peek=True), end)
        yield from itertools.islice(self._lines(entries, start, end), limit)

    def lookup_range_back(self, start: bytes, end: bytes):
        """The lines of ``lookup_range(start, end)``, last first, reading backwards."""
        entries = self._entries(self.idx.scan_back(block_key(start), end, peek=True), end, reverse=True)
        for _, block in self._blocks(entries, reverse=True):
            first = block.bisect(start)
            yield from reversed(block.lines(first, block.bisect(end, first)).readlines())
            if first > 0:  # every earlier block holds lines below this one's first
                return

    def count_range(self, start: bytes, end: bytes) -> int:
        """How many lines ``start <= line < end`` there are, exactly, reading only the
        blocks at the two ends of the range and the last block of each shard inside it:
        every other block holds exactly as many lines as any full block (``build``'s
        ``--lines-per-block``, Common Crawl's 3000). A cluster where that does not hold
        is counted line by line (and a warning logged)."""
        if b" " in start or b" " in end:  # a block key could then fall inside the range
            return sum(1 for _ in self.lookup_range(start, end))
        entries = self._entries(self.idx.scan(start, end, peek=True), end)
        first = next(entries, None)
        if first is None:
            return 0
        to_read, full, sample, prev, first_is_full = [first], 0, None, first, False
        for entry in entries:
            if prev is first:
                first_is_full = entry.shard == first.shard
            elif entry.shard != prev.shard:
                to_read.append(prev)  # the last block of its shard may be short
            elif sample is None and self._lines_per_block is None:
                sample = prev
                to_read.append(prev)
            else:
                full += 1
            prev = entry
        if prev is not first:
            to_read.append(prev)
        total = 0
        for entry, block in self._blocks(to_read):
            if entry is sample or (entry is first and first_is_full):
                lines = block.count()
                if self._lines_per_block is None:
                    self._lines_per_block = lines
                elif lines != self._lines_per_block:
                    log.warning("%s: blocks of %d and %d lines: counting line by line",
                                self.idx.path, self._lines_per_block, lines)
                    return sum(1 for _ in self.lookup_range(start, end))
            first_line = block.bisect(start)
            total += block.count(first_line, block.bisect(end, first_line))
        return total + full * (self._lines_per_block or 0)

    def page_info(self, start: bytes, end: bytes, page_size=DEFAULT_PAGE_SIZE):
        """``{"pages", "pageSize", "blocks"}`` for ``[start, end)``, as pywb's
        ``showNumPages`` answers (pages counted from the ``lineno`` column)."""
        bounds = self._page_bounds(start, end, page_size)
        if bounds is None:
            return {"pages": 0, "pageSize": page_size, "blocks": 0}
        first, _, blocks, pages = bounds
        if blocks == 0 and next(self._lines(self._entries([first]), start, end), None) is None:
            pages, blocks = 0, -1
        return {"pages": pages, "pageSize": page_size, "blocks": blocks + 1}

    def page(self, start: bytes, end: bytes, page, page_size=DEFAULT_PAGE_SIZE):
        """The lines of page ``page`` (from 0) of ``[start, end)`` in pages of
        ``page_size`` blocks, as pywb's ``page=`` returns them: page 0 starts with the
        block before the first match. ValueError for a page that is not there."""
        return self._lines(self._entries(self.page_index(start, end, page, page_size)), start, end)

    def page_index(self, start: bytes, end: bytes, page, page_size=DEFAULT_PAGE_SIZE):
        """The ``cluster.idx`` lines of the blocks of page ``page``, as pywb's
        ``showPagedIndex`` gives them."""
        bounds = self._page_bounds(start, end, page_size)
        if bounds is None:
            return iter(())
        first, rest, blocks, pages = bounds
        if not 0 <= page < pages:
            raise ValueError(f"Page {page} invalid: First Page is 0, Last Page is {pages - 1}")
        last = page * page_size + page_size - 1
        if blocks >= 0:
            last = min(last, blocks)
        if page == 0:
            return itertools.chain((first,), itertools.islice(rest, 0, last))
        return itertools.islice(rest, page * page_size - 1, last)

    def _page_bounds(self, start, end, page_size):
        """pywb's ``compute_page_range``: the index line before the first match, the
        lines after it, the blocks between it and the last index line below ``end``
        (-1 without ``lineno``), and the page count; None when nothing can match."""
        if page_size < 1:
            raise ValueError(f"page size must be at least 1 block, got {page_size}")
        last = next(self.idx.scan(end), None)
        rest = self.idx.scan(start, end)
        first = next(rest, None)
        if first is None or last is None:
            return None
        first_no, last_no = (self.idx.check_line(line, "a line")[4] for line in (first, last))
        if first_no is None or last_no is None:
            return first, rest, -1, 1
        blocks = last_no - first_no
        return first, rest, blocks, blocks // page_size + 1

    def _entries(self, idx_lines, end=None, reverse=False):
        """The index lines parsed, each checked against the one before: block numbers
        that follow on, and blocks of a shard that follow on from its offset 0. A line
        at or above ``end`` (a scan's peek) is only checked."""
        prev = None
        for line in idx_lines:
            entry = _Entry(*self.idx.check_line(line, "a line"), line)
            if prev is not None:
                self._check_follows(*((entry, prev) if reverse else (prev, entry)))
            prev = entry
            if end is None or line < end:
                yield entry

    def _check_follows(self, before, after):
        problem = None
        if before.lineno is not None and after.lineno is not None and after.lineno != before.lineno + 1:
            problem = f"block number {after.lineno} follows {before.lineno}"
        elif after.shard == before.shard and after.offset != before.offset + before.length:
            problem = (f"the block at offset {after.offset} of {after.shard} follows one that "
                       f"ends at {before.offset + before.length}")
        elif after.shard != before.shard and after.offset != 0:
            problem = f"the first block of {after.shard} is at offset {after.offset}, not 0"
        if problem:
            raise DamagedCluster(f"{self.idx.path} is damaged: {problem} (a line is missing, "
                                 f"out of place or points elsewhere): {after.line[:200]!r}")

    def _lines(self, entries, start, end):
        """The lines ``start <= line < end`` of the blocks of ``entries``."""
        for _, block in self._blocks(entries):
            first = block.bisect(start)
            stop = block.bisect(end, first, NEAR_LINES)
            yield from block.lines(first, stop)
            if stop < len(block):
                return

    def _blocks(self, entries, reverse=False):
        """``(entry, Block)`` for each of ``entries``, from the cache or read in runs of
        up to ``max_blocks_per_read`` blocks adjacent in their shard."""
        run = []
        for entry in entries:
            cached = self.cache.get(self._cache_key(entry)) if self.cache is not None else None
            if cached is not None:
                yield from self._read_run(run)
                run = []
                yield entry, cached
                continue
            if run and (len(run) >= self.max_blocks_per_read or not _adjacent(run[-1], entry, reverse)):
                yield from self._read_run(run)
                run = []
            run.append(entry)
        yield from self._read_run(run)

    def _cache_key(self, entry):
        return self._generation, entry.shard, entry.offset, entry.length

    def _read_run(self, run):
        if not run:
            return
        offset = min(run[0].offset, run[-1].offset)
        data = self._read(run[0].shard, offset, sum(entry.length for entry in run))
        for entry in run:
            block = self._inflate(entry, data[entry.offset - offset:entry.offset - offset + entry.length])
            if self.cache is not None:
                self.cache.put(self._cache_key(entry), block)
            yield entry, block

    def _inflate(self, entry, member):
        where = f"{entry.shard} at offset {entry.offset} ({entry.length} bytes)"
        why = ("the shard is damaged, the index does not describe it, or it was replaced "
               "while being read")
        try:
            block = Block(inflate_block(member))
        except BadBlock as exc:
            raise DamagedCluster(f"{where}: {exc}: {why}") from None
        first = block.first_line()
        if not first or block_key(first) != entry.key:
            raise DamagedCluster(f"{where}: its first line {bytes(first[:120])!r} does not start with the "
                                 f"index's key {entry.key[:120]!r}: {why}")
        return block

    def _read(self, shard, offset, length):
        files = self.cache.files if self._keeps_files else None
        key = self._generation, shard
        kept = files.get(key) if files is not None else None
        if kept is not None:
            try:
                data = os.pread(kept.fileno(), length, offset)
                if len(data) == length:
                    return data
            except OSError:
                pass  # looked for again, and said, below
        try:
            paths, errors = self.shards.paths(shard)
        except storage.Outside as exc:
            raise DamagedCluster(f"{self.idx.path}: {exc}") from None
        for path in paths:
            kept = None
            try:
                if files is not None and storage.is_local(path):
                    kept = open(path, "rb")
                    data = os.pread(kept.fileno(), length, offset)
                else:
                    data = storage.read_range(path, offset, length)
            except OSError as exc:
                errors.append(f"{path}: {exc}")
                continue
            if len(data) != length:
                errors.append(f"{path}: {len(data)} bytes at {offset}, index says {length}")
                continue
            if kept is not None:
                files.put(key, kept)
            return data
        raise OSError(f"cannot read {shard} bytes {offset}+{length}: " + "; ".join(errors or ["no location"]))


def _adjacent(last, entry, reverse):
    if entry.shard != last.shard:
        return False
    if reverse:
        return entry.offset + entry.length == last.offset
    return entry.offset == last.offset + last.length
