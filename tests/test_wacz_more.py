"""WACZ's missing pieces (issue 25): a package made of a cluster, page titles, and a WACZ's
own index trusted (``--trust-wacz-index``) when its hashes check out."""
import gzip
import hashlib
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


def test_no_page_titles_lists_the_same_pages_untitled(samples, tmp_path):
    untitled = tmp_path / "untitled.wacz"
    assert run("wacz", samples / "warcs", "-o", untitled, "--no-page-titles") == cli.EXIT_OK

    def pages(package):
        with zipfile.ZipFile(package) as zf:
            return [json.loads(line) for line in zf.read("pages/pages.jsonl").splitlines()[1:]]

    titled = pages(samples / "warcs.wacz")
    assert sum("title" in page for page in titled) > 10
    assert pages(untitled) == [{k: v for k, v in page.items() if k != "title"} for page in titled]


def test_titles_read_in_many_tasks_come_in_order(samples, tmp_path, monkeypatch):
    """The titles are read by a pool, a batch of pages a task: with batches of 3 (many
    tasks, many waiting), the pages and titles of the package are the same, in order."""
    from webarchive_indexing.commands import wacz as wacz_command
    monkeypatch.setattr(wacz_command._Titles, "BATCH", 3)
    small = tmp_path / "small-batches.wacz"
    assert run("wacz", samples / "warcs", "-o", small, "--workers", "2") == cli.EXIT_OK
    with zipfile.ZipFile(small) as ours, zipfile.ZipFile(samples / "warcs.wacz") as whole:
        pages = ours.read("pages/pages.jsonl")
        assert pages == whole.read("pages/pages.jsonl") and pages.count(b'"title"') > 10


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


# -- a WACZ's own index, trusted (--trust-wacz-index) ---------------------------------------------

@pytest.fixture(scope="module")
def py_packs(tmp_path_factory):
    """py-wacz's packages (``wacz create``, its compressed index): of the samples, and of a
    WARC with POST captures."""
    root = tmp_path_factory.mktemp("py-wacz")
    for name in SAMPLES:
        shutil.copy(REPO / "samples" / name, root / name)
    post = REPO / "tests" / "data" / "real" / "webrecorder+cdxj-indexer__post-test-more.warc"
    shutil.copy(post, root / "post.warc")
    for package, warcs in (("samples.wacz", SAMPLES), ("post.wacz", ["post.warc"])):
        done = py_wacz("create", "-o", root / package, *[root / name for name in warcs])
        assert done.returncode == 0, done.stderr
    return root


def lines_of(path, post_append=False, trust=True, fmt="cdxj"):
    result = index_file(str(path), Path(path).name, fmt, post_append=post_append,
                        trust_wacz_index=trust)
    assert not result.errors, result.errors
    return result


def fields(lines):
    return [(line.split(" ", 2)[:2], json.loads(line.split(" ", 2)[2])) for line in lines]


# What py-wacz's index (cdxj-indexer's lines) says otherwise than pywb's indexer (ours, in
# place): a field by the kind of record. pywb writes "mime-detected" (the WARC's
# WARC-Identified-Payload-Type) and no status for a revisit; cdxj-indexer has no
# "mime-detected", a revisit's status, and for a metadata record the digest of its block
# where pywb has the digest of its payload (here the same as its block but computed).
def _differing(ours, theirs):
    ours, theirs = dict(ours), dict(theirs)
    ours.pop("mime-detected", None)
    if theirs["mime"] == "warc/revisit":
        theirs.pop("status")
    if theirs["url"].startswith("metadata://"):
        ours.pop("digest"), theirs.pop("digest")
    return ours, theirs


@pytest.mark.parametrize("post_append", [False, True])
def test_a_trusted_index_gives_the_lines_of_in_place_indexing(py_packs, post_append):
    package = py_packs / "samples.wacz"
    trusted = lines_of(package, post_append)
    assert not trusted.warnings and trusted.records == len(trusted.lines) > 30
    in_place = lines_of(package, post_append, trust=False)
    assert len(trusted.lines) == len(in_place.lines)
    differ = 0
    for (head, theirs), (our_head, ours) in zip(fields(trusted.lines), fields(in_place.lines)):
        assert head == our_head and list(theirs)[-2:] == ["filename", "entry"]
        differ += ours != theirs
        assert _differing(ours, theirs)[0] == _differing(ours, theirs)[1]
    assert differ  # the differences are there, and are only those said
    # as CDX11, which has no mime-detected: the same lines but the revisit's and metadata's
    cdx11 = lines_of(package, post_append, fmt="cdx11").lines
    same = set(cdx11) & set(lines_of(package, post_append, trust=False, fmt="cdx11").lines)
    assert len(same) == len(cdx11) - 4


