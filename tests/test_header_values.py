"""``header_values``: the values of a fixed tuple of header names read from a plain header
block in one pass, compiled (``_members.header_values``) and in pure Python
(``headers.pure_header_values``), each exactly as warcio's ``StatusAndHeadersParser`` (and
so pywb) reads them: crafted and random blocks, and whole records indexed like pywb's
``cdx-indexer`` with either twin.
"""
import collections
import gzip
import io
import random
import re

import pytest
from warcio.statusandheaders import StatusAndHeadersParser

from webarchive_indexing.cdx.indexer import _mime
from webarchive_indexing.warc import headers
from webarchive_indexing.warc.headers import pure_header_values
from helpers import index_in_python, pywb_cdx

try:
    from webarchive_indexing.warc._members import header_values as compiled_header_values
except ImportError:  # not built here: the pure twin is still checked against warcio
    compiled_header_values = None

TWINS = [pure_header_values] + ([compiled_header_values] if compiled_header_values else [])
NAMES = ("WARC-Type", "Content-Type", "content-length", "X-Empty", "Location", "X-Missing",
         "Content-Type")


def warcio_values(block, names):
    """What warcio's parser (as pywb's loader runs it on HTTP headers) reads of ``block``;
    None for a block ours leaves to the loader: not plain, or without a status line."""
    if not headers.is_plain(block) or not block.decode("ascii").split("\n", 1)[0].strip():
        return None
    parsed = StatusAndHeadersParser([], verify=False).parse(io.BytesIO(block))
    return (parsed.protocol, parsed.statusline, *(parsed.get_header(name) for name in names))


def assert_as_warcio(block, names=NAMES):
    expected = warcio_values(block, names)
    for twin in TWINS:
        assert twin(block, names) == expected, (twin, block)


CRAFTED = [
    b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 12\r\n\r\n",
    # repeated names: the first counts, in any case
    b"HTTP/1.1 200 OK\r\ncontent-type: a\r\nCONTENT-TYPE: b\r\nContent-Type: c\r\n\r\n",
    # spaces and tabs before the colon, none after, odd whitespace around the value
    b"HTTP/1.0 404 Not Found\r\nContent-Type \t : \x0b text/plain \x0c\x1c\x1d\x1e\x1f\r\n\r\n",
    # an empty value, a value of whitespace only, a line without a colon, lines without \r
    b"HTTP/1.1 301\nX-Empty:\nLocation: \x1f \nContent-Type\nContent-Length: 5\n\n",
    # a name with whitespace of another kind before the colon is another name
    b"HTTP/1.1 200 OK\r\nContent-Type\x0b: no\r\nContent-Type: yes\r\n\r\n",
    # a line that starts with other whitespace is no continuation, nor the name
    b"HTTP/1.1 200 OK\r\n\x0cContent-Type: no\r\nContent-Type: yes\r\n\r\n",
    # colons in the value; the first colon ends the name
    b"HTTP/1.1 302 Found\r\nLocation: http://example.com:8080/a:b\r\nX-A:B: c\r\n\r\n",
    # the headers end at the first blank line, of any whitespace
    b"HTTP/1.1 200 OK\r\nX-Empty: 1\r\n \x0c\t\r\nContent-Type: after\r\n",
    # no blank line, no final newline
    b"HTTP/1.1 200 OK\r\nContent-Type: text/html",
    # status lines: no reason, no status, leading and repeated spaces, odd whitespace
    b"HTTP/1.1 200\r\n\r\n", b"HTTP/1.1\r\n\r\n", b"HTTP/1.1   200   OK  \r\n\r\n",
    b" HTTP/1.1 200\r\n\r\n", b"HTTP/1.1\t200 OK\x1c\r\n\r\n", b"WARC/1.0\r\nWARC-Type: response\r\n\r\n",
    # NUL bytes and \r inside a line
    b"HTTP/1.1 200 OK\r\nContent-Type: a\x00b\rc\r\n\r\n",
    # not plain: a continuation line, a non-ASCII byte; a blank first line; nothing
    b"HTTP/1.1 200 OK\r\nContent-Type: a\r\n b\r\n\r\n", b"HTTP/1.1 200 OK\r\nX-Empty: \xe9\r\n\r\n",
    b"\r\nContent-Type: a\r\n\r\n", b" \t\r\n", b"",
]


@pytest.mark.parametrize("block", CRAFTED)
def test_crafted_blocks_read_as_warcio_reads_them(block):
    assert_as_warcio(block)


def test_random_blocks_read_as_warcio_reads_them():
    rng = random.Random(26)
    pieces = [b"Content-Type", b"content-length", b"WARC-TYPE", b"Location", b"X-Empty", b"x",
              b":", b": ", b" ", b"\t", b"\r", b"\n", b"\r\n", b"\x0b", b"\x0c", b"\x1c",
              b"\x1f", b"\x00", b"v", b"text/html", b"200", b"HTTP/1.1 ", b"\r\nContent-Type",
              b"\nlocation \t:", b"\nX-Empty:"]
    for _ in range(20000):
        block = b"".join(rng.choice(pieces) for _ in range(rng.randrange(30)))
        assert_as_warcio(block)


