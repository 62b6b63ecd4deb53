"""Read WARC/ARC records together with the byte range each one occupies.

An index entry points at the compressed bytes of one record (``offset``,
``length``), so the reader must know where every gzip member starts and ends.
warcio's ``ArchiveIterator`` knows that too, but it pushes every payload byte
through Python; here the members are inflated with ISA-L, from large blocks of
the file, and only the header blocks are looked at, so the record semantics
(header parsing, the HTTP/no-HTTP decision, ARC headers) are exactly those of
warcio and therefore of pywb:

* the common records of a gzipped WARC, whose header blocks are plain (ASCII,
  no continuation lines), are read here: a header's value is found as warcio's
  parser finds it, when asked for (``HeaderBlock``), and records the caller
  skips (requests, metadata) are judged by three headers only;
* any other record goes through warcio's own record loader (imported then);
* uncompressed files are read in large blocks (``PlainStream``), each record with
  warcio's loader, as warcio's ``ArchiveIterator`` reads them.

Bad input is reported (``RecordError``, ``ArchiveError``: the file, the offset, what is
wrong) and the walk goes on where it can: in a gzipped file at the next gzip member (after
a bad record, the next member; after a corrupt or truncated member or other data where
one should start, the next place where a member starts and inflates); in an uncompressed
file at the next line after the bad record's start that starts a record. A damaged record
is never indexed, even where warcio reads it (e.g. one cut short by the end of the file).

``GzipMembers`` has a compiled twin, ``_members.Members`` (built at install time where
ISA-L's headers are found, e.g. Debian's ``libisal-dev``), with the same methods and
results; it is used when present, and spares the walk most of its Python work.

    with open("example.warc.gz", "rb") as fh:
        for item in iter_records(fh, "example.warc.gz", wants_payload):
            ...
"""
import functools
import re

from isal import isal_zlib

try:
    from ._members import Members as CompiledMembers
except ImportError:  # not built: no C compiler or no ISA-L headers when it was installed
    CompiledMembers = None

GZIP_MAGIC = b"\x1f\x8b"
# Where a gzip member may start: the magic, deflate, and flags without the reserved bits.
MEMBER_START = re.compile(rb"\x1f\x8b\x08[\x00-\x1f]")
# Compressed bytes read from the file at a time.
READ_SIZE = 1 << 20
# Compressed bytes inflated first in a member: enough for the header blocks of most
# records, or all of a small one, without copying much unused input past the member's end.
FIRST_STEP = 1 << 11
# Compressed bytes inflated per call after that; also bounds the output of one call (deflate
# expands at most ~1000:1), so a huge or highly compressible record never sits in memory whole.
CHUNK = 1 << 14
# Newlines that may end a record inside its member; anything longer is another record.
TRAILER_MAX = 256
HEADERS_MAX = 1 << 20
# A continuation line (one that starts with a space or tab): warcio joins it to the header above.
CONTINUATION = re.compile(rb"\n[ \t]")
# A line warcio's parser takes as the end of a header block: nothing but whitespace.
BLANK_LINE = re.compile(rb"\n[ \t\r\x0b\x0c\x1c-\x1f]*\n")
BLANK_END = re.compile(rb"\n[ \t\r\x0b\x0c\x1c-\x1f]*\n$")
FIRST_LINE_BLANK = re.compile(rb"[ \t\r\x0b\x0c\x1c-\x1f]*\n")
# What follows a record in its gzip member when the member holds another record: a WARC
# header, or an ARC header line (URL, IP address, date, MIME type, length).
ANOTHER_RECORD = re.compile(rb"[ \t\n\r\x0b\x0c]*(?:WARC/|\S+ \S+ \d{12,} \S+ \d+\r?\n)")


class ArchiveError(Exception):
    """A problem in an archive file, with the file and byte offset it was found at. The walk
    (``iter_records``) ends with one when nothing after it could be read; else it yields a
    ``RecordError``."""

    def __init__(self, path, offset, reason):
        super().__init__(f"{path}: offset {offset}: {reason}")
        self.path, self.offset, self.reason = path, offset, reason

    def as_dict(self):
        return {"file": self.path, "offset": self.offset, "reason": self.reason}


