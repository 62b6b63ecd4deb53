"""Per-archive CDX: identical to pywb 2.10's indexer, right against ground truth, clear on bad input."""
import gzip
import io
import json
import os
import random
import re
import shutil
import tempfile

import pytest

import badinput
from helpers import REAL, line_offset, pywb_cdx, pywb_cdx_from, resumed_at
from webarchive_indexing import cli
from webarchive_indexing.warc import plain
from webarchive_indexing.cdx.indexer import (FieldError, format_line, index_file, url_key,
                                             warc_timestamp)
from webarchive_indexing.commands.corpus import make_corpus, read_manifest

BAD_SAMPLES = {
    # file: (offset, what the error says)
    "chatnoir-eu+chatnoir-resiliparse__clipped.warc.gz": (0, "gzip member is truncated"),
    "webrecorder+warcio__example-bad-non-chunked.warc.gz": (0, "not compressed record by record"),
    # (its record at 2807 has no blank lines after it: a warning, and reading goes on
    # there, where pywb stops)
    "iipc+webarchive-commons__link-extraction-test.warc": (10562, "without a WARC-Target-URI"),
    # its one capture's ARC length runs 12 bytes past the end of the file
    "webrecorder+warcio__example-space-in-url.arc": (151, "the file ends 12 bytes before"),
}
# Where reading went on after a record not followed by blank lines (a warning)
WARNED_AT = re.compile(r"^record is not followed by the blank lines.*at offset (\d+)")
# Real archives with a record whose Content-Length is wrong that pywb reads, warning:
# (offset, words of the warning)
WARNED_SAMPLES = {
    "webrecorder+warcio__example-trunc.warc": (1197, "Content-Length is wrong: the line "
                                                     "after it, to offset 2566, is passed over"),
}
GOOD_SAMPLES = sorted(n for n in os.listdir(REAL)
                      if not n.endswith((".cdx", ".md", ".jsonl")) and n not in BAD_SAMPLES
                      and n not in WARNED_SAMPLES)


def ours(path, fmt="cdxj"):
    result = index_file(path, os.path.basename(path), fmt)
    header = " CDX N b a m s k r M S V g\n" if fmt == "cdx11" else ""
    return result, header + "".join(result.lines)


@pytest.mark.parametrize("fmt", ["cdxj", "cdx11"])
@pytest.mark.parametrize("name", GOOD_SAMPLES)
def test_real_samples_equal_pywb(name, fmt):
    result, text = ours(os.path.join(REAL, name), fmt)
    assert result.errors == []
    assert text == pywb_cdx(os.path.join(REAL, name), fmt)


@pytest.mark.parametrize("name", sorted(WARNED_SAMPLES))
def test_real_samples_pywb_reads_with_a_warning_equal_pywb(name):
    path = os.path.join(REAL, name)
    result, text = ours(path)
    offset, words = WARNED_SAMPLES[name]
    assert result.errors == [] and text == pywb_cdx(path) != ""
    assert [(o, words in w) for o, w in result.warnings] == [(offset, True)]


def test_real_samples_are_not_trivial():
    lines = sum(len(index_file(os.path.join(REAL, n)).lines) for n in GOOD_SAMPLES)
    assert len(GOOD_SAMPLES) >= 25 and lines >= 70


@pytest.mark.parametrize("name", sorted(BAD_SAMPLES))
def test_bad_real_samples_are_reported_and_the_rest_kept(name):
    path = os.path.join(REAL, name)
    offset, reason = BAD_SAMPLES[name]
    result, text = ours(path)
    assert [(e.offset, reason in e.reason) for e in result.errors][:1] == [(offset, True)]
    assert str(result.errors[0]).startswith(f"{path}: offset {offset}: ")
    # pywb indexes the broken record silently; everything else it reads is ours too, and so
    # is what pywb reads from where our walk went on past a broken record
    bad = {e.offset for e in result.errors}
    warned = [int(m[1]) for _, w in result.warnings for m in [WARNED_AT.search(w)] if m]
    kept = [line for start in [0] + resumed_at(result.errors) + warned
            for line in pywb_cdx_from(path, start) if line_offset(line) not in bad]
    assert text == "".join(sorted(set(kept)))


def test_outbackcdx_expected_cdx():
    expected = open(os.path.join(REAL, "nla+outbackcdx__test1.cdx")).read().splitlines(True)
    result = index_file(os.path.join(REAL, "nla+outbackcdx__test1.warc.gz"), "test1.warc.gz", "cdx11")
    assert sorted(result.lines) == sorted(line for line in expected if not line.startswith(" CDX"))


def test_common_crawl_sample_fields():
    """cdxj-indexer's test asserts this line for cc.warc.gz (a real Common Crawl excerpt)."""
    result = index_file(os.path.join(REAL, "webrecorder+cdxj-indexer__cc.warc.gz"), "cc.warc.gz")
    assert len(result.lines) == 1
    assert result.lines[0].startswith('org,commoncrawl)/ 20170722005011 {"url": "https://commoncrawl.org/"')
    assert '"length": "5357", "offset": "377", "filename": "cc.warc.gz"}' in result.lines[0]


