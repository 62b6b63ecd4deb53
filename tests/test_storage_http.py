"""``storage`` over http(s) (tests/rangeserver.py), and its retries over HTTP and from S3
through tests/faultproxy.py, which answers 503s, resets connections and cuts bodies short."""
import contextlib
import http.client
import http.server
import logging
import os
import random
import socket
import threading
import time

import pytest
from botocore.retries.adaptive import ClientRateLimiter
from botocore.retries.standard import ExponentialBackoff

import faultproxy
import rangeserver
import s3server
from webarchive_indexing.util import retry
from webarchive_indexing import storage
from webarchive_indexing.storage import s3 as s3_storage, web as web_storage

SIZE = 300_000


@pytest.fixture(scope="module")
def data():
    return random.Random(7).randbytes(SIZE)


@pytest.fixture
def site(tmp_path, data):
    """A directory of files to serve: a.bin (``data``), empty, and a name with a space."""
    (tmp_path / "a.bin").write_bytes(data)
    (tmp_path / "empty").write_bytes(b"")
    (tmp_path / "sub dir").mkdir()
    (tmp_path / "sub dir" / "b c.txt").write_bytes(b"hello, world")
    return tmp_path


@pytest.fixture
def server(site):
    with rangeserver.serving(site) as server:
        yield server


@pytest.fixture
def seen():
    """The requests storage makes during the test, as its request listeners get them."""
    calls = []

    def listener(*call):
        calls.append(call)

    storage.add_request_listener(listener)
    yield calls
    storage.remove_request_listener(listener)


@pytest.fixture
def fast_retries(monkeypatch):
    """Retries without the waits between them: storage's, and botocore's (up to 20 s
    after a SlowDown, and adaptive mode's rate limit), which are botocore's to test.
    Before the client is made: it binds the rate limiter's method then."""
    monkeypatch.setattr(retry.READS, "first", 0.001)
    monkeypatch.setattr(retry.READS, "cap", 0.005)
    monkeypatch.setattr(ExponentialBackoff, "delay_amount", lambda self, context: 0.001)
    monkeypatch.setattr(ClientRateLimiter, "on_sending_request", lambda self, **kwargs: None)


@contextlib.contextmanager
def answering(respond):
    """An HTTP/1.1 server on 127.0.0.1 that answers every GET with ``respond(handler)``;
    yields its URL."""
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            respond(self)

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def status(code, headers=()):
    """A ``respond`` for ``answering``: ``code``, ``headers``, no body."""
    def respond(handler):
        handler.send_response(code)
        for name, value in headers:
            handler.send_header(name, value)
        handler.send_header("Content-Length", "0")
        handler.end_headers()
    return respond


def faults(proxy_requests):
    return {fault: sum(1 for *_, f in proxy_requests if f == fault)
            for fault in ("503", "reset", "truncate")}


# -- over HTTP ---------------------------------------------------------------------------

def test_reads_over_http(server, data, tmp_path):
    url = server.url + "/a.bin"
    assert storage.backend_name(url) == "web" and not storage.is_local(url)
    assert storage.backend_name("https://example.org/a") == "web"
    assert storage.backend_name("s3://b/http://") == "s3"
    assert storage.abspath(url) == url
    assert storage.read_range(url, 1000, 50) == data[1000:1050]
    assert storage.fetch_range(url, 1000, 50) == (data[1000:1050], SIZE)
    assert server.requests == [("GET", "/a.bin", "bytes=1000-1049")] * 2
    # at the end: what is there; past it: nothing, as from a local file, and still the size
    assert storage.read_range(url, SIZE - 10, 50) == data[-10:]
    assert storage.fetch_range(url, SIZE, 5) == storage.fetch_range(url, SIZE + 99, 5) == (b"", SIZE)
    server.requests.clear()
    assert storage.read_range(url, 10, 0) == b"" and server.requests == []
    assert storage.size(url) == SIZE and storage.exists(url)
    assert not storage.exists(server.url + "/missing.bin")
    assert storage.read_bytes(url) == data
    with storage.open_read(url) as fh:
        assert fh.peek(3)[:3] == data[:3] and not fh.seekable()
        assert fh.read(10) == data[:10] and fh.read() == data[10:]
    storage.download(url, str(tmp_path / "got" / "a.bin"))
    assert (tmp_path / "got" / "a.bin").read_bytes() == data

    empty = server.url + "/empty"
    assert storage.exists(empty) and storage.size(empty) == 0
    assert storage.read_bytes(empty) == storage.read_range(empty, 0, 10) == b""
    assert storage.fetch_range(empty, 0, 10) == (b"", 0)
    # a path as a .loc file may give it, unescaped, or escaped
    for spaced in (server.url + "/sub dir/b c.txt", server.url + "/sub%20dir/b%20c.txt"):
        assert storage.read_range(spaced, 7, 5) == b"world"
    assert server.requests[-1] == ("GET", "/sub%20dir/b%20c.txt", "bytes=7-11")