class RecordError(ArchiveError):
    """One record is unusable but the records after it can still be read."""


class RecordProblem(Exception):
    """What is wrong with one record, found where its file and offset are not known."""

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason


class Skipped:
    """``count`` records read and passed over unparsed, as the caller's ``skip`` asked."""
    __slots__ = ("count",)

    def __init__(self, count):
        self.count = count


class Record:
    """One record (a warcio ``ArcWarcRecord`` or ``LiteRecord``), the byte range it occupies,
    and the ``notes`` warcio's loader logged while it read the record (it warns when it
    repairs one, e.g. spaces in a URL)."""
    # Plain classes, not dataclasses, here and below: importing ``dataclasses`` alone costs
    # an indexing process more start-up time than indexing a small archive.
    __slots__ = ("record", "offset", "length", "payload_sha1", "notes")

    def __init__(self, record, offset, length, payload_sha1=None, notes=()):
        self.record, self.offset, self.length = record, offset, length
        self.payload_sha1, self.notes = payload_sha1, notes


@functools.cache
def _loader_notes():
    """The class ``LoaderNotes``: defined on first use, as ``logging`` is imported only with
    warcio's loader (most archives never need it)."""
    import logging

    class LoaderNotes(logging.Handler):
        """Collects what warcio's record loader logs, from creation to ``close()``."""

        def __init__(self):
            super().__init__(logging.WARNING)
            self.messages = []
            self.logger = logging.getLogger("warcio.recordloader")
            self.logger.addHandler(self)

        def emit(self, record):
            self.messages.append(record.getMessage())

        def drain(self):
            messages, self.messages = self.messages, []
            return messages

        def close(self):
            self.logger.removeHandler(self)
            super().close()

    return LoaderNotes


class GzipMembers:
    """Walks a file of concatenated gzip members; reads like a file within one member.

    ``read`` and ``readline`` (all warcio's parsers need) stop at the end of the
    current member; ``next_member`` moves on. The compressed bytes are read in
    large blocks and inflated from views into them, a little at a member's start
    (where the header blocks are) and more after.
    """

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
        if len(self.raw) - self.rpos < 2 and not self._read_raw() and self.rpos == len(self.raw):
            return None
        self.start = self.raw_offset + self.rpos
        if self.raw[self.rpos:self.rpos + 2] != GZIP_MAGIC:
            raise ArchiveError(self.path, self.start,
                               "expected a gzip member here, found other data "
                               "(garbage between records, or a file that is not gzip)")
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
            return RecordError(self.path, self.start,
                               f"record is cut short: its gzip member ends {-trailer} bytes "
                               "before the Content-Length says")
        if trailer <= len(head) and not head.strip():
            return None
        if ANOTHER_RECORD.match(head):
            return RecordError(self.path, self.start,
                               f"gzip member holds more than one record ({trailer} bytes follow "
                               "the first): the file is not compressed record by record, so its "
                               "records cannot be addressed by byte range")
        return RecordError(self.path, self.start,
                           f"record is longer than its Content-Length says: {trailer} more "
                           "bytes follow it in its gzip member")

    def recover(self):
        """After a problem with the member at ``start`` (or with what stands there instead of
        one), find the next place after it where a gzip member starts and its first bytes
        inflate: return its offset, where ``next_member`` goes on, or None if there is none.
        Only what is still read is searched: the member's start, and anything over READ_SIZE
        before the problem, may be gone."""
        scan = max(self.start + 1, self.raw_offset)
        while True:
            self.rpos = scan - self.raw_offset
            found = MEMBER_START.search(self.raw, self.rpos)
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
                self.next_member()
            except ArchiveError:
                scan = self.raw_offset + at + 1
                continue
            self.rpos = at
            return self.raw_offset + at

    def skim(self, skip_types, skip_content_types):
        """Pass over the members whose record is a plain WARC record (``_plain``) with a
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
                if len(block) > HEADERS_MAX or not block.startswith(b"WARC/") or not _plain(block):
                    return skipped, problems, offset, None
                text = block.decode("ascii")
                lower = text.lower()
                values = warc_type, content_type, length = tuple(
                    _value(text, pattern.search(lower)) for pattern in _SKIM_PATTERNS)
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


class _Replay:
    """Lines already read, then the rest of the stream: lets warcio's parser start over."""

    def __init__(self, lines, stream):
        self.lines, self.stream = list(reversed(lines)), stream

    def readline(self, size=-1):
        return self.lines.pop() if self.lines else self.stream.readline(size)