@pytest.mark.skipif(compiled_header_values is None, reason="the compiled twin was not built")
def test_compiled_twin_refuses_what_it_cannot_read():
    for args in [(b"HTTP/1.1 200\r\n\r\n", ["Content-Type"]), ("text", ("a",)),
                 (b"", ("\xe9",)), (b"", ("a",) * 65), (b"",)]:
        with pytest.raises(TypeError):
            compiled_header_values(*args)


def record(warc_headers, http, crlf=True):
    """A gzipped response record whose WARC headers are given as lines, after its type, and
    its HTTP header lines (their line ends made CRLF if ``crlf``)."""
    block = (http.replace(b"\n", b"\r\n") if crlf else http) + b"\r\n<html>hello</html>"
    return gzip.compress(b"WARC/1.0\r\nWARC-Type: response\r\n" + warc_headers
                         + b"Content-Length: %d\r\n\r\n" % len(block) + block + b"\r\n\r\n")


ODD_RECORDS = [
    # spaces before colons, odd case, values with odd whitespace around them
    record(b"warc-target-uri :  http://example.com/a \r\nWARC-DATE\t: 2024-01-02T03:04:05Z\x0b\r\n"
           b"WARC-Payload-Digest: sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\r\n",
           b"HTTP/1.1 200 OK\nContent-Type :\x0c text/html; charset=utf-8\n"),
    # repeated headers: the first of each is read
    record(b"WARC-Target-URI: http://example.com/b\r\nWARC-Target-URI: http://example.com/c\r\n"
           b"WARC-Date: 2024-01-02T03:04:05Z\r\nWARC-Date: 2025-01-02T03:04:05Z\r\n",
           b"HTTP/1.1 404 Not Found\nContent-Type: text/plain\ncontent-type: text/html\n"),
    # an empty Content-Type, a header without a colon, a redirect
    record(b"WARC-Target-URI: http://example.com/d\r\nWARC-Date: 2024-01-02T03:04:05Z\r\n"
           b"WARC-Identified-Payload-Type: image/png\r\nWARC-Json-Metadata: {\"a\": 1}\r\n",
           b"HTTP/1.1 301 Moved\nContent-Type:\nNo-Colon-Here\nLocation: /e\n"),
    # HTTP header lines without \r, a status line without a reason
    record(b"WARC-Target-URI: http://example.com/f\r\nWARC-Date: 2024-01-02T03:04:05Z\r\n",
           b"HTTP/1.0 200\nContent-Type: text/css\n", crlf=False),
]


@pytest.mark.parametrize("twin", TWINS, ids=lambda twin: twin.__module__)
def test_odd_headers_indexed_like_pywb(twin, tmp_path, monkeypatch):
    path = tmp_path / "odd.warc.gz"
    path.write_bytes(b"".join(ODD_RECORDS))
    monkeypatch.setattr(headers, "header_values", twin)
    result = index_in_python(str(path), "odd.warc.gz")
    assert not result.errors
    assert "".join(result.lines) == pywb_cdx(str(path))
    assert len(result.lines) == len(ODD_RECORDS)


def test_fields_of_a_common_record_look_no_header_up_twice(tmp_path, monkeypatch):
    """A record's fields are made of the values its header blocks were read for at once: no
    header of a block is looked up by name a second time (nor are those read at once)."""
    path = tmp_path / "odd.warc.gz"
    path.write_bytes(b"".join(ODD_RECORDS))
    looked_up = collections.Counter()
    get_header = headers.HeaderBlock.get_header

    def counted(block, name, default_value=None):
        looked_up[block, name] += 1  # (the block kept: no id of it reused)
        return get_header(block, name, default_value)
    monkeypatch.setattr(headers.HeaderBlock, "get_header", counted)
    result = index_in_python(str(path), "odd.warc.gz")
    assert "".join(result.lines) == pywb_cdx(str(path))
    assert looked_up and max(looked_up.values()) == 1


def test_header_getter_reads_as_get_header():
    """``header_getter`` gives of a block read at once what warcio's headers give by name."""
    block = (b"WARC/1.0\r\nwarc-date : 2024-01-02T03:04:05Z\r\nWARC-Target-URI: http://a/\r\n"
             b"WARC-Date: 2025-01-01T00:00:00Z\r\n\r\n")
    names = ("WARC-Date", "WARC-Target-URI", "WARC-Payload-Digest")
    ours = headers.HeaderBlock(block, headers.WARC_POSITIONS,
                               headers.header_values(block, headers.WARC_NAMES))
    theirs = StatusAndHeadersParser([], verify=False).parse(io.BytesIO(block))
    getter = headers.header_getter(names)
    assert getter(ours) == getter(theirs) == ("2024-01-02T03:04:05Z", "http://a/", None)


def test_mime_is_what_precedes_the_first_semicolon_or_space():
    """``_mime`` cuts a Content-Type as pywb's indexer does (``re.split('[; ]', ..., 1)``)."""
    for content_type in ["text/html", "text/html; charset=utf-8", "text/html ;x", " text/html",
                         ";text", "a b;c", "a;b c", "text/html\t;x", "x\x0b y", "", None]:
        expected = re.split("[; ]", content_type, maxsplit=1)[0] if content_type else "unk"
        assert _mime(content_type) == expected
