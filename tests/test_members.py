"""The compiled GzipMembers (``_members.c``) against its Python twin in gzipmembers.py.

Both walk the same files, good and broken, and must give the same index (lines, record
count, errors with their offsets and words, warnings), and the same answers method by
method. Where the compiled twin was not built the tests are skipped, unless
WEBARCHIVE_INDEXING_REQUIRE_COMPILED=1 (as CI sets it), when that is a failure.
"""
import base64
import gzip
import hashlib
import io
import os
import random

import pytest

from webarchive_indexing.warc import members as gzipmembers, walk as records
from webarchive_indexing.cdx.indexer import index_file
from webarchive_indexing.commands.corpus import make_corpus, read_manifest
import badinput
from helpers import REAL

if records.CompiledMembers is None:
    if os.environ.get("WEBARCHIVE_INDEXING_REQUIRE_COMPILED") == "1":
        raise ImportError("webarchive_indexing.warc._members was not built (is a C compiler and "
                          "python3-dev installed? reinstall with `pip install -e .`)")
    pytest.skip("the compiled twin was not built (no C compiler or Python headers at install)",
                allow_module_level=True)

GZ_SAMPLES = sorted(name for name in os.listdir(REAL) if name.endswith(".gz"))


def outcome(path, compiled, monkeypatch):
    """What index_file gives with one twin or the other."""
    with monkeypatch.context() as patch:
        if not compiled:
            patch.setattr(records, "CompiledMembers", None)
        result = index_file(str(path), "x.warc.gz")
    return result.lines, result.records, [str(e) for e in result.errors], result.warnings


def assert_twins_agree(path, monkeypatch):
    compiled = outcome(path, True, monkeypatch)
    assert compiled == outcome(path, False, monkeypatch)
    return compiled


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """A small crawl-like file (requests, responses, metadata), and its members' byte ranges."""
    (path,) = make_corpus(str(tmp_path_factory.mktemp("corpus")), files=1, captures=40, seed=11)
    data = open(path, "rb").read()
    with open(path, "rb") as fh:
        ranges = [(r.offset, r.length) for r in records.iter_records(fh, path)]
    return data, ranges, path


@pytest.mark.parametrize("name", GZ_SAMPLES)
def test_real_samples(name, monkeypatch):
    assert_twins_agree(os.path.join(REAL, name), monkeypatch)


def test_generated_corpus_crossing_read_blocks(tmp_path, monkeypatch):
    # large payloads: members straddle the 1 MiB blocks both twins read the file in
    (path,) = make_corpus(str(tmp_path), files=1, captures=60, seed=3, mean_kb=120)
    assert os.path.getsize(path) > 2 << 20
    lines, count, errors, _ = assert_twins_agree(path, monkeypatch)
    facts = read_manifest(path)
    assert count == len(facts) and not errors
    assert len(lines) == sum(f["warc_type"] in ("response", "revisit", "resource") for f in facts)


def test_truncated_everywhere(corpus, tmp_path, monkeypatch):
    data, ranges, _ = corpus
    rng = random.Random(7)
    cuts = {1, 2, 10, len(data) - 1, len(data) - 4, len(data) - 9}
    for offset, length in rng.sample(ranges, 12):
        # in the gzip header, in the deflate data, in the 8-byte trailer, at the member's end
        cuts.update({offset + 1, offset + 5, offset + length // 2, offset + length - 3,
                     offset + length - 8, offset + length})
    for cut in sorted(cuts):
        bad = tmp_path / f"cut-{cut}.warc.gz"
        bad.write_bytes(data[:cut])
        assert_twins_agree(bad, monkeypatch)


def test_corrupted_bytes(corpus, tmp_path, monkeypatch):
    data, ranges, _ = corpus
    rng = random.Random(8)
    seen = set()
    for n in range(60):
        offset, length = rng.choice(ranges)
        at = offset + rng.randrange(length)
        bad = bytearray(data)
        bad[at] ^= 1 << rng.randrange(8)
        path = tmp_path / f"flip-{n}.warc.gz"
        path.write_bytes(bytes(bad))
        seen.update(e.split(": ", 2)[2] for e in assert_twins_agree(path, monkeypatch)[2])
    # the flips reached several kinds of damage (bad blocks, symbols, checksums)
    assert len(seen) >= 3, seen


@pytest.mark.parametrize("between", [b"x", b"\n", b"\x1f", b"\x1f\x8b", b"\x1f\x8b\x08\x00junk",
                                     gzip.compress(b""), gzip.compress(b"\r\n\r\n"),
                                     gzip.compress(b"WARC/1.0\r\nWARC-Type: request\r\n\r\n")],
                         ids=["byte", "newline", "half-magic", "magic", "magic-junk", "empty-member",
                              "blank-member", "no-length"])
