"""The title of an archived HTML page, where it is cheap: the ``<title>`` of the first few KB
of the record's payload (a WACZ's ``pages.jsonl`` lists it).

One ranged read of at most ``READ_BYTES`` of the record (its gzip member begins there, and
a title is near the start of a page), inflated by warcio as far as it goes; of the payload,
its chunked transfer and content encoding (gzip, deflate, br) undone, at most ``PAGE_BYTES``
are looked at. A payload in an encoding warcio cannot undo, a record that cannot be read, or
a page with no closed ``<title>`` that soon has no title: the page is listed without one.
The text is decoded by the charset its Content-Type or a ``<meta>`` in the first KB names
(else UTF-8, else Windows-1252, as browsers guess), its entities unescaped and its white
space collapsed; at most ``TITLE_CHARS`` are kept."""
import codecs
import html
import io
import re

from warcio.archiveiterator import ArchiveIterator
from warcio.bufferedreaders import BufferedReader

from .. import storage

READ_BYTES = 64 << 10
PAGE_BYTES = 16 << 10
TITLE_CHARS = 1000
META_BYTES = 1024

_TITLE = re.compile(rb"<title\b[^>]*>(.*?)</title\s*>", re.I | re.S)
_CHARSET = re.compile(rb"""charset\s*=\s*["']?([A-Za-z0-9._:-]+)""", re.I)
_META = re.compile(rb"<meta\b[^>]*>", re.I)


# Labels browsers read as a larger charset (the WHATWG Encoding standard's)
_AS_BROWSERS = {"iso8859-1": "cp1252", "ascii": "cp1252", "gb2312": "gb18030", "gbk": "gb18030"}


def _codec(name):
    try:
        codec = codecs.lookup(name.decode("ascii")).name
    except (LookupError, UnicodeDecodeError):
        return None
    return _AS_BROWSERS.get(codec, codec)


def _charset(content_type, head):
    for where in [content_type.encode("latin-1", "replace")] + _META.findall(head):
        found = _CHARSET.search(where)
        if found and (codec := _codec(found.group(1))):
            return codec
    return None


def _decoded(data, charset):
    if charset:
        return data.decode(charset, "replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("cp1252", "replace")


def title_of_payload(payload, content_type=""):
    """The title of the HTML ``payload`` (of its first ``PAGE_BYTES``), or None."""
    payload = payload[:PAGE_BYTES]
    found = _TITLE.search(payload)
    if not found:
        return None
    # a <meta> charset counts in the first KB (where browsers look), or before the title
    head = payload[:max(META_BYTES, found.start())]
    text = " ".join(html.unescape(_decoded(found.group(1), _charset(content_type, head)))
                    .split())
    return text[:TITLE_CHARS] or None


def title_of_record(data):
    """The title of the HTML page of the response record that ``data`` begins (its gzip
    member or plain bytes, maybe cut short), or None."""
    try:
        record = next(iter(ArchiveIterator(io.BytesIO(data))), None)
        if record is None or record.rec_type not in ("response", "resource"):
            return None
        headers = record.http_headers
        encoding = (headers.get_header("content-encoding") or "").strip().lower() if headers else ""
        if encoding not in ("", "identity") and \
                encoding not in BufferedReader.get_supported_decompressors():
            return None
        payload = record.content_stream().read(PAGE_BYTES)
        content_type = (headers.get_header("content-type") if headers else
                        record.rec_headers.get_header("content-type")) or ""
    except Exception:  # noqa: BLE001 (a record cut short or damaged: a page without title)
        return None
    return title_of_payload(payload, content_type)


def title(path, offset, length):
    """The title of the HTML page whose record is ``length`` bytes at ``offset`` of the
    archive ``path``, or None (read once, at most ``READ_BYTES``)."""
    return title_of_record(storage.read_range(path, offset, min(length, READ_BYTES)))


def titles(records):
    """``title`` of each ``(path, offset, length)`` of ``records`` (a pool's task)."""
    return [title(*record) for record in records]
