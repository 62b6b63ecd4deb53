"""Records pywb reads are read here too, as pywb reads them, and what it cannot read is
reported in bounded memory: a record whose Content-Length is wrong that pywb reads with a
warning (pywb's own sample archive has one), WARC-Dates and ARC dates in forms pywb takes,
a .warc.zst that starts with a skippable frame, the NUL bytes a crash leaves at a file's
end; gzip members zlib refuses (reserved flag bits) are refused; and `cdx` with several
archives prints one sorted index, as pywb reads one."""
import gzip
import json
import os
import subprocess
import sys
import time
import uuid

import pytest
from fastwarc.stream_io import ZstdReader
from fastwarc.warc import ArchiveIterator as FastArchiveIterator
from pywb.warcserver.index.indexsource import FileIndexSource
from pywb.warcserver.index.query import CDXQuery

from helpers import REAL, pywb_cdx
from webarchive_indexing import cli
from webarchive_indexing.warc import walk, zstdwarc
from webarchive_indexing.cdx.indexer import index_file
from webarchive_indexing.warc.base import HEADER_LINE_MAX

EXAMPLE_WARC_GZ = os.path.join(REAL, "webrecorder+warcio__example.warc.gz")
EXAMPLE_ARC = os.path.join(REAL, "webrecorder+warcio__example.arc")
CC_WARC_GZ = os.path.join(REAL, "iipc+jwarc__cc.warc.gz")
# pywb's own sample directory, as pip installs it
PYWB_SAMPLE = os.path.join(sys.prefix, "sample_archive", "warcs", "example.warc")


def warc_record(warc_type, uri, payload, date="2014-01-03T03:03:21Z", length=None,
                content_type="application/http; msgtype=response"):
    """One uncompressed WARC record, with the blank lines after it; ``length``: another
    Content-Length than the payload's."""
    head = (f"WARC/1.0\r\nWARC-Type: {warc_type}\r\nWARC-Record-ID: <urn:uuid:{uuid.uuid4()}>\r\n"
            f"WARC-Date: {date}\r\nWARC-Target-URI: {uri}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(payload) if length is None else length}\r\n\r\n")
    return head.encode() + payload + b"\r\n\r\n"


def response(uri, body=b"hello", **kwargs):
    return warc_record("response", uri, b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n"
                       + body, **kwargs)


def request(uri, **kwargs):
    return warc_record("request", uri, b"GET / HTTP/1.1\r\nHost: example.com\r\n\r\n",
                       content_type="application/http; msgtype=request", **kwargs)


def write(path, data):
    path.write_bytes(data)
    return str(path)


def run_cli(argv, capsys):
    status = cli.main(argv)
    out, err = capsys.readouterr()
    return status, out, err


# -- 20.8: a record pywb reads with a warning ------------------------------------------------

