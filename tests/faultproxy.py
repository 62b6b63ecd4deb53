"""A reverse proxy for the tests that breaks some of the requests it forwards, as a
busy S3 or web server and the network between would: on 127.0.0.1 in a thread of the
test process, in front of another HTTP server (tests/s3server.py's moto, a rangeserver).

    with faultproxy.running(target_url, seed=1, p_503=0.1, p_reset=0.1, p_truncate=0.1) as proxy:
        proxy.url            # "http://127.0.0.1:PORT": use it instead of target_url
        proxy.requests       # [(method, path, Range header or None, fault or None), ...]
        proxy.set_faults(p_503=1.0)     # at any time

Each request to break (of the ``methods``, GET only by default: the faults are there
to try readers' retries) gets at most one fault, drawn with a ``random.Random(seed)``;
the probabilities add up to at most 1:

- ``"503"``: answered ``503 Slow Down`` with S3's XML error body, not forwarded;
- ``"reset"``: not forwarded, the connection is dropped without an answer (with
  an RST: SO_LINGER 0);
- ``"truncate"``: forwarded, and the answer's status and headers (the full
  ``Content-Length``) passed on with only the first half of its body, then the
  connection is closed.

Everything else is forwarded as it came: the method, the path, the headers (``Host``
too: boto3 signs the host:port it connects to, the proxy's; moto does not check
signatures, but a server that does still could), the body (as long as its
``Content-Length`` says, or chunked as it was sent). ``Expect: 100-continue`` is
answered by the proxy and not forwarded. Each request is forwarded on a new
connection to the target, and its answer read whole before it is passed on.
"""
import contextlib
import http.client
import http.server
import random
import socket
import struct
import threading
import urllib.parse

from rangeserver import in_thread

SLOW_DOWN = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
             b'<Message>Please reduce your request rate.</Message></Error>')
# Headers about one connection, not the request (RFC 9110 7.6.1), and the ones the
# proxy sets itself
HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "proxy-authenticate",
              "proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade", "expect",
              "content-length"}


class Proxy:
    """What a test sees of a running proxy."""

    def __init__(self, url, seed, methods):
        self.url = url
        # list.append is atomic: the handler threads append, the test reads
        self.requests = []
        self.methods = tuple(methods)
        self.faults = {}
        self.random = random.Random(seed)
        self.lock = threading.Lock()

    def set_faults(self, p_503=0.0, p_reset=0.0, p_truncate=0.0):
        """The probability of each fault for the requests from now on."""
        if min(p_503, p_reset, p_truncate) < 0 or p_503 + p_reset + p_truncate > 1:
            raise ValueError(f"fault probabilities must be >= 0 and add up to at most 1: "
                             f"p_503={p_503}, p_reset={p_reset}, p_truncate={p_truncate}")
        with self.lock:
            self.faults = {"503": p_503, "reset": p_reset, "truncate": p_truncate}

    def fault(self, method):
        """The fault for a request with ``method``, or None."""
        if method not in self.methods:
            return None
        with self.lock:  # one draw a request, in the order they come
            draw = self.random.random()
            for fault, probability in self.faults.items():
                if draw < probability:
                    return fault
                draw -= probability
        return None


@contextlib.contextmanager
def running(target_url, seed=1, p_503=0.0, p_reset=0.0, p_truncate=0.0, methods=("GET",)):
    """Proxy ``target_url`` (``http://host:port``) until the block ends; yield a ``Proxy``."""
    target = urllib.parse.urlsplit(target_url)
    if target.scheme != "http" or target.path.strip("/"):
        raise ValueError(f"the proxy forwards to http://host:port only, not {target_url}")

    class Handler(ProxyHandler):
        pass

    with in_thread(Handler, "faultproxy") as httpd:
        proxy = Proxy(f"http://127.0.0.1:{httpd.server_address[1]}", seed, methods)
        proxy.set_faults(p_503, p_reset, p_truncate)
        Handler.proxy, Handler.target = proxy, (target.hostname, target.port or 80)
        yield proxy


class ProxyHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, and ``Expect: 100-continue`` answered
    disable_nagle_algorithm = True  # headers and body go out in two writes
    proxy = target = None  # set per proxy

    def forward(self):
        fault = self.proxy.fault(self.command)
        self.proxy.requests.append((self.command, self.path, self.headers.get("Range"), fault))
        body, chunked = self.request_body()
        if fault == "reset":
            return self.reset()
        if fault == "503":
            return self.answer(503, "Slow Down", [("Content-Type", "application/xml")], SLOW_DOWN)
        status, reason, headers, answer = self.ask_target(body, chunked)
        if fault == "truncate":
            self.answer(status, reason, headers, answer, send=len(answer) // 2)
            self.close_connection = True
        else:
            self.answer(status, reason, headers, answer)

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = do_PATCH = do_OPTIONS = forward

    def request_body(self):
        """The request's body as it came, and whether it is chunked."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            raw = []
            while True:  # the chunks as they came, and the trailers after them
                line = self.rfile.readline()
                raw.append(line)
                size = int(line.split(b";")[0], 16)
                if size == 0:
                    break
                raw.append(self.rfile.read(size + 2))  # and its CRLF
            while True:
                line = self.rfile.readline()
                raw.append(line)
                if line in (b"\r\n", b"\n", b""):
                    return b"".join(raw), True
        return self.rfile.read(int(self.headers.get("Content-Length") or 0)), False

    def ask_target(self, body, chunked):
        """Forward the request; (status, reason, headers, body) of the target's answer."""
        conn = http.client.HTTPConnection(*self.target, timeout=60)
        try:
            conn.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
            for name, value in self.headers.items():
                if name.lower() not in HOP_BY_HOP:
                    conn.putheader(name, value)
            if chunked:
                conn.putheader("Transfer-Encoding", "chunked")
            elif body or "Content-Length" in self.headers:
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body)
            response = conn.getresponse()
            answer = response.read()
            headers = [(name, value) for name, value in response.getheaders()
                       if name.lower() not in HOP_BY_HOP]
            if self.command == "HEAD":  # the size of what a GET would get
                headers.append(("Content-Length", response.getheader("Content-Length", "0")))
            return response.status, response.reason, headers, answer
        finally:
            conn.close()

    def answer(self, status, reason, headers, body, send=None):
        """Answer with ``body`` (its first ``send`` bytes, if given; the headers say all)."""
        self.send_response_only(status, reason)  # the target's Date and Server, not new ones
        for name, value in headers:
            self.send_header(name, value)
        if self.command != "HEAD":
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body[:send])

    def reset(self):
        """Drop the connection, unanswered: an RST, as SO_LINGER 0 makes ``close`` send."""
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.rfile.close()  # it holds the socket open too
        self.connection.close()
        self.close_connection = True

    def log_message(self, *args):
        pass  # the tests read ``requests``, not stderr
