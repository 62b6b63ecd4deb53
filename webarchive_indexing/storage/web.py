"""``http://`` and ``https://`` URLs, read only, with the standard library's ``http.client``.

Redirects are followed on the host asked (from http to https too), never to another
host: a collection's server (or whoever controls it) cannot send reads anywhere else,
such as to services on the reader's own network. Each thread keeps one connection alive
per host. A ranged read is
a GET with a ``Range`` header; from a server that ignores it and sends the whole file,
only as much as the range needs is read. Writing, listing and removing raise an
``OSError`` saying HTTP is read only here. A 404 raises ``FileNotFoundError``, a 401 or
403 ``PermissionError``, naming the URL.
"""
import errno
import functools
import http.client
import io
import ssl
import threading
import urllib.parse

from ..util import retry
from . import common, local

WRITABLE = False
RANGED_READS = True
# Seconds an HTTP connection may take to open, or wait for the server's next bytes
HTTP_TIMEOUT = 60
# Redirects one HTTP request follows
MAX_REDIRECTS = 5
# What HTTP servers see of the client
USER_AGENT = "webarchive-indexing"


@functools.cache
def _http_broken():
    """A connection that broke (or timed out) while a request was sent or its answer read."""
    return (ConnectionError, TimeoutError, http.client.IncompleteRead,
            http.client.BadStatusLine, ssl.SSLEOFError)


def _http_retryable():
    """What an HTTP read tries again: a broken connection, or a transient answer."""
    return _http_broken() + (retry.Transient,)


_HTTP_LOCAL = threading.local()


def _http_pool():
    """This thread's kept-alive connections, by (scheme, host[:port])."""
    if not hasattr(_HTTP_LOCAL, "pool"):
        _HTTP_LOCAL.pool = {}
    return _HTTP_LOCAL.pool


def _http_get(url, byte_range=None, headers=None):
    """Send a GET of ``url`` (``byte_range`` as for the request listeners), follow its
    redirects, and read the status and headers of the answer: (the URL answered,
    the connection, the response). Hand them to ``_http_done`` once the response is
    read, or to ``_http_close``."""
    asked = url
    headers = {"User-Agent": USER_AGENT, **(headers or {})}
    if byte_range:
        first, last = byte_range
        headers["Range"] = f"bytes={first}-{'' if last is None else last}"
    for _ in range(MAX_REDIRECTS + 1):
        conn, response = _http_exchange(url, byte_range, headers)
        location = response.getheader("Location")
        if response.status not in (301, 302, 303, 307, 308) or not location:
            return url, conn, response
        _http_close(conn, response)
        redirected = urllib.parse.urljoin(url, location)
        if not redirected.startswith(("http://", "https://")):
            raise OSError(errno.EIO, f"HTTP {response.status} redirects to {redirected}, "
                          "not an http(s) URL", url)
        if not _same_host(asked, redirected):
            raise PermissionError(errno.EACCES, f"HTTP {response.status} redirects to "
                                  f"{redirected}, on another host than the one asked: not "
                                  "followed (ask that host directly if it is to be trusted)", asked)
        url = redirected
    raise OSError(errno.EIO, f"more than {MAX_REDIRECTS} redirects, the last to {url}", url)


def _same_host(asked, redirected):
    """Whether a redirect from ``asked`` to ``redirected`` stays on its host: the same host
    name and port, or the same host name over https on its default port."""
    before, after = urllib.parse.urlsplit(asked), urllib.parse.urlsplit(redirected)
    if before.hostname != after.hostname:
        return False
    if before.scheme == after.scheme:
        return (before.port or 0) == (after.port or 0)
    return before.scheme == "http" and after.scheme == "https" and after.port in (None, 443)


def _http_exchange(url, byte_range, headers):
    """Send a GET of ``url`` on this thread's kept-alive connection to its host, or a new
    one, and read the status and headers of the answer: (connection, response)."""
    parts = urllib.parse.urlsplit(url)
    # a URL may come with spaces or non-ASCII characters (from a .loc file): escape them
    target = urllib.parse.quote(parts.path or "/", safe="/%:@!$&'()*+,;=")
    if parts.query:
        target += "?" + parts.query
    kept = _http_pool().pop((parts.scheme, parts.netloc), None)
    if kept:
        try:
            return kept, _http_send(kept, url, target, byte_range, headers)
        except (ConnectionError, http.client.BadStatusLine):
            pass  # the server closed it while it was idle: once more on a new connection
    connection = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = connection(parts.netloc, timeout=HTTP_TIMEOUT)
    return conn, _http_send(conn, url, target, byte_range, headers)


def _http_send(conn, url, target, byte_range, headers):
    common.notify("GET", url, byte_range)
    try:
        conn.request("GET", target, headers=headers)
        return conn.getresponse()
    except _http_broken():
        conn.close()
        raise
    except (OSError, http.client.HTTPException) as exc:  # an unknown host, an untrusted certificate
        conn.close()
        raise OSError(errno.EIO, retry.describe(exc), url) from exc
    except BaseException:
        conn.close()
        raise


def _http_done(url, conn, response):
    """Keep ``conn`` for the thread's next request to the host of ``url`` if ``response``
    was read to its end and the server keeps the connection open; else close it."""
    if response.isclosed() and not response.will_close:
        parts = urllib.parse.urlsplit(url)
        _http_pool()[parts.scheme, parts.netloc] = conn
    else:
        _http_close(conn, response)


