"""``serve`` against pywb 2.10's own server on the same cluster, and through real clients:
cdx_toolkit iterating a domain, pywb replaying pages with ``serve`` as its CDX source."""
import http.client
import json
import os
import signal
import subprocess
import threading
import time

import pytest
from warcio.archiveiterator import ArchiveIterator

import servers
from test_query import LINES
from webarchive_indexing.commands.build import build
from webarchive_indexing.api.request import Limits
from webarchive_indexing.cli import main
from webarchive_indexing.api.collection import Collection
from webarchive_indexing.commands.corpus import make_corpus
from webarchive_indexing.options import BuildOptions
from webarchive_indexing.zipnum.reader import Cluster, search_range
from webarchive_indexing.api.serve import open_collections, redact
from webarchive_indexing.zipnum.layout import write_cluster

PARITY_QUERIES = [
    ("example.com/", "exact"), ("example.com/a", "prefix"), ("example.com/", "host"), ("example.com", "domain"),
    ("*.example.com", None), ("example.com/p/*", None), ("com", "domain"), ("example.org/", "exact"),
    ("foo.net/", "host"), ("nothing.example/", "exact"), ("zzzz.zz", "domain"), ("0.0.0.0/", "prefix"),
    ("shop.example.co.uk/", "host"), ("http://www.example.com/a?b=2&a=1", "exact"),
]
VARIANTS = [{}, {"filter": "=status:200"}, {"filter": ["!~url:.*p/1", "mime:html"]}, {"fl": "timestamp,url,status"},
            {"from": "2015", "to": "20190630"}, {"output": "cdxj"}, {"output": "text", "fl": "urlkey,timestamp,digest"}]