def test_mime_detected_from_identified_payload_type():
    result = index_file(os.path.join(REAL, "iipc+jwarc__cc.warc.gz"))
    assert '"mime-detected": "text/html"' in result.lines[0]


def expected_fields(fact, fmt, gz):
    """What pywb makes of a record the corpus generator wrote (its manifest facts).

    In an uncompressed file the newlines after a record are not part of its length.
    """
    mime = fact["mime"]
    if fact["warc_type"] == "revisit":
        mime, status = "warc/revisit", "-"
    else:
        mime = re.split("[; ]", mime, maxsplit=1)[0] if mime != "-" else ("no-type" if fmt == "arc" else "unk")
        status = fact["status"] if fact["warc_type"] == "response" else "-"
    return {"mime": mime, "status": status, "digest": fact["digest"],
            "offset": str(fact["offset"]),
            "length": str(fact["length"] - (0 if gz else 4 if fmt == "warc" else 1))}


@pytest.mark.parametrize("fmt,gz", [("warc", True), ("warc", False), ("arc", True), ("arc", False)])
def test_generated_corpus_against_ground_truth(tmp_path, fmt, gz):
    (path,) = make_corpus(tmp_path, files=1, captures=300, seed=11, fmt=fmt, gzip=gz)
    result = index_file(path)
    assert result.errors == []
    facts = [f for f in read_manifest(path) if f["warc_type"] in ("response", "revisit", "resource")]
    assert len(facts) >= 300
    found = {}
    for line in result.lines:
        key, stamp, data = line.split(" ", 2)
        fields = __import__("json").loads(data)
        found[int(fields["offset"])] = (stamp, fields)
    assert len(found) == len(result.lines) == len(facts)
    for fact in facts:
        stamp, fields = found[fact["offset"]]
        assert stamp == fact["timestamp"]
        assert fields["url"] == fact["url"].replace(" ", "%20")
        want = expected_fields(fact, fmt, gz)
        got = {k: fields.get(k, "-") for k in want}
        assert got == want, fact
    assert "".join(result.lines) == pywb_cdx(path)


def test_missing_digest_is_computed_like_pywb(tmp_path):
    (path,) = make_corpus(tmp_path, files=1, captures=200, seed=3)
    without = [f for f in read_manifest(path) if f["warc_type"] == "response" and not f["has_payload_digest"]]
    assert without, "the corpus should hold responses without WARC-Payload-Digest"
    lines = {int(__import__("json").loads(l.split(" ", 2)[2])["offset"]): l for l in index_file(path).lines}
    for fact in without:
        assert f'"digest": "{fact["digest"]}"' in lines[fact["offset"]]


def test_cdxj_line_escapes_like_json_dumps():
    fields = {"urlkey": "k", "timestamp": "20240101000000", "url": 'http://x/"\\\u00e9\U0001f600\x00\n',
              "metadata": '{"a": "\u2028\ud800"}', "mime": "-", "status": "", "digest": None,
              "length": "1", "offset": "0", "filename": "a b.warc.gz"}
    data = {key: fields[key] for key in ("metadata", "url", "length", "offset", "filename")}
    assert format_line(fields) == f"k 20240101000000 {json.dumps(data)}\n"


# Tricky pieces of URLs: escapes, dot segments, session ids, ports, odd hosts (none that
# would make surt ask a DNS resolver: numeric hosts are all valid addresses).
URL_SCHEMES = ["http://", "https://", "HTTP://", "Https://", "ftp://", "dns:", "", "http:///", "http:"]
URL_HOSTS = ["example.com", "Example.COM", "www.example.com", "www2.ex.co.uk", "WWW3.Ex.com", "ex.com.",
             ".ex.com", "..ex..com..", ".", "...", "-", "a-b.c", "127.0.0.1", "10.0.0.1", "2130706433",
             "0177.0.0.1", "1.2.3", "xn--bcher-kva.ch", "b\u00fccher.ch", "ex%2Ecom", "user:pw@ex.com",
             "ex_ample.com", "[::1]", ""]
URL_PORTS = ["", ":80", ":443", ":8080", ":", ":0", ":00080", ":65535", ":99999", ":x"]
URL_SEGMENTS = ["", "a", "A", "b.html", ".", "..", "...", "%41", "%2F", "%2f", "%25", "%", "%zz", "%7E",
                "(a(0123456789abcdef01234567))", "(0123456789abcdef01234567)", "foo.aspx", "X.ASPX",
                "a b", "\u00e9", "~u", ";p=1", "'\"<>", "*", "a+b", "%C3%A9", "%00", "a%20b", "%2525"]
