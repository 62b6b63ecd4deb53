"""Names from input that become paths or URLs never lead outside the place the user named
(issue 16, item 2, and the guide's rule): a CDX ``filename`` read by ``copy`` (local, S3,
HTTP), copy's output names (``--name-prefix``, a plan's names), an HTTP redirect, the
build directory a published ``cluster.idx`` names."""
import http.server
import json
import logging
import os
import shutil

import pytest

import rangeserver
import s3server
from helpers import REAL
from webarchive_indexing import cli, storage
from webarchive_indexing.commands.build import build
from webarchive_indexing.cdx.indexer import index_file
from webarchive_indexing.copy.fetch import Failed, source_path
from webarchive_indexing.options import BuildOptions
from webarchive_indexing.storage import s3 as s3_storage
from webarchive_indexing.zipnum.layout import write_cluster

GOOD = f"{REAL}/webrecorder+warcio__example.warc.gz"
# CDX filenames that would read elsewhere than below --warc-prefix
HOSTILE = ["../secret.warc.gz", "sub/../../secret.warc.gz", "/SECRET_DIR/secret.warc.gz",
           "file:///SECRET_DIR/secret.warc.gz", "s3://other-bucket/secret.warc.gz",
           "https://elsewhere.example/secret.warc.gz", "..\\secret.warc.gz", "a\x00b.warc.gz",
           "a\nb.warc.gz", ""]


def test_source_paths():
    for prefix in ("/data/warcs", "s3://bucket/warcs/", "https://host/warcs/"):
        for name in HOSTILE:
            with pytest.raises(Failed, match="is not a name below --warc-prefix") as failed:
                source_path(prefix, name.replace("SECRET_DIR", "x"))
            assert failed.value.permanent
    assert source_path("/data/warcs", "crawl/a.warc.gz") == "/data/warcs/crawl/a.warc.gz"
    assert source_path("s3://b/p/", "crawl/a.warc.gz") == "s3://b/p/crawl/a.warc.gz"
    # over HTTP the name is a path: every character escaped, %2e%2e is no ..
    assert source_path("https://h/w/", "%2e%2e/a b?c#d.warc.gz") == \
        "https://h/w/%252e%252e/a%20b%3Fc%23d.warc.gz"


@pytest.fixture
def place(tmp_path):
    """An archive below the prefix (``warcs/good.warc.gz``), a secret one beside it, and a
    cluster whose lines name the first by its name and the second by every hostile name."""
    (tmp_path / "warcs").mkdir()
    shutil.copy(GOOD, tmp_path / "warcs" / "good.warc.gz")
    shutil.copy(GOOD, tmp_path / "secret.warc.gz")
    good = index_file(GOOD, "good.warc.gz", "cdxj").lines[0]
    fields = json.loads(good.split(" ", 2)[2])
    lines = [good] + [good.split(" ", 2)[0] + " " + good.split(" ", 2)[1] + " " + json.dumps(
        {**fields, "filename": name.replace("SECRET_DIR", str(tmp_path))}) + "\n" for name in HOSTILE]
    write_cluster(sorted(line.encode() for line in lines), str(tmp_path / "index" / "cluster"), [])
    return tmp_path


def copied(out, capsys):
    """(records copied, failure reasons by CDX filename) of a copy into ``out``."""
    err = capsys.readouterr().err
    assert "Traceback" not in err
    [report] = [name for name in os.listdir(out) if name.endswith(".failures.json")]
    failures = json.loads((out / report).read_text())["records"]
    reasons = {json.loads(f["line"].split(" ", 2)[2])["filename"]: f["reason"] for f in failures}
    return err.count("copied:   1 of"), reasons


def test_copy_reads_only_below_a_local_prefix(place, capsys):
    out = place / "out"
    code = cli.main(["copy", "copy", str(place / "index"), "--domains", "example.com", "-o",
                     str(out), "--warc-prefix", str(place / "warcs"), "--runner", "inline",
                     "--no-progress"])
    assert code == cli.EXIT_FAILED
    ones, reasons = copied(out, capsys)
    assert ones == 1 and len(reasons) == len(HOSTILE)
    assert all("is not a name below --warc-prefix" in r for r in reasons.values()), reasons
    # and the user is not told to retry what will never be read
    assert cli.main(["copy", "status", str(out)]) == cli.EXIT_FAILED
    said = capsys.readouterr().out
    assert f"failed:   {len(HOSTILE)} records in 1 files ({len(HOSTILE)} of them fail however " \
        "often they are tried)" in said and "rerun" not in said


