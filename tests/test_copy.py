"""``webarchive-index copy``, ``jobs/remote_copy.py`` and ``scripts/runremotecopy.sh``:
captures of some domains and URL prefixes copied out of a collection into new WARC files.

The collection: a generated corpus (``corpus.py``, with its ground-truth manifests) and a
WARC of look-alike hosts written here (example.com, www. and a.b. subdomains, a port,
examples.com, myexample.com, example.com.au, example-foo.com, ...) with its own manifest,
indexed into a cluster by ``build``; on disk, in moto's S3 server on 127.0.0.1, and behind
a proxy that breaks requests. Checked against the manifests (brute force, not the index):

* ``check``: captures, WARC files and bytes per input and in total;
* every selected record copied exactly once, byte-identical to its gzip member in the
  source, in outputs that warcio reads, each starting with a warcinfo record, whose
  ``.cdxj`` is what pywb's indexer writes for them and points at the right records;
* through random 503s, dropped connections and truncated bodies; killed and rerun;
  a missing source archive reported, then copied by a rerun; the job on mrjob's inline
  and local runners, Spark, the launcher (inline and real Hadoop's local job runner).
"""
import collections
import contextlib
import gzip
import io
import json
import logging
import os
import signal
import shutil
import subprocess
import sys
import time
import zlib
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

import faultproxy
import hadoop_local
import rangeserver
import s3server
from helpers import REAL, pywb_cdx
from webarchive_indexing import cli, copy, storage
from webarchive_indexing.commands.copy import copy_chunks
from webarchive_indexing.storage import s3 as s3_storage
from webarchive_indexing.cdx.cdxline import Location, location
from webarchive_indexing.commands.corpus import make_corpus, read_manifest
from webarchive_indexing.jobs.remote_copy import RemoteCopyJob
from webarchive_indexing.commands.build import build
from webarchive_indexing.engines import open_engine
from webarchive_indexing.engines.mrjob_engine import run_job
from webarchive_indexing.options import BuildOptions, CopyOptions
from webarchive_indexing.util.progress import Progress
from webarchive_indexing.zipnum.reader import open_cluster

REPO = Path(__file__).resolve().parents[1]
INDEXED = ("response", "revisit", "resource")  # what the index holds (and warcinfo, request,
#                                                 warc-fields metadata it does not)
LOOKALIKE = "LOOKALIKE-00000.warc.gz"
LOOKALIKE_HOSTS = ("example.com", "www.example.com", "a.b.example.com", "WWW.Example.COM:8080",
                   "examples.com", "www.examples.com", "example.com.au", "myexample.com",
                   "example-foo.com", "example.co", "sub.example.org")
LOOKALIKE_PATHS = ("/", "/a", "/about", "/A/b", "/b?x=1", "/z/a")


# -- the collection ---------------------------------------------------------------------------

def write_lookalikes(path):
    """A WARC of look-alike hosts, one gzip member a record, and its manifest (as corpus.py's)."""
    entries = []
    with open(path, "wb") as fh:
        writer = WARCWriter(fh, gzip=True)

        def write(record, url):
            offset = fh.tell()
            writer.write_record(record)
            entries.append({"warc_type": record.rec_type, "url": url, "offset": offset,
                            "length": fh.tell() - offset, "filename": os.path.basename(path)})

        write(writer.create_warcinfo_record(os.path.basename(path), {"software": "test"}), None)
        n = 0
        for host in LOOKALIKE_HOSTS:
            for page in LOOKALIKE_PATHS:
                n += 1
                url = f"http://{host}{page}"
                body = f"<html>{url} {n}</html>".encode()
                http = StatusAndHeaders("200 OK", [("Content-Type", "text/html"),
                                                   ("Content-Length", str(len(body)))],
                                        protocol="HTTP/1.1")
                date = f"2024-05-01T00:{n // 60:02d}:{n % 60:02d}Z"
                request = writer.create_warc_record(
                    url, "request", payload=io.BytesIO(f"GET {page} HTTP/1.1\r\n\r\n".encode()),
                    warc_headers_dict={"WARC-Date": date})
                write(request, url)
                write(writer.create_warc_record(url, "response", payload=io.BytesIO(body),
                                                http_headers=http,
                                                warc_headers_dict={"WARC-Date": date}), url)
                if page == "/":  # a revisit, and metadata that is not indexed
                    write(writer.create_warc_record(
                        url, "revisit", payload=io.BytesIO(b""),
                        http_headers=StatusAndHeaders("200 OK", [], protocol="HTTP/1.1"),
                        warc_headers_dict={"WARC-Date": date.replace("2024", "2025"),
                                           "WARC-Refers-To-Target-URI": url,
                                           "WARC-Profile": "http://netpreserve.org/warc/1.0/"
                                                           "revisit/identical-payload-digest"}),
                          url)
                    write(writer.create_warc_record(
                        url, "metadata", payload=io.BytesIO(b"via: x\r\n"),
                        warc_content_type="application/warc-fields",
                        warc_headers_dict={"WARC-Date": date}), url)
        dns = "dns:example.com"
        write(writer.create_warc_record(
            dns, "resource", payload=io.BytesIO(b"example.com. 1.2.3.4"),
            warc_content_type="text/dns", warc_headers_dict={"WARC-Date": "2024-05-01T01:00:00Z"}),
            dns)
    with open(str(path) + ".manifest.jsonl", "w") as fh:
        fh.writelines(json.dumps(e) + "\n" for e in entries)