def _http_close(conn, response):
    # a response the server ends by closing the connection holds the socket itself
    response.close()
    conn.close()


def _http_status_error(url, response):
    """The error for an answer ``response`` that carries no file: an OSError naming
    ``url``, or ``retry.Transient`` for a status that asks to try again later."""
    status = f"HTTP {response.status} {response.reason}".rstrip()
    if response.status in retry.TRANSIENT_STATUSES:
        return retry.Transient(status)
    kind, code = {404: (FileNotFoundError, errno.ENOENT), 410: (FileNotFoundError, errno.ENOENT),
                  401: (PermissionError, errno.EACCES),
                  403: (PermissionError, errno.EACCES)}.get(response.status, (OSError, errno.EIO))
    return kind(code, status, url)


def _fetch(url, offset, length):
    last = offset + length - 1

    def attempt():
        answered, conn, response = _http_get(url, (offset, last))
        try:
            if response.status == 416:  # the range starts at or past the end
                response.read()
                result = b"", common.content_range(url, response.getheader("Content-Range"))[2]
            elif response.status == 206:
                result = common.cut(url, offset, length, response.getheader("Content-Range"),
                              response.read(), None)
            elif response.status == 200:
                # the server ignores ranges and sends the whole file: read it only up to
                # the range's end (to its end if it does not say how long it is)
                declared = response.getheader("Content-Length")
                declared = None if declared is None else int(declared)
                data = response.read(offset + length) if declared is not None else response.read()
                result = common.cut(url, offset, length, None, data, declared)
            else:
                raise _http_status_error(url, response)
        except BaseException:
            _http_close(conn, response)
            raise
        _http_done(answered, conn, response)
        return result

    return common.retrying(url, f"GET bytes={offset}-{last}", attempt, _http_retryable())


class _HTTPStream(common.ResumingStream):
    """The bytes at an http(s) URL, from one GET; resumed (``common.ResumingStream``)
    with a ranged GET that only the same version of the file answers (its strong ETag,
    else its Last-Modified date, is made a condition)."""

    def __init__(self, url):
        super().__init__(url)
        self.conn = self.response = None
        self.condition = {}
        self.conn, self.response = self._get(None)
        declared = self.response.getheader("Content-Length")
        self.size = None if declared is None else int(declared)
        etag, modified = self.response.getheader("ETag"), self.response.getheader("Last-Modified")
        if etag and not etag.startswith("W/"):  # If-Match compares strong ETags only
            self.condition = {"If-Match": etag}
        elif modified:
            self.condition = {"If-Unmodified-Since": modified}

    def _get(self, start):
        """The connection and response of a GET from byte ``start`` (None: the whole file)."""
        def attempt():
            _, conn, response = _http_get(self.url, None if start is None else (start, None),
                                          self.condition)
            try:
                if response.status != (200 if start is None else 206):
                    raise self._unexpected(response)
                if start is not None:
                    first, _, total = common.content_range(self.url, response.getheader("Content-Range"))
                    if first != start or total != self.size:
                        raise OSError(errno.EIO, f"changed while it was read: resumed at byte "
                                      f"{start} of {self.size}, the server answered "
                                      f"{response.getheader('Content-Range')}", self.url)
            except BaseException:
                _http_close(conn, response)
                raise
            return conn, response

        what = "GET" if start is None else f"GET bytes={start}-"
        return common.retrying(self.url, what, attempt, _http_retryable())

    def _unexpected(self, response):
        if response.status == 412:
            return OSError(errno.EIO, "changed while it was read (HTTP 412 Precondition Failed "
                           f"for {self.condition})", self.url)
        if response.status == 200:
            return OSError(errno.EIO, "cannot resume a broken read: the server ignores ranges",
                           self.url)
        return _http_status_error(self.url, response)

    def _read(self, buffer):
        return self.response.readinto(buffer)

    def _broken(self):
        return _http_broken()

    def _ended_early(self, count, buffer):
        # http.client ends a body cut short as if it were complete
        if count or not len(buffer) or self.size is None or self.pos == self.size:
            return None
        return f"the connection closed at byte {self.pos} of {self.size}"

    def _reopen(self):
        self.conn, self.response = self._get(self.pos)

    def _close_answer(self):
        if self.conn:
            _http_close(self.conn, self.response)


# -- the API (see the package) -----------------------------------------------------------

def exists(path):
    try:
        _fetch(path, 0, 1)  # a GET, not a HEAD: a presigned URL allows only that
        return True
    except FileNotFoundError:
        return False


def size(path):
    total = _fetch(path, 0, 1)[1]  # a GET: see exists
    if total is None:
        raise OSError(errno.EIO, "the server does not say the size (Content-Range: .../*)", path)
    return total


def version(path):
    return {"size": size(path)}


def open_read(path):
    return io.BufferedReader(_HTTPStream(path), common.READ_BUFFER)


read_range, fetch_range, read_bytes = common.ranged_reads(_fetch, size, open_read)


def download(url, local_path):
    with open_read(url) as src:
        local.write_stream(src, local_path)


def _read_only(url, action):
    return OSError(errno.EOPNOTSUPP, f"{action} is not supported over HTTP: http(s) URLs are "
                   "read only", url)


def open_atomic(path):
    raise _read_only(path, "writing")


def makedirs(path):
    raise _read_only(path, "making directories")


def list_files(directory):
    raise _read_only(directory, "listing files")


def remove(path):
    raise _read_only(path, "removing files")


def remove_tree(directory):
    raise _read_only(directory, "removing files")