def test_copy_reads_only_below_an_http_prefix(place, capsys):
    out = place / "out"
    with rangeserver.serving(place) as server:
        code = cli.main(["copy", "copy", str(place / "index"), "--domains", "example.com", "-o",
                         str(out), "--warc-prefix", server.url + "/warcs/", "--runner", "inline",
                         "--no-progress"])
        requested = [path for _, path, _ in server.requests]
    assert code == cli.EXIT_FAILED
    ones, reasons = copied(out, capsys)
    assert ones == 1 and len(reasons) == len(HOSTILE)
    assert requested == ["/warcs/good.warc.gz"], requested
    # a name that is escaped for the server: asked for, below the prefix, and not found
    with rangeserver.serving(place) as server:
        code = cli.main(["copy", "copy", str(place / "index"), "--domains", "example.com", "-o",
                         str(place / "out2"), "--warc-prefix", server.url + "/warcs/sub/", "--runner",
                         "inline", "--no-progress"])
        assert all(path.startswith("/warcs/sub/") for _, path, _ in server.requests)


@pytest.fixture(scope="module")
def s3():
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    with s3server.running():
        yield


def test_copy_reads_only_below_an_s3_prefix(place, s3, capsys):
    bucket = s3server.new_bucket()
    storage.write_atomic(bucket + "/warcs/good.warc.gz", open(GOOD, "rb").read())
    storage.write_atomic(bucket + "/secret.warc.gz", open(GOOD, "rb").read())
    s3_storage._client().create_bucket(Bucket="other-bucket")
    storage.write_atomic("s3://other-bucket/secret.warc.gz", open(GOOD, "rb").read())
    asked = []

    def listen(method, url, byte_range):
        asked.append(url)

    storage.add_request_listener(listen)
    try:
        code = cli.main(["copy", "copy", str(place / "index"), "--domains", "example.com", "-o",
                         str(place / "out"), "--warc-prefix", bucket + "/warcs/", "--runner",
                         "inline", "--no-progress"])
    finally:
        storage.remove_request_listener(listen)
    assert code == cli.EXIT_FAILED
    ones, reasons = copied(place / "out", capsys)
    assert ones == 1 and len(reasons) == len(HOSTILE)
    assert [url for url in asked if "secret" in url] == []


@pytest.mark.parametrize("output_format", ["gz", "zst"])
def test_copy_of_warc_zst_sources_reads_only_below_the_prefix(tmp_path, capsys, output_format):
    """A .warc.zst source is read (its record's frames, and its dictionary frame) as a
    .warc.gz is: only what a CDX filename names below --warc-prefix."""
    (tmp_path / "warcs").mkdir()
    assert cli.main(["recompress", GOOD, "-o", str(tmp_path / "warcs" / "good.warc.zst"),
                     "--no-progress"]) == cli.EXIT_OK
    shutil.copy(tmp_path / "warcs" / "good.warc.zst", tmp_path / "secret.warc.zst")
    good = index_file(str(tmp_path / "warcs" / "good.warc.zst"), "good.warc.zst", "cdxj").lines[0]
    key, stamp, fields = good.split(" ", 2)
    lines = [good] + [f"{key} {stamp} " + json.dumps({**json.loads(fields), "filename": name.replace(
        "SECRET_DIR", str(tmp_path)).replace(".warc.gz", ".warc.zst")}) + "\n" for name in HOSTILE]
    write_cluster(sorted(line.encode() for line in lines), str(tmp_path / "index" / "cluster"), [])
    out = tmp_path / "out"
    with rangeserver.serving(tmp_path) as server:
        code = cli.main(["copy", "copy", str(tmp_path / "index"), "--domains", "example.com", "-o",
                         str(out), "--warc-prefix", server.url + "/warcs/", "--runner", "inline",
                         "--output-format", output_format, "--no-progress"])
        requested = {path for _, path, _ in server.requests}
    assert code == cli.EXIT_FAILED
    ones, reasons = copied(out, capsys)
    assert ones == 1 and len(reasons) == len(HOSTILE)
    assert all("is not a name below --warc-prefix" in r for r in reasons.values()), reasons
    assert requested == {"/warcs/good.warc.zst"}, requested
    [warc] = [n for n in os.listdir(out) if n.endswith(f".warc.{output_format}")]
    assert len(index_file(str(out / warc), warc, "cdxj").lines) == 1


# -- copy's own output names ----------------------------------------------------------------------