URL_QUERIES = ["", "?", "?a=1", "?b=2&a=1", "?&", "?=", "?a", "?a&b", "?A=B&a=b", "?z&y&x",
               "?jsessionid=0123456789abcdef0123456789abcdef", "?q=a b", "?q=\u00e9", "?a=1?b=2",
               "?x=1&PHPSESSID=0123456789abcdef0123456789abcdef&y=2", "?sessionid=582",
               "?sid=0123456789ABCDEF0123456789abcdef", "?ASPSESSIONIDabcdefgh=abcdefghijklmnopqrstuvwx",
               "?cfid=1&cftoken=2", "?%41=%42", "?a=%26&b", "?B=%2f&a"]
URL_FRAGMENTS = ["", "", "#", "#f", "#a?b"]


def _surt_or_error(function, url):
    try:
        return function(url)
    except Exception as exc:  # noqa: BLE001 -- the same error must come out of both
        return type(exc), str(exc)


def test_url_key_equals_surt():
    """url_key is surt.surt, faster: the same string (or error) for corpus URLs and tricky ones."""
    from surt import surt
    rnd = random.Random(7)
    urls = set()
    for _ in range(20000):
        path = "".join("/" + rnd.choice(URL_SEGMENTS) for _ in range(rnd.randrange(4)))
        urls.add(rnd.choice(URL_SCHEMES) + rnd.choice(URL_HOSTS) + rnd.choice(URL_PORTS)
                 + path + rnd.choice(["", "/", "//"]) + rnd.choice(URL_QUERIES)
                 + rnd.choice(URL_FRAGMENTS))
    with tempfile.TemporaryDirectory() as tmp:
        for path in make_corpus(tmp, files=1, captures=500, seed=21):
            urls.update(fact["url"] for fact in read_manifest(path) if fact["url"])
    for url in sorted(urls):
        assert _surt_or_error(url_key, url) == _surt_or_error(surt, url), url


def test_warc_timestamp_equals_warcio():
    """The timestamp warcio's iso_date_to_timestamp makes (pywb's), or a FieldError where it fails."""
    from warcio.timeutils import iso_date_to_timestamp
    rnd = random.Random(5)
    for _ in range(20000):
        year = rnd.choice(["2024", "2023", "2000", "1900", "0999", "0001", "0000", "9999"])
        month, day, hour, minute, second = (rnd.randint(0, top) for top in (13, 32, 25, 61, 61))
        date = (f"{year}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}"
                f"{rnd.choice(['', '.1', '.123456789'])}{rnd.choice(['', 'Z'])}")
        try:
            expected = iso_date_to_timestamp(date)
        except ValueError:
            with pytest.raises(FieldError, match="bad WARC-Date"):
                warc_timestamp(date)
        else:
            assert warc_timestamp(date) == expected, date


def test_cdx11_line_layout():
    fields = {"urlkey": "com,example)/", "timestamp": "20240101000000", "url": "http://example.com/",
              "mime": "text/html", "status": "200", "digest": "ABC", "length": "10", "offset": "0",
              "filename": "a.warc.gz"}
    assert format_line(fields, "cdx11") == \
        "com,example)/ 20240101000000 http://example.com/ text/html 200 ABC - - 10 0 a.warc.gz\n"
    assert format_line(fields, "cdx9") == \
        "com,example)/ 20240101000000 http://example.com/ text/html 200 ABC - 0 a.warc.gz\n"


# -- bad input, made from good files -------------------------------------------------------

def _members(path):
    """(offset, length) of each record, from our own index of all records."""
    from webarchive_indexing.warc.walk import iter_records
    with open(path, "rb") as fh:
        return [(r.offset, r.length) for r in iter_records(fh, path)]


@pytest.fixture
def sample(tmp_path):
    (path,) = make_corpus(tmp_path, files=1, captures=20, seed=5)
    return path


def test_truncated_gzip_member_keeps_records_before(sample, tmp_path):
    members = _members(sample)
    cut_at = members[30][0] + members[30][1] // 2
    bad = tmp_path / "cut.warc.gz"
    bad.write_bytes(open(sample, "rb").read()[:cut_at])
    result = index_file(str(bad))
    assert [(e.offset, "truncated" in e.reason) for e in result.errors] == [(members[30][0], True)]
    good = index_file(sample, "cut.warc.gz")
    assert result.lines == [l for l in good.lines if int(l.split('"offset": "')[1].split('"')[0]) < members[30][0]]
    assert result.lines


def test_whole_file_gzip(sample, tmp_path):
    bad = tmp_path / "whole.warc.gz"
    with gzip.open(sample) as fh:
        bad.write_bytes(gzip.compress(fh.read()))
    result = index_file(str(bad))
    assert result.lines == [] and len(result.errors) == 1
    assert result.errors[0].offset == 0 and "not compressed record by record" in result.errors[0].reason


@pytest.mark.parametrize("content,reason", [
    (b"", "empty file"),
    (b"<html><body>not an archive</body></html>\n" * 20, "not a WARC or ARC record"),
    (b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4, "not a WARC or ARC record"),
    (b"\x1f\x8b\x08\x00garbage after a gzip magic", "corrupt gzip"),
])
def test_not_an_archive(tmp_path, content, reason):
    bad = tmp_path / "bad.warc.gz"
    bad.write_bytes(content)
    result = index_file(str(bad))
    assert result.lines == []
    assert len(result.errors) == 1 and reason in result.errors[0].reason
    assert str(result.errors[0]).startswith(f"{bad}: offset 0: ")


