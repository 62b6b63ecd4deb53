"""The 2012 Common Crawl URL index, read as an index input: each item becomes a CDX line.

Before ZipNum, Common Crawl published one file (``url-index.1356128792``) holding a
prefixed B-tree of every URL of its ARC crawl, searched with a few ranged reads. Its
layout, as its documentation gives it (integers little-endian):

* a header of 8 bytes: the block size (uint32) and the number of index blocks (uint32);
  block ``n`` is the ``block size`` bytes from ``8 + n * block size``;
* index blocks ``0 .. count-1``: a uint32 block number, then ``<prefix> NUL <uint32
  block number>`` entries, then NUL padding;
* data blocks (``count`` on): ``<url key> NUL <32-byte location>`` items in byte order
  of the key, then NUL padding; the location is the segment id (uint64), the ARC
  file's date (uint64, milliseconds since 1970), its partition (uint32), the offset of
  the record's gzip member (uint64) and its length (uint32);
* a URL key is the host reversed in dotted form, the path and query, ``:`` and the
  scheme: ``com.metafilter.ask/51007/:http`` (what the index's readers of the time,
  pywb's Common Crawl index server among them, took apart). A key without ``:scheme``
  is read as http.

A converted line holds what the index holds, and no more:

* ``urlkey``: the SURT of the URL, as every other line of a cluster;
* ``timestamp``: the ARC file's date, to the second. The index has no capture time:
  this is when the file was written, usually minutes after the capture (the index's
  own CDX servers answered with the same date);
* ``url``, ``offset``, ``length``, and ``filename``
  ``common-crawl/parse-output/segment/<segment id>/<file date>_<partition>.arc.gz``
  (the key in the 2012 public-datasets bucket);
* no mime type, status or digest (CDX11/CDX9: ``-``; CDXJ: left out).

The lines come in the order of the index's keys, which is not the order of SURT keys:
the source reports itself unsorted, and the build sorts it. ``prefix`` restricts a
source to the keys starting with it, found through the index blocks (a ranged read per
level) without reading the data before it. Local files and ``s3://`` or ``http(s)://``
URLs are read in ranges of ``READ_BLOCKS`` blocks through ``storage.read_range``.
"""
import struct
import time

from .. import storage
from .indexes import IndexInputError, IndexSource
from ..cdx.cdxline import format_line
from ..cdx.urlkey import url_key

HEADER = struct.Struct("<II")
BLOCK_NUMBER = struct.Struct("<I")
LOCATION = struct.Struct("<QQIQI")
# Blocks read with one ranged read when the data blocks are read in order (4 MiB of
# Common Crawl's 64 KiB blocks)
READ_BLOCKS = 64
# Index levels followed before the search gives up (a loop in a damaged index)
MAX_DEPTH = 32
ARC_NAME = "common-crawl/parse-output/segment/{}/{}_{}.arc.gz"
SCHEMES = ("http", "https", "ftp")


def looks_like_legacy(head, size):
    """Whether a file of ``size`` bytes starting with ``head`` is laid out as this index:
    a power-of-two block size, index blocks, whole blocks after the header."""
    if len(head) < HEADER.size:
        return False
    block_size, count = HEADER.unpack_from(head)
    return (64 <= block_size <= 1 << 24 and block_size & (block_size - 1) == 0 and count >= 1
            and size > HEADER.size + count * block_size and (size - HEADER.size) % block_size == 0)


def key_url(key):
    """The URL of a URL key: ``com.example.www/a?b:https`` -> ``https://www.example.com/a?b``."""
    rest, colon, scheme = key.rpartition(":")
    if not colon or scheme not in SCHEMES:
        rest, scheme = key, "http"
    host, _, path = rest.partition("/")
    return f"{scheme}://{'.'.join(reversed(host.split('.')))}/{path}"