@pytest.mark.parametrize("prefix", ["../x", "a/b", ".hidden", "", "x\x00"])
def test_a_name_prefix_that_is_no_file_name_is_refused(place, capsys, prefix):
    for action in ("copy", "plan"):
        more = ["--warc-prefix", str(place / "warcs")] if action == "copy" else []
        with pytest.raises(SystemExit) as exit_:
            cli.main(["copy", action, str(place / "index"), "--domains", "example.com", "-o",
                      str(place / "out"), "--name-prefix", prefix, *more])
        assert exit_.value.code == cli.EXIT_USAGE
        assert "expected a file name of letters, digits" in capsys.readouterr().err
    assert not (place / "out").exists() and not (place / "x").exists()


def test_a_plan_that_names_files_elsewhere_is_refused(place, capsys):
    out = place / "out"
    args = ["copy", "plan", str(place / "index"), "--domains", "example.com", "-o", str(out)]
    assert cli.main(args) == cli.EXIT_OK
    plan = json.loads((out / "plan" / "plan.json").read_text())
    for changed in ({"name_prefix": "../x"}, {"chunks": [{**plan["chunks"][0], "name": "../../x"}]}):
        (out / "plan" / "plan.json").write_text(json.dumps({**plan, **changed}))
        code = cli.main(["copy", "copy", *args[2:], "--warc-prefix", str(place / "warcs"),
                         "--runner", "inline", "--no-progress"])
        assert code == cli.EXIT_USAGE
        assert "names its outputs otherwise than a plan does" in capsys.readouterr().err
    assert not (place / "x").exists() and not list(place.glob("x*"))


@pytest.mark.parametrize("selection", ["*", "/*", "http://*", ".", "..", ":8080/*", "https:///a"])
def test_a_selection_that_names_no_host_is_refused(place, capsys, selection):
    """`--domains '*'` selected nothing, silently."""
    for action in ("check", "copy"):
        more = ["-o", str(place / "out"), "--warc-prefix", str(place / "warcs")] if action == "copy" else []
        code = cli.main(["copy", action, str(place / "index"), "--domains", selection, *more])
        assert code == cli.EXIT_USAGE
        assert "names no host, so it would select nothing" in capsys.readouterr().err
    assert not (place / "out").exists()


# -- HTTP redirects --------------------------------------------------------------------------

def redirecting(to):
    """A handler that redirects ``/away`` to ``to(handler)`` and answers anything else
    with ``hello world``."""
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            if self.path == "/away":
                self.send_response(302)
                self.send_header("Location", to(self))
                body = b""
            else:
                self.send_response(200)
                body = b"hello world"
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    return Handler


def test_http_redirects_stay_on_the_host_asked(place):
    with rangeserver.serving(place) as files:
        port = files.url.rsplit(":", 1)[1]
        # on the same host and port (a relative Location too): followed
        for location in ("/here", "http://127.0.0.1:{port}/here"):
            same = redirecting(lambda handler, location=location: location.format(
                port=handler.server.server_address[1]))
            with rangeserver.in_thread(same, "redirect") as httpd:
                url = f"http://127.0.0.1:{httpd.server_address[1]}/away"
                assert storage.read_range(url, 0, 5) == b"hello"
        # to another host (localhost is not 127.0.0.1), or another port: not followed
        for target in (f"http://localhost:{port}/warcs/good.warc.gz",
                       f"http://127.0.0.1:{port}/warcs/good.warc.gz"):
            away = redirecting(lambda handler, target=target: target)
            with rangeserver.in_thread(away, "redirect") as httpd:
                url = f"http://127.0.0.1:{httpd.server_address[1]}/away"
                with pytest.raises(PermissionError, match=f"redirects to {target}, on another "
                                                          "host than the one asked: not followed"):
                    storage.read_range(url, 0, 10)
        assert files.requests == []


# -- the build a published index names -------------------------------------------------------

def test_a_hostile_cluster_idx_makes_a_build_remove_nothing_outside(tmp_path):
    victim = tmp_path / "victim"
    (victim / "build-00001").mkdir(parents=True)
    (victim / "build-00001" / "keep").write_text("mine")
    out = tmp_path / "out"
    (out / "cluster").mkdir(parents=True)
    for shard in ("../../victim/build-00001/cdx-00000.gz", str(victim / "build-00001" / "cdx.gz"),
                  "build-00001/../../../victim/build-00001/cdx-00000.gz"):
        (out / "cluster" / "cluster.idx").write_text(f"com,example)/ 2024\t{shard}\t0\t10\t1\n")
        (out / "cluster" / "cluster.loc").write_text(f"{shard}\t{shard}\n")
        build([GOOD], str(out), BuildOptions(runner="inline", progress=False))
        assert (victim / "build-00001" / "keep").read_text() == "mine"
    # an index of no build of ours: nothing of it is kept or taken over
    assert sorted(os.listdir(out / "cluster")) == ["build-00001", "cluster.idx", "cluster.loc",
                                                   "cluster.root"]