def test_missing_file(tmp_path):
    result = index_file(str(tmp_path / "nope.warc.gz"))
    assert result.lines == [] and "cannot open" in result.errors[0].reason


def _rewrite_member(path, out, index, change):
    """Copy a record-per-member file, replacing record ``index`` by change(record bytes)."""
    data = open(path, "rb").read()
    members = _members(path)
    offset, length = members[index]
    record = gzip.decompress(data[offset:offset + length])
    new = gzip.compress(change(record))
    out.write_bytes(data[:offset] + new + data[offset + length:])
    return offset


def _first_response(path, with_digest=(True, False)):
    for i, fact in enumerate(read_manifest(path)):
        if fact["warc_type"] == "response" and fact["has_payload_digest"] in with_digest:
            return i, fact


@pytest.mark.parametrize("bad_date", [rb"WARC-Date: \1-294", rb"WARC-Date: \1-13"], ids=["garbled", "impossible"])
def test_bad_warc_date_skips_only_that_record(sample, tmp_path, bad_date):
    i, fact = _first_response(sample)
    bad = tmp_path / "date.warc.gz"
    offset = _rewrite_member(sample, bad, i, lambda r: re.sub(rb"WARC-Date: (\d{4})-\d\d", bad_date, r, 1))
    result = index_file(str(bad))
    assert [(e.offset, "bad WARC-Date '" in e.reason) for e in result.errors] == [(offset, True)]
    assert len(result.lines) == len(index_file(sample).lines) - 1


@pytest.mark.parametrize("with_digest", [True, False], ids=["digest", "payload-hashed"])
def test_wrong_content_length_in_gzip_member(sample, tmp_path, with_digest):
    i, fact = _first_response(sample, (with_digest,))
    bad = tmp_path / "length.warc.gz"

    def longer(record):
        n = int(re.search(rb"Content-Length: (\d+)", record).group(1))
        return record.replace(b"Content-Length: %d" % n, b"Content-Length: %d" % (n + 500), 1)

    offset = _rewrite_member(sample, bad, i, longer)
    result = index_file(str(bad))
    assert [(e.offset, "cut short" in e.reason) for e in result.errors] == [(offset, True)]
    assert len(result.lines) == len(index_file(sample).lines) - 1


def test_members_of_blank_lines_hold_no_record(sample, tmp_path):
    """A record's trailing newlines compressed apart, or an empty member: skipped, all else kept."""
    data = open(sample, "rb").read()
    members = _members(sample)
    offset, length = members[5]
    record = gzip.decompress(data[offset:offset + length])
    split = tmp_path / "split.warc.gz"
    split.write_bytes(data[:offset] + gzip.compress(record[:-4]) + gzip.compress(record[-4:])
                      + gzip.compress(b"") + data[offset + length:])
    result = index_file(str(split))
    assert result.errors == []
    assert [line.split(" {")[0] for line in result.lines] == \
        [line.split(" {")[0] for line in index_file(sample).lines]


def test_response_without_its_http_headers_is_skipped_like_pywb(sample, tmp_path):
    i, fact = _first_response(sample)
    bad = tmp_path / "nohttp.warc.gz"
    _rewrite_member(sample, bad, i, lambda record: record[:record.index(b"\r\n\r\n") + 4])
    result = index_file(str(bad))
    assert result.errors == [] and len(result.lines) == len(index_file(sample).lines) - 1
    assert "".join(result.lines) == pywb_cdx(str(bad))


@pytest.mark.parametrize("index", [1, 2, 3])  # a request, a response, a metadata record
def test_record_without_content_length_is_read_to_its_members_end_like_pywb(sample, tmp_path, index):
    bad = tmp_path / "nolength.warc.gz"
    _rewrite_member(sample, bad, index, lambda record: re.sub(rb"\r\nContent-Length: \d+", b"", record, 1))
    result = index_file(str(bad))
    assert result.errors == [] and len(result.lines) == len(index_file(sample).lines)
    assert "".join(result.lines) == pywb_cdx(str(bad))


def test_blank_lines_before_a_record_header(sample, tmp_path):
    bad = tmp_path / "blank.warc.gz"
    offset = _rewrite_member(sample, bad, 5, lambda record: b"\r\n" + record)
    result = index_file(str(bad))
    assert [(e.offset, "blank lines where the record's header should start" in e.reason)
            for e in result.errors] == [(offset, True)]
    shift = os.path.getsize(bad) - os.path.getsize(sample)
    assert result.lines == [
        re.sub(r'"offset": "(\d+)"', lambda m: f'"offset": "{int(m[1]) + shift}"', line)
        if line_offset(line) > offset else line
        for line in index_file(sample, "blank.warc.gz").lines if line_offset(line) != offset]