@functools.cache
def _fast_header_parser():
    """The class ``FastHeaderParser``: defined on first use, as it extends a warcio class."""
    from warcio.statusandheaders import (StatusAndHeaders, StatusAndHeadersParser,
                                         StatusAndHeadersParserException)

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
            if not statusline or not _plain_line(first):
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
            if not all(map(_plain_line, lines)):
                return super().parse(_Replay(lines, stream), first.decode("ascii"))
            headers = []
            for line in lines[:-1]:
                name, colon, value = line.decode("ascii").rstrip().partition(":")
                if colon:
                    headers.append((name.rstrip(" \t"), value.lstrip()))
            return StatusAndHeaders(statusline=protocol_status[1].strip() if len(protocol_status) > 1 else "",
                                    headers=headers, protocol=protocol_status[0],
                                    total_len=len(first) + sum(map(len, lines)))

    return FastHeaderParser


def _plain_line(line):
    return line.isascii() and not line.startswith((b" ", b"\t"))


@functools.cache
def _checking_loader():
    """The class ``CheckingLoader``: defined on first use, as it extends a warcio class."""
    from warcio.recordloader import ArcWarcRecordLoader

    class CheckingLoader(ArcWarcRecordLoader):
        """warcio's record loader, failing with a RecordProblem where its own fails with an
        AttributeError: on a record that may hold HTTP headers but names no URI."""

        def load_http_headers(self, rec_type, uri, stream, length):
            if uri is None and length != 0 and rec_type in self.HTTP_RECORDS:
                raise RecordProblem(f"WARC {rec_type} record without a WARC-Target-URI")
            return super().load_http_headers(rec_type, uri, stream, length)

    return CheckingLoader


def fast_loader():
    """warcio's record loader (``CheckingLoader``) with the fast header parser in place of its own."""
    parser = _fast_header_parser()
    loader = _checking_loader()(verify_http=False, arc2warc=False)
    loader.warc_parser = parser(loader.WARC_TYPES)
    loader.http_parser = parser(loader.HTTP_TYPES, False)
    loader.http_req_parser = parser(loader.HTTP_VERBS, False)
    return loader


def _not_a_record_errors():
    """The exceptions with which warcio's parsers reject what is not a WARC or ARC record."""
    from warcio.exceptions import ArchiveLoadFailed
    from warcio.statusandheaders import StatusAndHeadersParserException
    return ArchiveLoadFailed, StatusAndHeadersParserException, ValueError


def _one_line(text):
    """``text`` (which may quote a damaged line of a file) on one line, control characters escaped."""
    return re.sub(r"[\x00-\x1f\x7f]", lambda c: repr(c[0])[1:-1], text.strip())


class _Loader:
    """``fast_loader()`` and the notes warcio's loader logs, made when first needed (most
    records of a gzipped file never need them)."""

    def __init__(self):
        self.loader = self.collected = None

    def parse(self, stream, known_format=None):
        """The next record of ``stream``, as warcio reads it. Raises EOFError where warcio does
        (no HTTP headers where the record says there are), a RecordProblem for anything else
        that is no record, and lets an ArchiveError of the stream through."""
        if self.loader is None:
            self.loader, self.collected = fast_loader(), _loader_notes()()
        try:
            return self.loader.parse_record_stream(stream, None, known_format,
                                                   ensure_http_headers=True)
        except (EOFError, ArchiveError, RecordProblem):
            raise
        except Exception as exc:  # warcio's loader also fails in other ways on what is no record
            detail = str(exc) if isinstance(exc, _not_a_record_errors()) else repr(exc)
            raise RecordProblem(f"not a WARC or ARC record: {_one_line(detail)}") from None

    def notes(self):
        """What warcio logged since last asked."""
        return self.collected.drain() if self.collected is not None and self.collected.messages else ()

    def close(self):
        if self.collected is not None:
            self.collected.close()


