"""WACZ's missing pieces (issue 25): a package made of a cluster, page titles, and a WACZ's
own index trusted (``--trust-wacz-index``) when its hashes check out."""
import gzip
import io
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from webarchive_indexing import cli
from webarchive_indexing.cdx.indexer import index_file
from webarchive_indexing.warc import pagetitle

REPO = Path(__file__).resolve().parent.parent
SAMPLES = ["example.warc.gz", "IAH-urls-wget.warc.gz", "CC-MAIN-2020-34-excerpt.warc.gz",
           "CC-MAIN-2024-22-whirlwind.warc.gz"]
BIN = Path(sys.executable).parent


def py_wacz(*args):
    done = subprocess.run([str(BIN / "wacz"), *map(str, args)], capture_output=True, text=True,
                          timeout=300)
    return done


def run(*args):
    return cli.main([*map(str, args), "--no-progress"])


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    """``warcs/`` (the sample WARCs), ``out/`` (their cluster, POST keys as a package's),
    and ``warcs.wacz`` (our package of the WARCs)."""
    root = tmp_path_factory.mktemp("samples")
    (root / "warcs").mkdir()
    for name in SAMPLES:
        shutil.copy(REPO / "samples" / name, root / "warcs" / name)
    assert run("build", root / "warcs", "-o", root / "out", "--post-append") == cli.EXIT_OK
    assert run("wacz", root / "warcs", "-o", root / "warcs.wacz") == cli.EXIT_OK
    return root


def entries(package):
    """Each entry of a package but its datapackage (which says when it was made): its bytes."""
    with zipfile.ZipFile(package) as zf:
        return {name: zf.read(name) for name in zf.namelist() if not name.startswith("datapackage")}


def resources(package):
    with zipfile.ZipFile(package) as zf:
        return sorted(json.loads(zf.read("datapackage.json"))["resources"],
                      key=lambda r: r["path"])


# -- a package of a cluster ---------------------------------------------------------------------

@pytest.mark.parametrize("where", ["out", "out/cluster", "out/cluster/cluster.idx"])
def test_a_package_of_a_cluster_is_the_package_of_its_warcs(samples, tmp_path, where):
    package = tmp_path / "cluster.wacz"
    assert run("wacz", samples / where, "-o", package, "--warc-prefix",
               samples / "warcs") == cli.EXIT_OK
    # the same index blocks, index.idx, pages (and titles) and WARC files, byte for byte
    ours, theirs = entries(package), entries(samples / "warcs.wacz")
    assert ours == theirs and len(ours) == len(SAMPLES) + 3
    assert resources(package) == resources(samples / "warcs.wacz")
    done = py_wacz("validate", "-f", package)
    assert done.returncode == 0 and "Validation succeeded" in done.stdout, done.stdout + done.stderr


def test_records_read_through_a_package_of_a_cluster(samples, tmp_path):
    """Each line of the package's index reads its record out of the package, as a reader of
    WACZ (ReplayWeb.page, pywb) reads it: the entry its filename names, at its offset; and
    our in-place indexing of the package finds the records the cluster holds."""
    package = tmp_path / "cluster.wacz"
    assert run("wacz", samples / "out", "-o", package, "--warc-prefix",
               samples / "warcs") == cli.EXIT_OK
    with zipfile.ZipFile(package) as zf:
        index = gzip.decompress(zf.read("indexes/index.cdx.gz")).decode().splitlines()
        for line in index:
            fields = json.loads(line.split(" ", 2)[2])
            data = zf.read("archive/" + fields["filename"])
            member = data[int(fields["offset"]):][:int(fields["length"])]
            record = next(ArchiveIterator(io.BytesIO(member)))
            assert record.rec_headers.get_header("WARC-Target-URI") == fields["url"]
    in_place = "".join(index_file(str(package), "cluster.wacz").lines).splitlines()
    assert sorted(json.loads(line.split(" ", 2)[2])["entry"] for line in in_place) == sorted(
        "archive/" + json.loads(line.split(" ", 2)[2])["filename"] for line in index
        if "__wb_method=" not in line)


