"""The records of a WARC file as their exact bytes, whatever its compression.

Records are found in the file's uncompressed bytes (a ``.warc``; a ``.warc.gz``,
compressed record by record or as a whole; a ``.warc.zst``; the WARC entries of a WACZ,
one after the other): a record is its header block, through the blank line that ends it,
then as many bytes as its ``Content-Length`` says, then the newlines that end it, up to
the next record's ``WARC/`` line. Put together, the records are the file's uncompressed
bytes, not a byte changed or left out: what ``recompress`` writes one by one and what a
zstd dictionary is trained on. A file whose lengths do not lead from record to record is
refused, with the record where they stop.

    with open_records("a.warc.gz") as records:
        for record in records:
            for piece in record.pieces:
                ...
    data = read_record("a.warc.zst", offset, length)   # one record's bytes, by its CDX line

What ``recompress`` and ``copy`` write is made here too: each record compressed alone
(``record_writer``), and the starts of records a dictionary is trained on
(``record_starts``).
"""
import contextlib
import io
import re
import zlib

from isal.isal_zlib import error as IsalError

from .. import storage
from .members import BLANK_LINE, FIRST_LINE_BLANK, TRAILER_MAX
from .magic import ZSTD_MAGIC, compression
from .base import HEADERS_MAX, READ_SIZE, ArchiveError

# Of each record sampled for a dictionary, its start: what a dictionary helps most with
SAMPLE_BYTES = 16 << 10
# Most bytes of a record handed over at once (the last piece may have the record's
# trailing newlines more): a zstd frame's content at most, so that no frame needs a
# window over the 8 MiB the warc-zstd format asks every decoder to handle.
PIECE = (8 << 20) - TRAILER_MAX
# Where a record starts
RECORD_START = b"WARC/"
CONTENT_LENGTH = re.compile(rb"^content-length[ \t]*:[ \t]*(\d{1,18})[ \t]*\r?$", re.I | re.M)
# Records whose HTTP header block an indexer reads too (after the WARC header block)
HTTP_RECORD = re.compile(rb"^warc-type[ \t]*:[ \t]*(?:response|revisit|request)[ \t]*\r?$",
                         re.I | re.M)
# The least of a record after its header blocks that goes into zstd blocks of its own: less
# decompresses in less time than the walker takes to pass over blocks
OWN_BLOCKS_MIN = 1 << 10


class _Reader:
    """Reads and peeks at what ``more()`` hands over (b"" at the end); keeps count of the
    offset of the next byte."""

    def __init__(self, more, path):
        self.more, self.path = more, path
        self.buf, self.pos, self.offset = b"", 0, 0

    def _fill(self):
        try:
            data = self.more()
        except (OSError, EOFError, IsalError) as exc:  # a failed read, a bad or cut gzip stream
            raise ArchiveError(self.path, self.offset + len(self.buf) - self.pos,
                               "cannot read the file past here (an offset in its uncompressed "
                               f"data): {exc or type(exc).__name__}") from None
        if not data:
            return False
        self.buf, self.pos = self.buf[self.pos:] + data, 0
        return True

    def peek(self, size):
        """Up to ``size`` bytes (fewer only at the end), not consumed."""
        while len(self.buf) - self.pos < size and self._fill():
            pass
        return self.buf[self.pos:self.pos + size]

    def read(self, size):
        data = self.peek(size)
        self.pos += len(data)
        self.offset += len(data)
        return data

    def read_header(self, offset):
        """The header block of the record starting here, through its blank line."""
        while True:
            at = self.buf.find(b"\n\r\n", self.pos)
            at = at + 3 if at >= 0 else -1
            bare = self.buf.find(b"\n\n", self.pos)
            if bare >= 0 and (at < 0 or bare + 2 < at):
                at = bare + 2
            if at >= 0:
                return self.read(at - self.pos)
            if len(self.buf) - self.pos > HEADERS_MAX or not self._fill():
                raise ArchiveError(self.path, offset, "record header does not end (no blank "
                                                      f"line in its first {HEADERS_MAX} bytes)")


