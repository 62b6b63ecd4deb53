"""The compiled walker's CDXJ lines (``_members.c``, ``make_line``: a common record's whole
line made from its two header blocks) are those of the Python path (``record_fields`` and
``format_line``, itself checked against pywb), on crafted and random records: every field,
every record it leaves to Python, every problem, and the records counted.
"""
import gzip
import io
import random

import pytest

from webarchive_indexing.cdx import indexer
from webarchive_indexing.cdx.indexer import IndexResult, index_file, iter_fields
from webarchive_indexing.commands.corpus import make_corpus
from webarchive_indexing.warc.members import CompiledMembers
from helpers import index_in_python, pywb_cdx

pytestmark = pytest.mark.skipif(CompiledMembers is None, reason="the compiled walker is not built")

URLS = [
    "http://example.com/", "https://Example.COM/A/b.html?B=2&a=1", "http://example.com",
    "http://example.com:8080/x?", "https://www.example.org/p/?utm=1&jsessionid=ab&x=%41%2f",
    "http://example.com/a//b/./c/../d", "http://example.com/%7Euser/(x)?q=\"quoted\"",
    "http://example.com/back\\slash?a=b&a=a&a", "http://EXAMPLE.com/path/", "dns:example.com",
    "ftp://ftp.example.com/file", "urn:x-test:thing", "http://1234567/", "http://[::1]/x",
    "http://example.com/\x01ctl\x7f", "https://xn--bcher-kva.example/", "http://a.b.c.d.e/f;g?h",
    "http://example.com/?a=1&&b=2&=c", "HTTP://example.com/upper-scheme", "http://[::1/x",
    "<http://example.com/angle>", "", "http://user:pw@example.com:80/x", "filedesc://x.arc",
]
DATES = ["2024-03-01T10:20:30Z", "2024-03-01T10:20:30.123456Z", "2024-02-29T00:00:00Z",
         "0999-12-31T23:59:59Z", "2023-02-29T00:00:00Z", "2024-13-01T00:00:00Z",
         "2024-01-01T24:00:00Z", "2024-01-01T10:60:00Z", "0000-01-01T00:00:00Z",
         "2024-01-01", "2024-01-01T10:00Z", "2024-01-01T10:00:00.1234567890Z",
         "2024-01-01T10:00:00", "2024-01-01T10:00:00.Z", "garbage", None]
DIGESTS = ["sha1:B2LTWWPUOYAH7UIPQ7ZUPQ4VMBSVC36A", "B2LTWWPUOYAH7UIPQ7ZUPQ4VMBSVC36A", "-", "",
           "sha1:", "sha1:-", "md5:abc", None]
WARC_CONTENT_TYPES = ["application/http; msgtype=response", "application/http;msgtype=request",
                      "application/warc-fields", "text/anvl", "text/html; charset=utf-8",
                      "image/png", "", " ; x", None]
STATUS_LINES = ["HTTP/1.1 200 OK", "HTTP/1.1 204 No Content", "HTTP/1.1 204 Error here",
                "HTTP/1.0 -", "HTTP/1.1", "HTTP/1.1  301  Moved", "200 OK", "HTTP/1.1 404\tNot",
                "HTTP/1.1 -1 x", "   ", "HTTP/1.1 302 Found"]
HTTP_CONTENT_TYPES = ["text/html", "text/html; charset=utf-8", "Text/HTML;x", "a b;c", ";x", "",
                      "text/\"q\"\\x", "text/\x01x\x7f", None]
TYPES = ["response"] * 6 + ["revisit"] * 2 + ["resource", "metadata", "request", "warcinfo",
                                              "Response", "conversion"]


def pick(rng, options):
    """The first (common) of ``options`` half the time, else any."""
    return options[0] if rng.random() < 0.5 else rng.choice(options)


