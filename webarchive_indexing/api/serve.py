"""``webarchive-index serve``: clusters over HTTP with the CDX API that pywb, the Wayback
Machine and Common Crawl's index server speak.

    /NAME/cdx?url=...      pywb's path
    /NAME-index?url=...    Common Crawl's path, the same API
    /NAME/ap/AP/cdx?url=...  the same, for access point (user) AP (OutbackCDX's /NAME/ap/AP)
    /NAME/ap/AP/check      the access of URLs (url=, timestamp=; or POSTed, one a line)
    /collinfo.json         the collections, as Common Crawl's server lists them
    /                      a page to search a collection and see its captures as a table

A collection is one cluster or several merged in key order (``NAME=C1,C2``); clusters
are local, ``s3://`` or ``http(s)://``, as ``query`` reads them. Answers stream (chunked,
gzip when the client accepts it) and are made as ``query`` makes them
(``collection.answer``). Bad parameters get ``400`` and a JSON ``{"message": ...}`` naming
the parameter, as pywb answers; a cluster that cannot be read ``502``, a damaged one
``500``, a request over its time ``503``. An error found after the answer began (a
damaged block further in) ends the response without its last chunk, so that a client
sees it incomplete, and is logged.

    serve(options.ServeOptions(collections=["cc=out/cluster"], port=8080))

Workers: ``workers`` processes (all cores by default) share the listening socket, a new
connection going to one that holds the fewest (``connections.Peers``), each answering
with threads, each with its own bounded caches (``cache_mb`` MiB of inflated blocks, plus
``idxfile.CACHE_BYTES`` of index per cluster). SIGTERM (or Ctrl-C) stops
taking connections and lets the requests in flight finish (each bounded by
``limits.seconds``) before exiting.

Access control (``access.Access``, ``--acl NAME=FILE``, ``--embargo NAME=WHEN``): a
collection's captures pass its rules, for the user pywb's ``X-Pywb-ACL-User`` header names
or the access point of the path; the rules are read again when their files change, and a
collection whose rules cannot be read answers ``503``, never without them. The header and
the access point are the client's word: a proxy in front sets them (and strips them from
what the public sends).

Rebuilds: every worker follows the clusters as ``build`` (and ``build --update``)
publishes them (``collection.Reloading``): a local ``cluster.idx`` is looked at on every
request, a remote one every ``reload_seconds``; each request is answered from one build
whole, and one that fails before its answer began is answered again from a newer build
if there is one.

Clients: each worker holds its connections within ``connections.Bounds`` (how many, how
long a client may take), so that slow or idle clients never keep a new one out.
"""
import ctypes
import gzip
import json
import logging
import os
import re
import signal
import socket
import sys
import threading
import time
import traceback
import urllib.parse
import zlib
from http.server import BaseHTTPRequestHandler

from .request import BadParameter, CdxRequest, Limits, RequestTimeout
from .collection import Reloading
from . import access as acl, searchpage
from ..zipnum.idxfile import DamagedCluster
from ..options import DEFAULT_MAX_LIMIT, DEFAULT_RELOAD_SECONDS, DEFAULT_TIMEOUT
from ..zipnum.reader import BlockCache
from .connections import (BUSY, DEFAULT_BOUNDS, READING, WAITING, Bounds, BoundedServer, Peers,
                          bounds as connection_bounds)

__all__ = ["open_collections", "make_server", "serve", "Bounds", "DEFAULT_BOUNDS", "DEFAULT_LIMITS"]

log = logging.getLogger(__name__)

DEFAULT_LIMITS = Limits(limit=DEFAULT_MAX_LIMIT, page_size=1000, regex=1000, filters=20, url=8000,
                        seconds=DEFAULT_TIMEOUT)
# bytes an answer gathers before it writes a chunk
CHUNK_BYTES = 64 * 1024
# answers begun of one request: a build published while one was made is a reason to
# begin again from it, a few builds in a row are not
ANSWER_ATTEMPTS = 3
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*$")
# an access point's path (OutbackCDX's /NAME/ap/AP, pywb's /cdx after it) and its check
AP_PATH = re.compile(r"/(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)/ap/(?P<ap>[A-Za-z0-9][A-Za-z0-9._-]*)"
                     r"(?P<what>/cdx|/check)?$")
# glibc's mallopt parameter (malloc.h)
M_MMAP_THRESHOLD = -3
# the largest body of a POSTed check
CHECK_BYTES = 4 * 1024 * 1024
# control characters (C0, DEL, C1); and what quotes a request line in the access log
UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f]")
UNPRINTABLE_QUOTED = re.compile(r'[\x00-\x1f\x7f-\x9f"\\]')