def test_wrong_content_length_in_uncompressed_warc(tmp_path):
    (path,) = make_corpus(tmp_path, files=1, captures=10, seed=5, gzip=False)
    data = open(path, "rb").read()
    i, fact = _first_response(path)
    n = int(re.search(rb"Content-Length: (\d+)", data[fact["offset"]:]).group(1))
    start = data.index(b"Content-Length: %d" % n, fact["offset"])
    bad = tmp_path / "length.warc"
    bad.write_bytes(data[:start] + b"Content-Length: %d" % (n - 7) + data[start + len(b"Content-Length: %d" % n):])
    result = index_file(str(bad))
    # pywb reads it, passing over the line after it with a warning: so here
    assert result.errors == [] and "".join(result.lines) == pywb_cdx(str(bad))
    assert [o for o, w in result.warnings if "Content-Length is wrong" in w] == [fact["offset"]]
    # 7 bytes too many reach into the next record: no record follows the line after it
    bad.write_bytes(data[:start] + b"Content-Length: %d" % (n + 7) + data[start + len(b"Content-Length: %d" % n):])
    result = index_file(str(bad))
    assert result.errors and result.errors[0].offset == fact["offset"]
    assert "Content-Length is wrong" in result.errors[0].reason


def test_space_in_url_is_escaped_and_reported():
    path = os.path.join(REAL, "webrecorder+warcio__example-space-in-target-uri.warc.gz")
    result = index_file(path)
    assert "file:///example%20with%20spaces.png" in result.lines[0]
    assert result.warnings == [(241, "Replacing spaces in invalid WARC-Target-URI: "
                                     "file:///example with spaces.png")]


def test_arc_url_with_spaces_equals_pywb(tmp_path):
    path = tmp_path / "space.arc"
    data = open(os.path.join(REAL, "webrecorder+warcio__example-space-in-url.arc"), "rb").read()
    # (its ARC length, 1591, runs past the end of the file: put right here)
    path.write_bytes(data.replace(b" text/html 1591\n", b" text/html 1579\n"))
    lines = index_file(str(path)).lines
    assert "".join(lines) == pywb_cdx(str(path))
    assert len(lines) == 1 and "examples%20from%20the%20live%20web" in lines[0]


def test_socket_is_loaded_for_hosts_written_as_a_number():
    """In a fresh interpreter: surt's socket is deferred by indexing (nothing stands in for
    it in sys.modules) and works once needed, as the C module socket.py wraps."""
    import subprocess
    import sys
    script = (
        "import sys\n"
        "from webarchive_indexing.cdx.urlkey import url_key\n"
        "assert url_key('http://example.com/a') == 'com,example)/a'\n"
        "assert 'socket' not in sys.modules\n"
        "assert url_key('http://3232235777/a') == '1,1,168,192)/a'\n"
        "assert url_key('http://136.48.187.91/a') == '91,187,48,136)/a'\n"
        "assert 'socket' not in sys.modules  # (what surt uses of it is _socket's)\n"
        "assert sys.modules['surt.GoogleURLCanonicalizer'].socket is sys.modules['_socket']\n"
        "import socket\n"
        "assert socket.inet_aton('1.2.3.4') == bytes([1, 2, 3, 4])\n")
    subprocess.run([sys.executable, "-c", script], check=True)


def test_tldextract_is_loaded_when_first_used():
    """In a fresh interpreter: deferred by indexing (only surt's handyurl holds a stand-in,
    not sys.modules), real and working once used."""
    import subprocess
    import sys
    script = (
        "import sys, webarchive_indexing.cdx.indexer\n"
        "assert 'tldextract' not in sys.modules and 'requests' not in sys.modules\n"
        "handyurl = sys.modules['surt.handyurl']\n"
        "stand_in = handyurl.tldextract\n"
        "extract = stand_in.TLDExtract(suffix_list_urls=())  # the bundled list, no download\n"
        "assert extract('http://forum.example.co.uk/a').registered_domain == 'example.co.uk'\n"
        "real = sys.modules['tldextract']\n"
        "assert real is not stand_in and type(real).__name__ == 'module'\n"
        "assert stand_in.TLDExtract is real.TLDExtract  # later uses find the real names\n"
        "assert handyurl.tldextract is real  # and surt's own, the module itself\n")
    subprocess.run([sys.executable, "-c", script], check=True)


def test_a_later_import_gets_the_real_modules():
    """Indexing changes sys.modules for nobody: after it, importing socket or tldextract
    imports the modules themselves."""
    import subprocess
    import sys
    script = (
        "import sys, webarchive_indexing.cdx.indexer\n"
        "import socket, tldextract\n"
        "assert type(socket).__name__ == type(tldextract).__name__ == 'module'\n"
        "assert socket.inet_aton('1.2.3.4') == bytes([1, 2, 3, 4])\n")
    subprocess.run([sys.executable, "-c", script], check=True)