def warc_record(rng, payload=b"<html>hello</html>\n"):
    """A WARC record as bytes, its headers drawn from the lists above; now and then broken."""
    rec_type = rng.choice(TYPES)
    eol = b"\r\n" if rng.random() < 0.8 else b"\n"
    http = b""
    if rec_type in ("response", "revisit", "Response") and rng.random() < 0.9:
        lines = [pick(rng, STATUS_LINES)]
        content_type = pick(rng, HTTP_CONTENT_TYPES)
        if content_type is not None:
            lines.append(rng.choice(["Content-Type: ", "content-type:", "Content-Type :  "])
                         + content_type)
        lines.append("Server: test")
        if rng.random() < 0.05:
            lines.append(" continued")
        http = eol.join(line.encode("latin-1") for line in lines) + eol + eol
        if rng.random() < 0.03:
            http = http.replace(b"Server", b"S\xe9rver")
    body = http + (payload if rng.random() < 0.9 else b"")
    length = len(body)
    warc = {"WARC-Type": rec_type, "WARC-Target-URI": rng.choice(URLS),
            "WARC-Date": pick(rng, DATES), "WARC-Payload-Digest": pick(rng, DIGESTS),
            "WARC-Record-ID": "<urn:uuid:%032x>" % rng.getrandbits(128),
            "Content-Type": pick(rng, WARC_CONTENT_TYPES)}
    if rng.random() < 0.3:
        warc["WARC-Identified-Payload-Type"] = rng.choice(["text/html", "-", "", "a\"b"])
    if rng.random() < 0.2:
        warc["WARC-Json-Metadata"] = rng.choice(['{"a": "b\\"c"}', "-", "", "x\ty"])
    cut = rng.random()
    if cut < 0.04:
        length += rng.randint(1, 5)  # the member ends before the Content-Length
    elif cut < 0.08:
        length -= rng.randint(1, min(5, length) or 1)  # bytes follow it in its member
    warc["Content-Length"] = (str(length) if rng.random() < 0.97
                              else rng.choice(["", "x1", "-1", "1" * 20]))
    names = list(warc)
    rng.shuffle(names)
    header = ["WARC/1.0"] + [f"{name}: {warc[name]}" for name in names if warc[name] is not None]
    if rng.random() < 0.03:
        header.insert(2, "WARC-Type: resource")  # a repeated name: the first counts
    return (eol.join(line.encode("latin-1") for line in header) + eol + eol + body + b"\r\n\r\n")


def random_warc(path, seed, count=400):
    rng = random.Random(seed)
    with open(path, "wb") as out:
        for _ in range(count):
            record = warc_record(rng)
            if rng.random() < 0.01:
                record += warc_record(rng)  # two records in one member
            out.write(gzip.compress(record, compresslevel=rng.choice([1, 6, 9])))


def made_in_c(path, name):
    """The lines the compiled walker makes of ``path``'s records."""
    made = []
    with open(path, "rb") as fh:
        for _ in iter_fields(fh, path, name, IndexResult(path, name), lines=made):
            pass
    return made


def assert_same(path, name):
    fast, slow = index_file(path, name), index_in_python(path, name)
    assert fast.lines == slow.lines
    assert [e.as_dict() for e in fast.errors] == [e.as_dict() for e in slow.errors]
    assert fast.warnings == slow.warnings
    assert fast.records == slow.records


@pytest.mark.parametrize("seed", range(6))
def test_random_records_index_as_the_python_path_does(tmp_path, seed):
    path = str(tmp_path / "random.warc.gz")
    random_warc(path, seed)
    assert_same(path, "random.warc.gz")
    # (and the compiled walker did make many of them: not a test of the Python path alone)
    assert len(made_in_c(path, "random.warc.gz")) > 100


def test_odd_file_names_are_escaped_as_json_escapes_them(tmp_path):
    path = str(tmp_path / "x.warc.gz")
    random_warc(path, 99, count=60)
    for name in ('a "quoted" \\ name.warc.gz', "caf\u00e9 \u2603.warc.gz", "tab\there.warc.gz"):
        assert_same(path, name)