@pytest.fixture(scope="module")
def collection(tmp_path_factory):
    """Archives under crawl/ (with manifests beside them), and their cluster in index/."""
    root = tmp_path_factory.mktemp("copy")
    crawl = root / "crawl"
    make_corpus(crawl / "seg-a", files=2, captures=150, seed=61, hosts=25, mean_kb=2)
    (crawl / "seg-b").mkdir()
    write_lookalikes(crawl / "seg-b" / LOOKALIKE)
    summary = build([str(crawl)], str(root / "index"), BuildOptions(shards=3, lines_per_block=20,
                                                                    runner="inline"))
    assert summary.published and not summary.errors
    manifest = []
    for archive in sorted(crawl.rglob("*.warc.gz")):
        name = str(archive.relative_to(crawl))
        manifest += [dict(e, filename=name) for e in read_manifest(str(archive))]
    return {"root": root, "crawl": crawl, "index": root / "index", "manifest": manifest}


@pytest.fixture(scope="module")
def domains(collection):
    """Inputs for the tests: look-alike domains, prefixes, and the two biggest .com/.org/.net
    domains of the corpus."""
    counts = collections.Counter()
    for entry in collection["manifest"]:
        host = host_of(entry["url"])
        if host and host.endswith((".com", ".org", ".net")) and "example" not in host:
            counts[".".join(host.split(".")[-2:])] += 1
    big = [d for d, _ in counts.most_common(2)]
    assert len(big) == 2
    return ["example.com", "*.examples.com", "example.com/a*", "http://www.examples.com/about",
            *big]


@pytest.fixture(scope="module")
def s3(collection):
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    with s3server.running() as endpoint:
        bucket = s3server.new_bucket()
        s3server.upload_tree(collection["crawl"], bucket + "/crawl")
        # the cluster without its .loc: the shards are found beside the index
        cluster = collection["index"] / "cluster"
        for path in sorted(cluster.rglob("*")):
            if path.is_file() and path.name != "cluster.loc":
                storage.write_atomic(f"{bucket}/index/cluster/{path.relative_to(cluster)}",
                                     path.read_bytes())
        yield {"endpoint": endpoint, "bucket": bucket, "crawl": bucket + "/crawl/",
               "cluster": bucket + "/index"}


# -- brute force over the manifests -----------------------------------------------------------

def host_of(url):
    return urlsplit(url).hostname if url and "://" in url else None


def selects(text, url):
    """Whether the selection input ``text`` takes the capture of ``url``: by its host name
    (and path), not by SURT keys. Prefixes here are those of the look-alike WARC only."""
    host = host_of(url)
    if host is None:
        return False
    if "/" not in text and not text.endswith("*"):
        domain = text.removeprefix("*.")
        return host == domain or host.endswith("." + domain)
    parts = urlsplit(text if "://" in text else "http://" + text)
    want_host = parts.hostname.removeprefix("www.")
    want_path = parts.path.rstrip("*").lower()
    got = urlsplit(url)
    return (host.removeprefix("www.") == want_host and got.port is None
            and got.path.lower().startswith(want_path))


def expected(collection, inputs):
    """Per input and in total: the manifest entries of indexed records each selects."""
    records = [e for e in collection["manifest"] if e["warc_type"] in INDEXED]
    per_input = [[e for e in records if selects(t, e["url"])] for t in inputs]
    total = [e for e in records if any(selects(t, e["url"]) for t in inputs)]
    return per_input, total


def numbers(entries):
    return {"captures": len(entries), "warc_files": len({e["filename"] for e in entries}),
            "bytes": sum(e["length"] for e in entries), "arc_captures": 0}


def index_lines(collection):
    """Every line of the cluster, from its shards."""
    lines = []
    for shard in sorted((collection["index"] / "cluster").glob("build-*/cdx-*.gz")):
        data = shard.read_bytes()
        lines += gzip.decompress(data).splitlines(True) if data else []
    return lines


def source_member(collection, entry):
    with open(collection["crawl"] / entry["filename"], "rb") as fh:
        fh.seek(entry["offset"])
        return fh.read(entry["length"])


# -- what a copy wrote ------------------------------------------------------------------------

def members(data):
    """The gzip members of a file, as they are."""
    out, pos = [], 0
    while pos < len(data):
        inflate = zlib.decompressobj(wbits=31)
        inflate.decompress(data[pos:])
        assert inflate.eof, f"a cut member at {pos}"
        end = len(data) - len(inflate.unused_data)
        out.append(data[pos:end])
        pos = end
    return out


def read_output(out):
    """{name: bytes} of every file directly in a copy's output (local or s3://)."""
    if str(out).startswith("s3://"):
        return {k: v for k, v in s3server.objects(str(out)).items() if "/" not in k}
    return {p.name: p.read_bytes() for p in Path(out).iterdir() if p.is_file()}