def open_collections(specs, cache=None, reload_seconds=DEFAULT_RELOAD_SECONDS, accesses=None):
    """``{name: Reloading}`` of ``NAME=CLUSTER[,CLUSTER...]`` specs, with the access rules
    ``accesses`` (``{name: access.Access}``) name theirs; ValueError for a bad spec,
    OSError for a cluster that cannot be opened."""
    accesses = accesses or {}
    collections = {}
    for spec in specs:
        name, equals, locations = spec.partition("=")
        if not equals or not NAME.match(name) or not locations.strip(","):
            raise ValueError(f"{spec!r}: expected NAME=CLUSTER[,CLUSTER...], NAME of letters, "
                             "digits, '.', '_' and '-' (e.g. cc-2024=out/cluster)")
        if name in collections:
            raise ValueError(f"collection {name!r} is named twice")
        if name == "collinfo.json" or name.endswith("-index") and name[:-6] in collections:
            raise ValueError(f"{name!r}: a name its paths would clash with")
        collections[name] = Reloading(name, [p for p in locations.split(",") if p], cache, reload_seconds,
                                      accesses.get(name))
    unknown = sorted(set(accesses) - set(collections))
    if unknown:
        raise ValueError(f"access rules for {', '.join(unknown)}, which no NAME=CLUSTER names")
    return collections


def printable(text, quoted=False):
    """``text`` with control characters as ``\\xNN`` (and, ``quoted``, ``"`` and ``\\``
    escaped, as Apache logs a request line): what a client sent cannot forge log lines or
    drive a terminal."""
    return (UNPRINTABLE_QUOTED if quoted else UNPRINTABLE).sub(
        lambda m: "\\" + m[0] if m[0] in '"\\' else "\\x%02x" % ord(m[0]), text)


