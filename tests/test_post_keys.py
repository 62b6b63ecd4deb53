"""POST and PUT captures keyed as pywb 2.10 keys them (``--post-append``): the indexer's
lines byte for byte pywb's ``cdx-indexer -p``'s, its keys and fields cdxj-indexer 1.5's where
the two agree, on real captures and generated ones (form, multipart, JSON, binary bodies);
``query`` and ``serve`` find them by ``method`` and ``requestBody``, and pywb replays them."""
import io
import json
import os
import shutil
import subprocess
import sys

import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from helpers import REAL
from webarchive_indexing.cdx.indexer import index_file
from webarchive_indexing.cdx.postquery import body_query, lookup_url

REAL_POSTS = ["webrecorder+warcio__post-test.warc.gz",
              "webrecorder+cdxj-indexer__post-test-more.warc"]
# pywb's own sample (the same bytes as warcio's), as pywb's package ships it with the
# index it expects: its keys, from before pywb wrote method and requestBody
PYWB_SAMPLE = os.path.join(sys.prefix, "sample_archive")

MULTIPART = (b"--XyZ\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nh\xc3\xa9llo w\r\n"
             b"--XyZ\r\nContent-Disposition: form-data; name=\"up\"; filename=\"a.bin\"\r\n"
             b"Content-Type: application/octet-stream\r\n\r\n\x00\x01\xff&=\r\n--XyZ--\r\n")
JSON = {"q": "a b&c", "page": 2, "n": {"q": "again", "list": [1, "x", {"deep": "y"}]}}
# (name, method, Content-Type, body, cdxj-indexer 1.5 keys it as pywb does)
CASES = [
    ("form", "POST", "application/x-www-form-urlencoded", b"foo=bar+baz&x=%5E%26", True),
    ("form-latin1", "POST", "application/x-www-form-urlencoded; charset=latin1", b"a=\xe9", True),
    ("multipart", "POST", "multipart/form-data; boundary=XyZ", MULTIPART, True),
    ("multipart-no-boundary", "POST", "multipart/form-data", b"--a\r\n\r\n", True),
    ("json", "POST", "application/json", json.dumps(JSON).encode(), True),
    # JavaScript's values (cdxj-indexer writes Python's: True, None, 2.0)
    ("json-values", "POST", "application/json; charset=utf-8",
     b'{"t": true, "f": false, "z": null, "w": 2.0, "r": 2.5, "e": 1e-7}', False),
    ("json-bad", "POST", "application/json", b"{not json", True),
    ("text-json", "PUT", "text/plain;charset=UTF-8", b'[{"id": 7}, {"id": 8}]', True),
    ("text", "POST", "text/plain", b"just words", True),
    ("binary", "PUT", "application/octet-stream", bytes(range(256)) * 3, True),
    ("no-type", "POST", None, b"\x89PNG\r\n", True),
    ("long", "POST", "application/x-www-form-urlencoded", b"k=" + b"v" * 5000, True),
    ("empty", "POST", "application/x-www-form-urlencoded", b"", True),
    # pywb keys any method but GET by its name (cdxj-indexer POST and PUT only)
    ("delete", "DELETE", None, b"", False),
    ("get", "GET", None, b"", True),
]


def _record(writer, kind, url, headers, body, warc_headers):
    return writer.create_warc_record(url, kind, payload=io.BytesIO(body), http_headers=headers,
                                     warc_headers_dict=warc_headers)


def write_posts(path, gzip=True, request_first=False, cases=CASES):
    """A WARC of one request and response (or revisit) per case, each to its own URL; the
    request before its response with ``request_first`` (the response concurrent to it), else
    after it (concurrent to the response, as warcio, Heritrix and Browsertrix write them)."""
    with open(path, "wb") as fh:
        writer = WARCWriter(fh, gzip=gzip)
        for number, (name, method, content_type, body, _) in enumerate(cases):
            url = f"http://example.com/api/{name}?n={number}"
            headers = [("Host", "example.com")]
            if content_type:
                headers.append(("Content-Type", content_type))
            if method != "GET":
                headers.append(("Content-Length", str(len(body))))
            request_headers = StatusAndHeaders(f"{method} /api/{name}?n={number} HTTP/1.1",
                                               headers, is_http_request=True)
            response_headers = StatusAndHeaders("200 OK", [("Content-Type", "application/json")],
                                                protocol="HTTP/1.1")
            date = {"WARC-Date": f"2024-01-01T00:00:{number:02d}Z"}
            response = _record(writer, "response", url, response_headers,
                               b'{"answer": %d}' % number, date)
            request = _record(writer, "request", url, request_headers, body, date)
            first, second = (request, response) if request_first else (response, request)
            second.rec_headers.add_header("WARC-Concurrent-To",
                                          first.rec_headers.get_header("WARC-Record-ID"))
            writer.write_record(first)
            writer.write_record(second)


