"""A ``cluster.idx`` (local or remote) read in ranges, never whole, forwards and backwards.

With the cluster's root index (``cluster.root``, see ``layout.root_index``) the slice
that holds a key is known without reading, and one ranged read fetches it; a slice is
read together with the start of the next one (``SLICE_OVERLAP``), so a run of lines
crossing into it rarely needs a second read. Without a root, or with one that does not
describe this index, the index is binary-searched in pages of ``PAGE_BYTES`` as pywb
does on local files (in 8 KiB blocks).

What is cheap to check is checked on the way, so that a damaged index gives an error
rather than a wrong answer: the first line must look like an index line, every slice
read through the root is checked whole for order, and every run of lines a scan passes
over is too (``DamagedCluster`` names the file and the lines).
"""

import bisect
import itertools
import logging
import os
import threading
import weakref

from .. import storage
from ..util.recent import Recent
from .layout import BadIdxLine, parse_idx_line, parse_root

__all__ = ["IdxFile", "DamagedCluster", "PAGE_BYTES", "SLICE_OVERLAP", "CACHE_BYTES", "version"]

log = logging.getLogger(__name__)

# Read unit of a binary search in a cluster.idx that has no root index
PAGE_BYTES = 64 * 1024
# Bytes of the next slice read with a slice of cluster.idx (~40 index lines)
SLICE_OVERLAP = 4096
# What an IdxFile keeps of what it read (pages, slices and their lines): a server answers
# most lookups of a cluster from the slices it read last
CACHE_BYTES = 16 * 1024 * 1024
# What ``version`` reads of a remote index: its first line (a URL key, a timestamp and the
# shard, whose build-NNNNN/ changes with every build published)
VERSION_BYTES = 4096


class DamagedCluster(OSError):
    """A cluster whose index or shards are not what a ZipNum cluster holds: damaged, not a
    cluster at all, or changed while being read. Answering would be wrong."""


