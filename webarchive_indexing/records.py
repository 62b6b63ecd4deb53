"""Read WARC/ARC records together with the byte range each one occupies.

An index entry points at the compressed bytes of one record (``offset``,
``length``), so the reader must know where every gzip member starts and ends.
warcio's ``ArchiveIterator`` knows that too, but it pushes every payload byte
through Python; here the members are inflated with ISA-L in large chunks and
only the headers go through warcio's own record parser, so the record
semantics (header parsing, the HTTP/no-HTTP decision, ARC headers) are exactly
those of warcio and therefore of pywb.

    with open("example.warc.gz", "rb") as fh:
        for item in iter_records(fh, "example.warc.gz", wants_payload):
            ...

Uncompressed files are handed to warcio's ``ArchiveIterator`` unchanged.
"""
import hashlib
import re
from dataclasses import dataclass

from isal import isal_zlib
from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed
from warcio.limitreader import LimitReader
from warcio.recordloader import ArcWarcRecordLoader
from warcio.statusandheaders import (StatusAndHeaders, StatusAndHeadersParser,
                                     StatusAndHeadersParserException)

GZIP_MAGIC = b"\x1f\x8b"
# Compressed bytes inflated per call; also bounds the output of one call (deflate
# expands at most ~1000:1), so a huge or highly compressible record never sits in memory whole.
CHUNK = 1 << 16
# Newlines that may end a record inside its member; anything longer is another record.
TRAILER_MAX = 256
HEADERS_MAX = 1 << 20
# One header line as warcio splits it: the name up to the first colon, the value after it.
HEADER_LINE = re.compile(r"^([^:\n]*):([^\n]*)$", re.M)
# The three headers that decide whether a WARC record is skipped.
SKIP_HEADER = re.compile(rb"^((?i:warc-type|content-type|content-length))[ \t]*:([^\n]*)$", re.M)
# A line warcio's parser takes as the end of a header block: nothing but whitespace.
BLANK_LINE = re.compile(rb"\n[ \t\r\x0b\x0c\x1c-\x1f]*\n")
BLANK_END = re.compile(rb"\n[ \t\r\x0b\x0c\x1c-\x1f]*\n$")
FIRST_LINE_BLANK = re.compile(rb"[ \t\r\x0b\x0c\x1c-\x1f]*\n")


class ArchiveError(Exception):
    """A problem in an archive file, with the file and byte offset it was found at."""

    def __init__(self, path, offset, reason):
        super().__init__(f"{path}: offset {offset}: {reason}")
        self.path, self.offset, self.reason = path, offset, reason

    def as_dict(self):
        return {"file": self.path, "offset": self.offset, "reason": self.reason}


class RecordError(ArchiveError):
    """One record is unusable but the records after it can still be read."""


@dataclass
class Record:
    record: object  # warcio ArcWarcRecord
    offset: int
    length: int
    payload_sha1: bytes = None