def pywb_post_cdx(path, filename=None):
    """What pywb 2.10's ``cdx-indexer -s -j -p`` writes for one file."""
    from pywb.indexer.cdxindexer import write_cdx_index
    out = io.BytesIO()
    with open(path, "rb") as fh:
        write_cdx_index(out, fh, filename or os.path.basename(path), sort=True, cdxj=True,
                        append_post=True)
    return out.getvalue().decode("utf-8")


def cdxj_indexer_keys(path):
    """cdxj-indexer 1.5's ``-p`` lines: {offset: (key, method, requestBody)}, an empty
    requestBody (which it writes, pywb not) None."""
    from cdxj_indexer.main import write_cdx_index
    out = io.StringIO()
    write_cdx_index(out, [path], {"post_append": True, "sort": True})
    found = {}
    for line in out.getvalue().splitlines():
        key, _, data = line.split(" ", 2)
        data = json.loads(data)
        found[data["offset"]] = (key, data.get("method"), data.get("requestBody") or None)
    return found


def ours(path, **options):
    result = index_file(str(path), os.path.basename(str(path)), post_append=True, **options)
    assert not result.errors
    return "".join(result.lines)


@pytest.mark.parametrize("name", REAL_POSTS)
def test_real_post_captures_as_pywb_and_cdxj_indexer(name):
    path = os.path.join(REAL, name)
    text = ours(path)
    assert text == pywb_post_cdx(path)
    assert text.count("__wb_method=post") == 3
    theirs = cdxj_indexer_keys(path)
    for line in text.splitlines():
        key, _, data = line.split(" ", 2)
        data = json.loads(data)
        if "post-test-more" in name and data["offset"] == "2338":
            # a chunked body without Content-Length: pywb reads none, cdxj-indexer the
            # chunks (and so their keys differ: pywb's replay computes pywb's)
            assert key == "org,httpbin)/post?__wb_method=post" and "requestBody" not in data
            continue
        assert theirs[data["offset"]] == (key, data["method"], data.get("requestBody"))


@pytest.mark.parametrize("fmt", ["cdx11", "cdx9"])
@pytest.mark.parametrize("name", REAL_POSTS)
def test_classic_cdx_keys_as_pywb(name, fmt):
    from pywb.indexer.cdxindexer import write_cdx_index
    from webarchive_indexing.cdx.cdxline import header_line
    path = os.path.join(REAL, name)
    out = io.BytesIO()
    with open(path, "rb") as fh:
        write_cdx_index(out, fh, name, sort=True, append_post=True, cdx09=fmt == "cdx9")
    result = index_file(path, name, fmt, post_append=True)
    assert header_line(fmt) + "".join(result.lines) == out.getvalue().decode()
    assert len(result.lines) == 3 and all("__wb_method=post" in line for line in result.lines)


def test_pywb_sample_keys():
    """pywb ships post-test.warc.gz with the keys its indexer gave them."""
    expected = open(os.path.join(PYWB_SAMPLE, "cdxj", "post-test.cdxj")).read()
    text = ours(os.path.join(PYWB_SAMPLE, "warcs", "post-test.warc.gz"))
    keys = [line.split(" {")[0] for line in text.splitlines()]
    assert keys == sorted(line.split(" {")[0] for line in expected.splitlines())


@pytest.mark.parametrize("gzip,request_first", [(True, False), (True, True), (False, False),
                                                (False, True)])