def verify_copy(collection, files, inputs, records_per_file, tmp_path, cluster=None):
    """Everything selected copied exactly once, byte for byte, in index order; readable
    outputs with a warcinfo first; each .cdxj what pywb writes, pointing at its records."""
    _, total = expected(collection, inputs)
    sources = collections.Counter(source_member(collection, e) for e in total)
    assert len(sources) == len(total)  # no two records alike: copies are told apart
    warcs = sorted(n for n in files if n.endswith(".warc.gz"))
    assert warcs and not [n for n in files if n.endswith(".failures.json")]
    assert not [n for n in files if ".tmp" in n]
    copied = collections.Counter()
    in_order = []
    for name in warcs:
        data = files[name]
        found = members(data)
        assert 1 < len(found) <= records_per_file + 1
        copied.update(found[1:])
        records = list(ArchiveIterator(io.BytesIO(data)))
        assert len(records) == len(found)
        assert records[0].rec_type == "warcinfo"
        info = dict(line.split(": ", 1) for line in
                    ArchiveIterator(io.BytesIO(data)).__next__().content_stream().read()
                    .decode().splitlines() if line)
        assert info["selection"] == ", ".join(inputs) and info["software"].startswith("webarchive")
        if cluster:
            assert info["source-cluster"] == cluster
        # the index: pywb's, and each line's offset/length is the record it names
        cdxj = files[name[:-len(".warc.gz")] + ".cdxj"].decode()
        local = tmp_path / name
        local.write_bytes(data)
        assert cdxj == pywb_cdx(str(local), "cdxj", name)
        assert len(cdxj.splitlines()) == len(found) - 1
        for line in cdxj.splitlines():
            fields = json.loads(line.split(" ", 2)[2])
            member = data[int(fields["offset"]):int(fields["offset"]) + int(fields["length"])]
            assert member in sources and fields["filename"] == name
            record = next(ArchiveIterator(io.BytesIO(member)))
            assert record.rec_headers.get_header("WARC-Target-URI") == fields["url"]
        in_order += found[1:]
    assert copied == sources, (len(copied), len(sources))  # every record, exactly once
    # in index order: output files in name order, records in each in that order
    entry_of = {source_member(collection, e): e for e in total}
    line_at = {}
    for line in index_lines(collection):
        fields = json.loads(line.split(b" ", 2)[2])
        line_at[fields["filename"], int(fields["offset"])] = line
    lines = [line_at[entry_of[m]["filename"], entry_of[m]["offset"]] for m in in_order]
    assert lines == sorted(lines)


def copy_args(cluster, inputs, out, prefix, *more):
    return ["copy", "copy", str(cluster), "--domains", ",".join(inputs), "-o", str(out),
            "--warc-prefix", str(prefix), "--no-progress", *more]


# -- selection --------------------------------------------------------------------------------

def test_selection_syntax():
    [domain, star, prefix, www, url, host_port] = copy.parse_selection(
        ["example.com", "*.example.com", "example.com/path", "www.example.com/*",
         "https://Example.com/A*", "example.com:8080"])
    assert (domain.kind, star.kind, prefix.kind, www.kind, url.kind) == (
        "domain", "domain", "prefix", "prefix", "prefix")
    assert domain.ranges == star.ranges == (("com,example)/", "com,example-"),
                                            ("com,example:", "com,example;"))
    assert prefix.ranges == (("com,example)/path", "com,example)/pati"),)
    assert www.ranges == (("com,example)/", "com,example)0"),)
    assert url.ranges == (("com,example)/a", "com,example)/b"),)
    assert host_port.ranges[0] == ("com,example:8080)/", "com,example:8080-")
    [port_prefix] = copy.parse_selection(["example.com:8080/x"])
    assert port_prefix.ranges == (("com,example:8080)/x", "com,example:8080)/y"),)
    for line, selected in ((b"com,example)/ 2024", True), (b"com,example,a,b)/x 2024", True),
                           (b"com,example:8080)/ 2024", True), (b"com,examples)/ 2024", False),
                           (b"com,example-foo)/ 2024", False), (b"au,com,example)/ 2024", False)):
        assert domain.covers(line) is selected, line
    # an IP address is a host (it has no subdomains)
    [ip] = copy.parse_selection(["1.2.3.4"])
    assert ip.covers(b"4,3,2,1)/ 2024") and not ip.covers(b"4,3,2,1,5)/ 2024")
    # duplicates and blanks dropped; overlaps merged into disjoint groups
    inputs = copy.parse_selection(["example.com", " ", "example.com", "example.com/a*",
                                   "examples.com"])
    assert [i.text for i in inputs] == ["example.com", "example.com/a*", "examples.com"]
    groups = copy.merge_ranges(inputs)
    assert [(g.start, g.end, sorted(g.members)) for g in groups] == [
        ("com,example)/", "com,example-", [0, 1]), ("com,example:", "com,example;", [0]),
        ("com,examples)/", "com,examples-", [2]), ("com,examples:", "com,examples;", [2])]
    for bad, says in (("exa mple.com", "white space"), ("a*b.com", "may only end"),
                      ("*.example.com/x", "takes a host name"), ("*.", "takes a host name")):
        with pytest.raises(copy.SelectionError, match=says):
            copy.parse_input(bad)


