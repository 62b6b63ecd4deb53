"""The common WARC record read without warcio: its plain header block (ASCII, no
continuation lines), whose values are found as warcio's parser finds them
(``HeaderBlock``), and the ``LiteRecord`` made of it (``lite_record``), whose rest is read
within its length (``_Limit``) and hashed if need be (``hash_rest``). Anything else goes
through warcio's loader (``loader``).
"""
import re

from .base import CHUNK

# A continuation line (one that starts with a space or tab): warcio joins it to the header above.
CONTINUATION = re.compile(rb"\n[ \t]")
# A header block that ends with a line warcio's parser takes as its end: nothing but whitespace.
BLANK_END = re.compile(rb"\n[ \t\r\x0b\x0c\x1c-\x1f]*\n$")


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


def hash_rest(stream):
    """The sha1 digest of what is left to read of a record's stream (its payload)."""
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
_HEADER_PATTERNS = {}


def header_pattern(name):
    pattern = _HEADER_PATTERNS[name] = re.compile("\n" + re.escape(name.lower()) + "[ \t]*:([^\n]*)")
    return pattern


# What GzipMembers.skim reads of a header block, and returns the values of.
SKIM_HEADERS = ("WARC-Type", "Content-Type", "Content-Length")
SKIM_PATTERNS = tuple(map(header_pattern, SKIM_HEADERS))


def header_value(text, match):
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
            value = values[name] = header_value(
                self.text, (_HEADER_PATTERNS.get(name) or header_pattern(name)).search(self.lower))
        return default_value if value is None else value


def is_plain(block):
    """Whether a header block's lines split alike by warcio's rules and ours: ASCII, no
    continuation lines."""
    return block.isascii() and not CONTINUATION.search(block)


def plain_block(block):
    """A ``HeaderBlock`` of a plain header block (``is_plain``) with a first line (a status
    line: protocol, then status); None for any other."""
    if not is_plain(block):
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