class GzipMembers:
    """Walks a file of concatenated gzip members; reads like a file within one member.

    ``read`` and ``readline`` (all warcio's parsers need) stop at the end of the
    current member; ``next_member`` moves on.
    """

    def __init__(self, fh, path):
        self.fh, self.path = fh, path
        self.pending = b""
        self.pending_offset = 0  # file offset of pending[0]
        self.start = 0
        self.end = None  # end offset of the current member, once inflated to its end
        self.out, self.pos = b"", 0
        self.inflater = None

    def next_member(self):
        """Start the next member; return its offset, or None at end of file."""
        if len(self.pending) < 2:
            self.pending += self.fh.read(CHUNK)
        if not self.pending:
            return None
        if not self.pending.startswith(GZIP_MAGIC):
            raise ArchiveError(self.path, self.pending_offset,
                               "expected a gzip member here, found other data "
                               "(garbage between records, or a file that is not gzip)")
        self.start, self.end, self.out, self.pos = self.pending_offset, None, b"", 0
        self.inflater = isal_zlib.decompressobj(31)
        return self.start

    def _inflate(self):
        if not self.pending:
            self.pending = self.fh.read(CHUNK)
            if not self.pending:
                raise ArchiveError(self.path, self.start,
                                   "gzip member is truncated: the file ends inside it")
        before = len(self.pending)
        try:
            data = self.inflater.decompress(self.pending)
        except isal_zlib.error as exc:
            raise ArchiveError(self.path, self.start, f"corrupt gzip data: {exc}") from None
        self.pending = self.inflater.unused_data if self.inflater.eof else b""
        self.pending_offset += before - len(self.pending)
        if self.inflater.eof:
            self.end = self.pending_offset
        return data

    def _fill(self):
        data = self._inflate()
        self.out = self.out[self.pos:] + data
        self.pos = 0

    def read(self, size=-1):
        if size is None or size < 0:
            size = 1 << 62
        while len(self.out) - self.pos < size and self.end is None:
            self._fill()
        data = self.out[self.pos:self.pos + size]
        self.pos += len(data)
        return data

    def readline(self, size=-1):
        while True:
            nl = self.out.find(b"\n", self.pos)
            if nl >= 0 or self.end is not None:
                stop = nl + 1 if nl >= 0 else len(self.out)
                break
            self._fill()
        if size is not None and size >= 0:
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

    def drain(self, keep=TRAILER_MAX):
        """Inflate the rest of the member: return (its last ``keep`` bytes, its size)."""
        tail = self.out[max(self.pos, len(self.out) - keep):]
        size = len(self.out) - self.pos
        self.out, self.pos = b"", 0
        while self.end is None:
            data = self._inflate()
            size += len(data)
            tail = (tail + data[-keep:])[-keep:]
        return tail, size


class _Replay:
    """Lines already read, then the rest of the stream: lets warcio's parser start over."""

    def __init__(self, lines, stream):
        self.lines, self.stream = list(reversed(lines)), stream

    def readline(self, size=-1):
        return self.lines.pop() if self.lines else self.stream.readline(size)


class FastHeaderParser(StatusAndHeadersParser):
    """warcio's status-and-headers parser, without its per-line overhead in the common case.

    A header block of plain ASCII lines without continuation lines is split
    here, with warcio's rules (rstrip each line, split at the first colon,
    skip lines without one); anything else is replayed to warcio's own parser.
    """

    def parse(self, stream, full_statusline=None):
        if full_statusline is not None:
            return super().parse(stream, full_statusline)
        first = stream.readline()
        statusline = first.rstrip()
        if not statusline or not _plain(first):
            return super().parse(stream, first)
        statusline = statusline.decode("ascii")
        if self.verify:
            # checked before reading on: on failure warcio retries the line as an ARC header
            protocol_status = self.split_prefix(statusline, self.statuslist)
            if not protocol_status:
                raise StatusAndHeadersParserException(
                    f"Expected Status Line starting with {self.statuslist} - Found: {statusline}",
                    first.decode("ascii"))
        else:
            protocol_status = statusline.split(" ", 1)
        lines = []
        while True:
            line = stream.readline()
            lines.append(line)
            if not line.rstrip():
                break
        if not all(map(_plain, lines)):
            return super().parse(_Replay(lines, stream), first.decode("ascii"))
        headers = []
        for line in lines[:-1]:
            name, colon, value = line.decode("ascii").rstrip().partition(":")
            if colon:
                headers.append((name.rstrip(" \t"), value.lstrip()))
        return StatusAndHeaders(statusline=protocol_status[1].strip() if len(protocol_status) > 1 else "",
                                headers=headers, protocol=protocol_status[0],
                                total_len=len(first) + sum(map(len, lines)))


def _plain(line):
    return line.isascii() and not line.startswith((b" ", b"\t"))