def test_check_member():
    member = gzip.compress(b"WARC/1.0\r\nWARC-Type: response\r\n\r\n")
    assert copy.check_member(member, len(member)) == member
    for data, length, says in ((member[:-3], len(member), "short read"),
                               (member[:-4] + b"\xff\0\0\0", len(member), "incorrect length check"),
                               (member[:-8] + b"\0\0\0\0" + member[-4:], len(member), "corrupt"),
                               (member + member, 2 * len(member), "more than one gzip member"),
                               (gzip.compress(b"<html>"), len(gzip.compress(b"<html>")),
                                "does not hold a WARC record")):
        with pytest.raises(copy.Failed, match=says):
            copy.check_member(data, length)
    arc = gzip.compress(b"http://example.com/ 1.2.3.4 20240101000000 text/html 5\nhello")
    with pytest.raises(copy.Failed, match="ARC record") as failed:
        copy.check_member(arc, len(arc))
    assert failed.value.permanent
    # a record of an uncompressed WARC becomes a member of its own
    raw = b"WARC/1.0\r\nWARC-Type: resource\r\n\r\n\r\n\r\n"
    assert gzip.decompress(copy.check_member(raw, len(raw))) == raw


def test_parse_line():
    cdxj = b'com,example)/ 20240101000000 {"url": "http://example.com/", "length": "120", ' \
           b'"offset": "3000", "filename": "a/b c.warc.gz"}\n'
    cdx11 = b"com,example)/ 20240101000000 http://example.com/ text/html 200 ABC - - 120 3000 " \
            b"a/b.warc.gz\n"
    assert location(cdxj) == Location("a/b c.warc.gz", 3000, 120)
    assert location(cdx11.decode()) == Location("a/b.warc.gz", 3000, 120)
    for bad in (b"com,example)/ 20240101000000 http://example.com/ text/html 200 ABC - 3000 a.gz",
                b"com,example)/ 20240101000000 {}", b"nonsense"):
        with pytest.raises(ValueError, match="CDX"):
            location(bad)


def test_progress_line():
    stream = io.StringIO()
    progress = Progress(stream, enabled=True)
    progress.transfer("copying", lambda: (5, 1500), 10, 3000)
    time.sleep(0.1)
    progress.done()
    assert stream.getvalue().startswith("\r\x1b[Kcopying: 5/10 records, 1.5 KB/3.0 KB  0s")
    assert stream.getvalue().endswith("\r\x1b[K")
    quiet = io.StringIO()  # not a terminal: nothing
    progress = Progress(quiet)
    progress.transfer("copying", lambda: (5, 1500), 10, 3000)
    progress.done()
    assert quiet.getvalue() == ""


# -- check ------------------------------------------------------------------------------------

def test_check_counts_what_brute_force_counts(collection, domains, s3, capsys):
    per_input, total = expected(collection, domains)
    # the look-alikes are there and left out; a port and a.b. subdomains are in
    lookalike = {host_of(e["url"]) for e in collection["manifest"]
                 if e["filename"].endswith(LOOKALIKE)}
    assert {"examples.com", "myexample.com", "example.com.au", "example-foo.com"} <= lookalike
    assert {"a.b.example.com"} <= {host_of(e["url"]) for e in per_input[0]}
    assert any(":8080" in e["url"] for e in per_input[0])
    assert all(numbers(p)["captures"] > 0 for p in per_input)
    # the index's own lines, filtered by host, say the same
    lines = [json.loads(line.split(b" ", 2)[2]) for line in index_lines(collection)]
    for text, entries in zip(domains, per_input, strict=True):
        from_index = [{"filename": f["filename"], "length": int(f["length"])}
                      for f in lines if selects(text, f["url"])]
        assert numbers(from_index) == numbers(entries), text
    kinds = ["prefix" if "/" in t or t.endswith("*") else "domain" for t in domains]
    want = {"inputs": [{"input": t, "kind": k, **numbers(p)}
                       for t, k, p in zip(domains, kinds, per_input, strict=True)],
            "total": numbers(total)}
    assert want["total"]["captures"] < sum(i["captures"] for i in want["inputs"])  # overlaps
    for cluster in (collection["index"], collection["index"] / "cluster" / "cluster.idx",
                    s3["cluster"]):
        assert cli.main(["copy", "check", str(cluster), "--domains", ",".join(domains[:3]),
                         "--domains", ",".join(domains[3:]), "--json"]) == cli.EXIT_OK
        assert json.loads(capsys.readouterr().out) == want, cluster
    # the table, from a selection file
    selection = collection["root"] / "selection.txt"
    selection.write_text("# look-alikes\n" + "\n".join(domains[:2]) + "  # two\n\n")
    assert cli.main(["copy", "check", str(collection["index"]), "--domains-file",
                     str(selection)]) == cli.EXIT_OK
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == ["captures", "WARC", "files", "bytes", "size", "input"]
    _, two = expected(collection, domains[:2])
    assert table[-1].split()[:3] == [str(len(two)), str(numbers(two)["warc_files"]),
                                     str(numbers(two)["bytes"])]
    assert table[1].split()[-1] == "example.com" and len(table) == 4