@pytest.fixture(scope="module")
def cluster_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("cluster")
    write_cluster(LINES, out, [LINES[len(LINES) // 3], LINES[2 * len(LINES) // 3]], lines_per_block=7,
                  root_slice_bytes=1500)
    return out


@pytest.fixture(scope="module")
def both(cluster_dir, tmp_path_factory):
    """Our server and pywb's on the same cluster: (ours, pywb's) CDX API URLs."""
    tmp = tmp_path_factory.mktemp("servers")
    with servers.ours({"ours": Collection("ours", [Cluster(cluster_dir)])}) as ours, \
            servers.pywb(tmp, {"ours": str(cluster_dir / "cluster.idx")}) as pywb:
        yield ours + "/ours/cdx", pywb + "/ours/cdx"


def params_of(url, match_type, **extra):
    # pywb answers a miss with its fuzzy matches (other URLs) unless told not to (we have
    # none), and adds its source keys to every line unless told not to
    return {"url": url, "allowFuzzy": "false", "nosource": "true", **({"matchType": match_type} if match_type else {}), **extra}


def test_same_json_lines_as_pywbs_server_page_by_page(both):
    ours, pywb = both
    asked = 0
    for url, match_type in PARITY_QUERIES:
        for variant in VARIANTS:
            output = variant.get("output", "json")
            for page_size in (1, 3):
                params = params_of(url, match_type, pageSize=page_size, **variant)
                info = json.loads(servers.get(ours, showNumPages="true", **params)[2])
                assert json.loads(servers.get(pywb, showNumPages="true", **params)[2]) == info, params
                pages = []
                for page in range(max(info["pages"], 1)):
                    want = servers.get(pywb, **{**params, "page": page, "output": output})
                    got = servers.get(ours, **{**params, "page": page, "output": output})
                    assert got[0] == want[0], (params, page)
                    if want[0] != 200:  # a page of nothing: both 400, pywb's message
                        assert json.loads(got[2]) == json.loads(want[2])
                        continue
                    if output == "json":
                        assert servers.json_lines(got[2]) == servers.json_lines(want[2]), (params, page)
                    else:
                        assert got[2] == want[2], (params, page)
                    pages.append(got[2])
                    asked += 1
                    if not variant:  # the index lines of the page's blocks
                        for index_output in ("json", "text"):
                            index = {**params, "page": page, "output": index_output, "showPagedIndex": "true"}
                            assert servers.get(ours, **index)[2] == servers.get(pywb, **index)[2], index
                # without page=, every line of every page (pywb gives page 0 only)
                everything = servers.get(ours, **{**params_of(url, match_type, **variant), "output": output})[2]
                assert everything == b"".join(pages), params
    assert asked > 150


def test_errors_as_pywb_gives_them(both):
    ours, pywb = both
    for params in ({"url": "example.com", "page": "99"}, {"url": ""}, {"url": "example.com", "output": "xml"},
                   {"url": "example.com", "matchType": "regex"}):
        got, want = servers.get(ours, **params), servers.get(pywb, **params)
        assert got[0] == want[0] == 400, params
        assert got[1]["Content-Type"] == want[1]["Content-Type"] == "application/json; charset=utf-8"
        assert set(json.loads(got[2])) == {"message"}
    assert json.loads(servers.get(ours, url="example.com", page="99")[2]) == json.loads(servers.get(pywb, url="example.com", page="99")[2])
    # where pywb answers 500 for bad input, we answer 400 naming the parameter
    for params, name in (({"url": "example.com", "limit": "x"}, "limit"), ({"url": "example.com", "filter": "~url:("}, "filter"),
                         ({"url": "example.com", "closest": "2024-1"}, "closest")):
        status, _, body = servers.get(ours, **params)
        assert status == 400 and json.loads(body)["message"].startswith(f"{name}: ")
        if name != "closest":  # pywb takes any closest=
            assert servers.get(pywb, **params)[0] == 500


def test_endpoints_collinfo_gzip_and_404(cluster_dir, tmp_path):
    collections = {"one": Collection("one", [Cluster(cluster_dir)]), "two": Collection("two", [Cluster(cluster_dir)])}
    with servers.ours(collections) as base:
        status, headers, body = servers.get(base + "/collinfo.json")
        assert status == 200 and json.loads(body) == [
            {"id": n, "name": n, "cdx-api": f"{base}/{n}-index"} for n in ("one", "two")]
        same = servers.get(base + "/one/cdx", url="*.example.com")[2]
        assert same == b"".join(Cluster(cluster_dir).lookup("*.example.com")) and len(same) > 10000
        assert servers.get(base + "/one-index", url="*.example.com")[2] == same
        status, headers, body = servers.get(base + "/one/cdx", headers={"Accept-Encoding": "gzip"}, url="*.example.com")
        assert headers["Content-Encoding"] == "gzip" and headers["Transfer-Encoding"] == "chunked" and body == same
        for path in ("/three/cdx", "/one/cdx/x", "/one", "/etc/passwd", "/../one/cdx"):
            status, _, body = servers.get(base + path, url="example.com")
            assert status == 404 and "no such path" in json.loads(body)["message"], path


def test_a_collection_of_several_clusters(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    write_cluster(LINES[::2], a, [], lines_per_block=5)
    write_cluster(LINES[1::2], b, [LINES[500]], lines_per_block=3)
    with servers.ours(open_collections([f"all={a},{b}", f"a={a}"])) as base:
        body = servers.get(base + "/all/cdx", url="*.example.com")[2]
        start, end = (k.encode() for k in search_range("*.example.com"))
        assert body == b"".join(line for line in LINES if start <= line < end)
        assert servers.get(base + "/a/cdx", url="*.example.com")[2] == b"".join(Cluster(a).lookup("*.example.com"))
    for bad in ("noequals", "=x", "a b=x", "a=", "x=1,2"):
        with pytest.raises((ValueError, OSError)):
            open_collections([bad, f"b={b}"] if bad != "x=1,2" else [bad])


def test_bounds_and_time_limit(cluster_dir):
    limits = Limits(limit=50, page_size=5, regex=30, filters=3, url=100, seconds=0.000001)
    with servers.ours({"c": Collection("c", [Cluster(cluster_dir)])}, limits=limits) as base:
        for params, name in (({"limit": "51"}, "limit"), ({"limit": "-51"}, "limit"), ({"pageSize": "6", "page": "0"}, "pageSize"),
                             ({"filter": "~url:" + "a" * 40}, "filter"), ({"filter": ["a", "b", "c", "d"]}, "filter")):
            status, _, body = servers.get(base + "/c/cdx", url="*.example.com", **params)
            assert status == 400 and json.loads(body)["message"].startswith(name), params
        status, _, body = servers.get(base + "/c/cdx", url="x" * 101)
        assert status == 400 and json.loads(body)["message"].startswith("url: longer than 100")
        status, _, body = servers.get(base + "/c/cdx", url="*.com")
        assert status == 503 and "took longer than" in json.loads(body)["message"]


def test_damaged_and_unreadable_clusters_get_http_errors(cluster_dir, tmp_path):
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    for name in os.listdir(cluster_dir):
        (damaged / name).write_bytes((cluster_dir / name).read_bytes())
    shard = bytearray((damaged / "cdx-00001.gz").read_bytes())
    shard[len(shard) // 2] ^= 0xFF
    (damaged / "cdx-00001.gz").write_bytes(bytes(shard))
    missing = tmp_path / "missing"
    missing.mkdir()
    for name in os.listdir(cluster_dir):
        if name != "cdx-00002.gz":
            (missing / name).write_bytes((cluster_dir / name).read_bytes())
    log = LogCapture()
    damaged_key = next(e.key for e in Cluster(damaged)._entries(Cluster(damaged).idx.scan(b"", b"~"))
                       if e.shard == "cdx-00001.gz" and e.offset <= len(shard) // 2 < e.offset + e.length)
    url_there = json.loads(LINES[-1].split(b" ", 2)[2])["url"]
    collections = {"d": Collection("d", [Cluster(damaged)]), "m": Collection("m", [Cluster(missing)])}
    with servers.ours(collections, access_log=log) as base:
        line = next(line for line in LINES if line.startswith(damaged_key + b" "))
        status, _, body = servers.get(base + "/d/cdx", url=json.loads(line.split(b" ", 2)[2])["url"])
        message = json.loads(body)["message"]
        assert status == 500 and "the index is damaged" in message and "cdx-00001.gz at offset" in message
        status, _, body = servers.get(base + "/m/cdx", url=url_there)
        assert status == 502 and "cannot read" in json.loads(body)["message"] and "cdx-00002.gz" in json.loads(body)["message"]
        # found after the answer began: the response ends without its last chunk
        with pytest.raises(http.client.IncompleteRead):
            servers.get(base + "/d/cdx", url="*.com")
    assert "ended early: 500 after" in log.text and "the index is damaged" in log.text


class LogCapture:
    def __init__(self):
        self.text = ""

    def write(self, text):
        self.text += text

    def flush(self):
        pass


def test_no_credentials_in_errors_or_log():
    secret = "s3cr3t-pass"
    assert secret not in redact(f"cannot read http://user:{secret}@127.0.0.1:9/cluster.idx: refused")
    assert secret not in redact(f"GET /x?X-Amz-Signature={secret}&X-Amz-Credential={secret} 403")
    log = LogCapture()
    with servers.ours({}, access_log=log) as base:
        servers.get(base + f"/c/cdx?url=http://u:{secret}@example.com/")
    assert secret not in log.text and "***@example.com" in log.text


def test_cdx_toolkit_iterates_through_serve(cluster_dir, capsysbinary):
    """cdx_toolkit, pointed at serve, iterates a domain (page by page, as it does against
    pywb) and gets what `query` prints."""
    import cdx_toolkit
    from cdx_toolkit import myrequests
    myrequests.retry_info["default"]["minimum_interval"] = 0  # no pause between pages here
    with servers.ours({"ours": Collection("ours", [Cluster(cluster_dir)])}) as base:
        fetcher = cdx_toolkit.CDXFetcher(source=base + "/ours/cdx")
        got = [capture.data for capture in fetcher.iter("*.example.com")]
        assert main(["query", str(cluster_dir), "*.example.com", "--output", "json"]) == 0
        expected = [json.loads(line) for line in capsysbinary.readouterr()[0].splitlines()]
        assert got == expected and len(got) > 300
        # cdx_toolkit takes pywb's "blocks" for its pages
        assert fetcher.get_size_estimate("*.example.com", as_pages=True) == json.loads(
            servers.get(base + "/ours/cdx", url="*.example.com", showNumPages="true")[2])["blocks"]
        limited = [capture.data for capture in fetcher.iter("example.com/", matchType="host", filter="=status:200", limit=7)]
        assert limited == [row for row in expected if row["status"] == "200" and row["urlkey"].startswith("com,example)/")][:7]


@pytest.fixture(scope="module")
def corpus_cluster(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("corpus")
    make_corpus(tmp / "warcs", files=2, captures=40, seed=3, mean_kb=4, hosts=5)
    build([str(tmp / "warcs")], str(tmp / "out"), BuildOptions(shards=2, lines_per_block=5, runner="inline"))
    return tmp


def test_pywb_replays_pages_with_serve_as_its_cdx_source(corpus_cluster, tmp_path):
    """pywb's own replay, its index a remote CDX server (ours), its WARCs local: every
    captured page comes back byte for byte, as pywb serves it from its own ZipNum index."""
    warcs = corpus_cluster / "warcs"
    out = corpus_cluster / "out"
    with servers.ours(open_collections([f"c={out}"])) as ours, \
            servers.pywb(tmp_path, {"remote": {"index": f"cdx+{ours}/c/cdx", "archive_paths": str(warcs) + "/"},
                                    "local": {"index": str(out / "cluster" / "cluster.idx"),
                                              "archive_paths": str(warcs) + "/"}}) as pywb:
        pages = 0
        for name in sorted(os.listdir(warcs)):
            if not name.endswith(".warc.gz"):
                continue
            with open(warcs / name, "rb") as fh:
                for record in ArchiveIterator(fh):
                    if record.rec_type != "response" or record.http_headers.get_statuscode() != "200":
                        continue
                    url = record.rec_headers.get_header("WARC-Target-URI")
                    stamp = record.rec_headers.get_header("WARC-Date").replace("-", "").replace(":", "").replace("T", "")[:14]
                    payload = record.content_stream().read()
                    status, _, remote = servers.get(f"{pywb}/remote/{stamp}id_/{url}")
                    local = servers.get(f"{pywb}/local/{stamp}id_/{url}")[2]
                    assert status == 200 and remote == local == payload, url
                    pages += 1
        assert pages >= 30


def test_serve_command_workers_and_sigterm(cluster_dir, tmp_path):
    """The command: worker processes, the access log, and a clean stop on SIGTERM while
    answers are streaming (they finish)."""
    access = tmp_path / "access.log"
    with servers.command([f"c={cluster_dir}", "--workers", "2", "--access-log", str(access)]) as (base, process):
        expected = b"".join(Cluster(cluster_dir).lookup("*.com"))
        results = []

        def fetch():
            results.append(servers.get(base + "/c/cdx", url="*.com"))

        threads = [threading.Thread(target=fetch) for _ in range(6)]
        for thread in threads:
            thread.start()
        time.sleep(0.05)
        process.send_signal(signal.SIGTERM)
        for thread in threads:
            thread.join()
        assert process.wait(30) == 0
        err = process.stderr.read().decode()
    assert "serving c (1 cluster) at http://127.0.0.1:" in err and "Traceback" not in err
    finished = [r for r in results if r[0] == 200]
    assert finished and all(r[2] == expected for r in finished)
    assert access.read_text().count('"GET /c/cdx?url=%2A.com HTTP/1.1" 200') >= len(finished)


def test_serve_command_bad_collections(tmp_path):
    for args, message in ((["nothing"], "expected NAME=CLUSTER"), ([f"x={tmp_path}/nowhere"], "no ZipNum index")):
        result = subprocess.run([os.path.join(servers.BIN, "webarchive-index"), "serve", *args, "--port", "0"],
                                capture_output=True, text=True, timeout=60)
        assert result.returncode in (1, 2) and message in result.stderr and "Traceback" not in result.stderr


def test_search_page_in_a_headless_browser(cluster_dir, tmp_path, monkeypatch):
    """The page at / in Chromium: fill in the form, submit, read the table."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import Select, WebDriverWait
    if not os.path.exists("/usr/bin/chromedriver"):
        if os.environ.get("CI"):
            pytest.fail("Debian's chromium and chromium-driver are missing: .ci/run installs them")
        pytest.skip("Debian's chromium-driver is not installed (.ci/run installs it)")
    monkeypatch.setenv("SE_OFFLINE", "true")  # selenium-manager must not look for drivers online
    options = webdriver.ChromeOptions()
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
                 f"--user-data-dir={tmp_path / 'profile'}"):
        options.add_argument(flag)
    options.binary_location = "/usr/bin/chromium"
    with servers.ours({"ours": Collection("ours", [Cluster(cluster_dir)]),
                       "other": Collection("other", [Cluster(cluster_dir)])}) as base:
        browser = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
        try:
            browser.get(base + "/")
            Select(browser.find_element(By.NAME, "coll")).select_by_visible_text("ours")
            browser.find_element(By.NAME, "url").send_keys("example.com/")
            Select(browser.find_element(By.NAME, "matchType")).select_by_visible_text("host")
            browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
            # a click does not wait for the page it loads (get does): the results' summary
            # is on that page only
            WebDriverWait(browser, 60).until(expected_conditions.presence_of_element_located((By.ID, "summary")))
            rows = browser.find_elements(By.CSS_SELECTOR, "#captures tbody tr")
            expected = [json.loads(line) for line in servers.get(base + "/ours/cdx", url="example.com/", matchType="host",
                                                                  output="json")[2].splitlines()]
            assert len(rows) == len(expected) > 20
            cells = [cell.text for cell in rows[0].find_elements(By.TAG_NAME, "td")]
            assert cells == [expected[0][f] for f in ("timestamp", "url", "status", "mime", "length", "filename")]
            link = browser.find_element(By.ID, "json").get_attribute("href")
            assert json.loads(servers.get(link)[2].splitlines()[0]) == expected[0]
            browser.get(base + "/?coll=ours&url=%3Cscript%3E&matchType=exact")
            assert "<script>" in browser.find_element(By.ID, "summary").text  # shown as text, not run
        finally:
            browser.quit()


def test_a_remote_cluster_served_with_bounded_caches(cluster_dir, tmp_path):
    """A cluster read over HTTP answers as the local one; what was read is kept (blocks
    in the BlockCache, index slices in the IdxFile) within their bounds."""
    import shutil
    import rangeserver
    from webarchive_indexing.zipnum.reader import BlockCache
    shutil.copytree(cluster_dir, tmp_path / "site" / "cluster")
    with rangeserver.serving(tmp_path / "site") as remote:
        cache = BlockCache(200_000)
        collections = open_collections([f"r={remote.url}/cluster"], cache)
        with servers.ours(collections) as base:
            for url in ("*.example.com", "example.org/", "foo.net/*", "foo.net/*"):
                remote.requests.clear()
                got = servers.get(base + "/r/cdx", url=url)[2]
                assert got == b"".join(Cluster(cluster_dir).lookup(url))
            assert remote.requests == []  # the repeated lookup: all from the caches
            assert cache.size <= 200_000
            servers.get(base + "/r/cdx", url="*.com")
            assert 0 < cache.size <= 200_000


def test_readme_serve_commands(tmp_path):
    """The README's serve and curl commands, as written (the port adapted)."""
    for name, lines in (("out", LINES), ("crawl-1", LINES[::2]), ("crawl-2", LINES[1::2])):
        write_cluster(lines, tmp_path / name / "cluster", [lines[len(lines) // 2]], lines_per_block=9)
    with servers.command(["cc=out/cluster", "all=crawl-1/cluster,crawl-2/cluster"], cwd=tmp_path) as (base, _):
        port = base.rsplit(":", 1)[1]
        curl = subprocess.run(["curl", "-s", f"http://127.0.0.1:{port}/cc/cdx?url=*.example.com&output=json&limit=5"],
                              capture_output=True, check=True).stdout
        rows = [json.loads(line) for line in curl.splitlines()]
        start, end = (k.encode() for k in search_range("*.example.com"))
        assert len(rows) == 5 and rows[0]["urlkey"] == next(l for l in LINES if start <= l < end).split(b" ")[0].decode()
        everything = servers.get(base + "/all/cdx", url="*.example.com")[2]
        assert everything == b"".join(line for line in LINES if start <= line < end)


def test_a_regular_expression_that_never_ends_is_stopped(cluster_dir):
    """A filter that backtracks without end is stopped at the request's time limit; the
    server goes on answering."""
    limits = Limits(limit=1000, page_size=100, regex=100, filters=5, url=1000, seconds=1)
    with servers.ours({"c": Collection("c", [Cluster(cluster_dir)])}, limits=limits) as base:
        began = time.monotonic()
        status, _, body = servers.get(base + "/c/cdx", url="*.com", filter=r"~url:(\w|\W|.)+x$")
        assert status == 503 and "took longer than 1 s" in json.loads(body)["message"]
        assert time.monotonic() - began < 10
        assert servers.get(base + "/c/cdx", url="example.org/")[0] == 200
    for huge in ("~url:a{99999999999}", "~url:(" * 1000 + ")" * 1000):
        status = Limits(regex=10**5)
        with pytest.raises(Exception, match="bad regular expression|filter"):
            from webarchive_indexing.api.request import CdxRequest
            CdxRequest("example.com", filters=[huge], limits=status)


def test_serve_workers_read_a_cluster_on_s3(cluster_dir):
    """The command's workers serving a cluster on S3 (moto's server), opened before they
    were forked: many requests at once all answer right."""
    import s3server
    from webarchive_indexing import storage
    with s3server.running():
        bucket = s3server.new_bucket()
        for name in os.listdir(cluster_dir):
            if name != "cluster.loc":
                storage.write_atomic(f"{bucket}/index/cluster/{name}", (cluster_dir / name).read_bytes())
        with servers.command([f"s3={bucket}/index", "--workers", "2", "--cache-mb", "1"]) as (base, _):
            queries = ["*.example.com", "example.org/", "*.com", "foo.net/*", "*.de", "*.uk"] * 4
            results = {}

            def fetch(n):
                results[n] = servers.get(base + "/s3/cdx", url=queries[n])

            threads = [threading.Thread(target=fetch, args=(n,)) for n in range(len(queries))]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            for n, url in enumerate(queries):
                assert results[n][0] == 200 and results[n][2] == b"".join(Cluster(cluster_dir).lookup(url)), url
