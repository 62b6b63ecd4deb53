"""A file of concatenated gzip members, walked member by member (``GzipMembers``): each is
read like a file, inflated with ISA-L from large blocks of the file, a little at a
member's start (where the header blocks are) and more after; the records an indexer skips
(requests, metadata) are passed over by three of their headers (``skim``); after a bad
member, ``recover`` finds the next one.

``GzipMembers`` has a compiled twin, ``_members.Members`` (``CompiledMembers``, built at
install time wherever a C extension builds, inflating as ``INFLATER`` says: linked to ISA-L
where its headers are found, e.g. Debian's ``libisal-dev``, else through python-isal), with
the same methods and results; ``records`` uses it when present, and it spares the walk most
of its Python work. This module is its specification.
"""
import re

from isal import isal_zlib

from .headers import SKIM_PATTERNS, header_value, is_plain
from .magic import GZIP_MAGIC
from .base import (CHUNK, HEADER_LINE_MAX, HEADERS_MAX, READ_SIZE, TOO_LONG_LINE, ArchiveError,
                   RecordError)

try:
    from ._members import INFLATER, Members as CompiledMembers
    MISSING = None
except ImportError as exc:  # not built (--version says why), or built but does not load
    CompiledMembers = INFLATER = None
    MISSING = exc


def describe_walker(compiled):
    """Which member walker runs (``compiled``: the compiled one, where it loads) and with which
    inflater, or why the pure Python one: what ``--version`` says."""
    if compiled:
        return f"compiled, {INFLATER}"
    if MISSING is None:
        return "pure Python (the compiled one set aside)"
    if getattr(MISSING, "name", None) != __name__.rpartition(".")[0] + "._members":
        return f"pure Python (the compiled one does not load: {MISSING}; reinstall)"
    try:
        from ._install import WHY_PURE
    except ImportError:
        WHY_PURE = "not installed by setup.py: pip install -e ."
    return f"pure Python ({WHY_PURE})"

# Where a gzip member may start: the magic, deflate, and flags without the reserved bits.
MEMBER_START = re.compile(rb"\x1f\x8b\x08[\x00-\x1f]")
# The reserved bits of a member's flags (its 4th byte), which RFC 1952 says must be 0: zlib,
# and so pywb, refuse a member with any set (ISA-L does not).
RESERVED_FLAGS = 0xE0
RESERVED_FLAGS_SET = ("gzip member header has reserved flag bits set: not a gzip member zlib "
                      "or pywb read")
# Compressed bytes inflated first in a member: enough for the header blocks of most
# records, or all of a small one, without copying much unused input past the member's end.
FIRST_STEP = 1 << 11
# Newlines that may end a record inside its member; anything longer is another record.
TRAILER_MAX = 256
# A line warcio's parser takes as the end of a header block: nothing but whitespace.
BLANK_LINE = re.compile(rb"\n[ \t\r\x0b\x0c\x1c-\x1f]*\n")
FIRST_LINE_BLANK = re.compile(rb"[ \t\r\x0b\x0c\x1c-\x1f]*\n")
# What follows a record in its gzip member when the member holds another record: a WARC
# header, or an ARC header line (URL, IP address, date, MIME type, length).
ANOTHER_RECORD = re.compile(rb"[ \t\n\r\x0b\x0c]*(?:WARC/|\S+ \S+ \d{12,} \S+ \d+\r?\n)")