def test_something_between_members(corpus, tmp_path, monkeypatch, between):
    data, ranges, _ = corpus
    at = ranges[len(ranges) // 2][0]
    for where, content in (("middle", data[:at] + between + data[at:]), ("end", data + between)):
        bad = tmp_path / f"{where}.warc.gz"
        bad.write_bytes(content)
        assert_twins_agree(bad, monkeypatch)


@pytest.mark.parametrize("change", [
    lambda r: r.replace(b"Content-Length: ", b"Content-Length: 1", 1),
    lambda r: r.replace(b"Content-Length: ", b"Content-Length:  ", 1)[:-30] + b"\r\n\r\n",
    lambda r: r + b"trailing text\r\n",
    lambda r: r + b"\r\n" * 200,
    lambda r: r.replace(b"Content-Length: ", b"Content-Length: 123456789012345678", 1),
    lambda r: r.replace(b"Content-Length: ", b"content-length  :", 1),
    lambda r: r.replace(b"WARC-Type: ", b"WARC-Type:\r\n  ", 1),
    lambda r: r.replace(b"\r\n\r\n", b"\r\nX-Note: caf\xc3\xa9\r\n\r\n", 1),
    lambda r: r.replace(b"WARC/1.0\r\n", b"WARC/1.0\r\n\x0b\r\n", 1),
], ids=["longer", "shorter", "trailing-text", "many-newlines", "huge-length", "odd-spacing",
        "continuation", "non-ascii", "blank-ish-line"])
@pytest.mark.parametrize("kind", ["request", "response", "metadata"])
def test_changed_records(corpus, tmp_path, monkeypatch, change, kind):
    data, ranges, _ = corpus
    for offset, length in ranges:
        record = gzip.decompress(data[offset:offset + length])
        if f"WARC-Type: {kind}\r\n".encode() in record:
            break
    bad = tmp_path / "changed.warc.gz"
    bad.write_bytes(data[:offset] + gzip.compress(change(record)) + data[offset + length:])
    assert_twins_agree(bad, monkeypatch)


def test_highly_compressible_record_without_digest(corpus, tmp_path, monkeypatch):
    # 20 MB that deflate to ~20 KB: each compressed chunk inflates a thousandfold, and the
    # payload is hashed piece by piece (no WARC-Payload-Digest)
    data, ranges, _ = corpus
    payload = b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n\r\n" + bytes(20 << 20)
    record = (b"WARC/1.0\r\nWARC-Type: response\r\nWARC-Date: 2024-03-01T00:00:00Z\r\n"
              b"WARC-Target-URI: http://example.com/zeros\r\nContent-Type: application/http; msgtype=response\r\n"
              b"Content-Length: %d\r\n\r\n" % len(payload) + payload + b"\r\n\r\n")
    member = gzip.compress(record)
    assert len(member) < 64 << 10
    at = ranges[3][0]
    bad = tmp_path / "zeros.warc.gz"
    bad.write_bytes(data[:at] + member + data[at:])
    lines = assert_twins_agree(bad, monkeypatch)[0]
    (line,) = [line for line in lines if "example.com/zeros" in line]
    assert base64.b32encode(hashlib.sha1(bytes(20 << 20)).digest()).decode() in line


def test_whole_file_gzip(corpus, tmp_path, monkeypatch):
    bad = tmp_path / "whole.warc.gz"
    bad.write_bytes(gzip.compress(gzip.decompress(corpus[0])))
    assert "not compressed record by record" in assert_twins_agree(bad, monkeypatch)[2][0]


class ReadOnly:
    """A stream with read() only (no readinto), like some wrappers of remote files."""

    def __init__(self, data):
        self.stream = io.BytesIO(data)

    def read(self, size=-1):
        return self.stream.read(size)


def walk(members, rng):
    """Drive a GzipMembers (either twin) through every method at random; what each returned.
    After a problem with a member, the walk goes on where ``recover`` finds the next one."""
    seen = []
    while True:
        try:
            offset = members.next_member()
        except records.ArchiveError as exc:
            seen += [("error", str(exc)), ("recover", members.recover())]
            continue
        if offset is None:
            return seen
        seen.append(("member", offset, members.peek_headers(), members.peek_headers(rng.randrange(50))))
        try:
            for _ in range(rng.randrange(6)):
                step = rng.choice(("read", "readline", "feed", "tell", "skip", "drain"))
                if step == "read":
                    seen.append((step, members.read(rng.choice((-1, 0, 1, 7, 100, 5000, 70000)))))
                elif step == "readline":
                    seen.append((step, members.readline(rng.choice((-1, 3, 200, 2 ** 63 - 5)))))
                elif step == "feed":
                    pieces = []
                    passed = members.feed(lambda view: pieces.append(bytes(view)), rng.randrange(40000))
                    seen.append((step, passed, b"".join(pieces)))
                elif step == "skip":
                    members.skip(rng.randrange(20))
                elif step == "drain":
                    seen.append((step, members.drain(rng.choice((0, 1, 100, 5000)))))
                seen.append(("tell", members.tell()))
            seen.append(("end", members.end))
            # mostly wrong: the record is cut short, longer, or followed by another record
            seen.append(("finish", str(members.finish(rng.randrange(3000)))))
        except records.ArchiveError as exc:
            seen += [("error", str(exc)), ("recover", members.recover())]
            continue
        seen.append(("end", members.start, members.end))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("reader", [io.BytesIO, ReadOnly], ids=["readinto", "read-only"])
def test_methods_answer_alike(corpus, seed, reader):
    data = corpus[0][:len(corpus[0]) - 5 * seed]  # later seeds end in a truncated member
    compiled = walk(gzipmembers.CompiledMembers(reader(data), "f", records.ArchiveError,
                                            records.RecordError), random.Random(seed))
    python = walk(gzipmembers.GzipMembers(reader(data), "f"), random.Random(seed))
    assert compiled == python
    assert len(compiled) > 100


def skim_stops(twin):
    """Every stop of skim over a file, responses drained between them; problems as text."""
    skip = (("request", "warcinfo"), ("application/warc-fields",))
    stops = []
    while True:
        skipped, problems, offset, values = twin.skim(*skip)
        stops.append((skipped, [(type(p).__name__, str(p)) for p in problems], offset, values))
        if offset is None:
            return stops
        twin.drain()


def twins(data):
    return (gzipmembers.CompiledMembers(io.BytesIO(data), "f", records.ArchiveError, records.RecordError),
            gzipmembers.GzipMembers(io.BytesIO(data), "f"))


@pytest.mark.parametrize("damage", [lambda d, at: d[:at] + d[at + 1:], lambda d, at: d[:at] + b"\0" + d[at:],
                                    lambda d, at: d[:at] + d[at + 40:]], ids=["byte-dropped", "byte-added", "cut-out"])
def test_methods_answer_alike_after_damage_in_the_middle(corpus, damage):
    """Members damaged half-way through the file: both twins recover at the same member."""
    data, ranges, _ = corpus
    for k in (5, len(ranges) // 2, len(ranges) - 2):
        offset, length = ranges[k]
        bad = damage(data, offset + length // 2)
        compiled = walk(gzipmembers.CompiledMembers(io.BytesIO(bad), "f", records.ArchiveError,
                                                records.RecordError), random.Random(k))
        assert compiled == walk(gzipmembers.GzipMembers(io.BytesIO(bad), "f"), random.Random(k))
        assert ("recover", ranges[k + 1][0] + len(bad) - len(data)) in compiled


def test_bad_input_corpus(tmp_path, monkeypatch):
    """Every gzipped case of the bad-input corpus (tests/badinput.py) indexed alike."""
    cases = [case for case in badinput.cases(badinput.make_bases(str(tmp_path)))
             if case.base.compression == "gz"]
    assert len(cases) > 200
    for case in cases:
        assert_twins_agree(badinput.write(case, str(tmp_path)), monkeypatch)


def test_skim_alike(corpus):
    data, ranges, path = corpus
    compiled, python = map(skim_stops, twins(data))
    assert compiled == python
    skipped = sum(s[0] for s in compiled)
    assert skipped == sum(f["warc_type"] in ("request", "metadata", "warcinfo") for f in read_manifest(path))
    assert {s[3][0] for s in compiled if s[3]} <= {"response", "revisit", "resource"}


def test_skim_returns_a_fatal_problem_last(corpus):
    data, ranges, path = corpus
    facts = read_manifest(path)
    # a metadata record followed by a request cut 20 bytes in: the walk ends inside one batch
    i = next(k for k, f in enumerate(facts) if f["warc_type"] == "metadata" and facts[k + 1]["warc_type"] == "request")
    compiled, python = (skim_stops(twin) for twin in twins(data[:ranges[i + 1][0] + 20]))
    assert compiled == python
    skipped, problems, offset, values = compiled[-1]
    assert skipped >= 1 and offset is None and values is None
    assert problems[-1] == ("ArchiveError", f"f: offset {ranges[i + 1][0]}: gzip member is truncated: "
                                            "the file ends inside it")


def test_feed_views_do_not_outlive_the_buffer(corpus):
    members = gzipmembers.CompiledMembers(io.BytesIO(corpus[0]), "f", records.ArchiveError,
                                      records.RecordError)
    members.next_member()
    kept = []
    members.feed(kept.append, 10)
    with pytest.raises(ValueError):
        bytes(kept[0])
