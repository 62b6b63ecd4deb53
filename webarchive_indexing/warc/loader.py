"""warcio's record loader as the walkers use it: with a faster header parser for plain
header blocks (``FastHeaderParser``), failing with a ``RecordProblem`` on what is no record
(``CheckingLoader``), and collecting what it logs (``LoaderNotes``); all made when first
needed (``Loader``), as most records of a gzipped file never need warcio.
"""
import functools
import re

from .base import ArchiveError, RecordProblem


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


class Loader:
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