def test_connections_are_kept_alive(server, data, monkeypatch):
    url = server.url + "/a.bin"
    key = ("http", server.url[len("http://"):])
    storage.read_range(url, 0, 10)
    conn = web_storage._http_pool()[key]
    assert storage.read_range(url, 10, 10) == data[10:20]
    assert web_storage._http_pool()[key] is conn and len(server.requests) == 2
    # a kept connection that died meanwhile is replaced at once, not retried after a wait
    conn.sock.shutdown(socket.SHUT_RDWR)
    monkeypatch.setattr(time, "sleep", lambda seconds: pytest.fail("a retry waited"))
    assert storage.read_range(url, 20, 10) == data[20:30]


def test_missing_forbidden_and_failing_urls(server, tmp_path):
    missing = server.url + "/missing.bin"
    for read in (storage.read_bytes, storage.size, storage.open_read,
                 lambda url: storage.read_range(url, 0, 10),
                 lambda url: storage.fetch_range(url, 0, 10),
                 lambda url: storage.download(url, str(tmp_path / "x"))):
        with pytest.raises(FileNotFoundError, match=f"HTTP 404 Not Found.*{missing}"):
            read(missing)
    assert not (tmp_path / "x").exists()
    with answering(status(403)) as url:
        for read in (storage.read_bytes, storage.exists, lambda u: storage.read_range(u, 0, 10)):
            with pytest.raises(PermissionError, match=f"HTTP 403 Forbidden.*{url}/a"):
                read(url + "/a")
    # no retry for an answer that will not change
    calls = []
    with answering(lambda handler: (calls.append(1), status(400)(handler))) as url:
        with pytest.raises(OSError, match=f"HTTP 400 Bad Request.*{url}/a") as raised:
            storage.read_range(url + "/a", 0, 10)
    assert type(raised.value) is OSError and len(calls) == 1


def test_writing_and_listing_over_http_fail_clearly(server):
    url = server.url + "/out/a.cdx.gz"
    for action, call in [("writing", lambda: storage.write_atomic(url, b"x")),
                         ("writing", lambda: storage.open_atomic(url).__enter__()),
                         ("making directories", lambda: storage.makedirs(url)),
                         ("listing files", lambda: list(storage.list_files(url))),
                         ("removing files", lambda: storage.remove(url)),
                         ("removing files", lambda: storage.remove_tree(url)),
                         ("making directories", lambda: storage.makedirs(url))]:
        with pytest.raises(OSError, match=f"{action} is not supported over HTTP.*{url}"):
            call()
    assert server.requests == []


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "close-delimited"])
def test_a_server_that_ignores_ranges(data, seen, declared):
    """It sends the whole file, with or without its length: the range is cut out of it."""
    def whole_file(handler):
        handler.send_response(200)
        if declared:
            handler.send_header("Content-Length", str(SIZE))
        else:
            handler.send_header("Connection", "close")
            handler.close_connection = True
        handler.end_headers()
        try:
            for start in range(0, SIZE, 1 << 16):
                handler.wfile.write(data[start:start + (1 << 16)])
        except ConnectionError:
            pass  # the reader has what it asked for

    with answering(whole_file) as url:
        assert storage.fetch_range(url + "/a", 1000, 50) == (data[1000:1050], SIZE)
        assert storage.read_range(url + "/a", SIZE - 10, 50) == data[-10:]
        assert storage.read_range(url + "/a", SIZE, 50) == b""
        assert storage.size(url + "/a") == SIZE and storage.exists(url + "/a")
        with storage.open_read(url + "/a") as fh:
            assert fh.read() == data
    assert len(seen) == 6 and all(byte_range for _, _, byte_range in seen[:5])


def test_listeners_can_be_removed(server):
    calls = []

    def listener(*call):
        calls.append(call)

    storage.add_request_listener(listener)
    storage.read_range(server.url + "/a.bin", 0, 1)
    storage.remove_request_listener(listener)
    storage.read_range(server.url + "/a.bin", 0, 1)
    assert len(calls) == 1