class _Limit:
    """Reads at most ``limit`` bytes of a stream (what warcio's ``LimitReader`` does)."""

    def __init__(self, stream, limit):
        self.stream, self.limit = stream, limit

    def read(self, size=-1):
        data = self.stream.read(self.limit if size is None or size < 0 else min(size, self.limit))
        self.limit -= len(data)
        return data

    def feed(self, consume):
        """Pass the rest to ``consume`` (a ``GzipMembers`` stream's ``feed``)."""
        self.limit -= self.stream.feed(consume, self.limit)


def _hash_rest(stream):
    import hashlib  # rarely needed: most records carry their digest
    digest = hashlib.sha1()
    if isinstance(stream, _Limit):
        stream.feed(digest.update)
        return digest.digest()
    while True:
        buf = stream.read(CHUNK)
        if not buf:
            return digest.digest()
        digest.update(buf)


class Headers:
    """Header values with warcio's ``StatusAndHeaders`` reading interface."""

    def __init__(self, statusline, protocol, headers):
        self.statusline, self.protocol, self.headers = statusline, protocol, headers

    def get_header(self, name, default_value=None):
        return self.headers.get(name.lower(), default_value)

    def get_statuscode(self):
        return self.statusline.split(" ", 1)[0]


# Finds a header in a lower-cased header block as warcio's parser does: the first line after
# the first whose name (up to the colon, less spaces and tabs) is it; one per name, made on first use.
_HEADER_AT = {}


def _header_at(name):
    pattern = _HEADER_AT[name] = re.compile("\n" + re.escape(name.lower()) + "[ \t]*:([^\n]*)")
    return pattern


# What GzipMembers.skim reads of a header block, and returns the values of.
SKIM_HEADERS = ("WARC-Type", "Content-Type", "Content-Length")
_SKIM_PATTERNS = tuple(map(_header_at, SKIM_HEADERS))


def _value(text, match):
    """The value of a header matched in the lower-cased copy of a header block, as warcio
    reads it (stripped); None if not matched."""
    return None if match is None else text[match.start(1):match.end(1)].strip()


class HeaderBlock(Headers):
    """A plain header block (``plain_block``), decoded, and its lower-cased copy: its values
    are read as warcio's parser reads them (the first of a name, stripped), when first asked
    for (most never are), or given by name (``values``: None for a missing header)."""

    def __init__(self, text, lower, statusline="", protocol="", values=None):
        self.text, self.lower, self.values = text, lower, values or {}
        self.statusline, self.protocol = statusline, protocol

    def get_header(self, name, default_value=None):
        values = self.values
        if name in values:
            value = values[name]
        else:
            value = values[name] = _value(
                self.text, (_HEADER_AT.get(name) or _header_at(name)).search(self.lower))
        return default_value if value is None else value


def _plain(block):
    """Whether a header block's lines split alike by warcio's rules and ours: ASCII, no
    continuation lines."""
    return block.isascii() and not CONTINUATION.search(block)


def plain_block(block):
    """A ``HeaderBlock`` of a plain header block (``_plain``) with a first line (a status
    line: protocol, then status); None for any other."""
    if not _plain(block):
        return None
    text = block.decode("ascii")
    first = text.partition("\n")[0].rstrip()
    if not first:
        return None
    protocol, _, statusline = first.partition(" ")
    return HeaderBlock(text, text.lower(), statusline.strip(), protocol)


class LiteRecord:
    """The parts of a warcio ``ArcWarcRecord`` an indexer reads, built without warcio."""
    __slots__ = ("rec_type", "rec_headers", "http_headers", "content_type", "length",
                 "raw_stream")
    format = "warc"

    def __init__(self, rec_type, rec_headers, http_headers, content_type, length, raw_stream):
        self.rec_type, self.rec_headers, self.http_headers = rec_type, rec_headers, http_headers
        self.content_type, self.length, self.raw_stream = content_type, length, raw_stream