class GzipMembers:
    """Walks a file of concatenated gzip members; reads like a file within one member.

    ``read`` and ``readline`` (all warcio's parsers need) stop at the end of the
    current member; ``next_member`` moves on. The compressed bytes are read in
    large blocks and inflated from views into them, a little at a member's start
    (where the header blocks are) and more after.
    """
    # Where a unit may start (``recover`` looks for it)
    START = MEMBER_START
    # What ``finish`` says of a record that does not end where its Content-Length says
    # (a subclass walking other units says it of them; the compiled twin says the same)
    CUT_SHORT = ("record is cut short: its gzip member ends {} bytes before the Content-Length "
                 "says")
    MORE_THAN_ONE = ("gzip member holds more than one record ({} bytes follow the first): the "
                     "file is not compressed record by record, so its records cannot be "
                     "addressed by byte range")
    LONGER = ("record is longer than its Content-Length says: {} more bytes follow it in its "
              "gzip member")

    def __init__(self, fh, path):
        self.fh, self.path = fh, path
        self.raw, self.rpos = memoryview(b""), 0  # compressed bytes read; next one to inflate
        self.raw_offset = 0  # file offset of raw[0]
        self.start = 0
        self.end = None  # end offset of the current member, once inflated to its end
        self.out, self.pos = b"", 0
        self.dropped = 0  # bytes of the member inflated and dropped before out[0]
        self.inflater = None

    def _read_raw(self):
        """Drop the bytes inflated, read the next block of the file after the others; False
        at the end of the file."""
        rest = self.raw[self.rpos:]
        self.raw_offset += self.rpos
        self.rpos = 0
        data = self.fh.read(READ_SIZE)
        if not data:
            self.raw = rest
            return False
        self.raw = memoryview(rest.tobytes() + data if rest else data)
        return True

    def next_member(self):
        """Start the next member, inflating its first bytes; return its offset, or None at
        end of file."""
        if len(self.raw) - self.rpos < 4 and not self._read_raw() and self.rpos == len(self.raw):
            return None
        self.start = self.raw_offset + self.rpos
        if self.raw[self.rpos:self.rpos + 2] != GZIP_MAGIC:
            raise ArchiveError(self.path, self.start,
                               "expected a gzip member here, found other data "
                               "(garbage between records, or a file that is not gzip)")
        if len(self.raw) - self.rpos > 3 and self.raw[self.rpos + 3] & RESERVED_FLAGS:
            raise ArchiveError(self.path, self.start, RESERVED_FLAGS_SET)
        self.end, self.pos, self.dropped = None, 0, 0
        self.inflater = isal_zlib.decompressobj(31)
        self.out = self._inflate(FIRST_STEP)
        return self.start

    def _inflate(self, step=CHUNK):
        if self.rpos == len(self.raw) and not self._read_raw():
            raise ArchiveError(self.path, self.start,
                               "gzip member is truncated: the file ends inside it")
        chunk = self.raw[self.rpos:self.rpos + step]
        try:
            data = self.inflater.decompress(chunk)
        except isal_zlib.error as exc:
            raise ArchiveError(self.path, self.start, f"corrupt gzip data: {exc}") from None
        if self.inflater.eof:
            self.rpos += len(chunk) - len(self.inflater.unused_data)
            self.end = self.raw_offset + self.rpos
        else:
            self.rpos += len(chunk)
        return data

    def _fill(self):
        data = self._inflate()
        self.dropped += self.pos
        self.out = self.out[self.pos:] + data
        self.pos = 0

    def tell(self):
        """Bytes of the member read so far (warcio asks, for a record without a length)."""
        return self.dropped + self.pos

    def read(self, size=-1):
        if size is None or size < 0:
            size = 1 << 62
        while len(self.out) - self.pos < size and self.end is None:
            self._fill()
        data = self.out[self.pos:self.pos + size]
        self.pos += len(data)
        return data

    def feed(self, consume, size):
        """Pass the next ``size`` bytes of the member (fewer if it ends first) to ``consume``,
        as views of the pieces they are inflated in, not copies; return how many were passed."""
        passed = 0
        while True:
            piece = memoryview(self.out)[self.pos:self.pos + size - passed]
            consume(piece)
            passed += len(piece)
            self.pos += len(piece)
            if passed == size or self.end is not None:
                return passed
            self.dropped += len(self.out)
            self.out, self.pos = self._inflate(), 0

    def readline(self, size=-1):
        """The next line of the member, or its first ``size`` bytes; an ArchiveError where no
        line end comes within HEADER_LINE_MAX bytes and no smaller ``size`` was asked for."""
        size = 1 << 62 if size is None or size < 0 else size
        while True:
            nl = self.out.find(b"\n", self.pos)
            if nl >= 0 or self.end is not None:
                stop = nl + 1 if nl >= 0 else len(self.out)
                break
            held = len(self.out) - self.pos
            if held >= size:
                stop = len(self.out)
                break
            if held > HEADER_LINE_MAX:
                raise ArchiveError(self.path, self.start, TOO_LONG_LINE)
            self._fill()
        stop = min(stop, self.pos + size)
        line = self.out[self.pos:stop]
        self.pos = stop
        return line

    def peek_headers(self, start=0):
        """The header block ``start`` bytes past the read position, through the blank
        line that ends it (or to the member's end), without consuming anything."""
        while True:
            at = self.pos + start
            match = FIRST_LINE_BLANK.match(self.out, at) or BLANK_LINE.search(self.out, at)
            if match or self.end is not None or len(self.out) - at > HEADERS_MAX:
                return self.out[at:match.end() if match else len(self.out)]
            self._fill()

    def skip(self, size):
        self.pos += size

    def drain(self, skip=0):
        """Inflate the rest of the member: return (at most TRAILER_MAX of its bytes, from
        ``skip`` bytes past the read position on; the bytes from the read position to its end)."""
        head = self.out[self.pos + skip:self.pos + skip + TRAILER_MAX]
        size = len(self.out) - self.pos
        self.out, self.pos = b"", 0
        while self.end is None:
            data = self._inflate()
            if len(head) < TRAILER_MAX and size + len(data) > skip:
                at = max(skip - size, 0)
                head += data[at:at + TRAILER_MAX - len(head)]
            size += len(data)
        return head, size

    def finish(self, unread):
        """Inflate the rest of the member, where ``unread`` bytes of the record are left:
        None if nothing but the newlines that may end a record follow them; else a
        RecordError: the record is cut short, longer than its Content-Length says, or
        followed by another record in the same member."""
        head, rest = self.drain(unread)
        trailer = rest - unread
        if trailer < 0:
            return RecordError(self.path, self.start, self.CUT_SHORT.format(-trailer))
        if trailer <= len(head) and not head.strip():
            return None
        return RecordError(self.path, self.start, (
            self.MORE_THAN_ONE if ANOTHER_RECORD.match(head) else self.LONGER).format(trailer))

    def recover(self):
        """After a problem with the member at ``start`` (or with what stands there instead of
        one), find the next place after it where a gzip member starts and its first bytes
        inflate: return its offset, where ``next_member`` goes on, or None if there is none.
        Only what is still read is searched: the member's start, and anything over READ_SIZE
        before the problem, may be gone."""
        scan = max(self.start + 1, self.raw_offset)
        while True:
            self.rpos = scan - self.raw_offset
            found = self.START.search(self.raw, self.rpos)
            at = found.start() if found else max(len(self.raw) - 3, self.rpos)
            if len(self.raw) - at < FIRST_STEP or not found:
                # too little of it to try (or of a start cut by the block's end): read on
                self.rpos = at
                if self._read_raw():
                    scan = self.raw_offset
                    continue
                if not found:
                    self.rpos = len(self.raw)
                    return None
                at = self.rpos  # (the bytes kept, now first)
            self.rpos = at
            try:
                self._start_again()
            except ArchiveError:
                scan = self.raw_offset + at + 1
                continue
            self.rpos = at
            return self.raw_offset + at

    def _start_again(self):
        """Start the member ``recover`` found a start of (an ArchiveError if it cannot be)."""
        self.next_member()

    def skim(self, skip_types, skip_content_types):
        """Pass over the members whose record is a plain WARC record (``is_plain``) with a
        WARC-Type in ``skip_types`` or a Content-Type in ``skip_content_types``, and a
        Content-Length of 1 to 17 digits (longer ones are left to the caller); stop at the
        next other member, started (as ``next_member`` leaves it).

        Returns (records passed over, the ``RecordError`` of those that do not end where
        their Content-Length says, the offset of the member stopped at (None at the end of
        the file), and, if its record is a plain WARC record, its (WARC-Type, Content-Type,
        Content-Length) values, else None). A problem with a member that stops its walk
        (an ``ArchiveError``: corrupt, truncated, or other data where a member should
        start; ``recover`` finds where to go on) is not raised but returned last among the
        problems, with the offset None, so that what was read before it is not lost with it.
        Most records of a crawl (requests, metadata) are never indexed: this is their path.
        """
        skipped, problems = 0, []
        try:
            while True:
                offset = self.next_member()
                if offset is None:
                    return skipped, problems, None, None
                block = self.peek_headers()
                # (a block longer than HEADERS_MAX is cut short: warcio's loader reads it)
                if len(block) > HEADERS_MAX or not block.startswith(b"WARC/") or not is_plain(block):
                    return skipped, problems, offset, None
                text = block.decode("ascii")
                lower = text.lower()
                values = warc_type, content_type, length = tuple(
                    header_value(text, pattern.search(lower)) for pattern in SKIM_PATTERNS)
                if not ((warc_type or "") in skip_types or content_type in skip_content_types) \
                        or not length or not length.isdigit() or len(length) > 17:
                    return skipped, problems, offset, values
                self.skip(len(block))
                problem = self.finish(int(length))
                if problem is None:
                    skipped += 1
                else:
                    problems.append(problem)
        except ArchiveError as exc:
            return skipped, problems + [exc], None, None
