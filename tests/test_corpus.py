"""Tests of the synthetic corpus generator, checked against warcio as an independent reader."""

import base64
import hashlib
import io
import json
import os
import re
import zlib
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from warcio.archiveiterator import ArchiveIterator

from webarchive_indexing.commands.corpus import main, make_corpus, read_manifest

FILES, CAPTURES = 2, 200
VARIANTS = [("warc", True), ("warc", False), ("arc", True), ("arc", False)]
MANIFEST_KEYS = {"warc_type", "url", "timestamp", "status", "mime", "digest", "has_payload_digest",
                 "offset", "length", "filename"}
# what warcio's arc2warc conversion calls an ARC file header
WARCIO_TYPE = {"filedesc": "warcinfo"}


def sha1_b32(data):
    return base64.b32encode(hashlib.sha1(data).digest()).decode("ascii")


def gunzip_member(data):
    """Decompress exactly one gzip member, failing if there is more or less than one."""
    d = zlib.decompressobj(31)
    raw = d.decompress(data) + d.flush()
    assert d.eof and not d.unused_data
    return raw


def entries(paths):
    """(path, manifest entry) pairs over all files."""
    return [(p, e) for p in paths for e in read_manifest(p)]


def records(path, **kwargs):
    """(iterator offset, iterator length, record, raw payload read by warcio) for each record."""
    out = []
    with open(path, "rb") as fh:
        it = ArchiveIterator(fh, arc2warc=True, **kwargs)
        for rec in it:
            payload = rec.raw_stream.read()
            out.append((it.get_record_offset(), it.get_record_length(), rec, payload))
    return out


@pytest.fixture(scope="module")
def corpora(tmp_path_factory):
    """Each (format, gzip) variant built once: the checks below only read it."""
    root = tmp_path_factory.mktemp("corpora")
    return {(fmt, gz): make_corpus(str(root / f"{fmt}-{gz}"), files=FILES, captures=CAPTURES, seed=5,
                                   fmt=fmt, gzip=gz)
            for fmt, gz in VARIANTS}


@pytest.fixture(params=VARIANTS, ids=[f"{f}-{'gz' if g else 'plain'}" for f, g in VARIANTS])
def variant(request, corpora):
    fmt, gz = request.param
    return fmt, gz, corpora[request.param]


@pytest.fixture
def warc_manifest(corpora):
    return [e for _, e in entries(corpora[("warc", True)])]


def test_same_arguments_give_identical_bytes(tmp_path):
    def build(name, seed):
        make_corpus(str(tmp_path / name), files=2, captures=60, seed=seed, hosts=30)
        return {f: (tmp_path / name / f).read_bytes() for f in sorted(os.listdir(tmp_path / name))}

    first = build("a", 9)
    assert len(first) == 4  # two WARCs and their manifests
    assert build("b", 9) == first
    assert build("c", 10) != first


def test_a_file_does_not_depend_on_how_many_files_follow(tmp_path):
    one = make_corpus(str(tmp_path / "one"), files=1, captures=40, seed=2, hosts=20)
    two = make_corpus(str(tmp_path / "two"), files=2, captures=40, seed=2, hosts=20)
    assert Path(one[0]).read_bytes() == Path(two[0]).read_bytes()


@pytest.mark.parametrize("fmt, gz, suffix", [("warc", True, ".warc.gz"), ("warc", False, ".warc"),
                                              ("arc", True, ".arc.gz"), ("arc", False, ".arc")])
def test_file_names_and_return_value(tmp_path, fmt, gz, suffix):
    paths = make_corpus(str(tmp_path), files=3, captures=2, seed=7, fmt=fmt, gzip=gz)
    assert paths == [str(tmp_path / f"CORPUS-007-{n:05d}{suffix}") for n in range(3)]
    assert all(os.path.exists(p + ".manifest.jsonl") for p in paths)


def test_rejects_unknown_format(tmp_path):
    with pytest.raises(ValueError):
        make_corpus(str(tmp_path), fmt="cdx")


def test_manifest_tiles_the_file(variant):
    fmt, gz, paths = variant
    for path in paths:
        manifest = read_manifest(path)
        assert manifest[0]["warc_type"] == ("filedesc" if fmt == "arc" else "warcinfo")
        offset = 0
        for e in manifest:
            assert set(e) == MANIFEST_KEYS
            assert e["filename"] == os.path.basename(path)
            assert re.fullmatch(r"\d{14}", e["timestamp"])
            assert e["offset"] == offset
            offset += e["length"]
        assert offset == os.path.getsize(path)
        with open(path + ".manifest.jsonl") as fh:
            assert [json.loads(line) for line in fh] == manifest