LITE_TYPES = ("response", "revisit", "resource", "metadata")


def lite_record(members, headers, warc_length):
    """A ``LiteRecord`` for a common WARC record, whose plain header block (of
    ``warc_length`` bytes) is given, consuming its headers; None (nothing consumed) for
    anything warcio's loader must handle."""
    warc_type, uri = headers.get_header("WARC-Type"), headers.get_header("WARC-Target-URI")
    length = headers.get_header("Content-Length", "")
    if warc_type not in LITE_TYPES or not length.isdigit() or uri is None \
            or uri.startswith("<") or " " in uri:
        return None
    length = int(length)
    content_type = headers.get_header("Content-Type")
    http_block = b""
    if length and warc_type in ("response", "revisit") and uri.startswith(("http:", "https:")):
        http_block = members.peek_headers(warc_length)
        http_headers = plain_block(http_block)
        if http_headers is None or len(http_block) > length or not BLANK_END.search(http_block):
            return None
    else:
        defaults = {"content-length": str(length)}
        if content_type:
            defaults["content-type"] = content_type
        http_headers = Headers("200 OK", "HTTP/1.0", defaults)
    members.skip(warc_length + len(http_block))
    return LiteRecord(warc_type, headers, http_headers, content_type, length,
                      _Limit(members, length - len(http_block)))


def _iter_gzip(fh, path, wants_payload, skip):
    if CompiledMembers is not None:
        members = CompiledMembers(fh, path, ArchiveError, RecordError)
    else:
        members = GzipMembers(fh, path)
    loader = _Loader()
    try:
        while True:
            try:
                skipped, problems, offset, values = members.skim(*skip)
                if skipped:
                    yield Skipped(skipped)
                for problem in problems:
                    if type(problem) is ArchiveError:  # the last: its member cannot be read on
                        raise problem
                    yield problem
                if offset is None:
                    return
                item = _gzip_record(members, offset, values, wants_payload, loader)
                if item is not None:
                    yield item
            except ArchiveError as exc:
                resumed = members.recover()
                if resumed is None:
                    raise
                yield RecordError(path, exc.offset, f"{exc.reason}; reading goes on at the next "
                                                    f"gzip member, at offset {resumed}")
    finally:
        loader.close()


def _gzip_record(members, offset, values, wants_payload, loader):
    """The record of the member ``skim`` stopped at (with the values it read, if any): a
    ``Record``, a ``RecordError``, or None for a member that holds no record."""
    block = members.peek_headers()
    record = None
    if values is not None:
        text = block.decode("ascii")
        record = lite_record(members, HeaderBlock(text, text.lower(), values=dict(
            zip(SKIM_HEADERS, values))), len(block))
    elif not block.strip():
        head, size = members.drain()
        if size <= len(head) and not head.strip():
            # an empty member (some writers end files with one), or one of blank lines only
            # (a record's trailing newlines, compressed apart), holds no record
            return None
        return RecordError(members.path, offset, "not a WARC or ARC record: blank lines where "
                                                 "the record's header should start")
    if record is None:
        try:
            record = loader.parse(members)
        except EOFError:
            # no HTTP headers where the record says there are: skipped, as warcio does
            members.drain()
            return None
        except RecordProblem as exc:
            members.drain()
            return RecordError(members.path, offset, exc.reason)
    payload_sha1 = _hash_rest(record.raw_stream) if wants_payload(record) else None
    if record.length is None:
        # no Content-Length: the record is the rest of its member, as warcio reads it
        members.drain()
    else:
        problem = members.finish(record.raw_stream.limit)
        if problem is not None:
            return problem
    return Record(record, offset, members.end - offset, payload_sha1, loader.notes())