class RawRecord:
    """One record of the file: its ``offset`` in the uncompressed bytes, its ``header``
    block, and ``pieces``, an iterator over its bytes (the header's first), at most
    ``PIECE`` at a time; ``size`` is known once they are all read."""

    def __init__(self, reader, offset, header, length, piece):
        self.reader, self.offset, self.header = reader, offset, header
        self.content_length, self.size = length, None
        self.pieces = self._pieces(piece)

    def _pieces(self, piece):
        reader, left, buf = self.reader, self.content_length, self.header
        while True:
            data = reader.read(min(left, piece - len(buf)))
            buf += data
            left -= len(data)
            if not left:
                break
            if not data:
                raise ArchiveError(reader.path, self.offset,
                                   f"record is cut short: the file ends {left} bytes before "
                                   "its Content-Length says")
            if len(buf) >= piece:
                yield buf
                buf = b""
        trailer = reader.peek(TRAILER_MAX + len(RECORD_START))
        ends = len(trailer) - len(trailer.lstrip(b"\r\n"))
        after = trailer[ends:]
        if after and not after.startswith(RECORD_START[:len(after)]) or ends > TRAILER_MAX:
            raise ArchiveError(reader.path, self.offset,
                               f"the record's Content-Length ({self.content_length}) does not "
                               f"lead to the next record (found {after[:16]!r}): the file's "
                               "records cannot be told apart exactly")
        buf += reader.read(ends)
        self.size = reader.offset - self.offset
        yield buf


def split(more, path, piece=PIECE):
    """The ``RawRecord``s of the uncompressed WARC bytes ``more()`` hands over, one after
    the other (each read to its end before the next); raises ``ArchiveError`` for what
    is not a WARC record or has no Content-Length."""
    reader = _Reader(more, path)
    while True:
        offset = reader.offset
        head = reader.peek(len(RECORD_START))
        if not head:
            if not offset:
                raise ArchiveError(path, 0, "no WARC record in the file (empty)")
            return
        if head != RECORD_START:
            raise ArchiveError(path, offset, f"not a WARC record (found {reader.peek(16)!r}): "
                                             "only WARC files are read record by record here")
        header = reader.read_header(offset)
        length = CONTENT_LENGTH.search(header)
        if length is None:
            raise ArchiveError(path, offset, "WARC record without a valid Content-Length")
        record = RawRecord(reader, offset, header, int(length.group(1)), piece)
        yield record
        for _ in record.pieces:  # what the caller left unread
            pass


@contextlib.contextmanager
def open_records(path, zstd_dictionary=None, piece=PIECE):
    """The records of the WARC file ``path`` (local, s3://, http(s)://), as ``split``
    yields them; ``zstd_dictionary``: a dictionary file for a .warc.zst without its own."""
    with storage.open_read(path) as fh:
        kind = compression(fh.peek(4)[:4])
        if kind == "gz":
            from isal import igzip
            with igzip.IGzipFile(fileobj=fh) as gz:
                yield split(lambda: gz.read(READ_SIZE), path, piece)
            return
        if kind == "zst":
            from .zstdwarc import ZstdFrames
            yield split(ZstdFrames(fh, path, zstd_dictionary).next_piece, path, piece)
            return
        if kind == "zip":
            yield split(_wacz_bytes(fh, path).__next__, path, piece)
            return
        yield split(lambda: fh.read(READ_SIZE), path, piece)


def _wacz_bytes(fh, path):
    """The uncompressed bytes of the WARC entries of a WACZ, one entry after the other (each
    ends where a record does), then b"" for ever; ``ArchiveError`` for an entry not read."""
    from isal import igzip
    from . import wacz
    fh = wacz.seekable(fh, path)
    entries, problems = wacz.archive_entries(fh, path)
    if problems:  # every record or none: an entry left out would be records lost
        raise problems[0]
    for entry in entries:
        with wacz.open_entry(fh, entry) as window:
            gzipped = compression(window.peek(4)[:4]) == "gz"
            data = igzip.IGzipFile(fileobj=window) if gzipped else window
            while block := data.read(READ_SIZE):
                yield block
    while True:
        yield b""


