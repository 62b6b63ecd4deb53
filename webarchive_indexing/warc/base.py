"""What every record walker shares: the problems it reports (``ArchiveError``,
``RecordError``; ``RecordProblem`` where the file and offset are not known yet), what it
yields (``Record``, ``Skipped``), and the sizes it reads in.
"""
# Bytes read from a file at a time.
READ_SIZE = 1 << 20
# Compressed bytes inflated (decompressed) per call, after a member's (frame's) first ones;
# also bounds the output of one call (deflate expands at most ~1000:1), so a huge or highly
# compressible record never sits in memory whole. Also what is hashed at a time.
CHUNK = 1 << 14
# The longest header block looked at as such (warcio's loader reads longer ones).
HEADERS_MAX = 1 << 20
# The longest line a walker gives warcio's parsers: what has no newline within it is no
# header line (e.g. the NUL bytes a crash leaves at a file's end), and reading it whole
# would hold all of it, many times over, in memory.
HEADER_LINE_MAX = 1 << 22
TOO_LONG_LINE = (f"not a WARC or ARC record: no end of line in {HEADER_LINE_MAX} bytes (NUL bytes "
                 "or other data where a record should start)")


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
    """``count`` records read and passed over unparsed, as the caller's ``skip`` asked
    (``request``: one request record, passed over for its method)."""
    __slots__ = ("count", "request")

    def __init__(self, count, request=False):
        self.count, self.request = count, request


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