def test_captures_in_arc_files_are_counted_apart_and_left_out(tmp_path, capsys):
    """Issue 16 item 16: `copy check` counted ARC captures that `copy copy` then refused,
    telling the user to rerun."""
    warcs = tmp_path / "warcs"
    warcs.mkdir()
    for name in ("webrecorder+warcio__example.warc.gz", "webrecorder+warcio__example.arc.gz"):
        shutil.copy(os.path.join(REAL, name), warcs / name.replace(".arc", "-arc.arc"))
    assert cli.main(["build", str(warcs), "-o", str(tmp_path / "index"), "--runner", "inline",
                     "--no-progress"]) == cli.EXIT_OK
    capsys.readouterr()
    assert cli.main(["copy", "check", str(tmp_path / "index"), "--domains", "example.com",
                     "--json"]) == cli.EXIT_OK
    total = json.loads(capsys.readouterr().out)["total"]
    assert (total["captures"], total["warc_files"], total["arc_captures"]) == (2, 1, 1)
    assert cli.main(["copy", "check", str(tmp_path / "index"), "--domains", "example.com"]) == 0
    assert capsys.readouterr().out.endswith(
        "(and 1 captures in ARC files, which a copy leaves out: it writes WARC files)\n")
    assert cli.main(copy_args(tmp_path / "index", ["example.com"], tmp_path / "out", warcs,
                              "--runner", "inline")) == cli.EXIT_OK
    err = capsys.readouterr().err
    assert "1 records of ARC files left out (a copy writes WARC files)" in err
    assert "copied:   2 of 2 records" in err and "rerun" not in err


# -- copy -------------------------------------------------------------------------------------