class IdxFile:
    """A ``cluster.idx`` read in ranges (see the module's docstring); safe to share between
    threads (its cache is locked, its reads are not)."""

    def __init__(self, path, root=None, cache_bytes=CACHE_BYTES):
        self.path = path
        self.size = None
        # a local index is read through the file opened here: a build published meanwhile
        # (a rename over the path) does not change what this object reads
        self._fd = None
        # what this index is (``version``): local, the file opened; else None until a
        # caller that can afford the request notes it (``serve``)
        self.version = None
        if storage.is_local(path):
            self._fd = os.open(path, os.O_RDONLY)
            weakref.finalize(self, os.close, self._fd)
            self.version = _local_version(os.fstat(self._fd))
        self._use_root(root)
        # (the newest range stays even when it alone is over the bound: it is being read)
        self._cache = Recent(cache_bytes, keep_newest=True)
        self._lock = threading.Lock()  # (of ``size``)

    @classmethod
    def open(cls, path, cache_bytes=CACHE_BYTES):
        """The index at ``path`` with its root, if it has one; FileNotFoundError if neither
        is there (the root answers first: one request for a cold remote lookup)."""
        root_path = os.path.splitext(path)[0] + ".root"
        # a local index is opened before its root is read: a root newer than the index is
        # noticed (and ignored), one older is not published after it
        idx = cls(path, None, cache_bytes)
        try:
            root = parse_root(storage.read_bytes(root_path))
            keys = [key for key, _, _ in root[1]]
            if any(after < before for before, after in zip(keys, keys[1:])):
                raise ValueError("its keys are out of order")
        except FileNotFoundError:
            root = None
        except ValueError as exc:
            log.warning("ignoring %s: %s", root_path, exc)
            root = None
        idx._use_root(root)
        if root is None:
            idx.check()  # the index must be there and look like one; learns its size
        return idx

    def check(self):
        """Read the start of the index: DamagedCluster (or OSError) unless it looks like
        one (``open`` does not, with a root, until a lookup)."""
        self._page(0)

    def check_line(self, line, where):
        """``line`` parsed as an index line (``layout.IdxLine``); DamagedCluster if it is none."""
        try:
            return parse_idx_line(line)
        except BadIdxLine as exc:
            raise DamagedCluster(f"{self.path} is not a ZipNum cluster.idx: {where}: {exc}") from None

    def out_of_order(self, before, after):
        return DamagedCluster(f"{self.path} is damaged: its lines are out of order "
                              f"({after[:120]!r} follows {before[:120]!r})")

    def scan(self, key: bytes, stop: bytes | None = None, peek=False):
        """Index lines (without newline) from the last one below ``key`` (or the first
        line, if none is below) to the end, while below ``stop``; with ``peek``, then the
        first line at or above ``stop`` too, if there is one (for checking what follows).

        That is what pywb's ``iter_range(reader, key, stop, prev_size=1)`` yields: when
        every line is below ``key`` only the last one comes. Lines compare whole, as
        pywb compares them.
        """
        prev = None
        lines = self._checked(self._lines_for(key, stop))
        for line in lines:
            if line >= key:
                if prev is not None:
                    yield prev
                for line in itertools.chain((line,), lines):
                    if stop is not None and line >= stop:
                        if peek:
                            yield line
                            next(lines, None)  # checked against the next one: in order
                        return
                    yield line
                return
            prev = line
        if prev is not None and (stop is None or prev < stop):
            yield prev

    def scan_back(self, key: bytes, stop: bytes | None = None, peek=False):
        """The lines ``scan(key, stop, peek)`` yields, last first."""
        above = None
        lines = self._checked(self._lines_back(stop), reverse=True)
        for line in lines:
            if stop is not None and line >= stop:
                above = line
                continue
            if peek and above is not None:
                yield above
                above = None
            yield line
            if line < key:
                if peek:
                    next(lines, None)  # checked against the one before: in order
                return

    def _checked(self, lines, reverse=False):
        prev = None
        for line in lines:
            if prev is not None and (line > prev if reverse else line < prev):
                raise self.out_of_order(*((line, prev) if reverse else (prev, line)))
            prev = line
            yield line

    # -- forwards ----------------------------------------------------------------------

    def _lines_for(self, key, stop):
        if self._root is not None:
            first = max(bisect.bisect_left(self._root_keys, key) - 1, 0)
            try:
                return self._root_lines(first, stop)
            except _StaleRoot as exc:
                self._drop_root(exc)
        return self._paged_lines(key)

    def _use_root(self, root):
        self._root = root
        self._root_keys = [key for key, _, _ in root[1]] if root else None

    def _drop_root(self, exc):
        log.warning("ignoring the root index of %s: %s", self.path, exc)
        self._use_root(None)

    def _root_lines(self, first, stop):
        """Lines of the slices from ``first`` on, stopping before a slice whose key is
        ``>= stop``; the first slice is read (and checked) before this returns."""
        entries = self._root[1]
        if not entries:
            return iter(())
        lines = self._slice_lines(first)

        def more():
            yield from lines
            for i in range(first + 1, len(entries)):
                if stop is not None and entries[i][0] >= stop:
                    return
                try:
                    yield from self._slice_lines(i)
                except _StaleRoot as exc:
                    raise DamagedCluster(f"{self.path} changed while being read: {exc}") from None
        return more()

    def _slice_lines(self, i):
        """The lines of slice ``i``, checked for order; _StaleRoot if the root describes
        another index (a build published between reading the two)."""
        cached = self._cache.get(("lines", i))
        if cached is not None:
            return cached
        lines = self._slice(i).split(b"\n")[:-1]
        for before, after in zip(lines, lines[1:]):
            if after < before:
                raise self.out_of_order(before, after)
        self._cache.put(("lines", i), lines, sum(map(len, lines)) + 40 * len(lines))
        return lines

    def _slice(self, i):
        size, entries = self._root
        key, offset, length = entries[i]
        head = self._cache.get(("head", i))
        if head is not None and len(head) == length:
            return head
        overlap = min(SLICE_OVERLAP, entries[i + 1][2]) if i + 1 < len(entries) else 0
        data = self._read(offset, length + overlap)
        if self.size != size:
            raise _StaleRoot(f"its root describes an index of {size} bytes, not {self.size}")
        next_key = entries[i + 1][0] if overlap else None
        if (not data.startswith(key + b"\t") or data[length - 1:length] != b"\n"
                or (overlap and not data.startswith(next_key + b"\t", length))):
            raise _StaleRoot(f"its root does not describe bytes {offset}+{length}")
        if overlap:
            head = data[length:]
            # the next slice is read whole when a scan gets there, unless it is this short
            head = head[:head.rfind(b"\n") + 1]
            if len(head) == entries[i + 1][2]:
                self._cache.put(("head", i + 1), head, len(head))
        return data[:length]

    def _paged_lines(self, key):
        """Lines from a page whose first whole line is below ``key`` (or from the start)."""
        return self._lines_at(self._page_before(key) * PAGE_BYTES, skip_first=True)

    def _page_before(self, key):
        """The last page whose first whole line is below ``key``, or 0."""
        self._page(0)
        lo, hi = 0, -(-self.size // PAGE_BYTES)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            line = next(self._lines_at(mid * PAGE_BYTES, skip_first=True), None)
            if line is not None and line < key:
                lo = mid
            else:
                hi = mid
        return lo

    def _lines_at(self, pos, skip_first):
        """Whole lines starting in the pages from ``pos`` on; the first (maybe partial) one
        dropped if ``skip_first`` and ``pos`` is not 0."""
        skip_first = skip_first and pos > 0
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

    # -- backwards ---------------------------------------------------------------------

    def _lines_back(self, stop):
        """Lines from the last one below ``stop`` (or the last) to the first, last first,
        and maybe a few at or above ``stop`` before them."""
        if self._root is not None:
            entries = self._root[1]
            last = len(entries) if stop is None else bisect.bisect_left(self._root_keys, stop)
            try:
                lines = self._slice_lines(last - 1) if last > 0 else []
            except _StaleRoot as exc:
                self._drop_root(exc)
            else:
                return self._root_lines_back(last - 1, lines)
        self._page(0)
        pages = -(-self.size // PAGE_BYTES)
        return self._pages_back(pages - 1 if stop is None else self._page_before(stop))

    def _root_lines_back(self, last, lines):
        yield from reversed(lines)
        for i in range(last - 1, -1, -1):
            try:
                yield from reversed(self._slice_lines(i))
            except _StaleRoot as exc:
                raise DamagedCluster(f"{self.path} changed while being read: {exc}") from None

    def _pages_back(self, page):
        """Whole lines starting in pages ``page``, ``page - 1``, ... 0, last first."""
        if page < 0:
            return
        # the last line starting in ``page`` may end in a later one
        tail = b""
        later = page + 1
        while not self._page(page).endswith(b"\n") and later * PAGE_BYTES < self.size:
            data = self._page(later)
            newline = data.find(b"\n")
            tail += data if newline < 0 else data[:newline]
            if newline >= 0:
                break
            later += 1
        carry = tail
        for n in range(page, -1, -1):
            pieces = (self._page(n) + carry).split(b"\n")
            # the first piece ends a line that started before this page: it goes with
            # the previous page, where it becomes whole
            carry = pieces.pop(0) if n > 0 else None
            if pieces and not pieces[-1]:
                pieces.pop()
            yield from reversed(pieces)

    # -- reading -----------------------------------------------------------------------

    def _page(self, n):
        cached = self._cache.get(("page", n))
        if cached is None:
            cached = self._read(n * PAGE_BYTES, PAGE_BYTES)
            # its whole lines in order, checked once: a scan may stop after one of them
            lines = cached.split(b"\n")[1 if n else 0:-1]
            if n == 0 and cached:
                self.check_line(cached.split(b"\n", 1)[0], "its first line")
            for before, after in zip(lines, lines[1:]):
                if after < before:
                    raise self.out_of_order(before, after)
            self._cache.put(("page", n), cached, len(cached))
        return cached

    def _read(self, offset, length):
        if self._fd is not None:
            data, size = os.pread(self._fd, length, offset), os.fstat(self._fd).st_size
        else:
            data, size = storage.fetch_range(self.path, offset, length)
        if size is None:
            raise OSError(f"{self.path}: the server does not say how large the file is "
                          "(Content-Range: .../*), which a binary search needs")
        with self._lock:
            if self.size is None:
                self.size = size
            elif size != self.size:
                raise DamagedCluster(f"{self.path} changed while being read: {self.size} "
                                     f"bytes, then {size}")
        return data


def version(path):
    """What tells the index now at ``path`` from another (compared whole with
    ``IdxFile.version``): locally its file's identity, size and time (a stat); elsewhere
    its size and first line, which names the build (one request: over HTTP the size
    alone would not tell a rebuild of the same inputs)."""
    if storage.is_local(path):
        return _local_version(os.stat(path))
    head, size = storage.fetch_range(path, 0, VERSION_BYTES)
    return {"size": size, "first": head.split(b"\n", 1)[0]}


def _local_version(stat):
    # the inode: a build renames a new file over the old one, maybe within a clock tick
    return {"inode": (stat.st_dev, stat.st_ino), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


class _StaleRoot(Exception):
    pass
