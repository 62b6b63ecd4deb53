"""A CDX file read as lines, streaming: the one reader of CDX files (per-archive CDX files,
index inputs, a cluster's shards), local or remote, whatever engine reads them.

* :class:`Inflated`: a file's bytes in bounded pieces, gunzipped member after member if
  its first bytes are gzip's (whatever its name), a cut or corrupt member an
  :class:`IndexInputError` naming its offset;
* :func:`whole_lines`, :func:`split_lines`: those pieces as parts of whole lines (each
  ending in ``\\n``), or as lines without it; memory bounded by the piece size, never
  the file's;
* :func:`read_chunks`: the lines of a CDX file as the jobs' mappers get them (mrjob's,
  the local engine's, Spark's tasks): lines end at ``\\n`` and lose trailing ``\\r``; a
  line that is not UTF-8 is read as latin-1 (mrjob's ``RawValueProtocol``) and so comes
  out as the UTF-8 of those characters; only lines that ``cdxline.is_cdx_line`` accepts
  (no header, no blank line; a line starting with a UTF-8 byte order mark is kept, its
  key holding it). ``inputs.indexes`` reads index inputs through the same pieces and
  lines, checking each line strictly (``build/indexprep.py`` hands the jobs a file as it
  is only when both give the same lines).

Lines are ``bytes`` without their newline, in chunks (lists of lines), so that the
per-line work stays in C (``bytes.split``, one regular expression).
"""
import re

from isal import isal_zlib

from .. import storage
from ..warc.magic import GZIP_MAGIC
from .cdxline import is_cdx_line

# Bytes inflated at a time, and about the size of a chunk of lines: pieces of this size
# split into lines fastest
CHUNK_BYTES = 1 << 18
BOM = b"\xef\xbb\xbf"

# cdxline.CDX_LINE (``\S+ \d+ ``, on str) for ASCII bytes: str's \s also holds \x1c-\x1f
# there, bytes' \s does not; str's \d is [0-9] on ASCII. Lines with other bytes take
# the slow path, which decodes them as the jobs do.
_ASCII_CDX_LINE = re.compile(rb"[^\s\x1c-\x1f]+ [0-9]+ ")


class IndexInputError(Exception):
    """A CDX file or index input that cannot be read (on): a whole-file problem, not a
    malformed line."""

    def __init__(self, path, reason, line=0):
        super().__init__(f"{path}: {reason}")
        self.path, self.reason, self.line = path, reason, line

    def as_dict(self):
        return {"file": self.path, "line": self.line, "reason": self.reason}


class Inflated:
    """The bytes of a file object in pieces of at most ``size`` bytes, gunzipped member
    after member if it starts like gzip; ``members`` counts the gzip members met so far
    (0 for a plain file)."""

    def __init__(self, fh, path, size=CHUNK_BYTES):
        self.fh, self.path, self.size, self.members = fh, path, size, 0

    def __iter__(self):
        size = self.size
        # compressed bytes are read a quarter piece at a time: what is held of them
        # (and copied as the inflater's unconsumed tail) stays small beside the pieces
        block = max(size >> 2, len(GZIP_MAGIC))
        data = self.fh.read(block)
        if not data.startswith(GZIP_MAGIC):
            while data:
                yield data
                data = self.fh.read(size)
            return
        read, start = len(data), 0  # bytes read so far; where the current member starts
        inflater = isal_zlib.decompressobj(31)
        self.members = 1
        while True:
            try:
                # bounded pieces: splitting them into lines is much faster than huge ones
                out = inflater.decompress(data, size)
            except isal_zlib.error as exc:
                raise IndexInputError(self.path, f"corrupt gzip member at byte {start}: {exc}") from None
            if out:
                # handed on without a reference kept here, so that it goes as soon as the
                # caller is done with it (a piece less held: a sixth of a reader's memory)
                held, out = [out], None
                yield held.pop()
            if inflater.eof:
                data = inflater.unused_data
                if not data:
                    data = self.fh.read(block)
                    read += len(data)
                    if not data:
                        return
                start = read - len(data)
                inflater = isal_zlib.decompressobj(31)
                self.members += 1
            elif inflater.unconsumed_tail:
                data = inflater.unconsumed_tail
            else:
                data = self.fh.read(block)
                read += len(data)
                if not data:
                    out = inflater.flush()
                    if out:
                        yield out
                    if not inflater.eof:
                        raise IndexInputError(self.path, f"the gzip member at byte {start} is cut short")
                    return


def whole_lines(pieces, size=CHUNK_BYTES):
    """The bytes of a stream of pieces in parts of whole lines, each ending in ``\\n`` (one
    is added to a last line without), of at least ``size`` bytes but the last (or a line
    longer alone): small pieces (small gzip members) are put together. When the stream
    fails, the whole lines before the failure come first."""
    pending, length = [], 0
    try:
        for piece in pieces:
            pending.append(piece)
            length += len(piece)
            if length < size:
                continue
            cut = piece.rfind(b"\n") + 1
            if not cut:
                continue  # a line longer than the piece: it ends in a later one
            rest = piece[cut:]
            if len(pending) > 1 or rest:
                pending[-1] = memoryview(piece)[:cut]  # joined without a copy of its own
                piece = b"".join(pending)
            pending, length = [rest], len(rest)
            yield piece
    except IndexInputError:
        data = b"".join(pending)
        cut = data.rfind(b"\n") + 1
        if cut:
            yield data[:cut]
        raise
    data = b"".join(pending)
    if data:
        yield data if data.endswith(b"\n") else data + b"\n"


def split_lines(pieces):
    """The lines (without ``\\n``) of a stream of pieces."""
    for data in whole_lines(pieces):
        lines = data.split(b"\n")
        lines.pop()
        yield from lines


def _job_line(raw):
    """What a job's mapper makes of one line (after ``\\r`` is stripped): its UTF-8, or None."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    return text.encode("utf-8") if is_cdx_line(text) else None


def cdx_lines(lines, ascii_only=False, returns=True):
    """The CDX lines among ``lines`` (raw lines split at ``\\n``), as the jobs read them.

    ``ascii_only`` says that no line holds a byte above 127: then one regular
    expression decides, in C; ``returns=False`` that none holds a ``\\r``.
    """
    if returns:
        lines = [line.rstrip(b"\r") for line in lines]
    if ascii_only:
        return list(filter(_ASCII_CDX_LINE.match, lines))
    return [line for line in map(_job_line, lines) if line is not None]


def read_chunks(path, chunk_bytes=CHUNK_BYTES):
    """The CDX lines of the file ``path`` (gzipped or not: its first bytes say), in file
    order, as chunks of lines of about ``chunk_bytes``, as the jobs read them (see the
    module); ``IndexInputError`` for a gzip member cut short or corrupt, after the lines
    before it."""
    with storage.open_read(path) as fh:
        for data in whole_lines(Inflated(fh, path, chunk_bytes), chunk_bytes):
            lines = data.split(b"\n")
            lines.pop()
            chunk = cdx_lines(lines, data.isascii(), b"\r" in data)
            data = lines = None  # not held while the caller works on the chunk
            if chunk:
                yield chunk