def test_redirects_are_followed_on_the_host_asked_only(server, data, seen):
    """Another port is another server: not followed (test_names.py: what is)."""
    target = server.url + "/a.bin"
    with answering(status(302, [("Location", target)])) as url:
        with pytest.raises(PermissionError, match=f"redirects to {target}, on another host"):
            storage.fetch_range(url + "/moved", 5, 5)
    assert seen == [("GET", url + "/moved", (5, 9))]
    with answering(status(301, [("Location", "/again")])) as url:
        with pytest.raises(OSError, match=f"more than {web_storage.MAX_REDIRECTS} redirects.*{url}/a"):
            storage.read_range(url + "/a", 0, 10)


def test_http_reads_survive_faults(server, data, seen, fast_retries):
    """With 30% of the requests broken, every read still gets exactly its bytes."""
    rng = random.Random(11)
    with faultproxy.running(server.url, seed=2, p_503=0.1, p_reset=0.1, p_truncate=0.1) as proxy:
        url = proxy.url + "/a.bin"
        for _ in range(150):
            offset, length = rng.randrange(SIZE + 100), rng.randrange(1, 5000)
            assert storage.fetch_range(url, offset, length) == (data[offset:offset + length], SIZE)
        for _ in range(5):
            assert storage.read_bytes(url) == data
        assert storage.size(url) == SIZE and storage.exists(url)
        assert storage.exists(url + ".missing") is False
    assert min(faults(proxy.requests).values()) >= 10
    # the listeners heard of every attempt, as the proxy saw them
    assert [(method, url, _range_header(byte_range)) for method, url, byte_range in seen] == \
        [(method, proxy.url + path, header) for method, path, header, _ in proxy.requests]


def _range_header(byte_range):
    """The Range header a request listener's ``byte_range`` stands for."""
    if byte_range is None:
        return None
    first, last = byte_range
    return f"bytes={first}-{'' if last is None else last}"


@pytest.mark.parametrize("fault,reason", [("503", "HTTP 503 Slow Down"),
                                          ("reset", "Connection reset by peer"),
                                          ("truncate", r"IncompleteRead\(5 bytes read, 5 more")])
def test_http_retries_run_out(server, seen, fast_retries, fault, reason):
    with faultproxy.running(server.url, **{f"p_{fault}": 1.0}) as proxy:
        url = proxy.url + "/a.bin"
        started = time.monotonic()
        with pytest.raises(OSError, match=f"GET bytes=0-9 failed {retry.READS.attempts} times, "
                                          f"the last with .*{reason}.*{url}"):
            storage.read_range(url, 0, 10)
        assert time.monotonic() - started < 2
    assert len(proxy.requests) == len(seen) == retry.READS.attempts


def test_a_refused_connection_is_retried(fast_retries, seen):
    with socket.socket() as sock:  # a port nothing listens on, once closed
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/a.bin"
    with pytest.raises(OSError, match=f"failed {retry.READS.attempts} times, the last with "
                                      f"ConnectionRefusedError.*{url}"):
        storage.read_range(url, 0, 10)
    assert len(seen) == retry.READS.attempts


def test_http_stream_resumes_where_it_broke(server, site, data, fast_retries):
    with faultproxy.running(server.url, p_truncate=1.0) as proxy:
        url = proxy.url + "/a.bin"
        with storage.open_read(url) as fh:  # the first answer stops half way
            proxy.set_faults()
            assert fh.read() == data
        assert proxy.requests == [("GET", "/a.bin", None, "truncate"),
                                  ("GET", "/a.bin", f"bytes={SIZE // 2}-", None)]

        # every answer cut short: it resumes as long as bytes come, then RESUMES times more
        proxy.set_faults(p_truncate=1.0)
        proxy.requests.clear()
        with storage.open_read(url) as fh:
            with pytest.raises(OSError, match=f"broken at byte {SIZE - 1} after {storage.RESUMES} "
                                              f"resumes.*{url}"):
                fh.read()
        assert proxy.requests[-storage.RESUMES - 1:] == [
            ("GET", "/a.bin", f"bytes={SIZE - 2}-", "truncate")] + [
            ("GET", "/a.bin", f"bytes={SIZE - 1}-", "truncate")] * storage.RESUMES

        # it resumes the same version of the file, or fails
        proxy.set_faults(p_truncate=1.0)
        with storage.open_read(url) as fh:
            proxy.set_faults()
            (site / "a.bin").write_bytes(data[::-1])
            os.utime(site / "a.bin", ns=(1, 1))
            with pytest.raises(OSError, match=f"changed while it was read.*412.*{url}"):
                fh.read()