# Whitespace as warcio's ``bytes.rstrip`` finds it in the lines between records.
SPACES = re.compile(rb"[ \t\r\x0b\x0c]*")
BLANK_LINES = re.compile(rb"(?:[ \t\r\x0b\x0c]*\n)*")
# The newline before a line that starts a record: a WARC header's first line (the versions
# warcio reads), or an ARC header line (URL, IP address, date, MIME type, length) whose URL
# has a scheme ARC files hold (the tail of a damaged header line looks like one without it).
_WARC_LINE = rb"(?i:WARC/(?:1\.[01]|0\.1[78]))\r?\n"
_ARC_LINE = rb"(?i:https?://|ftps?://|dns:|whois:|filedesc://)[^\n]* \S+ \d{12,} \S+ \d+\r?\n"
RECORD_LINE = {"warc": re.compile(rb"\n(?=" + _WARC_LINE + rb")"),
               "arc": re.compile(rb"\n(?=" + _ARC_LINE + rb")"),
               None: re.compile(rb"\n(?=" + _WARC_LINE + rb"|" + _ARC_LINE + rb")")}
# Bytes of a record an uncompressed stream that cannot seek keeps, to look for the next
# record in them if it turns out bad; and of a line that may start a record, when looking.
REWIND_MAX = 1 << 22
LINE_MAX = 1 << 16


class PlainStream:
    """An uncompressed archive, read forward in large blocks as warcio's parsers read a
    stream (``read``, ``readline``; ``tell`` is the file offset).

    After a bad record the walk goes on at the next line after its start that starts a
    record (``find_record``): a file that can seek is read again from there; a stream
    (S3, HTTP) keeps the bytes of the record being read (from ``mark``, if they are at most
    REWIND_MAX) for that, and is searched from the first byte it still holds.
    """

    def __init__(self, fh):
        self.fh = fh
        self.buf, self.pos, self.buf_offset = b"", 0, 0  # buf[pos] is the next byte, at buf_offset + pos
        self.mark = 0
        seekable = getattr(fh, "seekable", None)
        self.seekable = bool(seekable and seekable())

    def tell(self):
        return self.buf_offset + self.pos

    def _more(self):
        """Read the next block of the file; False at its end."""
        data = self.fh.read(READ_SIZE)
        if not data:
            return False
        keep = self.pos
        if not self.seekable and self.pos + self.buf_offset - self.mark <= REWIND_MAX:
            keep = min(max(self.mark - self.buf_offset, 0), self.pos)
        self.buf = self.buf[keep:] + data
        self.buf_offset += keep
        self.pos -= keep
        return True

    def read(self, size=-1):
        size = 1 << 62 if size is None or size < 0 else min(size, 1 << 62)
        while len(self.buf) - self.pos < size and self._more():
            pass
        data = self.buf[self.pos:self.pos + size]
        self.pos += len(data)
        return data

    def readline(self, size=-1):
        size = 1 << 62 if size is None or size < 0 else min(size, 1 << 62)
        searched = 0
        while True:
            nl = self.buf.find(b"\n", self.pos + searched, self.pos + size)
            if nl >= 0:
                stop = nl + 1
                break
            searched = len(self.buf) - self.pos
            if searched >= size or not self._more():
                stop = self.pos + min(size, searched)
                break
        line = self.buf[self.pos:stop]
        self.pos = stop
        return line

    def skip(self, size):
        """Pass over ``size`` bytes (fewer at the end of the file); return how many."""
        passed = 0
        while True:
            step = min(size - passed, len(self.buf) - self.pos)
            self.pos += step
            passed += step
            if passed == size or not self._more():
                return passed

    def next_line(self):
        """Pass over blank lines (nothing but whitespace, as between records); the offset of
        the next line, or None at the end of the file."""
        while True:
            self.pos = BLANK_LINES.match(self.buf, self.pos).end()
            if SPACES.match(self.buf, self.pos).end() < len(self.buf):
                return self.tell()
            self.mark = self.tell()
            if not self._more():
                self.pos = len(self.buf)
                return None

    def blank_line_follows(self):
        """Whether the next line is blank, or the file ends, as warcio expects after a record."""
        while True:
            end = SPACES.match(self.buf, self.pos).end()
            if end < len(self.buf):
                return self.buf[end] == 10
            if not self._more():
                return True

    def find_record(self, bad, line):
        """Move to the first line after offset ``bad`` (a bad record's start) that the pattern
        ``line`` (from RECORD_LINE) takes for a record's start; return its offset, or None
        (at the end of the file) if there is none."""
        if bad < self.buf_offset and self.seekable:
            self.fh.seek(bad)
            self.buf, self.pos, self.buf_offset = b"", 0, bad
        else:
            self.pos = min(max(bad - self.buf_offset, 0), len(self.buf))
        while True:
            found = line.search(self.buf, self.pos)
            if found:
                self.pos = found.end()
                return self.tell()
            # keep the last line, which may be a record's first cut by the block's end
            last = self.buf.rfind(b"\n", self.pos)
            self.pos = last if last >= 0 and len(self.buf) - last <= LINE_MAX else len(self.buf)
            self.mark = self.tell()
            if not self._more():
                self.pos = len(self.buf)
                return None

    def at_end(self):
        return self.pos == len(self.buf) and not self._more()