def test_indexing_a_local_file_leaves_the_remote_and_unused_libraries_unimported():
    """Start-up time is part of every per-archive indexing command: `cdx` of a local file
    imports no S3, HTTP or Hadoop client, nor the copy package (extract), zstandard, dataclasses,
    random, socket, tldextract or logging (of a file whose records all take the fast path, past
    warcio's loader), each of which costs more than indexing a small archive; nor the ZipNum
    layout (deflate, typing), which only tells a shard (cdx-NNNNN.gz) by its name, datetime and
    base64, which only check a date and write a digest the compiled walker leaves to Python,
    gzip (a gzipped manifest) or postquery (--post-append)."""
    import subprocess
    import sys
    sample = os.path.join(REAL, "iipc+jwarc__cc.warc.gz")
    script = (
        "import io, sys\n"
        "from webarchive_indexing.cli import main\n"
        "sys.stdout = io.StringIO()\n"
        f"assert main(['cdx', {sample!r}]) == 0\n"
        "assert sys.stdout.getvalue().count('\\n') == 1\n"
        "unwanted = {'boto3', 'botocore', 'urllib3', 'http.client', 'ssl', 'subprocess',\n"
        "            'dataclasses', 'logging', 'random', 'socket', 'webarchive_indexing.copy',\n"
        "            'webarchive_indexing.build.tasks', 'importlib.metadata', 'tldextract', 'requests',\n"
        "            'zstandard', 'webarchive_indexing.warc.zstdwarc', 'webarchive_indexing.commands.recompress'}\n"
        "loaded = set(sys.modules)\n"
        "assert not unwanted & loaded, sorted(unwanted & loaded)\n")
    subprocess.run([sys.executable, "-c", script], check=True)


@pytest.fixture(params=["compiled", "pure"])
def walker(request, monkeypatch):
    """Each member walker in turn: the compiled one (where it was built), then the Python one."""
    from webarchive_indexing.warc import walk
    if request.param == "pure":
        monkeypatch.setattr(walk, "CompiledMembers", None)
    elif walk.CompiledMembers is None:
        pytest.skip("the compiled walker was not built here")
    return request.param


def test_version_says_which_member_walker_runs(walker, capsys):
    from webarchive_indexing import cli
    compiled = walker == "compiled"
    with pytest.raises(SystemExit) as stop:
        cli.main(["--version"])
    assert stop.value.code == 0
    line = capsys.readouterr().out
    assert line.startswith("webarchive-index 0.1.0, member walker: ")
    from webarchive_indexing.warc.members import INFLATER
    assert (f"compiled, {INFLATER}\n" in line) == compiled and ("pure Python" in line) != compiled


def test_problems_before_a_fatal_one_are_kept(sample, tmp_path, walker):
    """A request cut short, then a member truncated within its first bytes: both reported,
    in order, and the records read before them counted (the walk passes over such records
    many at a time, and a fatal problem must not take the earlier ones with it)."""
    data, members = open(sample, "rb").read(), _members(sample)
    i = next(k for k, fact in enumerate(read_manifest(sample)) if fact["warc_type"] == "request")
    offset, length = members[i]
    record = gzip.decompress(data[offset:offset + length]).replace(b"Content-Length: ", b"Content-Length: 9", 1)
    cut_at = members[i + 1][0]
    bad = tmp_path / "bad.warc.gz"
    bad.write_bytes(data[:offset] + gzip.compress(record) + data[offset + length:cut_at] + data[cut_at:cut_at + 20])
    result = index_file(str(bad))
    assert [(e.offset, type(e).__name__) for e in result.errors] == \
        [(offset, "RecordError"), (offset + len(gzip.compress(record)) + cut_at - offset - length, "ArchiveError")]
    assert "cut short" in result.errors[0].reason and "truncated" in result.errors[1].reason
    assert result.records == i  # the records before the request (warcinfo, ...)


# -- issue 16: one bad record must not end the walk ------------------------------------------

def _shifted(lines, after, shift):
    """CDXJ lines with the offsets past ``after`` moved by ``shift``."""
    return [re.sub(r'"offset": "(\d+)"', lambda m: f'"offset": "{int(m[1]) + shift}"', line)
            if line_offset(line) > after else line for line in lines]


@pytest.mark.parametrize("change", [
    lambda r: re.sub(rb"\r\nContent-Length: (\d+)", lambda m: b"\r\nContent-Length: %d" % (int(m[1]) - 10), r, 1),
    lambda r: r.replace(b"\r\n\r\nHTTP/1.1 ", b"\r\n\r\nHTTP/1.1  ", 1)[:-4] + b"x\r\n\r\n",
], ids=["content-length-too-small", "byte-inserted-in-http-header"])
def test_record_longer_than_its_content_length_is_reported_and_the_walk_goes_on(tmp_path, walker, change):
    """Issue 16, item 3: a 304-record file gave 6 lines where pywb gives 304."""
    (path,) = make_corpus(tmp_path, files=1, captures=100, seed=16)
    i = [k for k, fact in enumerate(read_manifest(path)) if fact["warc_type"] == "response"][40]
    bad = tmp_path / "bad.warc.gz"
    offset = _rewrite_member(path, bad, i, change)
    result = index_file(str(bad), "x.warc.gz")
    assert [(e.offset, type(e).__name__) for e in result.errors] == [(offset, "RecordError")]
    assert "record is longer than its Content-Length says" in result.errors[0].reason
    shift = os.path.getsize(bad) - os.path.getsize(path)
    good = [line for line in index_file(path, "x.warc.gz").lines if line_offset(line) != offset]
    assert result.lines == sorted(_shifted(good, offset, shift))
    assert result.records >= 300
    pywb = pywb_cdx(str(bad), filename="x.warc.gz").splitlines(True)
    assert {line for line in pywb if line_offset(line) != offset} <= set(result.lines)