def test_generated_bodies_as_pywb(tmp_path, gzip, request_first):
    path = tmp_path / ("posts.warc.gz" if gzip else "posts.warc")
    write_posts(path, gzip, request_first)
    text = ours(path)
    assert text == pywb_post_cdx(str(path))
    assert text.count("__wb_method=") == len(CASES) - 1  # all but GET
    assert "delete?__wb_method=delete&n=13 " in text and '"method": "DELETE"' in text
    # without the option: the URL's keys, as pywb's indexer without -p
    plain = index_file(str(path), "x", post_append=False)
    assert "__wb_method" not in "".join(plain.lines) and len(plain.lines) == len(CASES)


def test_generated_bodies_as_cdxj_indexer(tmp_path):
    path = tmp_path / "posts.warc.gz"
    write_posts(path)
    theirs = cdxj_indexer_keys(str(path))
    agree = {f"http://example.com/api/{name}?n={n}"
             for n, (name, *_, same) in enumerate(CASES) if same}
    compared = 0
    for line in ours(path).splitlines():
        key, _, data = line.split(" ", 2)
        data = json.loads(data)
        if data["url"] in agree:
            assert theirs[data["offset"]] == (key, data.get("method"), data.get("requestBody"))
            compared += 1
    assert compared == len(agree)


def test_bodies_become_queries():
    assert body_query("application/x-www-form-urlencoded", b"a=1+2&b=%26") == "a=1 2&b=&"
    assert body_query("application/json", json.dumps(JSON).encode()) == (
        "q=a+b%26c&page=2&q.2_=again&list=1&list.2_=x&deep=y")
    assert body_query("application/json", b'{"t": true, "z": null, "w": 2.0}') == "t=true&z=null&w=2"
    assert body_query("multipart/form-data; boundary=XyZ", MULTIPART) == (
        "title=h%C3%A9llo+w&up=%00%01%FF%26%3D")
    assert body_query("image/png", b"\x00\xff") == "__wb_post_data=AP8="
    assert len(body_query("text/plain", b"x" * 5000)) == 4096
    assert lookup_url("http://a/b?c=1", "post", "x=1") == "http://a/b?c=1&__wb_method=POST&x=1"
    assert lookup_url("http://a/b", "GET", "x=1") == "http://a/b"


# One endpoint asked three times at the same second with different bodies: only the body
# tells the captures apart
SEARCHES = [("application/x-www-form-urlencoded", b"q=red+fox&page=1"),
            ("application/json", b'{"q": "red fox", "page": 2}'),
            ("multipart/form-data; boundary=XyZ",
             b'--XyZ\r\nContent-Disposition: form-data; name="q"\r\n\r\nblue\r\n--XyZ--\r\n')]
SEARCH_URL = "http://example.com/api/search"