def test_a_trusted_index_keys_post_captures_as_in_place_indexing(py_packs):
    """POST captures keyed by their body with --post-append, by their URL without; py-wacz
    keys a chunked body pywb does not read (tests/test_wacz_out.py) by its body."""
    package = py_packs / "post.wacz"
    for post_append in (False, True):
        trusted = lines_of(package, post_append).lines
        in_place = lines_of(package, post_append, trust=False).lines
        differ = [pair for pair in zip(trusted, in_place) if pair[0] != pair[1]]
        assert len(differ) == (1 if post_append else 0), differ
        if post_append:
            assert "__wb_post_data=" in differ[0][0] and '"requestBody"' in differ[0][0]
        assert any("__wb_method=post" in line for line in trusted) == post_append


def repack(source, target, change=lambda name, data: data, rehash=False):
    """``source`` written again as ``target``, each entry's data as ``change`` makes it
    (None: left out); with ``rehash`` its datapackage made again to fit."""
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
        package = json.loads(old.read("datapackage.json"))
        kept = {}
        for info in old.infolist():
            data = change(info.filename, old.read(info))
            if data is not None and not info.filename.startswith("datapackage"):
                kept[info.filename] = data
                new.writestr(info, data)
        if rehash:
            package["resources"] = [
                {"name": name.rsplit("/", 1)[-1], "path": name, "bytes": len(data),
                 "hash": "sha256:" + hashlib.sha256(data).hexdigest()}
                for name, data in kept.items()]
        # the digest is of the datapackage as it is made, before ``change``
        made = json.dumps(package).encode()
        data = change("datapackage.json", made)
        if data is not None:
            new.writestr("datapackage.json", data)
        digest = change("datapackage-digest.json", json.dumps(
            {"path": "datapackage.json", "hash": "sha256:" + hashlib.sha256(made).hexdigest()}
        ).encode())
        if digest is not None:
            new.writestr("datapackage-digest.json", digest)
    return target


def _flip_last(data):
    return data[:-1] + bytes([data[-1] ^ 1])


def _wrong_hash(data):
    package = json.loads(data)
    for resource in package["resources"]:
        if resource["path"] == "archive/example.warc.gz":
            resource["hash"] = "sha256:" + "0" * 64
    return json.dumps(package).encode()


def _as_cdx11(data):
    lines = gzip.decompress(data).decode().splitlines()
    return gzip.compress("".join(
        f"{k} {t} {json.loads(j)['url']} - - - - - 1 2 x\n"
        for k, t, j in (line.split(" ", 2) for line in lines)).encode())