def wrong_length_warc(tmp_path):
    """pywb's sample case: a request whose Content-Length is 5 bytes short (its last line's
    tail, "om\\r\\n", is left before the blank lines), and a response 4 bytes short, between
    good responses."""
    return write(tmp_path / "wrong.warc", b"".join([
        response("http://example.com/a"),
        request("http://example.com/a", length=len(b"GET / HTTP/1.1\r\nHost: example.com\r\n\r\n") - 5),
        response("http://example.com/b", body=b"hello\r\nworld", length=len(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\nhello\r\nworld") - 4),
        response("http://example.org/c"),
    ]))


def test_record_pywb_reads_with_a_warning_is_indexed_as_pywb_indexes_it(tmp_path):
    path = wrong_length_warc(tmp_path)
    result = index_file(path, "wrong.warc")
    assert result.errors == []
    assert "".join(result.lines) == pywb_cdx(path, filename="wrong.warc")
    assert len(result.lines) == 3
    # one warning per such record, at its offset, saying where reading went on
    data = open(path, "rb").read()
    starts = [i for i in range(len(data)) if data.startswith(b"WARC/1.0", i)]
    assert [offset for offset, _ in result.warnings] == starts[1:3]
    assert all("Content-Length is wrong" in m and "passed over, as pywb does" in m
               for _, m in result.warnings)
    assert f"to offset {starts[2]}," in result.warnings[0][1]
    # cdxj-indexer finds the same captures at the same places
    theirs = subprocess.run([os.path.join(os.path.dirname(sys.executable), "cdxj-indexer"), path],
                            capture_output=True, text=True, check=True).stdout
    assert sorted(place(line) for line in theirs.splitlines()) == sorted(map(place, result.lines))


def place(line):
    """A CDXJ line's key, timestamp, offset and length."""
    key, timestamp, fields = line.split(" ", 2)
    fields = json.loads(fields)
    return key, timestamp, fields["offset"], fields["length"]


def test_a_line_that_does_not_lead_to_a_record_is_still_an_error(tmp_path):
    """Where the line after the record is not followed by a record, pywb fails: an error, and
    reading goes on at the next record, as before."""
    path = write(tmp_path / "bad.warc", response("http://example.com/a", length=10)
                 + response("http://example.com/b"))
    result = index_file(path, "bad.warc")
    assert [e.offset for e in result.errors] == [0]
    assert "Content-Length is wrong; reading goes on at the next record" in result.errors[0].reason
    assert len(result.lines) == 1


@pytest.mark.skipif(not os.path.exists(PYWB_SAMPLE), reason="pywb's sample_archive not installed")
def test_pywb_sample_directory_builds(tmp_path, capsys):
    status, out, err = run_cli(["cdx", PYWB_SAMPLE], capsys)
    assert status == cli.EXIT_OK and "error" not in err
    assert "warning: " in err and "offset 4061: record is not followed" in err
    assert out == pywb_cdx(PYWB_SAMPLE)
    status, _, err = run_cli(["build", os.path.dirname(PYWB_SAMPLE), "-o", str(tmp_path / "out"),
                              "--shards", "1"], capsys)
    assert status == cli.EXIT_OK, err
    assert (tmp_path / "out" / "cluster" / "cluster.idx").exists()
    report = json.loads((tmp_path / "out" / "errors.json").read_text())
    assert report["errors"] == []
    assert [w["offset"] for w in report["warnings"]] == [4061]
    assert "warnings: 1" in err


# -- 20.9: cdx to stdout is one sorted index ---------------------------------------------------

def test_cdx_of_several_archives_is_one_sorted_index_pywb_reads(tmp_path, capsys):
    # the commoncrawl.org archive first: its lines sort after example.com's
    status, out, err = run_cli(["cdx", CC_WARC_GZ, EXAMPLE_WARC_GZ], capsys)
    assert status == cli.EXIT_OK, err
    lines = out.splitlines(True)
    assert lines == sorted(lines)
    expected = sorted(index_file(CC_WARC_GZ).lines + index_file(EXAMPLE_WARC_GZ).lines)
    assert lines == expected
    index = tmp_path / "index.cdxj"
    index.write_text(out)
    source = FileIndexSource(str(index))
    found = list(source.load_index(CDXQuery({"url": "http://example.com/"}).params))
    assert len(found) == 2
    # CDX11: one header line, then the merged lines
    status, out, _ = run_cli(["cdx", "--cdx-format", "cdx11", CC_WARC_GZ, EXAMPLE_WARC_GZ], capsys)
    head, *rest = out.splitlines(True)
    assert head.startswith(" CDX ") and rest == sorted(rest) and len(rest) == len(lines)


def test_cdx_merges_more_archives_than_its_fan_in(tmp_path, capsys, monkeypatch):
    from webarchive_indexing.build import merge
    monkeypatch.setattr(merge, "FAN_IN", 2)
    paths = []
    for i, source in enumerate([CC_WARC_GZ, EXAMPLE_WARC_GZ, EXAMPLE_ARC, CC_WARC_GZ,
                                EXAMPLE_WARC_GZ]):
        paths.append(write(tmp_path / f"{i}-{os.path.basename(source)}",
                           open(source, "rb").read()))
    status, out, _ = run_cli(["cdx", *paths], capsys)
    assert status == cli.EXIT_OK
    lines = out.splitlines(True)
    assert lines == sorted(line for p in paths for line in index_file(p).lines)
    assert len(lines) == 2 * 2 + 2 * 1 + len(index_file(EXAMPLE_ARC).lines)


# -- 21.1: NUL bytes at a file's end, in bounded memory --------------------------------------

# The command line, run in a process that says its peak memory (VmHWM, in kB: unlike
# ru_maxrss, not inherited from the process that started it) on its last line
PEAK = ("import re, sys\n"
        "from webarchive_indexing.cli import main\n"
        "status = main(sys.argv[1:])\n"
        "status_file = open('/proc/self/status').read()\n"
        "sys.stderr.write('\\n' + re.search(r'VmHWM:\\s*(\\d+)', status_file)[1] + '\\n')\n"
        "sys.exit(status)\n")


def cli_max_rss(argv):
    """(exit status, stderr, peak RSS in MB, seconds) of the command line in a new process."""
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", PEAK, *argv], capture_output=True, text=True)
    seconds = time.monotonic() - started
    err, _, peak = done.stderr.rstrip("\n").rpartition("\n")
    return done.returncode, err, int(peak) / 1024, seconds


ZEROS = 200 << 20


@pytest.fixture(scope="module")
def zeros_tails(tmp_path_factory):
    """An uncompressed WARC, a .warc.gz and a .warc.zst, each ending in 200 MB of NUL bytes
    (in the compressed files, a member or frame of them)."""
    root = tmp_path_factory.mktemp("zeros")
    good = open(os.path.join(REAL, "webrecorder+warcio__example.warc"), "rb").read()
    plain = root / "tail.warc"
    with open(plain, "wb") as fh:
        fh.write(good)
        for _ in range(ZEROS >> 20):
            fh.write(bytes(1 << 20))
    gz = root / "tail.warc.gz"
    zeros = gzip.compress(bytes(ZEROS), 1)
    gz.write_bytes(open(EXAMPLE_WARC_GZ, "rb").read() + zeros)
    zst = root / "tail.warc.zst"
    frames = [zstdwarc.compressor(3).compress(record) for record in example_records()]
    zst.write_bytes(b"".join(frames) + zstdwarc.compressor(3).compress(bytes(ZEROS)))
    return {"warc": (str(plain), len(good)),
            "gz": (str(gz), os.path.getsize(EXAMPLE_WARC_GZ)),
            "zst": (str(zst), sum(map(len, frames)))}


@pytest.mark.parametrize("kind", ["warc", "gz", "zst"])
def test_nul_bytes_at_the_end_index_in_bounded_memory(zeros_tails, kind):
    path, offset = zeros_tails[kind]
    status, err, peak_mb, seconds = cli_max_rss(["cdx", path, "--on-error", "skip"])
    assert peak_mb < 150 and seconds < 60, (peak_mb, seconds)
    assert f"offset {offset}: not a WARC or ARC record: no end of line in {HEADER_LINE_MAX} " \
           "bytes" in err, err
    assert status == cli.EXIT_PARTIAL


@pytest.mark.parametrize("compiled", [True, False])
def test_gzip_twins_bound_a_line_alike(tmp_path, monkeypatch, compiled):
    path = write(tmp_path / "z.warc.gz", open(EXAMPLE_WARC_GZ, "rb").read()
                 + gzip.compress(bytes(3 * HEADER_LINE_MAX), 1) + open(EXAMPLE_WARC_GZ, "rb").read())
    if not compiled:
        if walk.CompiledMembers is None:
            pytest.skip("no compiled twin")
        monkeypatch.setattr(walk, "CompiledMembers", None)
    result = index_file(path, "z.warc.gz")
    size = os.path.getsize(EXAMPLE_WARC_GZ)
    assert [(e.offset, e.reason.split(";")[0]) for e in result.errors] == [
        (size, f"not a WARC or ARC record: no end of line in {HEADER_LINE_MAX} bytes (NUL bytes "
               "or other data where a record should start)")]
    assert len(result.lines) == 2 * len(index_file(EXAMPLE_WARC_GZ).lines)


# -- 21.11: a .warc.zst that starts with a skippable frame ------------------------------------

SKIPPABLE = b"\x50\x2a\x4d\x18" + (5).to_bytes(4, "little") + b"hello"


def example_records():
    from webarchive_indexing.warc.raw import open_records
    with open_records(EXAMPLE_WARC_GZ) as found:
        return [b"".join(record.pieces) for record in found]


def test_warc_zst_starting_with_a_skippable_frame(tmp_path):
    compress = zstdwarc.compressor(3).compress
    body = b"".join(compress(record) for record in example_records())
    plain = write(tmp_path / "a.warc.zst", body)
    skipping = write(tmp_path / "b.warc.zst", SKIPPABLE + body)
    ours = index_file(skipping, "a.warc.zst")
    assert ours.errors == []
    shifted = [line.replace(f'"offset": "{o}"', f'"offset": "{o + len(SKIPPABLE)}"')
               for line in index_file(plain, "a.warc.zst").lines
               for o in [int(line.split('"offset": "')[1].split('"')[0])]]
    assert ours.lines == shifted and len(ours.lines) == 2
    # FastWARC reads the same records there
    theirs = [r.stream_pos for r in FastArchiveIterator(ZstdReader(open(skipping, "rb")),
                                                        parse_http=False)]
    assert len(theirs) == len(example_records())


def test_dictionary_frame_after_a_skippable_frame_is_not_read_as_records(tmp_path):
    recs = example_records()
    zdict = zstdwarc.train_dictionary(recs * 30, 4 << 10)
    compress = zstdwarc.compressor(3, zdict).compress
    frame = zstdwarc.dictionary_frame(zdict)
    path = write(tmp_path / "d.warc.zst", SKIPPABLE + frame + b"".join(map(compress, recs)))
    result = index_file(path, "d.warc.zst")
    assert result.lines == []  # no captures made of the dictionary's sample text
    assert result.fatal and len(result.errors) == 1
    assert (f"dictionary frame is at offset {len(SKIPPABLE)}, not at its start"
            in result.errors[0].reason)
    # the zstd tool refuses it too; given the dictionary, every record is read
    assert subprocess.run(["zstd", "-dc", path], capture_output=True).returncode != 0
    dictionary = write(tmp_path / "crawl.dict", frame)
    assert len(index_file(path, "d.warc.zst", zstd_dictionary=dictionary).lines) == 2


# -- 21.17: what pywb takes is taken; what zlib refuses is refused ---------------------------

@pytest.mark.parametrize("date", ["2024-01-01", "2024-01-01T10:11:12.1234567890Z",
                                  "2024-01-01T10:11Z", "2024-01-01T10:11:12"])
def test_warc_dates_pywb_takes(tmp_path, date):
    path = write(tmp_path / "d.warc", response("http://example.com/", date=date))
    result = index_file(path, "d.warc")
    assert result.errors == []
    assert "".join(result.lines) == pywb_cdx(path, filename="d.warc") != ""


def test_warc_dates_pywb_refuses_are_reported(tmp_path):
    path = write(tmp_path / "d.warc", response("http://example.com/", date="2024")
                 + response("http://example.com/", date="2024-13-01"))
    result = index_file(path, "d.warc")
    assert [e.reason for e in result.errors] == [
        "bad WARC-Date '2024': expected YYYY-MM-DDThh:mm:ssZ",
        "bad WARC-Date '2024-13-01': expected YYYY-MM-DDThh:mm:ssZ"]


@pytest.mark.parametrize("date", [b"2024", b"202401011011121314"])
def test_arc_dates_pywb_takes(tmp_path, date):
    data = open(EXAMPLE_ARC, "rb").read().replace(b" 20140216050221 text/html", b" " + date
                                                  + b" text/html")
    path = write(tmp_path / "d.arc", data)
    result = index_file(path, "d.arc")
    assert result.errors == []
    assert "".join(result.lines) == pywb_cdx(path, filename="d.arc") != ""
    assert result.lines[0].split(" ")[1] == date[:14].decode()


@pytest.mark.parametrize("compiled", [True, False])
def test_gzip_member_with_reserved_flags_is_refused(tmp_path, monkeypatch, compiled):
    import zlib
    members = [gzip.compress(record, mtime=0) for record in example_records()]
    bad = 2  # the response's member
    members[bad] = members[bad][:3] + bytes([members[bad][3] | 0x20]) + members[bad][4:]
    with pytest.raises(zlib.error):
        zlib.decompressobj(31).decompress(members[bad])
    path = write(tmp_path / "r.warc.gz", b"".join(members))
    assert pywb_cdx(path).count("\n") == 0  # pywb stops there: nothing indexed
    if not compiled:
        monkeypatch.setattr(walk, "CompiledMembers", None)
    elif walk.CompiledMembers is None:
        pytest.skip("no compiled twin")
    result = index_file(path, "r.warc.gz")
    offset = sum(map(len, members[:bad]))
    assert [e.offset for e in result.errors] == [offset]
    assert result.errors[0].reason.startswith("gzip member header has reserved flag bits set")
    assert len(result.lines) == 1 and "warc/revisit" in result.lines[0]