def fast_loader():
    """warcio's record loader with the fast header parser in place of its own."""
    loader = ArcWarcRecordLoader(verify_http=False, arc2warc=False)
    loader.warc_parser = FastHeaderParser(loader.WARC_TYPES)
    loader.http_parser = FastHeaderParser(loader.HTTP_TYPES, False)
    loader.http_req_parser = FastHeaderParser(loader.HTTP_VERBS, False)
    return loader


def _hash_rest(stream):
    digest = hashlib.sha1()
    while True:
        buf = stream.read(CHUNK)
        if not buf:
            return digest.digest()
        digest.update(buf)


class Headers:
    """Parsed header block with warcio's ``StatusAndHeaders`` reading interface."""

    def __init__(self, statusline, protocol, headers):
        self.statusline, self.protocol, self.headers = statusline, protocol, headers

    def get_header(self, name, default_value=None):
        return self.headers.get(name.lower(), default_value)

    def get_statuscode(self):
        return self.statusline.split(" ", 1)[0]


@dataclass
class LiteRecord:
    """The parts of a warcio ``ArcWarcRecord`` an indexer reads, built without warcio."""
    rec_type: str
    rec_headers: Headers
    http_headers: Headers
    content_type: str
    length: int
    raw_stream: object
    format: str = "warc"


def _plain_block(block):
    """A header block whose lines split alike by warcio's rules and ours: ASCII, no
    continuation lines."""
    return block.isascii() and b"\n " not in block and b"\n\t" not in block


def parse_block(block):
    """(first line, {lower-case name: first value}) of a header block, split by warcio's
    rules; None unless it is a ``_plain_block``."""
    if not _plain_block(block):
        return None
    first, _, rest = block.decode("ascii").partition("\n")
    first = first.rstrip()
    if not first:
        return None
    headers = {}
    for name, value in HEADER_LINE.findall(rest):
        headers.setdefault(name.rstrip(" \t").lower(), value.strip())
    return first, headers


LITE_TYPES = ("response", "revisit", "resource", "metadata")


def lite_record(members, warc_block, headers):
    """A ``LiteRecord`` for a common WARC record, whose parsed header block is given,
    consuming its headers; None (nothing consumed) for anything warcio's loader must handle."""
    rec_type, uri = headers.get("warc-type"), headers.get("warc-target-uri")
    length = headers.get("content-length", "")
    if rec_type not in LITE_TYPES or not length.isdigit() or uri is None \
            or uri.startswith("<") or " " in uri:
        return None
    length = int(length)
    content_type = headers.get("content-type")
    http_block = b""
    if length and rec_type in ("response", "revisit") and uri.startswith(("http:", "https:")):
        http_block = members.peek_headers(len(warc_block))
        parsed = parse_block(http_block)
        if parsed is None or len(http_block) > length or not BLANK_END.search(http_block):
            return None
        protocol, _, statusline = parsed[0].partition(" ")
        http_headers = Headers(statusline.strip(), protocol, parsed[1])
    else:
        defaults = {"content-length": str(length)}
        if content_type:
            defaults["content-type"] = content_type
        http_headers = Headers("200 OK", "HTTP/1.0", defaults)
    members.skip(len(warc_block) + len(http_block))
    return LiteRecord(rec_type, Headers("", "", headers), http_headers, content_type, length,
                      LimitReader(members, length - len(http_block)))


def _skip_length(block, skip_types):
    """The Content-Length of a WARC record that ``skip_types`` rejects, read from its plain
    header block; None when the record is wanted or the full parse must decide."""
    if not block.startswith(b"WARC/") or not _plain_block(block):
        return None
    headers = {}
    for name, value in SKIP_HEADER.findall(block):
        headers.setdefault(name.lower(), value.strip())
    length = headers.get(b"content-length", b"")
    content_type = headers.get(b"content-type")
    if length.isdigit() and skip_types(headers.get(b"warc-type", b"").decode(),
                                       content_type.decode() if content_type is not None else None):
        return int(length)
    return None