def _plain_with(tmp_path, change):
    """An uncompressed corpus file with one response changed: its path, the response's offset,
    the lines of the unchanged file and the change in size."""
    (path,) = make_corpus(tmp_path / "plain", files=1, captures=30, seed=16, gzip=False)
    data = open(path, "rb").read()
    fact = [fact for fact in read_manifest(path) if fact["warc_type"] == "response"][20]
    record = data[fact["offset"]:fact["offset"] + fact["length"]]
    bad = tmp_path / "bad.warc"
    changed = change(record)
    bad.write_bytes(data[:fact["offset"]] + changed + data[fact["offset"] + fact["length"]:])
    return bad, fact["offset"], index_file(path, "bad.warc").lines, len(changed) - len(record)


@pytest.mark.parametrize("change,reason", [
    (lambda r: re.sub(rb"\r\nContent-Length: \d+", b"", r, 1), "record has no Content-Length"),
    (lambda r: re.sub(rb"\r\nContent-Length: (\d+)", lambda m: b"\r\nContent-Length: %d" % (int(m[1]) + 900), r, 1),
     "Content-Length is wrong"),
    (lambda r: re.sub(rb"\r\nContent-Length: (\d+)", b"\r\nContent-Length: %d" % 2 ** 63, r, 1), "the file ends"),
    (lambda r: re.sub(rb"\r\nContent-Length: (\d+)", b"\r\nContent-Length: " + b"9" * 40, r, 1), "the file ends"),
], ids=["missing", "too-large", "2^63", "40-digits"])
def test_uncompressed_record_with_a_wrong_content_length_is_reported_and_the_rest_kept(tmp_path, change, reason):
    """Issue 16, item 4: these exited 0, the records after the bad one gone (or raised
    OverflowError)."""
    bad, offset, good, shift = _plain_with(tmp_path, change)
    result = index_file(str(bad))
    assert [(e.offset, reason in e.reason) for e in result.errors] == [(offset, True)]
    assert re.search(r"; reading goes on at the next record, at offset \d+$", result.errors[0].reason)
    assert result.lines == sorted(_shifted([l for l in good if line_offset(l) != offset], offset, shift))