class LegacyIndex(IndexSource):
    """The URL index at ``path`` (local or remote), its items as CDX lines of ``format``."""

    kind = "legacy"

    def __init__(self, path, name=None, fmt="cdxj", prefix=b""):
        super().__init__(path, name)
        self.format, self.prefix = fmt, prefix
        head, self.size = storage.fetch_range(path, 0, HEADER.size)
        if len(head) < HEADER.size:
            raise IndexInputError(path, "too short for the header of a URL index")
        self.block_size, self.count = HEADER.unpack(head)
        if self.block_size < 64 or self.count < 1 or (
                self.size is not None and self.size <= HEADER.size + self.count * self.block_size):
            raise IndexInputError(path, f"not a 2012 Common Crawl URL index: block size "
                                        f"{self.block_size}, {self.count} index blocks in "
                                        f"{self.size} bytes")

    def _blocks(self, first, count):
        data = storage.read_range(self.path, HEADER.size + first * self.block_size,
                                  count * self.block_size)
        return [data[i:i + self.block_size] for i in range(0, len(data), self.block_size)]

    def find(self, target):
        """The first data block that can hold keys starting with ``target`` (bytes)."""
        number = 0
        for _ in range(MAX_DEPTH):
            if number >= self.count:
                return number
            [block] = self._blocks(number, 1) or [b""]
            if len(block) < BLOCK_NUMBER.size:
                raise IndexInputError(self.path, f"index block {number} is cut short")
            # the child left of the first prefix >= target, or the last child
            (child,) = BLOCK_NUMBER.unpack_from(block)
            pos = BLOCK_NUMBER.size
            while pos < len(block) and block[pos]:
                end = block.find(b"\0", pos)
                if end < 0 or end + 1 + BLOCK_NUMBER.size > len(block):
                    raise IndexInputError(self.path, f"index block {number}: an entry runs "
                                                     "past the block's end")
                if block[pos:end] >= target:
                    break
                (child,) = BLOCK_NUMBER.unpack_from(block, end + 1)
                pos = end + 1 + BLOCK_NUMBER.size
            number = child
        raise IndexInputError(self.path, f"no data block after {MAX_DEPTH} index levels "
                                         "(the index blocks point in a loop)")

    def items(self):
        """``(key, location, offset)`` of every item (from ``prefix`` on while keys start
        with it): the key as bytes, the 5 numbers of its location, its offset in the file."""
        number = self.find(self.prefix) if self.prefix else self.count
        # the blocks the file holds, when its size is known (no read past its end then)
        total = None if self.size is None else -(-(self.size - HEADER.size) // self.block_size)
        while total is None or number < total:
            wanted = READ_BLOCKS if total is None else min(READ_BLOCKS, total - number)
            blocks = self._blocks(number, wanted)
            for block in blocks:
                offset = HEADER.size + number * self.block_size
                pos = 0
                while pos < len(block) and block[pos]:
                    end = block.find(b"\0", pos)
                    if end < 0 or end + 1 + LOCATION.size > len(block):
                        self._problem({"offset": offset + pos}, f"data block {number}: an item "
                                                                "runs past the block's end")
                        break
                    key = block[pos:end]
                    if key >= self.prefix:
                        if not key.startswith(self.prefix):
                            return
                        yield key, LOCATION.unpack_from(block, end + 1), offset + pos
                    pos = end + 1 + LOCATION.size
                number += 1
            if len(blocks) < wanted:
                return

    def _raw_lines(self):
        for key, (segment, date, partition, arc_offset, length), offset in self.items():
            try:
                # a space would end the URL field of a CDX11 line, a line end the line:
                # escaped, as pywb escapes a space
                url = key_url(key.decode("utf-8"))
                url = url.replace(" ", "%20").replace("\n", "%0A").replace("\r", "%0D")
                timestamp = time.strftime("%Y%m%d%H%M%S", time.gmtime(date // 1000))
                if len(timestamp) != 14:
                    raise ValueError(f"its ARC file date {date} is no time of the years 1000-9999")
                fields = {"urlkey": url_key(url), "url": url, "timestamp": timestamp,
                          "offset": str(arc_offset), "length": str(length),
                          "filename": ARC_NAME.format(segment, date, partition)}
            except Exception as exc:  # surt and gmtime raise assorted errors on odd values
                self._problem({"offset": offset}, f"item {key[:200]!r}: {exc}")
                continue
            yield format_line(fields, self.format).encode("utf-8")

    def _files(self, size):
        def pieces():
            batch, length = [], 0
            for line in self._raw_lines():
                batch.append(line)
                length += len(line)
                if length >= size:
                    yield b"".join(batch)
                    batch, length = [], 0
            yield b"".join(batch)
        yield self.path, pieces()