def test_a_crawl_is_indexed_as_pywb_indexes_it_with_lines_made_in_c(tmp_path):
    (path,) = make_corpus(str(tmp_path / "corpus"), files=1, captures=300, seed=5, mean_kb=2.0)
    name = path.rsplit("/", 1)[-1]
    assert_same(path, name)
    assert "".join(index_file(path, name).lines) == pywb_cdx(path)
    assert len(made_in_c(path, name)) > 250


def test_common_records_never_reach_record_fields(tmp_path, monkeypatch):
    """The point of the compiled line: a common crawl's records are indexed without their
    fields made in Python (on the old code, every record's were)."""
    (path,) = make_corpus(str(tmp_path / "corpus"), files=1, captures=200, seed=8, mean_kb=2.0)
    expected = "".join(index_in_python(path, "c.warc.gz").lines)
    calls = []
    real = indexer.record_fields
    monkeypatch.setattr(indexer, "record_fields", lambda *a: calls.append(a) or real(*a))
    assert "".join(index_file(path, "c.warc.gz").lines) == expected
    assert not calls


def test_crafted_records_each_index_as_the_python_path_does(tmp_path):
    """One member each, the cases the line maker must leave to Python or make just so."""
    eol = b"\r\n"

    def record(warc_type="response", url="http://example.com/a", date="2024-03-01T10:20:30Z",
               digest="sha1:AAAA", http=b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n",
               extra=(), length_delta=0, payload=b"body"):
        body = http + payload
        lines = [b"WARC/1.0", b"WARC-Type: " + warc_type.encode(),
                 b"WARC-Target-URI: " + url.encode("latin-1"), b"WARC-Date: " + date.encode()]
        if digest is not None:
            lines.append(b"WARC-Payload-Digest: " + digest.encode())
        lines += [line.encode("latin-1") for line in extra]
        lines.append(b"Content-Length: %d" % (len(body) + length_delta))
        return gzip.compress(eol.join(lines) + eol + eol + body + eol + eol)

    cases = [
        record(), record(warc_type="revisit", digest=None), record(warc_type="revisit", http=b""),
        record(http=b"HTTP/1.1 204 Error\r\n\r\n"), record(http=b"HTTP/1.1 -\r\n\r\n"),
        record(http=b"HTTP/1.1 200 OK\r\nContent-Type: a\r\n"),  # no blank line: the payload
        record(http=b"HTTP/1.1 200 OK\r\n\r\n", payload=b""),
        record(http=b"\r\n\r\n"), record(http=b"", payload=b""), record(url="https://x.org"),
        record(url="dns:example.com", http=b""), record(warc_type="metadata", http=b"",
                                                        extra=["Content-Type: text/anvl"]),
        record(warc_type="resource", http=b"", extra=["Content-Type: ;x"]),
        record(date="2024-02-30T00:00:00Z"), record(date="2024-03-01T10:20:30"),
        record(digest="-"), record(digest="sha1:"), record(length_delta=3),
        record(length_delta=-3), record(extra=["WARC-Json-Metadata: {\"k\": \"\\u00e9\"}",
                                               "WARC-Identified-Payload-Type: \x1f"]),
        record(url="http://exa mple.com/"), record(url="http://[::1/x"),
        record(http=b"HTTP/1.1 200 OK\r\nContent-Type: t\xe9xt\r\n\r\n"),
        gzip.compress(b"WARC/1.0\r\nWARC-Type: response\r\n"),  # cut in its headers
    ]
    path = str(tmp_path / "crafted.warc.gz")
    with open(path, "wb") as out:
        out.write(b"".join(cases))
    assert_same(path, "crafted.warc.gz")
    for number, member in enumerate(cases):
        one = str(tmp_path / f"{number}.warc.gz")
        with open(one, "wb") as out:
            out.write(member)
        assert_same(one, f"{number}.warc.gz")