def test_a_cluster_packed_without_warc_prefix_says_how(samples, tmp_path, capsys):
    package = tmp_path / "x.wacz"
    assert run("wacz", samples / "out", "-o", package) == cli.EXIT_USAGE
    assert "--warc-prefix" in capsys.readouterr().err and not package.exists()
    assert run("wacz", samples / "warcs", "-o", package, "--warc-prefix",
               samples / "warcs") == cli.EXIT_USAGE
    assert "with a cluster" in capsys.readouterr().err and not package.exists()
    assert run("wacz", samples / "out", samples / "warcs", "-o", package, "--warc-prefix",
               samples / "warcs") == cli.EXIT_USAGE
    assert "not of both" in capsys.readouterr().err and not package.exists()


def test_missing_or_other_archives_of_a_cluster_are_refused_before_writing(samples, tmp_path,
                                                                          capsys):
    partial = tmp_path / "partial"
    partial.mkdir()
    for name in SAMPLES[1:]:
        shutil.copy(samples / "warcs" / name, partial / name)
    package = tmp_path / "x.wacz"
    assert run("wacz", samples / "out", "-o", package, "--warc-prefix", partial) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert "example.warc.gz" in err and "not in --warc-prefix" in err and "Traceback" not in err
    assert not package.exists() and not list(tmp_path.glob(".wacz-*"))
    # a file of the name that is no WARC file
    (partial / "example.warc.gz").write_bytes(b"<html>not a WARC</html>")
    assert run("wacz", samples / "out", "-o", package, "--warc-prefix", partial) == cli.EXIT_USAGE
    assert "does not start as a WARC file" in capsys.readouterr().err and not package.exists()
    # a cluster of WACZ files: its lines name no WARC file
    waczs = tmp_path / "waczs"
    waczs.mkdir()
    shutil.copy(samples / "warcs.wacz", waczs / "a.wacz")
    assert run("build", waczs, "-o", tmp_path / "of-waczs") == cli.EXIT_OK
    assert run("wacz", tmp_path / "of-waczs", "-o", package, "--warc-prefix",
               waczs) == cli.EXIT_USAGE
    assert "a.wacz, which is no WARC file" in capsys.readouterr().err and not package.exists()


def test_names_of_a_cluster_never_lead_out_of_warc_prefix(samples, tmp_path, capsys):
    """A cluster (from someone else) whose lines name ``../secret.warc.gz``: not read."""
    (tmp_path / "secret.warc.gz").write_bytes((samples / "warcs" / SAMPLES[0]).read_bytes())
    line = gzip.decompress((samples / "out" / "cdx" / "example.cdx.gz").read_bytes())
    cdx = tmp_path / "evil.cdxj"
    cdx.write_bytes(line.replace(b'"filename": "example.warc.gz"',
                                 b'"filename": "../secret.warc.gz"'))
    assert b"../secret" in cdx.read_bytes()
    assert run("build", cdx, "-o", tmp_path / "evil") == cli.EXIT_OK
    package = tmp_path / "x.wacz"
    assert run("wacz", tmp_path / "evil", "-o", package, "--warc-prefix",
               samples / "warcs") == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert "'../secret.warc.gz' is not a name below" in err and not package.exists()


# -- page titles --------------------------------------------------------------------------------

def test_page_titles_are_those_py_wacz_finds(samples, tmp_path):
    """py-wacz (``wacz create --detect-pages --text``) titles a page by its HTML, read as
    UTF-8 (else it keeps the URL as the title, as for a page in GB2312): where it found a
    title, ours is the same; ours are found for more pages (a declared charset decoded)."""
    theirs = tmp_path / "theirs.wacz"
    done = py_wacz("create", "-o", theirs, "--detect-pages", "--text",
                   *[samples / "warcs" / name for name in SAMPLES])
    assert done.returncode == 0, done.stderr

    def titled(package):
        with zipfile.ZipFile(package) as zf:
            pages = [json.loads(line) for line in zf.read("pages/pages.jsonl").splitlines()[1:]]
        return {(p["url"], p["ts"]): p.get("title") for p in pages}

    ours, py = titled(samples / "warcs.wacz"), titled(theirs)
    found = {page: title for page, title in py.items() if title != page[0] and page in ours}
    assert len(found) >= 10
    assert {page: ours[page] for page in found} == found
    assert ours[("http://example.com/", "2017-03-06T04:02:06Z")] == "Example Domain"
    # a GB2312 page whose <meta> charset follows its title, which py-wacz cannot decode
    gb = ("http://096355.com/video/11073.html?11073-0-2", "2020-08-08T17:21:07Z")
    assert py[gb] == gb[0] and ours[gb].startswith("正在播放_")
    assert sum(1 for title in ours.values() if title) > len(found)