@pytest.mark.parametrize("change, rehash, why", [
    (lambda n, d: _flip_last(d) if n == "archive/example.warc.gz" else d, False,
     "archive/example.warc.gz has not the sha256 hash (or size) its datapackage.json says"),
    (lambda n, d: d.replace(b'"bytes": 3816', b'"bytes": 3817') if n == "datapackage.json"
     else d, False, "its datapackage.json has not the hash its datapackage-digest.json says"),
    (lambda n, d: (None if n == "datapackage-digest.json" else
                   _wrong_hash(d) if n == "datapackage.json" else d),
     False, "archive/example.warc.gz has not the sha256 hash (or size) its datapackage.json says"),
    (lambda n, d: None if n == "datapackage.json" else d, False, "it has no datapackage.json"),
    (lambda n, d: None if n.startswith("indexes/") else d, True, "it has no index of its own"),
    (lambda n, d: _as_cdx11(d) if n == "indexes/index.cdx.gz" else d, True,
     "line 1 of its indexes/index.cdx.gz is not a CDXJ line"),
    (lambda n, d: d[:len(d) // 2] if n == "indexes/index.cdx.gz" else d, True,
     "its indexes/index.cdx.gz cannot be read"),
    (lambda n, d: (None if n == "datapackage-digest.json" else
                   d.replace(b"sha256:", b"sha1:") if n == "datapackage.json" else d), False,
     "a hash of a kind not checked here"),
])
def test_an_index_that_does_not_check_out_is_not_taken_and_said(py_packs, tmp_path, change,
                                                                rehash, why):
    bad = repack(py_packs / "samples.wacz", tmp_path / "bad.wacz", change, rehash)
    result = index_file(str(bad), "bad.wacz", trust_wacz_index=True)
    said = [message for _, message in result.warnings if "--trust-wacz-index" in message]
    assert len(said) == 1 and why in said[0] and "WARC files are read instead" in said[0], said
    # the WARC files were read: the lines in-place indexing finds (of what is readable)
    assert result.lines == index_file(str(bad), "bad.wacz").lines


def test_bytes_changed_in_place_are_not_trusted(py_packs, tmp_path):
    """A byte of a WARC entry changed in the file itself (its ZIP CRC no longer its bytes'):
    the index is not taken, said, and the records are read as without the option; a ZIP
    that is no WACZ is the walk's error, as without it."""
    from webarchive_indexing.warc import wacz
    data = bytearray((py_packs / "samples.wacz").read_bytes())
    with open(py_packs / "samples.wacz", "rb") as fh:
        entry = next(e for e in wacz.archive_entries(fh, "x")[0]
                     if e.name == "archive/CC-MAIN-2020-34-excerpt.warc.gz")
    data[entry.start + entry.size // 2] ^= 1
    rotten = tmp_path / "rotten.wacz"
    rotten.write_bytes(bytes(data))
    result = index_file(str(rotten), "rotten.wacz", trust_wacz_index=True)
    said = [message for _, message in result.warnings if "--trust-wacz-index" in message]
    assert len(said) == 1 and "cannot be read" in said[0], result.warnings
    assert result.lines == index_file(str(rotten), "rotten.wacz").lines and result.lines
    nozip = tmp_path / "no.wacz"
    with zipfile.ZipFile(nozip, "w") as zf:
        zf.writestr("hello.txt", "no archive/")
    trusted, plain = (index_file(str(nozip), "no.wacz", trust_wacz_index=trust)
                      for trust in (True, False))
    assert [str(e) for e in trusted.errors] == [str(e) for e in plain.errors] != []
    assert not trusted.warnings


def test_the_hashes_checked_are_those_of_the_package_as_written(py_packs, tmp_path):
    """The checks above can pass: a package repacked unchanged (and one with its datapackage
    made again) is trusted."""
    for rehash in (False, True):
        same = repack(py_packs / "samples.wacz", tmp_path / f"same-{rehash}.wacz", rehash=rehash)
        result = index_file(str(same), "samples.wacz", trust_wacz_index=True)
        assert not result.warnings and not result.errors
        assert result.lines == lines_of(py_packs / "samples.wacz").lines


def test_build_and_cdx_take_a_trusted_index(py_packs, tmp_path, capsys):
    waczs = tmp_path / "waczs"
    waczs.mkdir()
    shutil.copy(py_packs / "samples.wacz", waczs / "good.wacz")
    repack(py_packs / "samples.wacz", waczs / "bad.wacz",
           lambda n, d: _flip_last(d) if n == "archive/example.warc.gz" else d)
    assert run("build", waczs, "-o", tmp_path / "out", "--trust-wacz-index",
               "--on-error", "skip") == cli.EXIT_PARTIAL
    err = capsys.readouterr().err
    assert "bad.wacz" in err and "its own index is not taken" in err and "good.wacz: " not in err
    good = gzip.decompress((tmp_path / "out" / "cdx" / "good.wacz.cdx.gz").read_bytes()).decode()
    assert good.splitlines() == "".join(lines_of(waczs / "good.wacz").lines).splitlines()
    # mrjob's jobs are handed the option too
    (tmp_path / "one").mkdir()
    shutil.copy(waczs / "good.wacz", tmp_path / "one" / "good.wacz")
    assert run("build", tmp_path / "one", "-o", tmp_path / "inline", "--trust-wacz-index",
               "--runner", "inline") == cli.EXIT_OK
    assert gzip.decompress((tmp_path / "inline" / "cdx" / "good.wacz.cdx.gz").read_bytes()
                           ).decode() == good
    assert cli.main(["cdx", str(waczs / "good.wacz"), "--trust-wacz-index"]) == cli.EXIT_OK
    assert capsys.readouterr().out == good
    assert cli.main(["cdx", str(waczs / "good.wacz"), "--no-trust-wacz-index"]) == cli.EXIT_OK
    assert capsys.readouterr().out == "".join(lines_of(waczs / "good.wacz", trust=False).lines)


def test_a_wacz_index_with_post_keys_comes_in_place_with_its_entry(py_packs):
    """In-place indexing with --post-append names each line's ZIP entry (as without)."""
    for post_append in (False, True):
        lines = lines_of(py_packs / "samples.wacz", post_append, trust=False).lines
        assert all(line.endswith('"}\n') and '"entry": "archive/' in line for line in lines)


def test_our_own_package_trusted_is_in_place_indexing_byte_for_byte(samples, tmp_path):
    """Our packages' index has pywb's lines: taken, they are the lines read in place (POST
    keys too, with and without --post-append)."""
    post = tmp_path / "post.warc"
    shutil.copy(REPO / "tests" / "data" / "real" / "webrecorder+cdxj-indexer__post-test-more.warc",
                post)
    assert run("wacz", post, "-o", tmp_path / "post.wacz") == cli.EXIT_OK
    for package in (samples / "warcs.wacz", tmp_path / "post.wacz"):
        for post_append in (False, True):
            trusted = lines_of(package, post_append)
            assert not trusted.warnings
            assert trusted.lines == lines_of(package, post_append, trust=False).lines


def members_of(directory):
    """The gzip members a copy wrote (as its .cdxj files list them), sorted."""
    members = []
    for cdxj in Path(directory).glob("*.cdxj"):
        data = cdxj.with_suffix(".warc.gz").read_bytes()
        for line in cdxj.read_text().splitlines():
            found = json.loads(line.split(" ", 2)[2])
            members.append(data[int(found["offset"]):][:int(found["length"])])
    return sorted(members)


def test_copy_reads_through_a_package_of_a_cluster_its_index_trusted(samples, tmp_path, capsys):
    """A package made of a cluster, built as a WACZ input with its own index taken: ``copy``
    extracts from it the records, gzip member for gzip member, it extracts from the WARCs."""
    (tmp_path / "packages").mkdir()
    package = tmp_path / "packages" / "cluster.wacz"
    assert run("wacz", samples / "out", "-o", package, "--warc-prefix",
               samples / "warcs") == cli.EXIT_OK
    assert run("build", tmp_path / "packages", "-o", tmp_path / "of-package",
               "--trust-wacz-index", "--post-append") == cli.EXIT_OK
    assert "not taken" not in capsys.readouterr().err
    for cluster, prefix, copied in ((tmp_path / "of-package", tmp_path / "packages", "from-wacz"),
                                    (samples / "out", samples / "warcs", "from-warcs")):
        assert cli.main(["copy", "copy", str(cluster), "--domains", "example.com,archive.org",
                         "-o", str(tmp_path / copied), "--warc-prefix", str(prefix),
                         "--no-progress"]) == cli.EXIT_OK
    members = members_of(tmp_path / "from-wacz")
    assert len(members) > 10 and members == members_of(tmp_path / "from-warcs")


def test_a_trusted_index_over_http(py_packs):
    """A WACZ on a web server: its hashes checked (every byte of it read, in ranges) and its
    index read; the lines those of the local file."""
    import rangeserver
    local = lines_of(py_packs / "samples.wacz")
    size = (py_packs / "samples.wacz").stat().st_size
    with rangeserver.serving(py_packs) as web:
        remote = index_file(web.url + "/samples.wacz", "samples.wacz", trust_wacz_index=True)
        spans = [[int(n) for n in r[2].removeprefix("bytes=").split("-")]
                 for r in web.requests if r[2]]
    assert not remote.warnings and not remote.errors and remote.lines == local.lines
    covered = set()
    for start, end in spans:
        covered.update(range(start, end + 1))
    assert len(covered) == size