def test_skim_checks_its_cdxj_argument():
    members = CompiledMembers(io.BytesIO(b""), "x", Exception, Exception)
    with pytest.raises(TypeError):
        members.skim((), (), ("not callable", str, str, "", []))
    with pytest.raises(TypeError):
        members.skim((), (), (str, str, str, "", ()))
    assert members.skim((), (), None)[2] is None


# What random URLs are made of: the plain class's pieces, and (now and then) what takes a
# URL out of it
URL_PIECES = ["a", "B", "z9", "-", ".", "/", "?", "&", "=", "&&", "==", "~", "!", '"', "'", "*",
              ";", ":", ",", "+", "id=", "Sid", "SID", "index.html", "www.", "@", "[", "]",
              "\\", "^", "`", "{", "|", "}", "$", "_", "a=b", "A=B", "?x=1&", "%41", "%2f", "%2F",
              "%25", "%252F", "%e9", "%3F", "%26", "%3d", "%23", "%20", "%", "%%", "%4", "%2",
              "%7E", "%00", "%2E", "%28", "%7f", "%C3%A9", "(", ")", ".aspx", "x.ASPX",
              # session ids, of surt's shapes (which it strips) and near them (which it keeps)
              "jsessionid=", "PHPSESSID=", "sid=", "ASPSESSIONID", "cfid=", "&cftoken=",
              "jsessionid=0123456789abcdefABCDEF0123456789ab", "&PHPSESSID=" + "Z9" * 16,
              "?sid=" + "a" * 31, "&sid=" + "b" * 32, "&SID=" + "c" * 33, "sid=" + "d" * 31 + "%41",
              "ASPSESSIONIDABCDEFGH=" + "x" * 24, "aspsessionidabcdefg1=" + "y" * 24,
              "cfid=1&cftoken=2", "CFID=x", "(a(123456789012345678901234))/",
              "(123456789012345678901234)/", "(b(12345678901234567890123))/"]
BREAKERS = ["#", " ", "\x7f", "//", "/.", "/..", "\xe9"]
ORIGINS = ["http://example.com", "https://Example.COM", "http://www.example.org:8080",
           "http://1.2.3.4", "http://localhost", "https://xn--bcher-kva.example",
           "http://a-b.c-d.e", "http://.example.com", "http://example.com.", "http://123",
           "http://example.com:", "https://www", "HTTP://example.com", "http://ex_ample.com",
           "ftp://example.com", "http://-a.com", "http://www..com", "http://EXAMPLE.com:443"]


def random_url(rng):
    pieces = [rng.choice(BREAKERS) if rng.random() < 0.02 else rng.choice(URL_PIECES)
              for _ in range(rng.randint(0, 12))]
    return rng.choice(ORIGINS) + ("/" if rng.random() < 0.9 else "") + "".join(pieces)


def test_plain_keys_are_surts_own():
    """The compiled key of a plain URL (``plain_key``) is surt's, on crafted and random URLs;
    a URL it leaves to Python is left whole (``url_key`` then makes it)."""
    from surt import surt

    from webarchive_indexing.cdx.urlkey import origin_key, url_key
    from webarchive_indexing.warc._members import plain_key
    rng = random.Random(26)
    urls = [random_url(rng) for _ in range(20000)] + URLS[:-4] + [
        "http://example.com/?b=2&a=1&a&a=&=&&", "http://example.com/A/?Q=1", "http://e.com/a/",
        "http://e.com/", "http://e.com/?", "http://e.com/" + "&x" * 70, "http://e.com/?" + "a" * 2000]
    made = 0
    for url in filter(str.isascii, urls):  # (as the header blocks it reads are)
        key = plain_key(url, origin_key)
        if key is None:
            continue
        made += 1
        assert key == surt(url) == url_key(url), url
    assert made > 5000


def test_plain_key_leaves_surt_errors_to_python():
    from webarchive_indexing.warc._members import plain_key

    def failing(origin):
        raise ValueError("bad")
    with pytest.raises(ValueError):
        plain_key("http://example.com/a", failing)
    assert plain_key("http://example.com/a", lambda origin: None) is None