def record(payload, headers=(), compress=True):
    """A response record of ``payload`` (bytes) with the HTTP ``headers``, as a WARC file's
    bytes."""
    out = io.BytesIO()
    writer = WARCWriter(out, gzip=compress)
    http = StatusAndHeaders("200 OK", [("Content-Type", "text/html"), *headers],
                            protocol="HTTP/1.1")
    writer.write_record(writer.create_warc_record("http://example.com/", "response",
                                                  payload=io.BytesIO(payload),
                                                  http_headers=http))
    return out.getvalue()


@pytest.mark.parametrize("payload, headers, expected", [
    (b"<html><head><TITLE lang=en>\n A &amp; B\t&eacute;&#x263A; </TITLE>", (), "A & B é☺"),
    ("<title>Größe</title>".encode("utf-8"), (), "Größe"),
    ("<title>Größe</title>".encode("cp1252"), (), "Größe"),  # no charset, no UTF-8
    ("<title>Größe</title>".encode("utf-8"), [("Content-Type", "text/html; charset=ISO-8859-1")],
     "GrÃ¶ÃŸe"),  # as declared, as a browser decodes it (Windows-1252)
    ("<title>正在</title><meta charset='gbk'>".encode("gbk"), (), "正在"),
    ("<title>正在</title><meta charset='x-no-such'>".encode("utf-8"), (), "正在"),
    (b"<title>   </title>", (), None),
    (b"<title>never closed", (), None),
    (b"x" * (pagetitle.PAGE_BYTES + 10) + b"<title>too far</title>", (), None),
])
def test_a_title_of_a_payload(payload, headers, expected):
    content_type = dict(headers).get("Content-Type", "text/html")
    assert pagetitle.title_of_payload(payload, content_type) == expected
    if headers:
        return
    assert pagetitle.title_of_record(record(payload)) == expected


@pytest.mark.parametrize("encoding, expected", [
    ("gzip", "Squeezed"), ("br", "Squeezed"), ("deflate", "Squeezed"),
    ("zstd", None),  # which warcio does not undo: no title, not a garbled one
])
def test_a_title_of_an_encoded_payload(encoding, expected):
    import brotli
    import zlib
    page = b"<html><head><title>Squeezed</title></head>" + b"<p>words</p>" * 500
    body = {"gzip": gzip.compress, "br": brotli.compress, "deflate": zlib.compress,
            "zstd": lambda data: b"\x28\xb5\x2f\xfd" + data}[encoding](page)
    assert pagetitle.title_of_record(record(body, [("Content-Encoding", encoding)])) == expected


def test_a_title_reads_a_bounded_piece_of_the_record(tmp_path, monkeypatch):
    """Of a 1 MB page, one ranged read of READ_BYTES; a record cut there still gives its
    title; a record that is no record gives none."""
    page = b"<title>Big</title>" + os.urandom(500_000).hex().encode()
    warc = tmp_path / "big.warc.gz"
    data = record(page, compress=True)
    warc.write_bytes(data)
    reads = []
    real = pagetitle.storage.read_range
    monkeypatch.setattr(pagetitle.storage, "read_range",
                        lambda *args: reads.append(args) or real(*args))
    assert pagetitle.title(str(warc), 0, len(data)) == "Big"
    assert reads == [(str(warc), 0, pagetitle.READ_BYTES)] and len(data) > pagetitle.READ_BYTES
    assert pagetitle.title_of_record(b"\x1f\x8b\x08garbage") is None
    assert pagetitle.title_of_record(record(page, compress=False)[:3000]) == "Big"
