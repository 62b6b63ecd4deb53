"""The common WARC record read without warcio: its plain header block (ASCII, no
continuation lines), whose values are read as warcio's parser reads them, those of a fixed
tuple of names in one pass (``header_values``, compiled in ``_members.c`` where the walker
is, else ``pure_header_values``), any other when asked for (``HeaderBlock``); and the
``LiteRecord`` made of it (``lite_record``), whose rest is read within its length
(``_Limit``) and hashed if need be (``hash_rest``). Anything else goes through warcio's
loader (``loader``).
"""
import operator
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


def hash_next(members, size):
    """(the sha1 digest of the next ``size`` bytes of the member ``members`` reads, how many of
    them it did not hold): a payload hashed as ``lite_record``'s is (``hash_rest``), for the
    compiled walker's lines (``walk.iter_records``' ``cdxj``)."""
    stream = _Limit(members, size)
    return hash_rest(stream), stream.limit


class Headers:
    """Header values with warcio's ``StatusAndHeaders`` reading interface."""

    def __init__(self, statusline, protocol, headers):
        self.statusline, self.protocol, self.headers = statusline, protocol, headers

    def get_header(self, name, default_value=None):
        return self.headers.get(name.lower(), default_value)

    def get_statuscode(self):
        return self.statusline.split(" ", 1)[0]


# A line warcio's parser ends a header block at: nothing but whitespace (or nothing at all)
BLANK_LINE = re.compile("\n[ \t\r\x0b\x0c\x1c-\x1f]*(?:\n|\\Z)")
# Finds a header in a lower-cased header block as warcio's parser does: the first line after
# the first whose name (up to its first colon, less spaces and tabs) is it; one per name, made
# on first use (for a name no line can have, one that finds nothing)
_HEADER_PATTERNS = {}


def header_pattern(name):
    can_be = name == name.rstrip(" \t") and ":" not in name and "\n" not in name
    pattern = _HEADER_PATTERNS[name] = re.compile(
        "\n" + re.escape(name.lower()) + "[ \t]*:([^\n]*)" if can_be else "(?!)")
    return pattern


def header_value(text, match):
    """The value of a header matched in the lower-cased copy of a header block, as warcio
    reads it (stripped); None if not matched."""
    return None if match is None else text[match.start(1):match.end(1)].strip()


def pure_header_values(block, names):
    """The values of the headers ``names`` (ASCII) in a plain header block (bytes), as
    warcio's parser reads them: (protocol, status line, then for each name the value of the
    first line after the first whose name, up to its first colon, less the spaces and tabs
    before it, is it, case aside; stripped; None if there is none before the first blank
    line). None for a block that is not plain (``is_plain``: warcio's rules and ours may
    split it apart), or whose first line is blank. ``header_values`` is this, compiled where
    the walker is."""
    if not is_plain(block):
        return None
    text = block.decode("ascii")
    first = text.partition("\n")[0].rstrip()
    if not first:
        return None
    protocol, _, statusline = first.partition(" ")
    blank = BLANK_LINE.search(text)
    if blank is not None:
        text = text[:blank.start()]
    lower = text.lower()
    return (protocol, statusline.strip(), *(
        header_value(text, (_HEADER_PATTERNS.get(name) or header_pattern(name)).search(lower))
        for name in names))


try:
    from ._members import header_values
except ImportError:  # not built (members.MISSING says why)
    header_values = pure_header_values

# What GzipMembers.skim reads of a header block (one that ends at its first blank line), and
# returns the values of.
SKIM_HEADERS = ("WARC-Type", "Content-Type", "Content-Length")
SKIM_PATTERNS = tuple(map(header_pattern, SKIM_HEADERS))
# The WARC headers of a common record read at once (those of its CDX line, ``lite_record``'s
# first): any other (e.g. Common Crawl's fields') is looked up when asked for
WARC_NAMES = SKIM_HEADERS + ("WARC-Target-URI", "WARC-Date", "WARC-Payload-Digest",
                             "WARC-Identified-Payload-Type", "WARC-Json-Metadata")
# and of its HTTP headers
HTTP_NAMES = ("Content-Type",)


class HeaderBlock(Headers):
    """A plain header block and the values ``header_values`` found in it of ``names`` (a dict
    of their positions in ``values``); any other header is looked up when asked for."""

    def __init__(self, block, names, values):
        self.block, self.names, self.values = block, names, values
        self.protocol, self.statusline = values[0], values[1]

    def get_header(self, name, default_value=None):
        at = self.names.get(name)
        value = self.values[at] if at is not None else header_values(self.block, (name,))[2]
        return default_value if value is None else value


def positions(names):
    """Where ``header_values`` gives the value of each of ``names``: ``HeaderBlock.names``."""
    return {name: at for at, name in enumerate(names, 2)}


WARC_POSITIONS, HTTP_POSITIONS = positions(WARC_NAMES), positions(HTTP_NAMES)


def header_getter(names):
    """A function that gives the values of ``names`` (two or more of ``WARC_NAMES``) of a
    record's WARC headers (``rec_headers``) as ``get_header`` gives them (None where
    missing): those read at once by ``lite_record``, else one by one."""
    read = operator.itemgetter(*(WARC_POSITIONS[name] for name in names))

    def values(headers):
        if type(headers) is HeaderBlock and headers.names is WARC_POSITIONS:
            return read(headers.values)
        return tuple(map(headers.get_header, names))
    return values


def is_plain(block):
    """Whether a header block's lines split alike by warcio's rules and ours: ASCII, no
    continuation lines."""
    return block.isascii() and not CONTINUATION.search(block)


class LiteRecord:
    """The parts of a warcio ``ArcWarcRecord`` an indexer reads, built without warcio."""
    __slots__ = ("rec_type", "rec_headers", "http_headers", "content_type", "length",
                 "raw_stream")
    format = "warc"

    def __init__(self, rec_type, rec_headers, http_headers, content_type, length, raw_stream):
        self.rec_type, self.rec_headers, self.http_headers = rec_type, rec_headers, http_headers
        self.content_type, self.length, self.raw_stream = content_type, length, raw_stream


LITE_TYPES = ("response", "revisit", "resource", "metadata")


def lite_record(members, block):
    """A ``LiteRecord`` for a common WARC record, whose plain header block ``block`` is at
    the read position, consuming its headers; None (nothing consumed) for anything warcio's
    loader must handle."""
    values = header_values(block, WARC_NAMES)
    if values is None:
        return None
    warc_type, content_type, length, uri = values[2:6]
    if warc_type not in LITE_TYPES or length is None or not length.isdigit() or uri is None \
            or uri.startswith("<") or " " in uri:
        return None
    length = int(length)
    http_block = b""
    if length and warc_type in ("response", "revisit") and uri.startswith(("http:", "https:")):
        http_block = members.peek_headers(len(block))
        http_values = header_values(http_block, HTTP_NAMES)
        if http_values is None or len(http_block) > length or not BLANK_END.search(http_block):
            return None
        http_headers = HeaderBlock(http_block, HTTP_POSITIONS, http_values)
    else:
        defaults = {"content-length": str(length)}
        if content_type:
            defaults["content-type"] = content_type
        http_headers = Headers("200 OK", "HTTP/1.0", defaults)
    members.skip(len(block) + len(http_block))
    return LiteRecord(warc_type, HeaderBlock(block, WARC_POSITIONS, values), http_headers,
                      content_type, length, _Limit(members, length - len(http_block)))