def _check_member(members, path, offset, unread):
    """Finish the member; a RecordError if the record is cut short. Raises if the member
    holds more than one record."""
    tail, rest = members.drain()
    trailer = rest - unread
    if trailer < 0:
        return RecordError(path, offset, f"record is cut short: its gzip member ends "
                                         f"{-trailer} bytes before the Content-Length says")
    if trailer > len(tail) or tail[len(tail) - trailer:].strip():
        raise ArchiveError(path, offset,
                           f"gzip member holds more than this record ({trailer} bytes "
                           "follow it): the file is not compressed record by record, so "
                           "its records cannot be addressed by byte range")
    return None


def _iter_gzip(fh, path, wants_payload, skip_types):
    loader = fast_loader()
    members = GzipMembers(fh, path)
    while True:
        offset = members.next_member()
        if offset is None:
            return
        block = members.peek_headers()
        skip_length = _skip_length(block, skip_types)
        if skip_length is not None:
            # most records of a crawl (requests, metadata) are never indexed: no more parsing
            members.skip(len(block))
            problem = _check_member(members, path, offset, skip_length)
            yield problem or Record(None, offset, members.end - offset)
            continue
        parsed = parse_block(block) if block.startswith(b"WARC/") else None
        record = lite_record(members, block, parsed[1]) if parsed else None
        try:
            record = record or loader.parse_record_stream(members, ensure_http_headers=True)
        except EOFError:
            # an empty member (some writers end files with one) holds no record
            members.drain()
            continue
        except (ArchiveLoadFailed, StatusAndHeadersParserException, ValueError) as exc:
            raise ArchiveError(path, offset, f"not a WARC or ARC record: {exc}") from None
        payload_sha1 = _hash_rest(record.raw_stream) if wants_payload(record) else None
        unread = record.raw_stream.limit if record.length is not None else 0
        problem = _check_member(members, path, offset, unread)
        yield problem or Record(record, offset, members.end - offset, payload_sha1)


def _iter_plain(fh, path, wants_payload):
    records = ArchiveIterator(fh, no_record_parse=False, arc2warc=False, ensure_http_headers=True)
    # warcio prints this warning itself; it is reported here as a RecordError instead
    records.INC_RECORD = ""
    try:
        for record in records:
            payload_sha1 = _hash_rest(record.raw_stream) if wants_payload(record) else None
            seen_errors = records.err_count
            records.read_to_end(record)
            offset, length = records.member_info
            if records.err_count > seen_errors:
                yield RecordError(path, offset, "record is not followed by the blank lines that "
                                                "end a record: its Content-Length is wrong")
            else:
                yield Record(record, offset, length, payload_sha1)
    except (ArchiveLoadFailed, StatusAndHeadersParserException, ValueError) as exc:
        raise ArchiveError(path, records.offset, f"not a WARC or ARC record: {exc}") from None


def _never(warc_type, content_type):
    return False


def iter_records(fh, path, wants_payload=lambda record: False, skip_types=_never):
    """Yield a ``Record`` per record (``RecordError`` for a record that can be skipped).

    ``wants_payload(record)`` decides whether the sha1 of the rest of the record
    (the payload, after any HTTP headers) is computed. ``skip_types(warc_type,
    content_type)`` names WARC records the caller ignores: they may be yielded
    with ``record=None``, unparsed. Raises ``ArchiveError`` when the file
    cannot be read further.
    """
    head = fh.peek(2)[:2] if hasattr(fh, "peek") else b""
    if not head:
        head = fh.read(2)
        fh.seek(0)
    if not head:
        raise ArchiveError(path, 0, "empty file (0 bytes)")
    if head == GZIP_MAGIC:
        return _iter_gzip(fh, path, wants_payload, skip_types)
    return _iter_plain(fh, path, wants_payload)