def redact(text):
    """``text`` without credentials a URL may carry (user:password@, signed queries)."""
    text = re.sub(r"(\w+://)[^/@\s'\"]+@", r"\1***@", text)
    return re.sub(r"((?:X-Amz-(?:Signature|Credential|Security-Token)|Signature|AWSAccessKeyId)=)[^&\s'\"]+",
                  r"\1***", text, flags=re.IGNORECASE)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "webarchive-index"
    # an answer goes out in one write (its headers and body buffered), a longer one in
    # 64 KiB writes: without this a keep-alive client waits for the delayed ACK (40 ms)
    # before the write after the first
    wbufsize = 1 << 16
    disable_nagle_algorithm = True
    # set on the subclass make_server makes: collections ({name: Collection or
    # Reloading}), and the socket's timeout (``Bounds.idle_seconds``) as ``timeout``
    collections = {}
    limits = DEFAULT_LIMITS
    access_log = sys.stderr
    log_lock = threading.Lock()
    timeout = DEFAULT_BOUNDS.idle_seconds
    _date = (None, "")

    def handle_one_request(self):
        try:
            # the next request's first byte, within the socket's timeout (idle_seconds)
            waiting = not self.rfile.peek(1)
        except OSError:
            waiting = True
        if waiting:
            self.close_connection = True
            return
        self.server.mark(self.connection, READING)
        super().handle_one_request()

    def date_time_string(self, timestamp=None):
        # the Date header, made once a second (email's formatting cost a request 10 µs)
        if timestamp is not None:
            return super().date_time_string(timestamp)
        second = int(time.time())
        cached = Handler._date
        if cached[0] != second:
            cached = Handler._date = (second, super().date_time_string(second))
        return cached[1]

    def log_request(self, code="-", size="-"):
        pass  # _log_access writes one line a request, with its time

    def do_GET(self):
        self.started = time.monotonic()
        self.sent = 0
        self.server.mark(self.connection, BUSY)
        parts = urllib.parse.urlsplit(self.path)
        params = urllib.parse.parse_qs(parts.query, keep_blank_values=True)
        path = urllib.parse.unquote(parts.path)
        name, user, check = self._route(path)
        try:
            if path == "/":
                self._send_whole(200, "text/html", searchpage.page(
                    self.collections, params, self.limits, self._failure))
            elif path == "/collinfo.json":
                self._send_whole(200, "application/json", json.dumps(self._collinfo(), indent=1).encode() + b"\n")
            elif name in self.collections and check:
                self._send_check(self.collections[name], user, [(n, u, (params.get("timestamp") or [""])[-1])
                                                                 for n, u in enumerate(params.get("url", []), 1)])
            elif name in self.collections:
                self._send_answer(self.collections[name], params, user)
            else:
                known = ", ".join(f"/{n}/cdx" for n in self.collections)
                self._send_error(404, f"no such path: {path}; the CDX API is at {known} "
                                      "(and /NAME-index), the collections at /collinfo.json")
        except ConnectionError:
            self.close_connection = True
        finally:
            self._log_access()
            if not self.server.mark(self.connection, WAITING):
                self.close_connection = True  # the server is stopping

    def do_POST(self):
        """A bulk check (``/NAME/ap/AP/check``): a body of ``URL [TIMESTAMP]`` lines, or
        OutbackCDX's JSON list of ``{"url": ..., "timestamp": ...}``."""
        self.started = time.monotonic()
        self.sent = 0
        self.server.mark(self.connection, BUSY)
        path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
        name, user, check = self._route(path)
        try:
            length = int(self.headers.get("Content-Length") or 0)
            if not (name in self.collections and check):
                self.close_connection = True
                self._send_error(404, f"no such path for POST: {path}; checks go to /NAME/ap/AP/check")
            elif not 0 <= length <= CHECK_BYTES:
                self.close_connection = True
                self._send_error(413, f"a check of at most {CHECK_BYTES} bytes (Content-Length), "
                                      f"got {length}: send fewer URLs at a time")
            else:
                self._send_check(self.collections[name], user, acl.check_items(self.rfile.read(length)))
        except ValueError as exc:
            self._send_error(400, str(exc))
        except ConnectionError:
            self.close_connection = True
        finally:
            self._log_access()
            if not self.server.mark(self.connection, WAITING):
                self.close_connection = True

    def _route(self, path):
        """``(collection name, user, check)`` of a path: the user of an access point
        (``/NAME/ap/AP/...``), else of pywb's ``X-Pywb-ACL-User`` header."""
        user = self.headers.get("X-Pywb-ACL-User") or None
        match = AP_PATH.match(path)
        if match:
            return match["name"], match["ap"], match["what"] == "/check"
        if path.endswith("/check"):
            return path[1:-len("/check")], user, True
        name = path[1:-len("/cdx")] if path.endswith("/cdx") else path[1:-len("-index")] if path.endswith("-index") else None
        return name, user, False

    def _send_check(self, live, user, items):
        """The access of each ``(number, url, timestamp)`` of ``items`` for ``user``: one JSON
        object for one URL asked by GET, else a list (OutbackCDX's check)."""
        collection = live.current()
        if not items:
            return self._send_error(400, "url: missing: give url=URL (and timestamp=TS), or POST "
                                         "URL [TIMESTAMP] lines")
        try:
            checker = acl.checker_of(collection.access, user)
        except acl.RuleError as exc:
            return self._send_error(*self._failure(exc, collection))
        answers = list(acl.check_all(checker, items))
        single = self.command == "GET" and len(answers) == 1
        self._send_whole(200, "application/json", json.dumps(answers[0] if single else answers).encode() + b"\n")

    def _send_answer(self, live, params, user=None):
        deadline = self.started + self.limits.seconds if self.limits.seconds else None
        collection = live.current()
        for attempt in range(ANSWER_ATTEMPTS):
            # the start of the answer is made before the status is sent: errors there (most
            # of them: bad parameters, an unreadable index, a damaged first block) get theirs
            pending, size = [], 0
            try:
                request = CdxRequest.from_query(params, self.limits)
                request.acl_user = user
                content_type, body = collection.answer(request, deadline)
                body = iter(body)
                for chunk in body:
                    pending.append(chunk)
                    size += len(chunk)
                    if size >= CHUNK_BYTES:
                        break
                else:
                    body = None
            except BadParameter as exc:
                return self._send_error(400, str(exc))
            except Exception as exc:
                # a build published meanwhile (that removed the shards of the one read):
                # answered again, whole, from the new one
                newer = live.current(recheck=True) if isinstance(exc, OSError) else collection
                if newer is not collection and attempt + 1 < ANSWER_ATTEMPTS:
                    collection = newer
                    continue
                return self._send_error(*self._failure(exc, collection))
            break
        if body is None:
            return self._send_whole(200, content_type, b"".join(pending))
        self._send_stream(content_type, pending, body, collection)

    def _failure(self, exc, collection):
        """The status and message of an error met while answering from ``collection``:
        the message names the collection and its files, not where they are on the server
        (the log has that)."""
        if isinstance(exc, acl.RuleError):
            log.error("collection %s: its access rules cannot be read, it answers nothing: %s",
                      collection.name, printable(redact(str(exc))))
            return 503, (f"collection {collection.name}: its access rules cannot be read (the server's "
                         "log says why): nothing is answered without them")
        if isinstance(exc, RequestTimeout):
            return 503, (f"the request took longer than {self.limits.seconds} s: narrow it "
                         "(limit, from/to, a page, or a resumeKey)")
        if isinstance(exc, OSError):
            log.warning("collection %s: %s", collection.name, printable(redact(str(exc))))
            what = "the index is damaged" if isinstance(exc, DamagedCluster) else "cannot read the index"
            return 500 if isinstance(exc, DamagedCluster) else 502, \
                f"collection {collection.name}: {what}: {_without_places(str(exc), collection)}"
        log.error("%s failed:\n%s", printable(self.path), redact(traceback.format_exc()))
        return 500, f"Internal Error: {_without_places(str(exc), collection)}"

    def _send_stream(self, content_type, pending, body, collection):
        gzipped = "gzip" in self.headers.get("Accept-Encoding", "")
        self.send_response(200)
        self.send_header("Content-Type", _with_charset(content_type))
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Access-Control-Allow-Origin", "*")
        if gzipped:
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Vary", "Accept-Encoding")
        self.end_headers()
        self.status = 200
        compress = zlib.compressobj(6, zlib.DEFLATED, 31) if gzipped else None
        size = sum(map(len, pending))
        try:
            for chunk in body:
                pending.append(chunk)
                size += len(chunk)
                if size >= CHUNK_BYTES:
                    self._write_chunk(b"".join(pending), compress)
                    pending, size = [], 0
        except ConnectionError:
            raise
        except Exception as exc:
            status, message = self._failure(exc, collection)
            self.failed = f"{status} after {self.sent} bytes: {redact(message)}"
            self.close_connection = True
            return
        self._write_chunk(b"".join(pending), compress)
        if compress:
            self._write_chunk(compress.flush(), None)
        self.wfile.write(b"0\r\n\r\n")

    def _write_chunk(self, data, compress):
        if compress:
            data = compress.compress(data)
        if data:
            try:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            except TimeoutError:
                # the client's, not the cluster's: it took nothing for idle_seconds
                raise ConnectionAbortedError("the client stopped reading the answer") from None
            self.sent += len(data)

    def _send_whole(self, status, content_type, data, headers=()):
        if "gzip" in self.headers.get("Accept-Encoding", "") and len(data) > 1024:
            data = gzip.compress(data, 6, mtime=0)
            headers = [*headers, ("Content-Encoding", "gzip"), ("Vary", "Accept-Encoding")]
        self.send_response(status)
        self.send_header("Content-Type", _with_charset(content_type))
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Access-Control-Allow-Origin", "*")
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.status = status
        self.wfile.write(data)
        self.sent = len(data)

    def _send_error(self, status, message):
        # pywb's shape of an error: {"message": ...}
        self._send_whole(status, "application/json", json.dumps({"message": redact(message)}).encode() + b"\n")

    def _collinfo(self):
        base = f"http://{self.headers.get('Host') or '%s:%d' % self.server.server_address[:2]}"
        # Common Crawl's entries also name a "timegate", its replay: there is none here
        return [{"id": name, "name": name, "cdx-api": f"{base}/{name}-index"} for name in self.collections]

    def _log_access(self):
        if self.access_log is None:
            return
        status = getattr(self, "status", "-")
        took = (time.monotonic() - self.started) * 1000
        failed = getattr(self, "failed", None)
        line = (f'{self.client_address[0]} - - [{time.strftime("%d/%b/%Y:%H:%M:%S %z")}] '
                f'"{printable(redact(self.requestline), quoted=True)}" {status} {self.sent} {took:.1f}ms'
                + (f" ended early: {failed}" if failed else "") + "\n")
        with self.log_lock:
            self.access_log.write(line)
            self.access_log.flush()

    def log_message(self, format, *args):
        # http.server's own messages (malformed requests): into the access log too
        if self.access_log is not None:
            with self.log_lock:
                self.access_log.write(f"{self.client_address[0]} - - {printable(redact(format % args))}\n")