def test_each_manifest_slice_is_exactly_one_record(variant):
    fmt, gz, paths = variant
    for path, e in entries(paths):
        with open(path, "rb") as fh:
            fh.seek(e["offset"])
            chunk = fh.read(e["length"])
        raw = gunzip_member(chunk) if gz else chunk
        assert raw.endswith(b"\r\n\r\n" if fmt == "warc" else b"\n")
        found = [(r.rec_type, r.rec_headers.get_header("WARC-Target-URI"),
                  r.rec_headers.get_header("WARC-Filename"))
                 for r in ArchiveIterator(io.BytesIO(raw), arc2warc=True)]
        assert len(found) == 1
        rec_type, uri, filename = found[0]
        assert rec_type == WARCIO_TYPE.get(e["warc_type"], e["warc_type"])
        if e["warc_type"] == "filedesc":
            assert e["url"] == "filedesc://" + filename
        else:
            assert (uri or "") == e["url"]


def test_iterating_the_whole_file_matches_the_manifest(variant):
    fmt, gz, paths = variant
    # uncompressed, warcio leaves the blank lines after a record out of its length
    separator = 0 if gz else len(b"\r\n\r\n" if fmt == "warc" else b"\n")
    for path in paths:
        manifest = read_manifest(path)
        found = records(path)
        assert len(found) == len(manifest)
        for (offset, length, _, _), e in zip(found, manifest):
            assert (offset, length + separator) == (e["offset"], e["length"])


def test_record_fields_match_the_manifest(variant):
    fmt, gz, paths = variant
    for path in paths:
        for (_, _, rec, _), e in zip(records(path), read_manifest(path)):
            assert re.sub(r"\D", "", rec.rec_headers.get_header("WARC-Date"))[:14] == e["timestamp"]
            if e["warc_type"] in ("response", "revisit"):
                assert rec.http_headers.get_statuscode() == e["status"]
                assert (rec.http_headers.get_header("Content-Type") or "-") == e["mime"]
            else:
                assert e["status"] == "-"
            if e["warc_type"] == "resource":
                assert rec.rec_headers.get_header("Content-Type") == e["mime"]


def test_payload_digests_match_recomputed_sha1(variant):
    fmt, gz, paths = variant
    for path in paths:
        manifest = read_manifest(path)
        by_id = {}
        for (_, _, rec, payload), e in zip(records(path), manifest):
            header = rec.rec_headers.get_header("WARC-Payload-Digest")
            assert (header is not None) == e["has_payload_digest"]
            if header:
                assert header == "sha1:" + e["digest"]
            by_id[rec.rec_headers.get_header("WARC-Record-ID")] = e
            if e["warc_type"] == "revisit":
                original = by_id[rec.rec_headers.get_header("WARC-Refers-To")]
                assert original["warc_type"] == "response"
                assert (original["digest"], original["url"]) == (
                    e["digest"], rec.rec_headers.get_header("WARC-Refers-To-Target-URI"))
            elif e["warc_type"] != "filedesc":  # warcio reads the ARC file header as headers
                assert sha1_b32(payload) == e["digest"]


def test_arc_file_header_digest_is_sha1_of_its_block(corpora):
    for path in corpora[("arc", False)]:
        e = read_manifest(path)[0]
        with open(path, "rb") as fh:
            line = fh.readline()
            block = fh.read(int(line.split()[-1]))
        assert sha1_b32(block) == e["digest"]


def test_arc_header_lines_carry_the_bare_mime_type(corpora):
    for path in corpora[("arc", True)]:
        with open(path, "rb") as fh:
            lines = [r.rec_headers.get_header("content-type") for r in ArchiveIterator(fh)]
        for line_mime, e in zip(lines[1:], read_manifest(path)[1:]):
            assert line_mime == (e["mime"].split(";")[0].strip() if e["mime"] != "-" else "no-type")


@pytest.mark.parametrize("gz", [True, False])
def test_warcio_verifies_block_and_payload_digests(corpora, gz):
    for path in corpora[("warc", gz)]:
        assert len(records(path, check_digests="raise")) == len(read_manifest(path))


@pytest.mark.parametrize("fmt", ["warc", "arc"])
def test_gzip_only_changes_the_framing(corpora, fmt):
    for packed, plain in zip(corpora[(fmt, True)], corpora[(fmt, False)]):
        # the file header names its own file, the one place the two may differ
        names = os.path.basename(packed), os.path.basename(plain)
        with open(packed, "rb") as fh:
            data = fh.read()
        members = b"".join(gunzip_member(data[e["offset"]:e["offset"] + e["length"]])
                           for e in read_manifest(packed))
        with open(plain, "rb") as fh:
            assert members.replace(names[0].encode(), names[1].encode(), 1) == fh.read()

        def facts(path):
            return [{k: v.replace(os.path.basename(path), "NAME") if k == "url" else v
                     for k, v in e.items() if k not in ("offset", "length", "filename")}
                    for e in read_manifest(path)]

        assert facts(packed) == facts(plain)