def write_searches(path):
    with open(path, "wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        for number, (content_type, body) in enumerate(SEARCHES):
            request = _record(writer, "request", SEARCH_URL, StatusAndHeaders(
                "POST /api/search HTTP/1.1", [("Host", "example.com"), ("Content-Type", content_type),
                                              ("Content-Length", str(len(body)))],
                is_http_request=True), body, {"WARC-Date": "2024-01-01T00:00:00Z"})
            response = _record(writer, "response", SEARCH_URL, StatusAndHeaders(
                "200 OK", [("Content-Type", "text/plain")], protocol="HTTP/1.1"),
                b"answer %d" % number, {"WARC-Date": "2024-01-01T00:00:00Z"})
            writer.write_request_response_pair(request, response)


def post(address, content_type, body):
    """(status, body) of a POST."""
    import http.client
    import urllib.parse
    parts = urllib.parse.urlsplit(address)
    conn = http.client.HTTPConnection(parts.netloc, timeout=60)
    try:
        conn.request("POST", address[len(f"{parts.scheme}://{parts.netloc}"):], body,
                     {"Content-Type": content_type, "Content-Length": str(len(body))})
        answer = conn.getresponse()
        return answer.status, answer.read()
    finally:
        conn.close()


@pytest.fixture(scope="module")
def searches(tmp_path_factory):
    """A cluster built with --post-append of the three searches, its archive's directory."""
    from webarchive_indexing.commands.build import build
    from webarchive_indexing.options import BuildOptions
    tmp = tmp_path_factory.mktemp("searches")
    (tmp / "warcs").mkdir()
    write_searches(tmp / "warcs" / "searches.warc.gz")
    build([str(tmp / "warcs")], str(tmp / "out"), BuildOptions(post_append=True))
    return tmp


def test_query_finds_each_body(searches):
    from webarchive_indexing.api.collection import query
    from webarchive_indexing.api.request import CdxRequest
    out = str(searches / "out")
    assert len(b"".join(query(out, CdxRequest(SEARCH_URL, match_type="prefix"))).splitlines()) == 3
    offsets = set()
    for content_type, body in SEARCHES:
        wanted = body_query(content_type, body)
        found = b"".join(query(out, CdxRequest(SEARCH_URL, method="post", request_body=wanted,
                                               output="json"))).splitlines()
        assert len(found) == 1 and json.loads(found[0])["requestBody"] == wanted
        offsets.add(json.loads(found[0])["offset"])
    assert len(offsets) == 3
    # the URL alone: none of them (each is keyed with its body)
    assert list(query(out, CdxRequest(SEARCH_URL))) == []


def test_pywb_replays_each_post(searches):
    """pywb 2.10 replays each POST through our cluster: the capture of that body. Through
    serve (``index: cdx+http://...``) it sends the URL alone (its issues 585 and 768): its
    fuzzy lookup by prefix finds the POST captures, keyed with their bodies, and replays
    one of them, the same for every body (docs/indexes.md)."""
    import servers
    from webarchive_indexing.api.serve import open_collections
    out = searches / "out"
    archives = f"{searches / 'warcs'}/"
    with servers.ours(open_collections([f"c={out}"])) as ours, \
            servers.pywb(searches, {"local": {"index": str(out / "cluster" / "cluster.idx"),
                                              "archive_paths": archives},
                                    "remote": {"index": f"cdx+{ours}/c/cdx",
                                               "archive_paths": archives}}) as pywb:
        for number, (content_type, body) in enumerate(SEARCHES):
            status, answer = post(f"{pywb}/local/20240101000000id_/{SEARCH_URL}", content_type, body)
            assert (status, answer) == (200, b"answer %d" % number)
        remote = {post(f"{pywb}/remote/20240101000000id_/{SEARCH_URL}", content_type, body)
                  for content_type, body in SEARCHES}
    assert len(remote) == 1 and next(iter(remote)) in {(200, b"answer %d" % n)
                                                       for n in range(len(SEARCHES))}


def test_serve_takes_method_and_request_body(searches):
    """serve answers lookups by method and requestBody (OutbackCDX's parameters), empty
    values absent as pywb sends them; a body without a method is refused."""
    import servers
    from webarchive_indexing.api.serve import open_collections
    with servers.ours(open_collections([f"c={searches / 'out'}"])) as ours:
        for number, (content_type, body) in enumerate(SEARCHES):
            status, _, text = servers.get(f"{ours}/c/cdx", url=SEARCH_URL, method="POST",
                                          requestBody=body_query(content_type, body), output="json")
            rows = servers.json_lines(text)
            assert status == 200 and len(rows) == 1 and rows[0]["method"] == "POST"
        status, _, text = servers.get(f"{ours}/c/cdx", url=SEARCH_URL, requestBody="q=x")
        assert status == 400 and b"requestBody" in text
        status, _, text = servers.get(f"{ours}/c/cdx", url=SEARCH_URL, method="POST", requestBody="")
        assert status == 200 and text == b""


def test_get_requests_pass_unparsed(tmp_path):
    """The walk's fast path stays: a GET request is passed over by its request line, never
    parsed, also with --post-append; a POST request is read."""
    from webarchive_indexing.warc.walk import Record, Skipped, iter_records
    path = tmp_path / "mixed.warc.gz"
    write_posts(path, cases=[c for c in CASES if c[0] in ("get", "form")])
    with open(path, "rb") as fh:
        items = list(iter_records(fh, str(path), skip=(("warcinfo",), ()), skip_methods=("GET",)))
    passed = [i for i in items if type(i) is Skipped]
    read = [i.record.rec_type for i in items if type(i) is Record]
    assert [i.request for i in passed] == [True] and sorted(read) == ["request", "response", "response"]


def test_cli_and_update_keep_the_keys(tmp_path):
    """cdx and build take --post-append; an update keeps what the cluster was built with
    (recorded in contents.json) and refuses the other; CDX files made without it are made
    again."""
    warcs = tmp_path / "warcs"
    warcs.mkdir()
    shutil.copy(os.path.join(REAL, REAL_POSTS[0]), warcs)
    tool = [sys.executable, "-m", "webarchive_indexing.cli"]

    def run(*args):
        return subprocess.run(tool + list(args), capture_output=True, text=True)

    cdx = run("cdx", "--post-append", str(warcs))
    assert cdx.returncode == 0 and cdx.stdout == pywb_post_cdx(str(warcs / REAL_POSTS[0]))
    refused = run("cdx", "--post-append", "--cdx-fields", "cc", str(warcs))
    assert refused.returncode == 2 and "--post-append goes with --cdx-fields pywb" in refused.stderr
    out = str(tmp_path / "out")
    assert run("build", str(warcs), "-o", out).returncode == 0
    assert run("query", out, "http://httpbin.org/post*").stdout.count("__wb_method") == 0
    refused = run("build", "--update", "--post-append", str(warcs), "-o", out)
    assert refused.returncode == 2 and "built without it" in refused.stderr
    assert run("build", "--post-append", str(warcs), "-o", out).returncode == 0  # anew
    assert run("query", out, "http://httpbin.org/post*").stdout.count("__wb_method=post") == 3
    shutil.copy(os.path.join(REAL, REAL_POSTS[1]), warcs)
    assert run("build", "--update", str(warcs), "-o", out).returncode == 0
    assert run("query", out, "http://httpbin.org/post*").stdout.count("__wb_method=post") == 6
    refused = run("build", "--update", "--no-post-append", str(warcs), "-o", out)
    assert refused.returncode == 2 and "built with it" in refused.stderr
    found = run("query", out, "https://httpbin.org/post", "--method", "POST",
                "--request-body", "a=json-data", "--output", "json")
    assert json.loads(found.stdout)["offset"] == "1227"


@pytest.mark.parametrize("runner", ["local", "inline", "mrjob", "spark"])
def test_every_engine_writes_the_keys(tmp_path, runner, request):
    """build --post-append gives each engine's tasks the option (mrjob's job, Spark's)."""
    from webarchive_indexing.api.collection import query
    from webarchive_indexing.api.request import CdxRequest
    from webarchive_indexing.commands.build import build
    from webarchive_indexing.options import BuildOptions
    (tmp_path / "w").mkdir()
    shutil.copy(os.path.join(REAL, REAL_POSTS[0]), tmp_path / "w")
    extra = {"spark_context": request.getfixturevalue("spark")} if runner == "spark" else {}
    build([str(tmp_path / "w")], str(tmp_path / "out"),
          BuildOptions(runner=runner, post_append=True, **extra))
    lines = b"".join(query(str(tmp_path / "out"), CdxRequest("http://httpbin.org/post",
                                                               match_type="prefix")))
    assert lines.decode() == pywb_post_cdx(os.path.join(REAL, REAL_POSTS[0]))


def test_a_warc_zst_has_the_same_keys(tmp_path):
    """A .warc.zst's records (each its frames) pair and key as the .warc.gz's."""
    from webarchive_indexing.commands.recompress import recompress
    source = tmp_path / "posts.warc.gz"
    write_posts(source, request_first=True)
    summary = recompress([str(source)], str(tmp_path / "zst"))
    assert not summary.errors

    def keys(path):
        return [(line.split(" ", 2)[0], json.loads(line.split(" ", 2)[2]).get("requestBody"))
                for line in ours(path).splitlines()]
    assert keys(tmp_path / "zst" / "posts.warc.zst") == keys(source)


def _random_text(rnd, n):
    return "".join(rnd.choice("ab =&+%é\u00fc€\n\"'x1.") for _ in range(rnd.randint(0, n)))


def _random_json(rnd, depth=0):
    pick = rnd.random()
    if depth > 3 or pick < 0.4:
        return rnd.choice([True, False, None, 0, -3, 2.0, 2.5, 1e20, 1e-7, 10**30, float(10**16),
                           _random_text(rnd, 5)])
    if pick < 0.7:
        return {_random_text(rnd, 3): _random_json(rnd, depth + 1) for _ in range(rnd.randint(0, 4))}
    return [_random_json(rnd, depth + 1) for _ in range(rnd.randint(0, 4))]


def _random_multipart(rnd):
    boundary = "B" + "".join(rnd.choice("ab=+'.&%") for _ in range(3)) + "z"
    parts = []
    for _ in range(rnd.randint(0, 3)):
        upload = rnd.random() < 0.4
        value = (bytes(rnd.randrange(256) for _ in range(rnd.randint(0, 8))) if upload
                 else _random_text(rnd, 8).encode())
        name = _random_text(rnd, 3).replace('"', "").replace("\n", "").encode()
        parts.append(b"--%s\r\nContent-Disposition: form-data; name=\"%s\"%s\r\n\r\n%s\r\n" % (
            boundary.encode(), name, b'; filename="f.bin"' if upload else b"", value))
    return f"multipart/form-data; boundary={boundary}", b"".join(parts) + b"--%s--\r\n" % boundary.encode()


def test_random_bodies_as_pywbs_canonicalizer():
    """Bodies of every kind, made at random (forms in UTF-8 and Latin-1, JSON of any shape
    and value, text, bytes, multipart forms with odd boundaries, names and uploads): the
    query is the one pywb 2.10's own canonicalizer makes, which its replay looks up."""
    import random
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # pywb's cgi
        from pywb.warcserver.inputrequest import MethodQueryCanonicalizer
    from webarchive_indexing.cdx.postquery import method_query
    rnd = random.Random(5)
    kinds = {
        "form": lambda: ("application/x-www-form-urlencoded",
                         _random_text(rnd, 30).encode(rnd.choice(["utf-8", "latin-1"]), "ignore")),
        "json": lambda: ("application/json", json.dumps(_random_json(rnd)).encode()),
        "not json": lambda: ("application/json", _random_text(rnd, 10).encode()),
        "text": lambda: ("text/plain", rnd.choice([json.dumps(_random_json(rnd)),
                                                   _random_text(rnd, 20)]).encode()),
        "bytes": lambda: (rnd.choice(["application/octet-stream", None]),
                          bytes(rnd.randrange(256) for _ in range(rnd.randint(0, 40)))),
        "multipart": lambda: _random_multipart(rnd),
    }
    for _ in range(1000):
        content_type, body = kinds[rnd.choice(sorted(kinds))]()
        method = rnd.choice(["POST", "PUT", "post"])
        theirs = MethodQueryCanonicalizer(method, content_type, str(len(body)), io.BytesIO(body)).query
        assert method_query(method, content_type, str(len(body)), io.BytesIO(body)) == (
            method.upper(), theirs.decode() if isinstance(theirs, bytes) else theirs), (content_type, body)


def test_a_large_upload_is_read_in_part():
    """A PUT of more than MAX_BODY bytes: read no further than its key needs (pywb reads it
    whole into memory), the same key as pywb's."""
    from pywb.warcserver.inputrequest import MethodQueryCanonicalizer
    from webarchive_indexing.cdx.postquery import MAX_BODY, method_query

    class Body(io.RawIOBase):
        """``size`` bytes of a repeating pattern, counting what was read."""
        def __init__(self, size):
            self.left, self.read_bytes = size, 0

        def read(self, n=-1):
            n = self.left if n is None or n < 0 else min(n, self.left, 1 << 20)
            self.left -= n
            self.read_bytes += n
            return bytes(range(256)) * (n // 256) + bytes(n % 256)

    size = MAX_BODY * 4
    ours_body = Body(size)
    assert method_query("PUT", "application/octet-stream", str(size), ours_body) == (
        "PUT", MethodQueryCanonicalizer("PUT", "application/octet-stream", str(size), Body(size)).query)
    assert ours_body.read_bytes == MAX_BODY