def _without_places(message, collection):
    """``message`` without the directories of ``collection``'s clusters (on this server,
    or the URLs it reads): their files named as the index names them."""
    for cluster in collection.clusters:
        for place in {cluster.shard_dir, os.path.realpath(cluster.shard_dir)}:
            message = message.replace(place.rstrip("/") + "/", "")
    return message


def _with_charset(content_type):
    # as pywb labels them: its CDX lines (text/x-cdxj, text/x-ndjson...) bare
    return content_type + "; charset=utf-8" if content_type in ("application/json", "text/html") else content_type


def make_server(collections, host="127.0.0.1", port=8080, limits=DEFAULT_LIMITS, access_log=sys.stderr,
                sock=None, bounds=DEFAULT_BOUNDS):
    """A threading HTTP server of ``collections`` (``{name: Collection or Reloading}``, not
    yet serving) within ``bounds``: on ``sock`` if given (a listening socket shared by
    workers), else bound to ``host:port``."""
    handler = type("BoundHandler", (Handler,), {"collections": collections, "limits": limits,
                                                "access_log": access_log, "timeout": bounds.idle_seconds})
    if sock is None:
        server = BoundedServer((host, port), handler)
    else:
        server = BoundedServer(sock.getsockname()[:2], handler, bind_and_activate=False)
        server.socket.close()
        server.socket = sock
    server.bounds = bounds
    return server