# -- S3 through the proxy ----------------------------------------------------------------

@pytest.fixture(scope="module")
def s3():
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    with s3server.running() as endpoint:
        yield endpoint


@pytest.fixture
def s3_proxy(s3, monkeypatch, fast_retries):
    """A faultproxy (no faults yet) in front of moto, and a client that goes through it."""
    with faultproxy.running(s3, seed=3) as proxy:
        monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
        s3_storage._client.cache_clear()
        try:
            yield proxy
        finally:
            s3_storage._client.cache_clear()


def test_s3_reads_survive_faults(s3_proxy, data, seen):
    bucket = s3server.new_bucket()
    url = bucket + "/a.bin"
    big = os.urandom(9 << 20)  # multipart uploads through the proxy too
    storage.write_atomic(url, data)
    storage.write_atomic(bucket + "/big", big)
    assert any("uploadId=" in path for method, path, *_ in s3_proxy.requests if method == "PUT")
    s3_proxy.requests.clear()
    seen.clear()

    s3_proxy.set_faults(p_503=0.1, p_reset=0.1, p_truncate=0.1)
    rng = random.Random(12)
    for _ in range(100):
        offset, length = rng.randrange(SIZE + 100), rng.randrange(1, 5000)
        assert storage.fetch_range(url, offset, length) == (data[offset:offset + length], SIZE)
    for _ in range(3):
        assert storage.read_bytes(url) == data
    assert storage.read_bytes(bucket + "/big") == big
    assert min(faults(s3_proxy.requests).values()) >= 5
    assert [(method, url, _range_header(byte_range)) for method, url, byte_range in seen] == \
        [(method, "s3:/" + path.split("?")[0], header) for method, path, header, _ in s3_proxy.requests]


def test_the_proxy_forwards_chunked_bodies(s3_proxy):
    bucket = s3server.new_bucket()
    conn = http.client.HTTPConnection("127.0.0.1", int(s3_proxy.url.rsplit(":", 1)[1]))
    conn.request("PUT", f"/{bucket[len('s3://'):]}/chunked", body=iter([b"hello, ", b"world"]),
                 encode_chunked=True)
    assert conn.getresponse().status == 200
    conn.close()
    assert storage.read_bytes(bucket + "/chunked") == b"hello, world"


def test_s3_retries_run_out(s3_proxy, seen):
    bucket = s3server.new_bucket()
    url = bucket + "/a.bin"
    storage.write_atomic(url, b"0123456789" * 10)
    seen.clear()
    s3_proxy.requests.clear()
    s3_proxy.set_faults(p_truncate=1.0)
    with pytest.raises(OSError, match=f"GET bytes=0-9 failed {retry.READS.attempts} times, "
                                      f"the last with ResponseStreamingError.*IncompleteRead.*{url}"):
        storage.read_range(url, 0, 10)
    with pytest.raises(OSError, match=f"after {storage.RESUMES} resumes.*{url}"):
        storage.read_bytes(url)
    # resumed as long as bytes came, then RESUMES times more from the same place
    assert seen[:retry.READS.attempts] == [("GET", url, (0, 9))] * retry.READS.attempts
    assert seen[retry.READS.attempts:] == [("GET", url, byte_range) for byte_range in
                                            [None, (50, None), (75, None), (87, None), (93, None),
                                             (96, None), (98, None)] + [(99, None)] * storage.RESUMES]
    assert len(s3_proxy.requests) == len(seen)

    # botocore retries a 503 itself (11 attempts in all): not again for each of storage's
    seen.clear()
    s3_proxy.set_faults(p_503=1.0)
    with pytest.raises(OSError, match=f"GET bytes=0-9: .*SlowDown.*{url}"):
        storage.read_range(url, 0, 10)
    assert seen == [("GET", url, (0, 9))] * 11
    seen.clear()
    s3_proxy.set_faults(p_reset=1.0)
    with pytest.raises(OSError, match=f"GET bytes=0-9: .*Connection was closed.*{url}"):
        storage.read_range(url, 0, 10)
    assert seen == [("GET", url, (0, 9))] * 11


def test_fetch_range_of_a_local_file(tmp_path, data):
    path = tmp_path / "a.bin"
    path.write_bytes(data)
    assert storage.fetch_range(str(path), 5, 10) == (data[5:15], SIZE)
    assert storage.fetch_range(str(path), SIZE + 5, 10) == (b"", SIZE)
    with pytest.raises(FileNotFoundError):
        storage.fetch_range(str(tmp_path / "missing"), 0, 10)