def test_copy_local_inline_then_rerun_skips(collection, domains, tmp_path, capsys):
    out = tmp_path / "out"
    args = copy_args(collection["index"], domains, out, collection["crawl"], "--runner", "inline",
                     "--records-per-file", "25", "--threads", "4")
    assert cli.main(args) == cli.EXIT_OK
    err = capsys.readouterr().err
    _, total = expected(collection, domains)
    assert f"copied:   {len(total)} of {len(total)} records" in err
    files = read_output(out)
    assert len([n for n in files if n.endswith(".warc.gz")]) == -(-len(total) // 25)
    verify_copy(collection, files, domains, 25, tmp_path, str(collection["index"]))
    plan = json.loads((out / "plan" / "plan.json").read_text())
    assert plan["records"] == len(total) and plan["selection"] == domains
    # a rerun: the plan is reused, every output skipped, nothing rewritten
    stamps = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    assert cli.main(args) == cli.EXIT_OK
    assert "files were complete already" in capsys.readouterr().err
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == stamps
    # the same selection in another order and spelling is the same copy
    again = copy_args(collection["index"], ["*.example.com", *reversed(domains[1:])], out,
                      collection["crawl"], "--runner", "inline", "--records-per-file", "25")
    assert cli.main(again) == cli.EXIT_OK
    # another selection, another output size: refused, exit status 2, saying how to fix it
    for other, says in ((copy_args(collection["index"], domains[:2], out, collection["crawl"],
                                   "--records-per-file", "25"), "selection"),
                        (copy_args(collection["index"], domains, out, collection["crawl"]),
                         "--records-per-file")):
        assert cli.main(other) == cli.EXIT_USAGE
        err = capsys.readouterr().err
        assert "holds another copy" in err and says in err and "new output directory" in err
    assert cli.main(["copy", "status", str(out)]) == cli.EXIT_OK


def test_copy_through_faults_from_s3_to_s3(collection, domains, s3, tmp_path, capsys,
                                           monkeypatch):
    out = s3server.new_bucket() + "/extract"
    # (a 503 makes botocore's adaptive mode slow the whole client down: at p_503=0.2 this
    # copy takes minutes, and still delivers everything)
    with faultproxy.running(s3["endpoint"], seed=7, p_503=0.05, p_reset=0.2,
                            p_truncate=0.2) as proxy:
        monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
        s3_storage._client.cache_clear()
        try:
            code = cli.main(copy_args(s3["cluster"], domains[:2], out, s3["crawl"], "--runner",
                                      "inline", "--records-per-file", "50", "--threads", "8"))
        finally:
            monkeypatch.setenv("AWS_ENDPOINT_URL", s3["endpoint"])
            s3_storage._client.cache_clear()
    assert code == cli.EXIT_OK, capsys.readouterr().err
    faults = collections.Counter(fault for *_, fault in proxy.requests if fault)
    assert faults["503"] >= 1 and faults["reset"] >= 10 and faults["truncate"] >= 10, faults
    verify_copy(collection, read_output(out), domains[:2], 50, tmp_path, s3["cluster"])


@pytest.mark.parametrize("runner", ["local", "mrjob"])
def test_copy_from_http_with_a_runner_of_this_machine(collection, domains, tmp_path, runner):
    out = tmp_path / "out"
    with rangeserver.serving(collection["crawl"]) as server:
        assert cli.main(copy_args(collection["index"], domains[:3], out, server.url + "/",
                                  "--runner", runner, "--records-per-file", "20")) == cli.EXIT_OK
        ranged = [r for r in server.requests if r[0] == "GET"]
    _, total = expected(collection, domains[:3])
    assert len(ranged) == len(total) and all(r[2] for r in ranged)  # one ranged read a record
    verify_copy(collection, read_output(out), domains[:3], 20, tmp_path)


def test_job_inline_and_spark(collection, domains, tmp_path, spark):
    inputs = copy.parse_selection(domains[3:])
    cluster = open_cluster(str(collection["index"]))
    results = {}
    for engine in ("job", "spark"):
        out, progress = tmp_path / engine, tmp_path / f"{engine}-progress"
        progress.mkdir()
        plan = copy.make_plan(cluster, str(collection["index"]), inputs, str(out), 30)
        assert plan.records == len(expected(collection, domains[3:])[1])
        if engine == "job":
            manifest = tmp_path / "chunks.txt"
            # as NLineInputFormat hands them to the mapper: offset<TAB>path
            manifest.write_text("".join(f"{i}\t{p}\n" for i, p in enumerate(plan.chunk_paths())))
            statuses = [copy.ChunkStatus.from_dict(s) for s in run_job(
                RemoteCopyJob, ["--copy-dir", str(out), "--warc-prefix", str(collection["crawl"]),
                                "--progress-dir", str(progress), str(manifest)], "inline")]
        else:
            with open_engine("spark", CopyOptions(spark_context=spark)) as on_spark:
                statuses = copy_chunks(on_spark, plan.chunk_paths(), copy.ChunkSettings(
                    str(out), str(collection["crawl"]), progress_dir=str(progress)))
        # what the tasks told the progress bar: every record and byte of the plan
        assert copy.read_progress(progress) == (plan.records, plan.bytes)
        assert sorted(s.name for s in statuses) == [c["name"] for c in plan.chunks]
        assert sum(s.copied for s in statuses) == plan.records
        assert all(s.index_lines == s.records for s in statuses)
        verify_copy(collection, read_output(out), domains[3:], 30, tmp_path / engine)
        # the same records in the same files (the warcinfo records differ: date, id, plan)
        results[engine] = {n: members(d)[1:] for n, d in read_output(out).items()
                           if n.endswith(".warc.gz")}
    assert results["job"] == results["spark"]


def test_missing_source_is_reported_then_rerun_copies_it(collection, domains, s3, tmp_path,
                                                         capsys):
    crawl = s3server.new_bucket() + "/crawl/"
    missing = next(p for p in sorted(collection["crawl"].rglob("*.warc.gz"))
                   if p.name != LOOKALIKE)
    name = str(missing.relative_to(collection["crawl"]))
    for archive in collection["crawl"].rglob("*.warc.gz"):
        if archive != missing:
            storage.write_atomic(crawl + str(archive.relative_to(collection["crawl"])),
                                 archive.read_bytes())
    out = tmp_path / "out"
    args = copy_args(collection["index"], domains, out, crawl, "--runner", "inline",
                     "--records-per-file", "30")
    assert cli.main(args) == cli.EXIT_FAILED
    err = capsys.readouterr().err
    _, total = expected(collection, domains)
    lost = [e for e in total if e["filename"] == name]
    assert lost and f"failed:   {len(lost)} records" in err and ".failures.json" in err
    reports = sorted(out.glob("*.failures.json"))
    failed = [r for report in reports for r in json.loads(report.read_text())["records"]]
    assert sorted((f["source"], f["offset"], f["length"]) for f in failed) == sorted(
        (crawl + name, e["offset"], e["length"]) for e in lost)
    assert all(f["reason"] == f"source archive not found: {crawl}{name}" for f in failed)
    assert all(json.loads(f["line"].split(" ", 2)[2])["filename"] == name for f in failed)
    # what could be copied was, and the outputs with failures are indexed as they are
    for report in reports:
        stem = report.name[:-len(".failures.json")]
        assert (out / (stem + ".cdxj")).exists() and (out / (stem + ".warc.gz")).exists()
    assert cli.main(["copy", "status", str(out), "--json"]) == cli.EXIT_FAILED
    status = json.loads(capsys.readouterr().out)
    assert status["failed"] == len(lost) and status["copied"] == len(total) - len(lost)
    # the archive comes back: a rerun redoes the outputs with failures only
    complete = {p.name: p.stat().st_mtime_ns for p in out.glob("[!.]*.cdxj")
                if not (out / p.name.replace(".cdxj", ".failures.json")).exists()}
    storage.write_atomic(crawl + name, missing.read_bytes())
    assert cli.main(args) == cli.EXIT_OK
    assert {n: (out / n).stat().st_mtime_ns for n in complete} == complete
    verify_copy(collection, read_output(out), domains, 30, tmp_path)


SLOW_COPY = """
import sys, time
from webarchive_indexing import cli, storage
read = storage.read_range
def slow(*args):
    time.sleep(0.1)
    return read(*args)
storage.read_range = slow
sys.exit(cli.main(sys.argv[1:]))
"""


@pytest.mark.parametrize("source", ["local", "s3-with-faults"])
def test_killed_copy_completes_on_rerun_without_duplicates(collection, domains, tmp_path, source,
                                                           request, monkeypatch):
    out = tmp_path / "out"
    cluster, prefix = collection["index"], collection["crawl"]
    with contextlib.ExitStack() as stack:
        if source != "local":
            s3 = request.getfixturevalue("s3")
            cluster, prefix = s3["cluster"], s3["crawl"]
            proxy = stack.enter_context(faultproxy.running(s3["endpoint"], seed=3, p_503=0.02,
                                                           p_reset=0.1, p_truncate=0.1))
            # the copy (in a child process, as the rerun here) reads S3 through the proxy
            monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
            s3_storage._client.cache_clear()
            stack.callback(s3_storage._client.cache_clear)
        args = copy_args(cluster, domains, out, prefix, "--runner", "inline",
                         "--records-per-file", "6", "--threads", "2")
        proc = subprocess.Popen([sys.executable, "-c", SLOW_COPY, *args], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while len(list(out.glob("[!.]*.cdxj"))) < 3 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        plan = json.loads((out / "plan" / "plan.json").read_text())
        # finished outputs only: a temporary file the kill left (".tmp-...") is cleared by the rerun
        done = {p.name: p.stat().st_mtime_ns for p in out.glob("[!.]*.cdxj")}
        assert 3 <= len(done) < len(plan["chunks"]) - 2, "the copy was not killed in the middle"
        assert cli.main(args) == cli.EXIT_OK
        if source != "local":
            assert any(fault for *_, fault in proxy.requests)
    # the outputs complete before the kill were kept; the rest written once
    assert {n: (out / n).stat().st_mtime_ns for n in done} == done
    assert len(list(out.glob("[!.]*.warc.gz"))) == len(plan["chunks"])
    verify_copy(collection, read_output(out), domains, 6, tmp_path,
                *([] if source == "local" else [cluster]))


def test_usage_errors(collection, tmp_path, capsys):
    index, crawl, out = str(collection["index"]), str(collection["crawl"]), str(tmp_path / "o")
    for args, says in (
            (["copy", "check", index], "nothing selected"),
            (["copy", "check", index, "--domains", "a b.com"], "white space"),
            (["copy", "check", index, "--domains", "host:8080.com"], "'host:8080.com': what "
             "follows ':' must be a port"),
            (["copy", "check", index, "--domains", "example.com:99999/a"], "a number from 0 to 65535"),
            (["copy", "check", index, "--domains", "[::1"], "'[::1': Invalid IPv6 URL"),
            (copy_args(index, ["example.com"], out, tmp_path / "nowhere"), "no such directory"),
            (copy_args(index, ["example.com"], out, "hdfs:///warcs/"), "use s3://"),
            (copy_args(index, ["example.com"], "https://example.org/out", crawl),
             "expected a local directory or s3://"),
            (copy_args(index, ["example.com"], out, crawl, "--spark-master", "local[1]"),
             "--spark-master goes with --runner spark"),
            (["copy", "check", index, "--domains-file", str(tmp_path / "none.txt")],
             "no such selection file")):
        assert cli.main(args) == cli.EXIT_USAGE, args
        assert says in capsys.readouterr().err, args
    for args in (copy_args(index, ["example.com"], out, crawl, "--records-per-file", "0"),
                 copy_args(index, ["example.com"], out, crawl, "--threads", "x"),
                 ["copy", "copy", index, "--domains", "example.com", "-o", out]):
        with pytest.raises(SystemExit) as exited:
            cli.main(args)
        assert exited.value.code == cli.EXIT_USAGE
    assert "--warc-prefix" in capsys.readouterr().err
    assert cli.main(["copy", "check", str(tmp_path), "--domains", "example.com"]) == cli.EXIT_FAILED
    assert "no ZipNum index" in capsys.readouterr().err
    # copied files without their plan: never mixed with a new copy
    stray = tmp_path / "stray"
    stray.mkdir()
    (stray / "extract-00000.warc.gz").write_bytes(b"")
    assert cli.main(copy_args(index, ["example.com"], stray, crawl)) == cli.EXIT_USAGE
    assert "but no plan" in capsys.readouterr().err


# -- the launcher -----------------------------------------------------------------------------

def launcher_env(tmp_path, path_dirs=(), **settings):
    env_file = tmp_path / "copy_env.sh"
    env_file.write_text("".join(f"{k}={json.dumps(str(v))}\n" for k, v in settings.items()))
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("HADOOP_") and k not in ("RUNNER", "PYTHON")}
    env.update(INDEX_ENV=str(env_file),
               PATH=os.pathsep.join([*map(str, path_dirs), os.path.dirname(sys.executable),
                                     env["PATH"]]))
    return env


def run_launcher(env, *args, cwd=None):
    return subprocess.run([str(REPO / "scripts" / "runremotecopy.sh"), *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=600)


def test_launcher_inline_and_settings(collection, domains, tmp_path):
    selection = tmp_path / "selection.txt"
    selection.write_text("\n".join(domains[2:]) + "\n")
    settings = dict(RUNNER="inline", MRJOB_CONF=REPO / "mrjob.conf.sample",
                    COPY_CLUSTER=collection["index"], COPY_DOMAINS=",".join(domains[:2]),
                    COPY_DOMAINS_FILE=selection, COPY_OUTPUT="out", WARC_PREFIX=collection["crawl"],
                    RECORDS_PER_FILE=40, COPY_THREADS=4, PYTHON=sys.executable)
    result = run_launcher(launcher_env(tmp_path, **settings), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "== 3/3 status" in result.stderr
    statuses = [json.loads(line) for line in result.stdout.splitlines()]
    assert sum(s["copied"] for s in statuses) == len(expected(collection, domains)[1])
    verify_copy(collection, read_output(tmp_path / "out"), domains, 40, tmp_path)
    assert run_launcher(launcher_env(tmp_path, **settings), cwd=tmp_path).returncode == 0
    for name in ("COPY_CLUSTER", "COPY_OUTPUT", "WARC_PREFIX", "MRJOB_CONF"):
        # (inline needs no MRJOB_CONF: emr does)
        broken = dict(settings, **({"RUNNER": "emr"} if name == "MRJOB_CONF" else {}))
        del broken[name]
        result = run_launcher(launcher_env(tmp_path, **broken), cwd=tmp_path)
        assert result.returncode == 2 and f"{name} is not set" in result.stderr, name
    for name, value, says in (("COPY_DOMAINS", "", "COPY_DOMAINS is not set"),
                              ("RECORDS_PER_FILE", "0", "RECORDS_PER_FILE is '0'"),
                              ("COPY_DOMAINS", "x y", "white space")):
        broken = dict(settings, **{name: value})
        if name == "COPY_DOMAINS":
            del broken["COPY_DOMAINS_FILE"]
        result = run_launcher(launcher_env(tmp_path, **broken), cwd=tmp_path)
        assert result.returncode == 2 and says in result.stderr, (name, result.stderr[-2000:])
    result = run_launcher(launcher_env(tmp_path, **dict(settings, RUNNER="emr")), cwd=tmp_path)
    assert result.returncode == 2 and "must be s3://" in result.stderr
    # --help names every setting
    result = run_launcher(launcher_env(tmp_path), "--help")
    assert result.returncode == 0
    for name in ("COPY_CLUSTER", "COPY_DOMAINS", "COPY_DOMAINS_FILE", "COPY_OUTPUT", "WARC_PREFIX",
                 "RUNNER", "MRJOB_CONF", "RECORDS_PER_FILE", "Exit status"):
        assert name in result.stdout


@pytest.mark.cluster
def test_launcher_on_hadoop(collection, domains, tmp_path):
    """Real Hadoop's local job runner (tests/hadoop_local.py): one chunk per map task
    (NLineInputFormat), tasks read their chunk and write their outputs themselves."""
    lib = hadoop_local.fetch()
    recorder = hadoop_local.recording(tmp_path / "bin", tmp_path / "calls.jsonl")
    python_bin = tmp_path / "python"
    python_bin.mkdir()
    for name in ("python3", "python3.11"):  # the sample mrjob.conf's python_bin
        (python_bin / name).write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
        (python_bin / name).chmod(0o755)
    env = launcher_env(tmp_path, [recorder, hadoop_local.BIN, python_bin], RUNNER="hadoop",
                       MRJOB_CONF=REPO / "mrjob.conf.sample", COPY_CLUSTER=collection["index"],
                       COPY_DOMAINS=",".join(domains), COPY_OUTPUT=tmp_path / "out",
                       WARC_PREFIX=collection["crawl"], RECORDS_PER_FILE=50,
                       PYTHON=sys.executable,
                       EXTRA_ARGS=f"--hadoop-streaming-jar {hadoop_local.streaming_jar(lib)} "
                                  f"--hadoop-tmp-dir file://{tmp_path}/mrjob-tmp")
    result = run_launcher(env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-5000:]
    [argv] = [a for a in hadoop_local.calls(tmp_path / "calls.jsonl") if a[:1] == ["jar"]]
    conf = dict(argv[i + 1].split("=", 1) for i, a in enumerate(argv[:-1]) if a == "-D")
    assert argv[argv.index("-inputformat") + 1] == "org.apache.hadoop.mapred.lib.NLineInputFormat"
    assert conf["mapreduce.input.lineinputformat.linespermap"] == "1"
    assert conf["mapreduce.map.speculative"] == "false"
    assert conf["mapreduce.job.reduces"] == "0"
    verify_copy(collection, read_output(tmp_path / "out"), domains, 50, tmp_path)