def record_starts(records, budget):
    """The starts (the first ``SAMPLE_BYTES``) of ``records`` (``RawRecord``s), one after the
    other, up to ``budget`` bytes in all (one at least): what a zstd dictionary is trained on."""
    total = 0
    for record in records:
        sample = next(record.pieces)[:SAMPLE_BYTES]
        yield sample
        total += len(sample)
        if total >= budget:
            return


def headers_end(record):
    """Where the header blocks at the start of ``record`` (bytes) end, as the walkers find
    them: after the WARC header block, and of a response, revisit or request after the HTTP
    header block too (the blank line after it); 0 where the WARC header block does not end."""
    found = BLANK_LINE.search(record, 0, HEADERS_MAX)
    if found is None:
        return 0
    end = found.end()
    if HTTP_RECORD.search(record, 0, end):
        found = FIRST_LINE_BLANK.match(record, end) or BLANK_LINE.search(record, end,
                                                                          end + HEADERS_MAX)
        if found is not None:
            return found.end()
    return end


def record_writer(fh, fmt, level, zdict=None):
    """``write(pieces)``: one record's pieces (its bytes, as ``RawRecord.pieces``) compressed
    alone into ``fh``: into a gzip member ("gz"), or into a zstd frame a piece ("zst"; a
    dictionary frame that embeds ``zdict``, if given, is written first, now). The first zstd
    block of a record's first frame ends with its header blocks (``headers_end``), unless
    little follows them: a walker decompresses that block alone, and passes over the rest
    of the frame by its block headers where it does not read the payload."""
    if fmt == "gz":
        def write(pieces):
            member = zlib.compressobj(level, zlib.DEFLATED, 31)
            for piece in pieces:
                fh.write(member.compress(piece))
            fh.write(member.flush())
        return write
    from .zstdwarc import compressor, dictionary_frame, split_frame
    if zdict is not None:
        fh.write(dictionary_frame(zdict))
    zstd = compressor(level, zdict)
    frame = zstd.compress

    def write(pieces):
        pieces = iter(pieces)
        for piece in pieces:
            split = headers_end(piece)
            if len(piece) - split < OWN_BLOCKS_MIN:
                fh.write(frame(piece))
            else:
                fh.write(split_frame(zstd, piece, split))
            break
        for piece in pieces:
            fh.write(frame(piece))
    return write


def decode_record(data, path, offset, zdict=None):
    """The bytes of the WARC record whose frames, at ``offset`` in ``path`` (a CDX line's
    offset), are ``data`` (its length), decompressed with the file's dictionary ``zdict``;
    raises ``ArchiveError`` unless they are whole frames of exactly one whole record
    (``zstdwarc.DictionaryError`` if they need another dictionary)."""
    from .zstdwarc import DictionaryError, ZstdFrames
    if data[:4] != ZSTD_MAGIC:
        raise ArchiveError(path, offset, "no zstd frame starts at this offset")
    frames = ZstdFrames(io.BytesIO(data), path, dictionary=zdict, offset=offset)
    records = []
    try:
        for record in split(frames.next_piece, path):
            if records:
                raise ArchiveError(path, offset, "the frames at this offset hold more than one "
                                                 "record")
            records.append(b"".join(record.pieces))
    except ArchiveError as exc:  # (split's offsets are in the record's uncompressed bytes)
        if frames.dictionary_problems:
            raise DictionaryError(f"{path}: offset {offset}: {exc.reason}") from None
        raise ArchiveError(path, offset, exc.reason) from None
    return records[0]


def read_record(path, offset, length, dictionary_file=None):
    """The bytes of the WARC record at ``offset`` (``length`` bytes of frames, as its CDX
    line says) of the .warc.zst ``path`` (local, s3://, http(s)://): one ranged read,
    decompressed with the file's dictionary (read from its start, once per process; else
    the one in ``dictionary_file``). Raises ``ArchiveError`` for what is not one record."""
    data = storage.read_range(path, offset, length)
    if len(data) < length:
        raise ArchiveError(path, offset, f"the file ends {length - len(data)} bytes before the "
                                         "end of the record's frames")
    from .zstdwarc import file_dictionary
    return decode_record(data, path, offset, file_dictionary(path, dictionary_file))
