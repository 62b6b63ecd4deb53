"""Look up URLs in a ZipNum cluster, local or remote, with pywb's semantics.

``search_range`` turns a URL (or a CDX-API pattern) and a match type into the SURT key
range ``[start, end)`` exactly as pywb's ``calc_search_range`` does. A ``Cluster``
finds the blocks that can hold the range through ``cluster.idx``, reads only those
and streams the matching lines: ``lookup``/``lookup_range`` return what pywb's
``ZipNumIndexSource`` returns over all pages, ``page``/``page_info`` what it returns
for ``page=``/``showNumPages``, without holding the index or the result in memory.

A remote cluster (``s3://``, ``http(s)://``) is read with ranged requests only. With
its ``cluster.root`` a cold lookup makes three: the root, one slice of
``cluster.idx``, and one run of blocks (up to ``MAX_BLOCKS_PER_READ`` adjacent blocks
of one shard; a result spread wider takes a request per further run or slice).

Usage::

    from webarchive_indexing.query import open_cluster, search_range

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

import bisect
import collections
import io
import itertools
import logging
import os
import zlib

import surt

from . import storage
from .zipnum import block_key, parse_root

__all__ = ["MATCH_TYPES", "search_range", "open_cluster", "Cluster", "IdxFile"]

log = logging.getLogger(__name__)

MATCH_TYPES = ("exact", "prefix", "host", "domain")

# pywb's ZipNumIndexSource.DEFAULT_MAX_BLOCKS: bounds the bytes held per read while
# still fetching neighbouring blocks with one request.
MAX_BLOCKS_PER_READ = 10
# pywb's pageSize when none is given is its max_blocks
DEFAULT_PAGE_SIZE = MAX_BLOCKS_PER_READ
# Read unit of a binary search in a cluster.idx that has no root index
PAGE_BYTES = 64 * 1024
# Bytes of the next slice read with a slice of cluster.idx (~40 index lines)
SLICE_OVERLAP = 4096
# Pages and slices of cluster.idx an IdxFile keeps
CACHED_READS = 16


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
    key = surt.surt(url)

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


def open_cluster(location, max_blocks_per_read=MAX_BLOCKS_PER_READ):
    """The ``Cluster`` at ``location``: a build's output directory, its ``cluster/``
    directory or a ``cluster.idx``; a local path, ``s3://`` or ``http(s)://`` URL.

    Nothing is downloaded whole but the small ``cluster.root``: a remote
    ``cluster.idx`` is read in ranges. Where ``location`` is a remote directory its
    index is looked for in ``cluster/`` below it first, unless it is named
    ``cluster`` itself (each place tried costs a request).
    """
    location = os.fspath(location)
    if storage.is_local(location):
        if os.path.isdir(os.path.join(location, "cluster")):
            location = os.path.join(location, "cluster")
        if os.path.isdir(location):
            location = os.path.join(location, "cluster.idx")
        if not os.path.isfile(location):
            raise FileNotFoundError(f"no ZipNum index at {location}")
        return Cluster(IdxFile.open(location), max_blocks_per_read)
    if location.endswith((".idx", ".summary")):
        candidates = [location]
    else:
        here, below = storage.join(location, "cluster.idx"), storage.join(location, "cluster", "cluster.idx")
        candidates = [here, below] if location.rstrip("/").endswith("/cluster") else [below, here]
    for idx in candidates:
        try:
            return Cluster(IdxFile.open(idx), max_blocks_per_read)
        except FileNotFoundError:
            continue
    raise FileNotFoundError(f"no ZipNum index at {' or '.join(candidates)}")


class IdxFile:
    """A ``cluster.idx`` (local or remote) read in ranges, never whole.

    With the cluster's root index (``cluster.root``, see ``zipnum.root_index``) the
    slice that holds a key is known without reading, and one ranged read fetches it;
    a slice is read together with the start of the next one (``SLICE_OVERLAP``), so a
    run of lines crossing into it rarely needs a second read. Without a root, or with
    one that does not describe this index, the index is binary-searched in pages of
    ``PAGE_BYTES`` as pywb does on local files (in 8 KiB blocks).
    """

    def __init__(self, path, root=None):
        self.path = path
        self.size = None
        self._root = root
        self._root_keys = [key for key, _, _ in root[1]] if root else None
        # a few recent pages or slices: a scan revisits the page where a bisection ended
        self._cache = collections.OrderedDict()

    @classmethod
    def open(cls, path):
        """The index at ``path`` with its root, if it has one; FileNotFoundError if neither
        is there (the root answers first: one request for a cold remote lookup)."""
        root_path = os.path.splitext(path)[0] + ".root"
        try:
            root = parse_root(storage.read_bytes(root_path))
        except FileNotFoundError:
            root = None
        except ValueError as exc:
            log.warning("ignoring %s: %s", root_path, exc)
            root = None
        idx = cls(path, root)
        if root is None:
            idx._page(0)  # the index must be there; learns its size
        return idx

    def scan(self, key: bytes, stop: bytes | None = None):
        """Index lines (without newline) from the last one below ``key`` (or the first
        line, if none is below) to the end, while below ``stop``.

        That is what pywb's ``iter_range(reader, key, stop, prev_size=1)`` yields: when
        every line is below ``key`` only the last one comes. Lines compare whole, as
        pywb compares them.
        """
        prev = None
        lines = self._lines_for(key, stop)
        for line in lines:
            if line >= key:
                if prev is not None:
                    yield prev
                for line in itertools.chain((line,), lines):
                    if stop is not None and line >= stop:
                        return
                    yield line
                return
            prev = line
        if prev is not None and (stop is None or prev < stop):
            yield prev

    def _lines_for(self, key, stop):
        if self._root is not None:
            first = max(bisect.bisect_left(self._root_keys, key) - 1, 0)
            try:
                return self._root_lines(first, stop)
            except _StaleRoot as exc:
                log.warning("ignoring the root index of %s: %s", self.path, exc)
                self._root = self._root_keys = None
        return self._paged_lines(key)

    def _root_lines(self, first, stop):
        """Lines of the slices from ``first`` on, stopping before a slice whose key is
        ``>= stop``; the first slice is read (and checked) before this returns."""
        entries = self._root[1]
        if not entries:
            return iter(())
        data = self._slice(first)

        def lines():
            yield from data.split(b"\n")[:-1]
            for i in range(first + 1, len(entries)):
                if stop is not None and entries[i][0] >= stop:
                    return
                # the start of this slice came with the previous one: the rest is read
                # only if the scan goes past it
                head = self._cache.get(("head", i), b"")
                yield from head.split(b"\n")[:-1]
                if len(head) < entries[i][2]:
                    try:
                        rest = self._slice(i)[len(head):]
                    except _StaleRoot as exc:
                        raise OSError(f"{self.path} changed while being read: {exc}") from None
                    yield from rest.split(b"\n")[:-1]
        return lines()

    def _slice(self, i):
        """Slice ``i`` of the index, checked against the root; _StaleRoot if the root
        describes another index (a build published between reading the two)."""
        size, entries = self._root
        key, offset, length = entries[i]
        overlap = min(SLICE_OVERLAP, entries[i + 1][2]) if i + 1 < len(entries) else 0
        data = self._read(offset, length + overlap, ("slice", i))
        if self.size != size:
            raise _StaleRoot(f"its root describes an index of {size} bytes, not {self.size}")
        next_key = entries[i + 1][0] if overlap else None
        if (not data.startswith(key + b"\t") or data[length - 1:length] != b"\n"
                or (overlap and not data.startswith(next_key + b"\t", length))):
            raise _StaleRoot(f"its root does not describe bytes {offset}+{length}")
        if overlap:
            head = data[length:]
            self._remember(("head", i + 1), head[:head.rfind(b"\n") + 1])
        return data[:length]

    def _paged_lines(self, key):
        """Lines from a page whose first whole line is below ``key`` (or from the start)."""
        self._page(0)
        lo, hi = 0, -(-self.size // PAGE_BYTES)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            line = next(self._lines_at(mid * PAGE_BYTES, skip_first=True), None)
            if line is not None and line < key:
                lo = mid
            else:
                hi = mid
        return self._lines_at(lo * PAGE_BYTES, skip_first=lo > 0)

    def _lines_at(self, pos, skip_first):
        """Whole lines starting in the pages from ``pos`` on; the first (maybe partial) one
        dropped if ``skip_first``."""
        page, cut = divmod(pos, PAGE_BYTES)
        rest = b""
        data = self._page(page)[cut:]
        while True:
            lines = (rest + data).split(b"\n")
            rest = lines.pop()
            for line in lines:
                if skip_first:
                    skip_first = False
                    continue
                yield line
            page += 1
            if page * PAGE_BYTES >= self.size:
                break
            data = self._page(page)
        if rest and not skip_first:
            yield rest

    def _page(self, n):
        return self._read(n * PAGE_BYTES, PAGE_BYTES, ("page", n))

    def _read(self, offset, length, name):
        if name in self._cache:
            self._cache.move_to_end(name)
            return self._cache[name]
        data, size = storage.fetch_range(self.path, offset, length)
        if size is None:
            raise OSError(f"{self.path}: the server does not say how large the file is "
                          "(Content-Range: .../*), which a binary search needs")
        if self.size is None:
            self.size = size
        elif size != self.size:
            raise OSError(f"{self.path} changed while being read: {self.size} bytes, then {size}")
        self._remember(name, data)
        return data

    def _remember(self, name, data):
        self._cache[name] = data
        while len(self._cache) > CACHED_READS:
            self._cache.popitem(last=False)


class _StaleRoot(Exception):
    pass


class Cluster:
    """A ZipNum cluster: its ``IdxFile`` and where its shards are.

    Shards of a local cluster are found through the ``.loc`` file beside the index
    (``cluster.loc`` for ``cluster.idx``; first readable location wins, relative
    ones resolved against its directory as pywb does), else next to the index. A
    remote cluster's shards are read next to its index, where its shard column
    names them (a ``.loc`` file would cost a request per lookup, and its locations
    are often the builder's local paths); that is how Common Crawl publishes its
    indexes, and how ``build`` lays out one on S3.
    """

    def __init__(self, idx, max_blocks_per_read=MAX_BLOCKS_PER_READ):
        if not isinstance(idx, IdxFile):
            idx = open_cluster(idx, max_blocks_per_read).idx
        self.idx = idx
        self.max_blocks_per_read = max_blocks_per_read
        self.shard_dir = storage.dirname(idx.path)
        loc_path = os.path.splitext(idx.path)[0] + ".loc"
        is_local_loc = storage.is_local(idx.path) and os.path.isfile(loc_path)
        self.locations = _read_loc(loc_path, self.shard_dir) if is_local_loc else {}

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
        lines = self._lines(self.idx.scan(block_key(start), end), start, end)
        yield from itertools.islice(lines, limit)

    def page_info(self, start: bytes, end: bytes, page_size=DEFAULT_PAGE_SIZE):
        """``{"pages", "pageSize", "blocks"}`` for ``[start, end)``, as pywb's
        ``showNumPages`` answers (pages counted from the ``lineno`` column)."""
        bounds = self._page_bounds(start, end, page_size)
        if bounds is None:
            return {"pages": 0, "pageSize": page_size, "blocks": 0}
        first, _, blocks, pages = bounds
        if blocks == 0 and next(self._lines([first], start, end), None) is None:
            pages, blocks = 0, -1
        return {"pages": pages, "pageSize": page_size, "blocks": blocks + 1}

    def page(self, start: bytes, end: bytes, page, page_size=DEFAULT_PAGE_SIZE):
        """The lines of page ``page`` (from 0) of ``[start, end)`` in pages of
        ``page_size`` blocks, as pywb's ``page=`` returns them: page 0 starts with the
        block before the first match. ValueError for a page that is not there."""
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
            entries = itertools.chain((first,), itertools.islice(rest, 0, last))
        else:
            entries = itertools.islice(rest, page * page_size - 1, last)
        return self._lines(entries, start, end)

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
        try:
            blocks = _lineno(last) - _lineno(first)
        except (IndexError, ValueError):
            return first, rest, -1, 1
        return first, rest, blocks, blocks // page_size + 1

    def shard_paths(self, shard):
        """Paths (local, or URLs) to try for ``shard``, in order."""
        if shard in self.locations:
            return self.locations[shard]
        return [storage.resolve(self.shard_dir, shard)]

    def _lines(self, idx_lines, start, end):
        """The lines ``start <= line < end`` of the blocks named by ``idx_lines``."""
        for run in _runs(_entries(idx_lines), self.max_blocks_per_read):
            data = self._read(run)
            pos = 0
            for _, length in run.blocks:
                for line in _block_lines(data[pos:pos + length]):
                    if line >= end:
                        return
                    if line >= start:
                        yield line
                pos += length

    def _read(self, run):
        errors = []
        for path in self.shard_paths(run.shard):
            try:
                data = storage.read_range(path, run.offset, run.length)
            except OSError as exc:
                errors.append(f"{path}: {exc}")
                continue
            if len(data) != run.length:
                errors.append(f"{path}: {len(data)} bytes at {run.offset}, index says {run.length}")
                continue
            return data
        raise OSError(f"cannot read {run.shard} bytes {run.offset}+{run.length}: " + "; ".join(errors or ["no location"]))


class _Run:
    """Adjacent blocks of one shard, fetched with one read."""

    def __init__(self, shard, offset, length):
        self.shard = shard
        self.offset = offset
        self.length = 0
        self.blocks = []
        self.add(offset, length)

    def add(self, offset, length):
        self.blocks.append((offset, length))
        self.length += length

    def follows(self, shard, offset):
        return shard == self.shard and offset == self.offset + self.length


def _runs(entries, max_blocks):
    run = None
    for shard, offset, length in entries:
        if run and run.follows(shard, offset) and len(run.blocks) < max_blocks:
            run.add(offset, length)
            continue
        if run:
            yield run
        run = _Run(shard, offset, length)
    if run:
        yield run


def _entries(idx_lines):
    for line in idx_lines:
        fields = line.split(b"\t")
        if len(fields) < 4:
            raise ValueError(f"not a cluster.idx line: {line[:200]!r}")
        yield fields[1].decode(), int(fields[2]), int(fields[3])


def _lineno(idx_line):
    return int(idx_line.split(b"\t")[4])


def _block_lines(member):
    # BytesIO splits on b"\n" only; bytes.splitlines() would also split on b"\r"
    return io.BytesIO(zlib.decompress(member, wbits=31))


def _read_loc(path, base):
    locations = {}
    with open(path, encoding="utf-8") as loc:
        for line in loc:
            fields = line.rstrip("\r\n").split("\t")
            if len(fields) < 2:
                continue
            locations[fields[0]] = [_location(base, p) for p in fields[1:]]
    return locations


def _location(base, path):
    """Where a ``.loc`` line says a shard is: a path, relative to ``base`` or absolute, a
    ``file://`` URL (as pywb takes them), or a URI."""
    if storage.is_local(path):
        return storage.resolve(base, path)
    return storage.local_path(path) or path
