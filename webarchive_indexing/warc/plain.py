"""Uncompressed WARC/ARC files: read forward in large blocks (``PlainStream``), each record
with warcio's loader, as warcio's ``ArchiveIterator`` reads them (``iter_plain``); after a
bad record, the walk goes on at the next line after its start that starts a record.
"""
import re

from .loader import Loader
from .base import (HEADER_LINE_MAX, READ_SIZE, TOO_LONG_LINE, ArchiveError, Record, RecordError,
                   RecordProblem)
from .headers import hash_rest


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
# A line that starts a record, matched at its start
RECORD_START = {"warc": re.compile(_WARC_LINE), "arc": re.compile(_ARC_LINE)}
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
        """The next line, or its first ``size`` bytes; a RecordProblem (nothing read) where
        no line end comes within HEADER_LINE_MAX bytes and no smaller ``size`` was asked for."""
        size = 1 << 62 if size is None or size < 0 else min(size, 1 << 62)
        searched = 0
        while True:
            nl = self.buf.find(b"\n", self.pos + searched, self.pos + size)
            if nl >= 0:
                stop = nl + 1
                break
            searched = len(self.buf) - self.pos
            if searched > HEADER_LINE_MAX and size > HEADER_LINE_MAX:
                raise RecordProblem(TOO_LONG_LINE)
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
        """Whether the next line is blank, or the file ends, as warcio expects after a record
        (not if it is longer than HEADER_LINE_MAX)."""
        while True:
            end = SPACES.match(self.buf, self.pos).end()
            if end < len(self.buf):
                return self.buf[end] == 10
            if end - self.pos > HEADER_LINE_MAX:
                return False
            if not self._more():
                return True

    def next_record_after(self, start):
        """Where a record is not followed by a blank line, as warcio expects: what is
        passed over to reach the next record (a line that ``start``, from RECORD_START,
        takes for a record's first), said for a warning; None if it is not found so (the
        read position is then anywhere). The next record may follow at once (the blank
        lines are missing; warcio would pass over its first line), or after one line, or
        the file ends there (its Content-Length is wrong: warcio passes over that line,
        warning, and the blank lines after it)."""
        if self._starts(start):
            return f"the next record follows it at once, at offset {self.tell()}"
        line = self.readline(HEADER_LINE_MAX)
        if line[-1:] == b"\n" and self.next_line() is not None and not self._starts(start):
            return None
        if line[-1:] != b"\n" and not self.at_end():
            return None
        return (f"{WRONG_LENGTH}: the line after it, to offset {self.tell()}, is passed over, "
                "as pywb does")

    def _starts(self, start):
        """Whether the next line is one ``start`` matches (a record's first line)."""
        while self.buf.find(b"\n", self.pos, self.pos + LINE_MAX) < 0 \
                and len(self.buf) - self.pos < LINE_MAX and self._more():
            pass
        return start.match(self.buf, self.pos) is not None

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
NOT_FOLLOWED = "record is not followed by the blank lines that end a record"
WRONG_LENGTH = "its Content-Length is wrong"


def iter_plain(fh, path, wants_payload):
    """The records of an uncompressed file, read with warcio's loader; after a bad record,
    the walk goes on at the next line that starts a record."""
    stream, loader, known_format = PlainStream(fh), Loader(), None
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
                end = stream.tell()
                if not stream.blank_line_follows():
                    # pywb indexes such a record, with a warning: so here, where the next
                    # record is found
                    passed = stream.next_record_after(RECORD_START[known_format])
                    if passed is None:
                        problem = f"{NOT_FOLLOWED}: {WRONG_LENGTH}"
                    else:
                        notes = (*notes, f"{NOT_FOLLOWED}: {passed}")
            if problem is None:
                yield Record(record, offset, end - offset, payload_sha1, notes)
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
    payload_sha1 = hash_rest(record.raw_stream) if wants_payload(record) else None
    unread = record.raw_stream.limit
    short = unread - stream.skip(unread)
    if short:
        return (f"record is cut short: the file ends {short} bytes before the end its "
                "Content-Length gives"), None
    return None, payload_sha1
