"""A static-file HTTP/1.1 server for the tests, on 127.0.0.1 in a thread of the test process,
that answers ranged GETs as a web server or CDN holding archives would:

    with rangeserver.serving(directory) as server:
        url = server.url + "/a/b.warc.gz"        # server.url: "http://127.0.0.1:PORT"
        ...
        server.requests      # [(method, path, Range header or None), ...], one per request
        server.requests.clear()

GET and HEAD; one range a request (``Range: bytes=a-b`` or ``bytes=a-``: 206 with
``Content-Range: bytes a-b/size``, 416 with ``Content-Range: bytes */size`` when
``a`` is at or past the end; any other Range header is ignored, as RFC 9110 allows);
404 for anything but a file under the directory; ``Content-Length`` on every answer;
connections kept alive. Each file has a strong ``ETag`` and a ``Last-Modified`` date,
and a request with an ``If-Match`` that is not its ETag gets 412, so a reader that
resumes can tell that a file changed. (``http.server`` does none of the ranges.)
"""
import contextlib
import email.utils
import http.server
import mimetypes
import os
import re
import shutil
import sys
import threading
import urllib.parse

RANGE = re.compile(r"bytes=(\d+)-(\d*)$")
# Seconds ``shutdown`` may wait for the server's loop to notice
POLL = 0.05


class Server:
    """What a test sees of a running server."""

    def __init__(self, url):
        self.url = url
        # list.append is atomic: the handler threads append, the test reads
        self.requests = []


@contextlib.contextmanager
def serving(directory):
    """Serve the files under ``directory`` until the block ends; yield a ``Server``."""
    root = os.path.realpath(directory)

    class Handler(FileHandler):
        pass

    with in_thread(Handler, "rangeserver") as httpd:
        server = Server(f"http://127.0.0.1:{httpd.server_address[1]}")
        Handler.root, Handler.log = root, server.requests
        yield server


@contextlib.contextmanager
def in_thread(handler, name):
    """A threading HTTP server of ``handler`` on 127.0.0.1 (any free port), serving in a
    thread until the block ends. Handlers see their class attributes set inside the
    block before the first request can arrive (the test makes the requests)."""
    httpd = QuietServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(POLL,), name=name, daemon=True)
    thread.start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


class QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        # a client that drops its connection (as one does after an error answer, unread)
        # is no error of the server's
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class FileHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive
    disable_nagle_algorithm = True  # headers and body go out in two writes
    root = log = None  # set per server

    def do_GET(self):
        self.answer(body=True)

    def do_HEAD(self):
        self.answer(body=False)

    def answer(self, body):
        self.log.append((self.command, self.path, self.headers.get("Range")))
        path = self.file()
        if path is None:
            return self.empty(404)
        with open(path, "rb") as fh:
            stat = os.fstat(fh.fileno())
            size = stat.st_size
            etag = f'"{stat.st_mtime_ns:x}-{size:x}"'
            if self.headers.get("If-Match") not in (None, "*", etag):
                return self.empty(412)
            first, last = 0, size - 1
            match = RANGE.match(self.headers.get("Range") or "")
            if match and (not match[2] or int(match[1]) <= int(match[2])):
                first = int(match[1])
                if first >= size:
                    return self.empty(416, {"Content-Range": f"bytes */{size}"})
                last = min(int(match[2]), size - 1) if match[2] else size - 1
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {first}-{last}/{size}")
            else:
                self.send_response(200)
            self.send_header("Content-Length", str(last - first + 1))
            # (a browser registers a service worker only from a script served as one)
            self.send_header("Content-Type", mimetypes.guess_type(path)[0]
                             or "application/octet-stream")
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("ETag", etag)
            self.send_header("Last-Modified", email.utils.formatdate(stat.st_mtime, usegmt=True))
            self.end_headers()
            if body:
                fh.seek(first)
                copy_part(fh, self.wfile, last - first + 1)

    def file(self):
        """The file the request's path names under the root, or None."""
        relative = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path).lstrip("/")
        path = os.path.realpath(os.path.join(self.root, relative))
        if not path.startswith(self.root + os.sep) or not os.path.isfile(path):
            return None
        return path

    def empty(self, status, headers=None):
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass  # the tests read ``requests``, not stderr


def copy_part(src, dst, length):
    """Copy ``length`` bytes of ``src`` (from where it is) to ``dst``."""
    while length > 0:
        chunk = src.read(min(length, shutil.COPY_BUFSIZE))
        if not chunk:
            break
        dst.write(chunk)
        length -= len(chunk)