CUT_INSIDE = "record is cut short: the file ends inside it"


def _iter_plain(fh, path, wants_payload):
    """The records of an uncompressed file, read with warcio's loader; after a bad record,
    the walk goes on at the next line that starts a record."""
    stream, loader, known_format = PlainStream(fh), _Loader(), None
    try:
        while True:
            offset = stream.next_line()
            if offset is None:
                return
            stream.mark = offset
            payload_sha1 = None
            try:
                record = loader.parse(stream, known_format)
            except EOFError:
                problem = CUT_INSIDE
            except RecordProblem as exc:
                # (what is missing of a header the end of the file cut short says little)
                problem = CUT_INSIDE if stream.at_end() else exc.reason
            else:
                known_format = record.format
                problem, payload_sha1 = _plain_record_end(stream, record, wants_payload)
            notes = loader.notes()
            if problem is None:
                yield Record(record, offset, stream.tell() - offset, payload_sha1, notes)
                continue
            resumed = stream.find_record(offset, RECORD_LINE[known_format])
            if resumed is None:
                raise ArchiveError(path, offset, problem)
            yield RecordError(path, offset, f"{problem}; reading goes on at the next record, "
                                            f"at offset {resumed}")
    finally:
        loader.close()


def _plain_record_end(stream, record, wants_payload):
    """Read the rest of an uncompressed record: (what is wrong with it or None, the sha1 of
    its payload if ``wants_payload``)."""
    if record.length is None:
        if stream.at_end():
            return CUT_INSIDE, None
        return "record has no Content-Length, so where it ends is not known", None
    payload_sha1 = _hash_rest(record.raw_stream) if wants_payload(record) else None
    unread = record.raw_stream.limit
    short = unread - stream.skip(unread)
    if short:
        return (f"record is cut short: the file ends {short} bytes before the end its "
                "Content-Length gives"), None
    if not stream.blank_line_follows():
        return ("record is not followed by the blank lines that end a record: its "
                "Content-Length is wrong"), None
    return None, payload_sha1


def iter_records(fh, path, wants_payload=lambda record: False, skip=((), ())):
    """Yield a ``Record`` per record (``RecordError`` for a record that can be skipped).

    ``wants_payload(record)`` decides whether the sha1 of the rest of the record
    (the payload, after any HTTP headers) is computed. ``skip``, (WARC-Types,
    Content-Types), names WARC records the caller ignores: those of a gzipped
    file may be passed over unparsed, and counted in a ``Skipped`` instead.
    Raises ``ArchiveError`` when the file cannot be read further.
    """
    head = fh.peek(2)[:2] if hasattr(fh, "peek") else b""
    if not head:
        head = fh.read(2)
        fh.seek(0)
    if not head:
        raise ArchiveError(path, 0, "empty file (0 bytes)")
    if head == GZIP_MAGIC:
        return _iter_gzip(fh, path, wants_payload, skip)
    return _iter_plain(fh, path, wants_payload)