def test_uncompressed_file_cut_inside_a_record_is_an_error(tmp_path, capsys):
    (path,) = make_corpus(tmp_path, files=1, captures=10, seed=16, gzip=False)
    fact = read_manifest(path)[-2]
    cut = tmp_path / "cut.warc"
    cut.write_bytes(open(path, "rb").read()[:fact["offset"] + fact["length"] // 2])
    assert cli.main(["cdx", str(cut)]) == cli.EXIT_FAILED
    err = capsys.readouterr().err
    assert err.startswith(f"error: {cut}: offset {fact['offset']}: record is cut short: the file ends ")
    result = index_file(str(cut))
    assert [type(e).__name__ for e in result.errors] == ["ArchiveError"]
    assert result.lines == [l for l in index_file(path, "cut.warc").lines if line_offset(l) < fact["offset"]]


def test_huge_content_length_in_build_is_reported_beside_the_good_archives(tmp_path, capsys):
    """Issue 16, item 4: `build` aborted with no errors.json (OverflowError)."""
    bad, offset, _, _ = _plain_with(tmp_path, lambda r: re.sub(
        rb"\r\nContent-Length: (\d+)", b"\r\nContent-Length: %d" % 2 ** 64, r, 1))
    archives = tmp_path / "archives"
    archives.mkdir()
    shutil.move(bad, archives / "bad.warc")
    shutil.copy(os.path.join(REAL, "webrecorder+warcio__example.warc.gz"), archives / "good.warc.gz")
    out = tmp_path / "out"
    assert cli.main(["build", str(archives), "-o", str(out), "--runner", "inline", "--on-error", "skip",
                     "--no-progress"]) == cli.EXIT_PARTIAL
    assert "Traceback" not in capsys.readouterr().err
    (error,) = json.loads((out / "errors.json").read_text())["errors"]
    assert (error["file"], error["offset"]) == (str(archives / "bad.warc"), offset)
    assert "the file ends" in error["reason"]
    cluster = gzip.decompress((out / "cluster" / "build-00001" / "cdx-00000.gz").read_bytes()).decode()
    assert '"filename": "good.warc.gz"' in cluster and '"filename": "bad.warc"' in cluster


def test_response_without_target_uri_is_a_clear_error(sample, tmp_path, walker):
    """Issue 16, item 12: warcio's AttributeError text was shown."""
    i, fact = _first_response(sample)
    bad = tmp_path / "nouri.warc.gz"
    offset = _rewrite_member(sample, bad, i, lambda r: re.sub(rb"\r\nWARC-Target-URI: [^\r]*", b"", r, 1))
    result = index_file(str(bad))
    assert [(e.offset, e.reason) for e in result.errors] == [
        (offset, "WARC response record without a WARC-Target-URI")]
    assert len(result.lines) == len(index_file(sample).lines) - 1


def test_header_longer_than_a_mebibyte_is_read_whole(sample, tmp_path, walker):
    """A request whose header block runs past 1 MiB after its Content-Length: its end was
    taken from the first MiB, and the record was reported as not ending there."""
    i = next(k for k, fact in enumerate(read_manifest(sample)) if fact["warc_type"] == "request")
    big = b"X-Big: " + b"a" * (2 << 20) + b"\r\n"

    def change(record):
        head, _, rest = record.partition(b"\r\n\r\n")
        return head + b"\r\n" + big + b"\r\n" + rest

    bad = tmp_path / "big.warc.gz"
    offset = _rewrite_member(sample, bad, i, change)
    result = index_file(str(bad), "x.warc.gz")
    assert result.errors == []
    shift = os.path.getsize(bad) - os.path.getsize(sample)
    assert result.lines == sorted(_shifted(index_file(sample, "x.warc.gz").lines, offset, shift))


class _Stream(io.RawIOBase):
    """A file read as S3 and HTTP files are: forward only, no seek."""

    def __init__(self, path):
        self.fh = open(path, "rb")

    def readable(self):
        return True

    def readinto(self, buffer):
        return self.fh.readinto(buffer)

    def close(self):
        self.fh.close()
        super().close()


def _as_stream(path):
    return io.BufferedReader(_Stream(path))


def test_uncompressed_stream_goes_on_after_a_bad_record_like_a_file(tmp_path):
    bases = badinput.make_bases(str(tmp_path))
    checked = 0
    for case in badinput.cases([base for base in bases if base.compression is None]):
        path = badinput.write(case, str(tmp_path))
        from_file, from_stream = index_file(path), index_file(path, opener=_as_stream)
        assert (from_stream.lines, list(map(str, from_stream.errors))) == \
            (from_file.lines, list(map(str, from_file.errors))), case.name
        checked += bool(from_file.errors)
    assert checked > 100


def test_uncompressed_stream_looks_back_no_further_than_rewind_max(tmp_path):
    """A Content-Length 6 MB too large: a file is read again from just after the bad
    record's start; a stream only from where it is, and says so in where it went on."""
    (path,) = make_corpus(tmp_path, files=1, captures=20, seed=16, gzip=False, mean_kb=800)
    data = open(path, "rb").read()
    fact = [fact for fact in read_manifest(path) if fact["warc_type"] == "response"][1]
    record = data[fact["offset"]:fact["offset"] + fact["length"]]
    longer = re.sub(rb"\r\nContent-Length: (\d+)", lambda m: b"\r\nContent-Length: %d" % (int(m[1]) + 6_000_000),
                    record, 1)
    assert len(data) - fact["offset"] > 8_000_000 > plain.REWIND_MAX
    bad = tmp_path / "bad.warc"
    bad.write_bytes(data[:fact["offset"]] + longer + data[fact["offset"] + fact["length"]:])
    shift = len(longer) - len(record)
    good = _shifted([l for l in index_file(path, "bad.warc").lines if line_offset(l) != fact["offset"]],
                    fact["offset"], shift)
    from_file, from_stream = index_file(str(bad)), index_file(str(bad), opener=_as_stream)
    assert from_file.lines == sorted(good)
    (error,) = from_stream.errors
    assert error.offset == fact["offset"] and "Content-Length is wrong" in error.reason
    (resumed,) = resumed_at([error])
    assert resumed > fact["offset"] + plain.REWIND_MAX
    assert from_stream.lines == sorted(l for l in good if not fact["offset"] <= line_offset(l) < resumed)
    assert len(from_stream.lines) < len(from_file.lines)


@pytest.mark.parametrize("fmt", ["warc", "arc"])
def test_whole_file_gzip_is_told_from_a_wrong_content_length(tmp_path, walker, fmt):
    (path,) = make_corpus(tmp_path, files=1, captures=5, seed=16, fmt=fmt, gzip=False)
    whole = tmp_path / f"whole.{fmt}.gz"
    whole.write_bytes(gzip.compress(open(path, "rb").read()))
    result = index_file(str(whole))
    assert [(e.offset, "gzip member holds more than one record" in e.reason
             and "not compressed record by record" in e.reason) for e in result.errors] == [(0, True)]
    assert result.lines == []