def serve(options, ready=None):
    """Serve the collections of ``options`` (``options.ServeOptions``) until SIGTERM or
    SIGINT; ``ready(url, collections)`` is called once the socket listens. Opens every
    collection first, so that a bad one stops here (ValueError for a bad spec, OSError
    for a cluster or log that cannot be opened)."""
    limits = Limits(options.max_limit, DEFAULT_LIMITS.page_size, DEFAULT_LIMITS.regex,
                    DEFAULT_LIMITS.filters, DEFAULT_LIMITS.url, options.timeout)
    if not options.log:
        return _serve(options, limits, None, ready)
    if not options.access_log:
        return _serve(options, limits, sys.stderr, ready)
    with open(options.access_log, "a", encoding="utf-8") as access_log:
        return _serve(options, limits, access_log, ready)


def _blocks_given_back():
    """Allocations of 256 KiB and more (inflated blocks, ~1 MiB each) mapped on their own,
    given back to the system when freed: glibc's threshold otherwise rises to a block's
    size, blocks inflated and freed by many threads stay in its heaps, and a worker held
    twice its cache (bench/serve.py: 2 workers 300-324 MiB at their peak, 199 with this).
    Nothing where the C library has no ``mallopt`` (macOS)."""
    try:
        ctypes.CDLL(None).mallopt(M_MMAP_THRESHOLD, 256 * 1024)
    except (OSError, AttributeError):
        pass


def _serve(options, limits, access_log, ready):
    host, workers = options.host, options.workers or os.cpu_count() or 1
    _blocks_given_back()
    cache = BlockCache(options.cache_mb * 1024 * 1024)
    bounds = connection_bounds(options)
    collections = open_collections(options.collections, cache, options.reload_seconds, acl.from_serve_options(options, NAME))
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, options.port))
    sock.listen(BoundedServer.request_queue_size)
    # workers wake together when a connection comes: those that lose the race to accept
    # it must not wait in accept() (where a stop would never reach them)
    sock.setblocking(False)
    bound = sock.getsockname()
    url = f"http://{'[%s]' % bound[0] if family == socket.AF_INET6 else bound[0]}:{bound[1]}"
    if ready:
        ready(url, collections)
    if workers == 1:
        return _serve_here(collections, limits, access_log, sock, bounds)
    children = {}  # pid: (started, slot in peers)
    stopping = threading.Event()
    peers = Peers(workers)

    def start_worker(slot):
        for collection in collections.values():
            collection.current(recheck=True)  # a worker started later starts from the newest
        peers.held(slot, 0)
        pid = os.fork()
        if pid == 0:
            try:
                code = _serve_here(collections, limits, access_log, sock, bounds, (peers, slot))
            except BaseException:
                traceback.print_exc()
                code = 1
            os._exit(code)
        children[pid] = time.monotonic(), slot

    def stop(signum, frame):
        stopping.set()
        for pid in list(children):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    for slot in range(workers):
        start_worker(slot)
    while children:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            break
        started, slot = children.pop(pid, (None, None))
        if not stopping.is_set() and started is not None:
            log.error("worker %d ended (status %d); starting another", pid, status)
            if time.monotonic() - started < 1:
                time.sleep(1)  # not in a tight loop if workers die at once
            start_worker(slot)
    sock.close()
    return 0


def _serve_here(collections, limits, access_log, sock, bounds, peers=(None, None)):
    """Serve on ``sock`` in this process until SIGTERM or SIGINT; requests in flight finish.
    ``peers``: the workers' ``Peers`` and this one's slot in it, when there are several."""
    server = make_server(collections, limits=limits, access_log=access_log, sock=sock, bounds=bounds)
    server.peers, server.slot = peers
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    thread = threading.Thread(target=server.serve_forever, args=(0.2,), name="serve", daemon=True)
    thread.start()
    while not stop.wait(0.5):
        pass
    server.stop()
    thread.join()
    return 0