def test_arc_holds_the_same_captures_as_warc(corpora):
    for warc, arc in zip(corpora[("warc", True)], corpora[("arc", True)]):
        fetched = [(e["url"], e["timestamp"], e["status"], e["digest"])
                   for e in read_manifest(warc) if e["warc_type"] in ("response", "revisit")]
        assert len(fetched) == CAPTURES
        assert fetched == [(e["url"], e["timestamp"], e["status"], e["digest"])
                           for e in read_manifest(arc)[1:]]


def test_common_crawl_record_sequence(corpora):
    for path in corpora[("warc", True)]:
        types = [e["warc_type"] for e in read_manifest(path) if e["warc_type"] != "resource"]
        assert types[0] == "warcinfo"
        assert types[1:] == [t for e in types[2::3] for t in ("request", e, "metadata")]
        assert set(types[2::3]) == {"response", "revisit"}


def test_response_mix_occurs(warc_manifest):
    responses = [e for e in warc_manifest if e["warc_type"] == "response"]
    mimes = {e["mime"] for e in responses}
    statuses = {e["status"] for e in responses}
    assert any(e["warc_type"] == "revisit" for e in warc_manifest)
    assert any(not e["has_payload_digest"] for e in responses)
    assert "-" in mimes
    assert any(";" in m for m in mimes)
    assert any(m != m.lower() for m in mimes)
    assert {m.split(";")[0].lower() for m in mimes} >= {"text/html", "image/jpeg", "application/json"}
    assert statuses >= {"200", "404"} and statuses & {"301", "302"}
    resources = [e for e in warc_manifest if e["warc_type"] == "resource"]
    assert resources
    assert all(e["url"].startswith("dns:") or e["url"].endswith("/robots.txt") for e in resources)


def test_warc_header_mix_occurs(corpora):
    dates, identified = set(), set()
    for path in corpora[("warc", True)]:
        for _, _, rec, _ in records(path):
            dates.add(rec.rec_headers.get_header("WARC-Date"))
            identified.add(rec.rec_headers.get_header("WARC-Identified-Payload-Type"))
    assert any(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", d) for d in dates)
    assert any(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", d) for d in dates)
    assert identified - {None}


def test_url_mix_occurs(warc_manifest):
    urls = [urlsplit(e["url"]) for e in warc_manifest if e["warc_type"] == "request"]
    hosts = {u.hostname for u in urls}
    netlocs = {u.netloc for u in urls}
    assert {u.scheme for u in urls} == {"http", "https"}
    assert any(n.startswith("www.") for n in netlocs) and any(n.startswith("WWW.") for n in netlocs)
    assert any(n != n.lower() and not n.startswith("WWW.") for n in netlocs)
    assert any(u.port for u in urls)
    assert any("xn--" in h for h in hosts)
    assert len(hosts) > 50
    queries = [[kv.split("=")[0] for kv in u.query.split("&")] for u in urls if u.query]
    assert any(keys != sorted(keys) for keys in queries)
    assert any("%" in u.path + u.query for u in urls)
    assert any(u.path != u.path.lower() for u in urls)
    assert len({e["url"] for e in warc_manifest if e["warc_type"] == "request"}) < CAPTURES * FILES


def test_cli_prints_the_written_paths(tmp_path, capsys):
    out = tmp_path / "cli"
    assert main(["--out", str(out), "--files", "2", "--captures", "5", "--seed", "3", "--hosts", "10",
                 "--mean-kb", "4", "--format", "arc", "--no-gzip"]) == 0
    printed = capsys.readouterr().out.split()
    assert printed == [str(out / f"CORPUS-003-{n:05d}.arc") for n in range(2)]
    assert all(len(read_manifest(p)) == 6 for p in printed)


def test_webarchive_index_corpus_as_the_readme_writes_it(tmp_path, capsys):
    """`webarchive-index corpus --out DIR [--files 2] [--captures 1000]`: the same files as
    the module's own command line."""
    from webarchive_indexing import cli
    args = ["--files", "2", "--captures", "5", "--seed", "3", "--hosts", "10"]
    assert cli.main(["corpus", "--out", str(tmp_path / "cli"), *args]) == 0
    assert main(["--out", str(tmp_path / "module"), *args]) == 0
    printed = capsys.readouterr().out.split()
    assert [os.path.basename(p) for p in printed[:2]] == [os.path.basename(p) for p in printed[2:]]
    for name in map(os.path.basename, printed[:2]):
        assert (tmp_path / "cli" / name).read_bytes() == (tmp_path / "module" / name).read_bytes()
