"""Look up URLs in a ZipNum cluster (local, or on S3) with pywb's semantics.

``search_range`` turns a URL (or a CDX-API pattern) and a match type into the SURT key
range ``[start, end)`` exactly as pywb's ``calc_search_range`` does. ``Cluster.lookup``
binary-searches ``cluster.idx`` on disk, reads only the gzip blocks that can hold the
range and streams the matching lines, so it returns what pywb's ``ZipNumIndexSource``
returns over all pages, without loading the index or the result into memory.

Usage::

    from webarchive_indexing.query import Cluster, search_range

    search_range("http://www.example.com/path", "prefix")
    # ('com,example)/path', 'com,example)/pati')
    search_range("*.example.com", "exact")        # the wildcard wins: domain
    # ('com,example)/', 'com,example-')

    cluster = Cluster("/data/cluster")            # or "/data/cluster/cluster.idx"
    for line in cluster.lookup("example.com/", "host", limit=100):
        print(line.decode().rstrip("\\n"))

    # a build's output (or its cluster directory, or cluster.idx), local or on S3: the
    # index of an S3 cluster is downloaded into the directory given, its shards are
    # read with ranged GETs
    cluster = open_cluster("s3://bucket/out", "/tmp/work")
"""

import io
import os
import zlib

import surt

from . import storage
from .zipnum import block_key

__all__ = ["MATCH_TYPES", "search_range", "Cluster", "open_cluster"]

MATCH_TYPES = ("exact", "prefix", "host", "domain")

# pywb's ZipNumIndexSource.DEFAULT_MAX_BLOCKS: bounds the bytes held per read while
# still fetching neighbouring blocks with one request.
MAX_BLOCKS_PER_READ = 10


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


def open_cluster(location, work_dir):
    """The ``Cluster`` at ``location``: a build's output directory, its ``cluster/``, or
    a ``cluster.idx``, local or on S3. An S3 cluster's ``cluster.idx`` (then its
    ``cluster.loc``, so that it names at least the shards of that index) is
    downloaded into ``work_dir``."""
    location = os.fspath(location)
    if not storage.is_remote(location):
        if os.path.isdir(os.path.join(location, "cluster")):
            location = os.path.join(location, "cluster")
        return Cluster(location)
    idx = location
    if not idx.endswith(".idx"):
        nested = storage.join(location, "cluster", "cluster.idx")
        idx = nested if storage.exists(nested) else storage.join(location, "cluster.idx")
    local_idx = os.path.join(work_dir, "cluster.idx")
    try:
        storage.download(idx, local_idx)
    except FileNotFoundError:
        raise FileNotFoundError(f"no ZipNum index at {idx}") from None
    try:
        storage.download(idx[:-len(".idx")] + ".loc", os.path.join(work_dir, "cluster.loc"))
    except FileNotFoundError:
        pass  # no .loc: the shards are beside the index
    return Cluster(local_idx, shard_dir=idx.rsplit("/", 1)[0])


class Cluster:
    """A ZipNum cluster whose index is on the local file system.

    ``location`` is the cluster directory or the path of its ``cluster.idx``. Shards are
    found through the ``.loc`` file beside the index (``cluster.loc`` for
    ``cluster.idx``; first readable location wins, relative ones resolved against its
    directory as pywb does), else next to the index. ``shard_dir`` (a directory or
    S3 prefix) replaces the index's directory in both, for an index copied from there.
    """

    def __init__(self, location, max_blocks_per_read=MAX_BLOCKS_PER_READ, shard_dir=None):
        location = os.fspath(location)
        self.idx_path = os.path.join(location, "cluster.idx") if os.path.isdir(location) else location
        if not os.path.isfile(self.idx_path):
            raise FileNotFoundError(f"no ZipNum index at {self.idx_path}")
        self.max_blocks_per_read = max_blocks_per_read
        self.shard_dir = shard_dir or os.path.dirname(self.idx_path)
        loc_path = os.path.splitext(self.idx_path)[0] + ".loc"
        self.locations = _read_loc(loc_path, self.shard_dir) if os.path.isfile(loc_path) else {}

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
        count = 0
        for line in self._candidate_lines(start, end):
            if line >= end:
                return
            if line >= start:
                yield line
                count += 1
                if count == limit:
                    return

    def shard_paths(self, shard):
        """Paths (local, or ``s3://``) to try for ``shard``, in order."""
        if shard in self.locations:
            return [p[len("file://"):] if p.startswith("file://") else p for p in self.locations[shard]]
        return [_resolve(self.shard_dir, shard)]

    def _candidate_lines(self, start, end):
        """Lines of every block that may hold ``[start, end)``, in order."""
        with open(self.idx_path, "rb") as idx:
            for run in _runs(_idx_entries(idx, start, end), self.max_blocks_per_read):
                data = self._read(run)
                pos = 0
                for _, length in run.blocks:
                    yield from _block_lines(data[pos:pos + length])
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


def _idx_entries(idx, start, end):
    """``(shard, offset, length)`` of the blocks that may hold ``[start, end)``.

    That is the block before the first block whose key is >= ``start`` (its tail may
    match) up to, excluding, the first block whose key is >= ``end``.
    """
    # Block keys are only 'urlkey timestamp': a start reaching past that (a whole line)
    # is located by that part, else copies of a block's first line that end the
    # previous block would be skipped. URL keys have no space and are used as is.
    idx.seek(_block_before(idx, block_key(start)))
    for line in idx:
        fields = line.rstrip(b"\r\n").split(b"\t")
        if fields[0] >= end:
            return
        yield fields[1].decode(), int(fields[2]), int(fields[3])


def _block_before(idx, key):
    """Offset of the last idx line whose key is < ``key`` (0 if there is none).

    Bisects over byte positions with O(log size) seeks: ``first_line_at(m)`` is the
    first line starting at or after byte ``m``, and ``below(m)`` whether it exists
    and its key is < ``key``, which is true for every ``m`` up to some point and false
    after. If ``lo`` is the first false position, ``below(lo - 1)`` held and the line it
    read differs from the one at ``lo``, so it is the line starting at ``lo - 1``.
    """
    idx.seek(0, os.SEEK_END)
    size = idx.tell()

    def below(m):
        if m > 0:
            idx.seek(m - 1)
            idx.readline()  # ends the line holding byte m - 1
        else:
            idx.seek(0)
        line = idx.readline()
        return bool(line) and line.split(b"\t", 1)[0] < key

    lo, hi = 0, size
    while lo < hi:
        mid = (lo + hi) // 2
        if below(mid):
            lo = mid + 1
        else:
            hi = mid
    return max(lo - 1, 0)


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
            locations[fields[0]] = [p if "://" in p else _resolve(base, p) for p in fields[1:]]
    return locations


def _resolve(base, name):
    return storage.join(base, name) if storage.is_remote(base) else os.path.join(base, name)
