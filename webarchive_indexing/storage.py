"""Reading and publishing files where the jobs keep them: local paths, ``s3://bucket/key``,
Hadoop file systems (``hdfs:///path``, ``hdfs://namenode/path``, ``s3a://bucket/key``),
or, for reading only, ``http://`` and ``https://`` URLs.

Everything an index points to is published atomically: written under a
temporary name and renamed into place (locally), or staged in a local
temporary file and uploaded once complete (on S3, where an object appears
whole or not at all), so a reader (or a rerun's ``--skip-existing``) never
sees half a file.

    write_atomic("out/cdx/a.cdx.gz", data)
    write_atomic("s3://bucket/out/cdx/a.cdx.gz", data)

S3 goes through boto3's default credential chain and endpoint settings
(``AWS_ENDPOINT_URL_S3`` / ``AWS_ENDPOINT_URL`` point it at another server).
A failed S3 request raises an ``OSError`` naming the URL (``FileNotFoundError``
for a 404, ``PermissionError`` for a 403), chained to botocore's error, so
callers treat it like the same problem with a local file.

``http(s)://`` URLs are read with the standard library's ``http.client``
(redirects followed, one kept-alive connection per host and thread): a ranged
read is a GET with a ``Range`` header, and from a server that ignores it and
sends the whole file, only as much as the range needs is read. Writing,
listing and removing raise an ``OSError`` saying HTTP is read only here.
A 404 raises ``FileNotFoundError``, a 401 or 403 ``PermissionError``, naming the URL.

Ranged reads (``read_range``, ``fetch_range``) over HTTP and from S3 try again
what may pass the next time: a 429 or 5xx answer, a connection refused, reset
or timed out, a body cut short. They back off exponentially with jitter, and
after ``READ_ATTEMPTS`` attempts raise an ``OSError`` naming the URL, the range
and the last failure. botocore retries S3 requests itself, but not a body that
breaks off while it streams: that is retried here. Streams (``open_read``,
``read_bytes``, ``download``) resume where a broken connection stopped instead,
up to ``RESUMES`` times in a row. Every HTTP request, each attempt of a retried
one, is told to the functions given to ``add_request_listener`` (``query
--verbose`` prints them; tests count them).

``hdfs://`` and ``s3a://`` (Hadoop's S3 connector: only Hadoop knows that scheme)
go through the ``hadoop fs`` command, the one client on every Hadoop node:
``$HADOOP_BIN`` if set, else ``hadoop`` on PATH. Each call starts a JVM (a second
or more), so this suits a task's few files, not many small reads. A file is
published by uploading it beside its target as ``<name>.tmp-<random>`` and
renaming it into place once complete. A failed command raises an ``OSError``
naming the URI, with what ``hadoop`` printed (``FileNotFoundError`` when it said
"No such file or directory", ``PermissionError`` for "Permission denied").
"""
import contextlib
import errno
import functools
import io
import os
import re
import shutil
import threading
import time
import urllib.parse

# How often a read from a stream of an S3 object or HTTP file resumes after its connection
# broke, with no byte read in between.
RESUMES = 5
# Read size of an S3 object's stream; also what a reader can peek at.
READ_BUFFER = 1 << 20
# Keys one DeleteObjects request takes.
DELETE_BATCH = 1000
_CLIENT_LOCK = threading.Lock()
# URI schemes read and written through ``hadoop fs``
HADOOP_SCHEMES = ("hdfs://", "s3a://")
# How much of what a failed ``hadoop`` printed goes into the error
HADOOP_STDERR_MAX = 4000
# Retries botocore makes of an S3 request (its "max_attempts", which it counts after the first)
S3_RETRIES = 10
# Attempts of one ranged read over HTTP or from S3, the first included
READ_ATTEMPTS = 8
# Seconds before the n-th retry: a random time up to BACKOFF_BASE * 2**(n-1), at most BACKOFF_MAX
BACKOFF_BASE = 0.2
BACKOFF_MAX = 4.0
# HTTP statuses that ask to try again later
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
# Seconds an HTTP connection may take to open, or wait for the server's next bytes
HTTP_TIMEOUT = 60
# Redirects one HTTP request follows
MAX_REDIRECTS = 5
# What HTTP servers see of the client
USER_AGENT = "webarchive-indexing"

# The HTTP, S3 and Hadoop libraries (and tempfile) are imported where first needed, not
# with this module: importing urllib3 (through botocore) alone takes longer than indexing
# a small local archive, and most runs never leave the local disk.

@functools.cache
def _http_broken():
    """A connection that broke (or timed out) while a request was sent or its answer read."""
    import http.client
    import ssl
    return (ConnectionError, TimeoutError, http.client.IncompleteRead,
            http.client.BadStatusLine, ssl.SSLEOFError)


def _http_retryable():
    """What an HTTP read tries again: a broken connection, or a transient answer."""
    return _http_broken() + (_Transient,)


@functools.cache
def _s3_failed():
    """An S3 request that failed, after botocore's retries: an error answer, or no answer."""
    from botocore.exceptions import ClientError, ConnectionError as BotoConnectionError
    from botocore.exceptions import HTTPClientError
    return ClientError, HTTPClientError, BotoConnectionError


@functools.cache
def _s3_broken():
    """An S3 object's body that broke off while it streamed (botocore retries only the
    request)."""
    from botocore.exceptions import IncompleteReadError, ReadTimeoutError, ResponseStreamingError
    from urllib3.exceptions import ProtocolError
    return ResponseStreamingError, IncompleteReadError, ReadTimeoutError, ProtocolError


_RANGE_HEADER = re.compile(r"bytes=(\d+)-(\d*)$")
_CONTENT_RANGE = re.compile(r"bytes (?:(\d+)-(\d+)|\*)/(\d+|\*)$")


def is_s3(path):
    return path.startswith("s3://")


def is_hadoop(path):
    """Whether ``path`` is on a Hadoop file system (``hdfs://``, ``s3a://``), reached with ``hadoop fs``."""
    return path.startswith(HADOOP_SCHEMES)


def is_http(path):
    """Whether ``path`` is an ``http://`` or ``https://`` URL (read only)."""
    return path.startswith(("http://", "https://"))


def is_remote(path):
    """Whether ``path`` is a URI (S3, a Hadoop file system, HTTP), not a path on local disk."""
    return is_s3(path) or is_hadoop(path) or is_http(path)


def join(base, *parts):
    return "/".join([base.rstrip("/")] + [p.strip("/") for p in parts])


def _split(url):
    bucket, _, key = url[len("s3://"):].partition("/")
    return bucket, key


def _http_unsupported(url, action):
    return OSError(errno.EOPNOTSUPP, f"{action} is not supported over HTTP: http(s) URLs are "
                   "read only", url)


# -- the request log ---------------------------------------------------------------------

_REQUEST_LISTENERS = []


def add_request_listener(fn):
    """Call ``fn(method, url, byte_range)`` for every HTTP request made from now on, to
    S3 and over http(s), each attempt of a retried request included.

    ``url`` is the ``s3://bucket/key`` of an S3 request, the URL asked for over HTTP
    (after a redirect, the one redirected to). ``byte_range`` is the ``(first, last)``
    byte asked for, both included (``last`` None for ``bytes=first-``, as a resumed
    stream asks), or None for no range. ``fn`` runs in the thread making the request.
    """
    _REQUEST_LISTENERS.append(fn)


def remove_request_listener(fn):
    _REQUEST_LISTENERS.remove(fn)


def _notify(method, url, byte_range):
    for fn in tuple(_REQUEST_LISTENERS):  # a listener may remove itself
        fn(method, url, byte_range)


def _s3_request_sent(request, **_):
    """botocore's ``before-send`` event (once per attempt): tell the request listeners."""
    if _REQUEST_LISTENERS:
        params = request.context.get("input_params", {})  # what botocore keeps of the call
        if "Bucket" in params:
            key = params.get("Key") or params.get("Prefix")
            url = f"s3://{params['Bucket']}/{key}" if key else f"s3://{params['Bucket']}"
        else:
            url = request.url
        header = request.headers.get("Range")
        _notify(request.method, url, _byte_range(header.decode("latin-1")
                                                 if isinstance(header, bytes) else header))
    # anything but None here would be taken as the answer, and nothing sent


def _byte_range(header):
    """``(first, last)`` of a ``Range: bytes=first-last`` header, last None if open; else None."""
    match = _RANGE_HEADER.match(header or "")
    if not match:
        return None
    return int(match[1]), int(match[2]) if match[2] else None


# -- retries -----------------------------------------------------------------------------

class _Transient(Exception):
    """An attempt failed in a way that may pass the next time (a 503, a body cut short)."""


def _retrying(url, what, attempt, transient):
    """``attempt()``, made again after each failure in ``transient`` (exception types),
    backing off exponentially, up to READ_ATTEMPTS times in all; then an OSError naming
    ``url``, ``what`` was asked and the last failure."""
    for number in range(READ_ATTEMPTS):
        if number:
            # a random wait ("full jitter"): readers that failed together spread out
            import random  # only for retries: its import would slow every start
            time.sleep(random.uniform(0, min(BACKOFF_MAX, BACKOFF_BASE * 2 ** (number - 1))))
        try:
            return attempt()
        except transient as exc:
            failure = exc
    raise OSError(errno.EIO, f"{what} failed {READ_ATTEMPTS} times, the last with "
                  f"{_describe(failure)}", url) from failure


def _describe(exc):
    text = str(exc)
    # "IncompleteRead(5 bytes read, ...)" names itself
    return text if isinstance(exc, _Transient) or text.startswith(type(exc).__name__) \
        else f"{type(exc).__name__}: {text}"


def _content_range(url, header):
    """``(first, last, total)`` of a ``Content-Range`` header, each None where it says ``*``."""
    match = _CONTENT_RANGE.match(header or "")
    if not match:
        raise OSError(errno.EIO, f"unexpected Content-Range {header!r} in the answer", url)
    return tuple(None if value in (None, "*") else int(value) for value in match.groups())


def _cut(url, offset, length, content_range, data, declared):
    """(``length`` bytes from ``offset``, the object's size) from the body ``data`` of a
    ranged GET: the range itself if the answer has a ``content_range``, else the start
    of the whole object, of ``declared`` bytes if the answer says. Raises ``_Transient``
    for a body cut short."""
    if content_range is None:
        total = len(data) if declared is None else declared
        got, expected = len(data), min(offset + length, total)
        data = data[offset:offset + length]
    else:
        first, last, total = _content_range(url, content_range)
        if first != offset:
            raise OSError(errno.EIO, f"asked for bytes {offset}-{offset + length - 1}, "
                          f"got Content-Range {content_range!r}", url)
        got, expected = len(data), last - first + 1
    if got < expected:
        raise _Transient(f"a short body: {got} of {expected} bytes")
    return data[:length], total


# -- HTTP --------------------------------------------------------------------------------

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
        if not is_http(redirected):
            raise OSError(errno.EIO, f"HTTP {response.status} redirects to {redirected}, "
                          "not an http(s) URL", url)
        url = redirected
    raise OSError(errno.EIO, f"more than {MAX_REDIRECTS} redirects, the last to {url}", url)


def _http_exchange(url, byte_range, headers):
    """Send a GET of ``url`` on this thread's kept-alive connection to its host, or a new
    one, and read the status and headers of the answer: (connection, response)."""
    import http.client
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
    import http.client
    _notify("GET", url, byte_range)
    try:
        conn.request("GET", target, headers=headers)
        return conn.getresponse()
    except _http_broken():
        conn.close()
        raise
    except (OSError, http.client.HTTPException) as exc:  # an unknown host, an untrusted certificate
        conn.close()
        raise OSError(errno.EIO, _describe(exc), url) from exc
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
    ``url``, or ``_Transient`` for a status that asks to try again later."""
    status = f"HTTP {response.status} {response.reason}".rstrip()
    if response.status in RETRY_STATUSES:
        return _Transient(status)
    kind, code = {404: (FileNotFoundError, errno.ENOENT), 410: (FileNotFoundError, errno.ENOENT),
                  401: (PermissionError, errno.EACCES),
                  403: (PermissionError, errno.EACCES)}.get(response.status, (OSError, errno.EIO))
    return kind(code, status, url)


def _http_fetch_range(url, offset, length):
    last = offset + length - 1

    def attempt():
        answered, conn, response = _http_get(url, (offset, last))
        try:
            if response.status == 416:  # the range starts at or past the end
                response.read()
                result = b"", _content_range(url, response.getheader("Content-Range"))[2]
            elif response.status == 206:
                result = _cut(url, offset, length, response.getheader("Content-Range"),
                              response.read(), None)
            elif response.status == 200:
                # the server ignores ranges and sends the whole file: read it only up to
                # the range's end (to its end if it does not say how long it is)
                declared = response.getheader("Content-Length")
                declared = None if declared is None else int(declared)
                data = response.read(offset + length) if declared is not None else response.read()
                result = _cut(url, offset, length, None, data, declared)
            else:
                raise _http_status_error(url, response)
        except BaseException:
            _http_close(conn, response)
            raise
        _http_done(answered, conn, response)
        return result

    return _retrying(url, f"GET bytes={offset}-{last}", attempt, _http_retryable())


class _HTTPStream(io.RawIOBase):
    """The bytes at an http(s) URL, from one GET; a connection that breaks while it is
    read resumes where it stopped, with a ranged GET that only the same version of the
    file answers (its strong ETag, else its Last-Modified date, is made a condition)."""

    def __init__(self, url):
        super().__init__()
        self.url, self.pos = url, 0
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
                    first, _, total = _content_range(self.url, response.getheader("Content-Range"))
                    if first != start or total != self.size:
                        raise OSError(errno.EIO, f"changed while it was read: resumed at byte "
                                      f"{start} of {self.size}, the server answered "
                                      f"{response.getheader('Content-Range')}", self.url)
            except BaseException:
                _http_close(conn, response)
                raise
            return conn, response

        what = "GET" if start is None else f"GET bytes={start}-"
        return _retrying(self.url, what, attempt, _http_retryable())

    def _unexpected(self, response):
        if response.status == 412:
            return OSError(errno.EIO, "changed while it was read (HTTP 412 Precondition Failed "
                           f"for {self.condition})", self.url)
        if response.status == 200:
            return OSError(errno.EIO, "cannot resume a broken read: the server ignores ranges",
                           self.url)
        return _http_status_error(self.url, response)

    def readable(self):
        return True

    def readinto(self, buffer):
        for attempt in range(RESUMES + 1):
            try:
                count = self.response.readinto(buffer)
            except _http_broken() as exc:
                failure = _describe(exc)
            else:
                # http.client ends a body cut short as if it were complete
                if count or not len(buffer) or self.size is None or self.pos == self.size:
                    self.pos += count
                    return count
                failure = f"the connection closed at byte {self.pos} of {self.size}"
            if attempt == RESUMES:
                raise OSError(errno.EIO, f"broken at byte {self.pos} after {RESUMES} resumes, "
                              f"the last time by {failure}", self.url)
            _http_close(self.conn, self.response)
            self.conn, self.response = self._get(self.pos)

    def close(self):
        if not self.closed and self.conn:
            _http_close(self.conn, self.response)
        super().close()


# -- S3 ----------------------------------------------------------------------------------

@functools.cache
def _client():
    import boto3
    from botocore.config import Config
    # boto3 clients are thread-safe, but making them is not (parallel downloads)
    with _CLIENT_LOCK:
        # adaptive mode also backs off when S3 answers SlowDown to many tasks at once
        client = boto3.session.Session().client(
            "s3", config=Config(retries={"max_attempts": S3_RETRIES, "mode": "adaptive"}))
        client.meta.events.register("before-send.s3", _s3_request_sent)
        return client


# a process forked after it made requests (serve's workers) makes its own client: the
# parent's kept-alive connections are not the child's to share
os.register_at_fork(after_in_child=_client.cache_clear)


def _s3(url, operation, **params):
    """Call an S3 operation for ``url``; its errors become OSErrors naming ``url``."""
    try:
        return getattr(_client(), operation)(**params)
    except _s3_failed() as exc:
        raise _s3_error(url, exc) from exc


def _s3_answer(exc):
    """What S3 answered to a request that failed with ``exc``: {} when no answer came."""
    from botocore.exceptions import ClientError
    return exc.response if isinstance(exc, ClientError) else {}


def _s3_error(url, exc, what=None):
    """The OSError naming ``url`` for botocore's ``exc`` (one of ``_s3_failed()``), about ``what``."""
    status = _s3_answer(exc).get("ResponseMetadata", {}).get("HTTPStatusCode")
    kind, code = {404: (FileNotFoundError, errno.ENOENT),
                  403: (PermissionError, errno.EACCES)}.get(status, (OSError, errno.EIO))
    return kind(code, f"{what}: {exc}" if what else str(exc), url)


def _s3_fetch_range(url, offset, length):
    bucket, key = _split(url)
    byte_range = f"bytes={offset}-{offset + length - 1}"
    what = "GET " + byte_range

    def attempt():
        try:
            response = _client().get_object(Bucket=bucket, Key=key, Range=byte_range)
        except _s3_failed() as exc:  # botocore has retried the request
            answer = _s3_answer(exc)
            error = answer.get("Error", {})
            if error.get("Code") == "InvalidRange":  # the range starts at or past the end
                # S3 says the size; a server that mimics it may not
                return b"", int(error["ActualObjectSize"]) if "ActualObjectSize" in error else size(url)
            meta = answer.get("ResponseMetadata", {})
            if (meta.get("HTTPStatusCode") in RETRY_STATUSES
                    and meta.get("RetryAttempts", S3_RETRIES) < S3_RETRIES):
                # botocore gave up early: its retry quota, shared by the client's threads,
                # runs dry under many SlowDowns. Back off and try again here.
                raise _Transient(_describe(exc)) from exc
            raise _s3_error(url, exc, what) from exc
        with contextlib.closing(response["Body"]) as body:
            data = body.read()
        return _cut(url, offset, length, response.get("ContentRange"), data,
                    response["ContentLength"])

    return _retrying(url, what, attempt, _s3_broken() + (_Transient,))


class _S3Stream(io.RawIOBase):
    """The bytes of an S3 object, from one GET; a connection that breaks while an
    archive is read (minutes, for a large one) resumes where it stopped, from the
    same version of the object."""

    def __init__(self, url):
        super().__init__()
        self.url = url
        self.bucket, self.key = _split(url)
        self.pos = 0
        response = _s3(url, "get_object", Bucket=self.bucket, Key=self.key)
        self.body, self.etag = response["Body"], response["ETag"]

    def readable(self):
        return True

    def readinto(self, buffer):
        for attempt in range(RESUMES + 1):
            try:
                count = self.body.readinto(buffer)
                self.pos += count
                return count
            except _s3_broken() as exc:
                if attempt == RESUMES:
                    raise OSError(errno.EIO, f"broken at byte {self.pos} after {RESUMES} resumes, "
                                  f"the last time by {_describe(exc)}", self.url) from exc
                self.body.close()
                self.body = _s3(self.url, "get_object", Bucket=self.bucket, Key=self.key,
                                Range=f"bytes={self.pos}-", IfMatch=self.etag)["Body"]

    def close(self):
        if not self.closed:
            self.body.close()
        super().close()


# -- every kind of path ------------------------------------------------------------------

def exists(path):
    if is_http(path):
        try:
            _http_fetch_range(path, 0, 1)  # a GET, not a HEAD: a presigned URL allows only that
            return True
        except FileNotFoundError:
            return False
    if is_hadoop(path):
        returncode, _, stderr = _hadoop_run(path, "-test", "-e", path)
        if returncode == 0:
            return True
        # -test exits 1 for an absent path, silently, and also after an error it printed
        # ("test: Permission denied: ..."): only the former is absent
        if returncode == 1 and not _hadoop_messages("-test", stderr):
            return False
        raise _hadoop_error(path, "-test", returncode, stderr)
    if not is_s3(path):
        return os.path.exists(path)
    bucket, key = _split(path)
    try:
        _s3(path, "head_object", Bucket=bucket, Key=key)
        return True
    except FileNotFoundError:
        pass
    # a HEAD answers 404 for a missing bucket too: only a missing key in a bucket
    # that is there is absent (any other error, e.g. a 403, was raised above)
    _s3(f"s3://{bucket}", "head_bucket", Bucket=bucket)
    return False


def abspath(path):
    return path if is_remote(path) else os.path.abspath(path)


def makedirs(path):
    if is_http(path):
        raise _http_unsupported(path, "making directories")
    if is_hadoop(path):
        _hadoop_fs(path, "-mkdir", "-p", path)
    # S3 has no directories: a key's prefix exists as soon as the key does
    elif not is_s3(path):
        os.makedirs(path, exist_ok=True)


@contextlib.contextmanager
def open_atomic(path):
    """A file to write ``path`` through; it appears under its name only once complete."""
    if is_http(path):
        raise _http_unsupported(path, "writing")
    if is_hadoop(path):
        with _hadoop_open_atomic(path) as fh:
            yield fh
        return
    import tempfile
    if is_s3(path):
        with tempfile.TemporaryFile() as fh:
            yield fh
            fh.seek(0)
            bucket, key = _split(path)
            # multipart above 8 MB; the object appears only when the upload completes
            _s3(path, "upload_fileobj", Fileobj=fh, Bucket=bucket, Key=key)
        return
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix="-" + os.path.basename(path))
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
        # mkstemp makes the file private; published files get the usual permissions
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def make_temp_dir(parent, prefix):
    """A new directory under ``parent`` with the usual permissions (mkdtemp's are private).

    On S3, a fresh prefix: nothing is created until something is written under it.
    On a Hadoop file system, a directory with a fresh random name.
    """
    if is_http(parent):
        raise _http_unsupported(parent, "making a directory")
    if is_hadoop(parent):
        path = join(parent, prefix + os.urandom(4).hex())
        _hadoop_fs(path, "-mkdir", "-p", path)
        return path
    if is_s3(parent):
        return join(parent, prefix + os.urandom(4).hex())
    import tempfile
    path = tempfile.mkdtemp(dir=parent, prefix=prefix)
    os.chmod(path, 0o777 & ~_umask())
    return path


def write_atomic(path, data):
    """Write ``data`` (bytes) to ``path`` so that it appears whole or not at all."""
    with open_atomic(path) as fh:
        fh.write(data)


def read_bytes(path):
    if is_hadoop(path):
        return _hadoop_fs(path, "-cat", path)
    # streamed, so that a connection that breaks resumes
    with open_read(path) as fh:
        return fh.read()


def read_range(path, offset, length):
    """``length`` bytes of ``path`` from ``offset`` (fewer at its end)."""
    if is_hadoop(path):
        # ``hadoop fs`` has no ranged read: stream from the start, stop after the range
        if length <= 0:
            return b""
        with open_read(path) as fh:
            while offset > 0:
                skipped = len(fh.read(min(offset, READ_BUFFER)))
                if not skipped:
                    return b""
                offset -= skipped
            return fh.read(length)
    if length <= 0 and is_remote(path):
        return b""  # without the request for the size fetch_range makes
    return fetch_range(path, offset, length)[0]


def fetch_range(path, offset, length):
    """``length`` bytes of ``path`` from ``offset`` (fewer at its end, none past it), and
    the size of the whole file: ``(data, size)``.

    The size comes with the same answer (S3's and HTTP's ``Content-Range``), so a
    caller can check that the file is still the one a small index of it was made
    from. It is None if an HTTP server does not say (``Content-Range: bytes 0-9/*``).
    Over HTTP and from S3, transient failures are retried (see the module's docstring).
    """
    if is_hadoop(path):
        return read_range(path, offset, length), size(path)
    if not is_remote(path):
        with open(path, "rb") as fh:
            fh.seek(offset)
            return fh.read(length), os.fstat(fh.fileno()).st_size
    if length <= 0:
        return b"", size(path)  # a ranged GET cannot ask for no bytes
    if is_s3(path):
        return _s3_fetch_range(path, offset, length)
    return _http_fetch_range(path, offset, length)


def open_read(path):
    """A binary file object reading ``path``; for S3, HTTP and Hadoop file systems, a
    stream that can ``peek`` but not seek."""
    if is_hadoop(path):
        return io.BufferedReader(_HadoopStream(path), READ_BUFFER)
    if is_s3(path):
        return io.BufferedReader(_S3Stream(path), READ_BUFFER)
    if is_http(path):
        return io.BufferedReader(_HTTPStream(path), READ_BUFFER)
    return open(path, "rb")


def download(url, local_path):
    """Copy the S3 object (or Hadoop file, or HTTP URL) ``url`` to the local file ``local_path``."""
    os.makedirs(os.path.dirname(local_path) or ".", exist_ok=True)
    if is_hadoop(url) or is_http(url):
        # streamed (from ``-cat`` for Hadoop: -get's handling of an existing file varies
        # across versions)
        with open_read(url) as src, open_atomic(local_path) as dst:
            shutil.copyfileobj(src, dst, READ_BUFFER)
        return
    bucket, key = _split(url)
    _s3(url, "download_file", Bucket=bucket, Key=key, Filename=local_path)


def list_files(directory):
    """Every file under ``directory`` (recursively; on S3, every key under the prefix), sorted."""
    if is_http(directory):
        raise _http_unsupported(directory, "listing files")
    if is_hadoop(directory):
        yield from _hadoop_list_files(directory)
        return
    if not is_s3(directory):
        for root, dirs, files in os.walk(directory):
            dirs.sort()
            for name in sorted(files):
                yield os.path.join(root, name)
        return
    bucket, key = _split(directory)
    prefix = key.rstrip("/") + "/" if key.strip("/") else ""
    pages = _client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    try:
        for page in pages:
            for item in page.get("Contents", []):
                yield f"s3://{bucket}/{item['Key']}"
    except _s3_failed() as exc:
        raise _s3_error(directory, exc) from exc


def remove(path):
    if is_http(path):
        raise _http_unsupported(path, "removing files")
    if is_hadoop(path):
        # -skipTrash: a replaced or scratch file is not worth keeping in the trash
        _hadoop_fs(path, "-rm", "-f", "-skipTrash", path)
        return
    if is_s3(path):
        # deleting a key that is not there succeeds
        bucket, key = _split(path)
        _s3(path, "delete_object", Bucket=bucket, Key=key)
        return
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def remove_tree(directory):
    """Delete ``directory`` and everything in it (on S3, every key under the prefix)."""
    if is_http(directory):
        raise _http_unsupported(directory, "removing files")
    if is_hadoop(directory):
        _hadoop_fs(directory, "-rm", "-r", "-f", "-skipTrash", directory)
        return
    if not is_s3(directory):
        # as much as can be: callers remove scratch space, nothing published
        shutil.rmtree(directory, ignore_errors=True)
        return
    bucket, _ = _split(directory)
    keys = [path[len(f"s3://{bucket}/"):] for path in list_files(directory)]
    for start in range(0, len(keys), DELETE_BATCH):
        batch = [{"Key": key} for key in keys[start:start + DELETE_BATCH]]
        failed = _s3(directory, "delete_objects", Bucket=bucket,
                     Delete={"Objects": batch, "Quiet": True}).get("Errors")
        if failed:
            raise OSError(errno.EIO, f"{len(failed)} keys not deleted, e.g. {failed[0]}", directory)


def size(path):
    if is_http(path):
        total = _http_fetch_range(path, 0, 1)[1]  # a GET: see exists
        if total is None:
            raise OSError(errno.EIO, "the server does not say the size (Content-Range: .../*)", path)
        return total
    if is_hadoop(path):
        return int(_hadoop_fs(path, "-stat", "%b", path).strip())
    if is_s3(path):
        bucket, key = _split(path)
        return _s3(path, "head_object", Bucket=bucket, Key=key)["ContentLength"]
    return os.path.getsize(path)


# -- Hadoop file systems, through ``hadoop fs`` ----------------------------------------------

class HadoopNotFound(OSError):
    """There is no ``hadoop`` command to reach a Hadoop file system with."""


def _hadoop_popen(url, args, **kwargs):
    """``hadoop fs ARGS`` started for ``url``."""
    import subprocess
    binary = os.environ.get("HADOOP_BIN") or shutil.which("hadoop")
    if binary:
        try:
            return subprocess.Popen([binary, "fs", *args], stdin=subprocess.DEVNULL, **kwargs)
        except (FileNotFoundError, PermissionError) as exc:
            raise HadoopNotFound(errno.ENOENT, f"cannot run {binary} (HADOOP_BIN or PATH): {exc}",
                                 url) from exc
    raise HadoopNotFound(errno.ENOENT, "no hadoop command to reach a Hadoop file system with: "
                         "set HADOOP_BIN or put hadoop on PATH", url)


def _hadoop_run(url, *args):
    """(exit status, stdout, stderr) of ``hadoop fs ARGS``."""
    import subprocess
    proc = _hadoop_popen(url, args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stdout, stderr = proc.communicate()
    return proc.returncode, stdout, stderr


def _hadoop_fs(url, *args):
    """The stdout of ``hadoop fs ARGS``; an OSError naming ``url`` if it fails."""
    returncode, stdout, stderr = _hadoop_run(url, *args)
    if returncode:
        raise _hadoop_error(url, args[0], returncode, stderr)
    return stdout


def _hadoop_messages(command, stderr):
    """The errors ``hadoop fs COMMAND`` printed (``cat: `x': No such file or directory``),
    not the log lines (``WARN util.NativeCodeLoader: ...``) around them."""
    prefix = command.lstrip("-") + ": "
    return [line for line in stderr.decode("utf-8", "replace").splitlines()
            if line.startswith(prefix)]


def _hadoop_error(url, command, returncode, stderr):
    messages = " ".join(_hadoop_messages(command, stderr))
    kind, code = OSError, errno.EIO
    if "No such file or directory" in messages or "does not exist" in messages:
        kind, code = FileNotFoundError, errno.ENOENT
    elif "Permission denied" in messages:
        kind, code = PermissionError, errno.EACCES
    printed = stderr.decode("utf-8", "replace").strip()[-HADOOP_STDERR_MAX:] or "(nothing on stderr)"
    return kind(code, f"hadoop fs {command} exited with status {returncode}: {printed}", url)


class _HadoopStream(io.RawIOBase):
    """The bytes of a Hadoop file, streamed from ``hadoop fs -cat``; a failure to read it
    raises when opening (as ``open`` would) or at the end (a stream cut short)."""

    def __init__(self, url):
        import subprocess
        import tempfile
        super().__init__()
        self.url, self.proc = url, None
        self.stderr = tempfile.TemporaryFile()  # a file: a pipe left unread could fill up
        try:
            self.proc = _hadoop_popen(url, ["-cat", url], stdout=subprocess.PIPE,
                                      stderr=self.stderr)
            if not self.proc.stdout.peek(1):  # nothing at all: an empty file, or an error
                self._finish()
        except BaseException:
            self.close()
            raise

    def readable(self):
        return True

    def readinto(self, buffer):
        count = self.proc.stdout.readinto1(buffer)
        if not count and len(buffer):
            self._finish()
        return count

    def _finish(self):
        returncode = self.proc.wait()
        if returncode:
            self.stderr.seek(0)
            raise _hadoop_error(self.url, "-cat", returncode, self.stderr.read())

    def close(self):
        if not self.closed:
            if self.proc:
                if self.proc.poll() is None:  # closed before the end
                    self.proc.kill()
                self.proc.wait()
                self.proc.stdout.close()
            self.stderr.close()
        super().close()


@contextlib.contextmanager
def _hadoop_open_atomic(path):
    """Stage the file locally, upload it beside ``path`` under a temporary name, then
    rename it onto ``path`` (removing what was there: ``-mv`` does not replace)."""
    import tempfile
    fd, local = tempfile.mkstemp(prefix="hadoop-put-")
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
        staged = f"{path}.tmp-{os.urandom(4).hex()}"
        try:
            try:
                _hadoop_fs(path, "-put", "-f", local, staged)
            except FileNotFoundError:  # -put needs the parent directory
                _hadoop_fs(path, "-mkdir", "-p", path.rsplit("/", 1)[0])
                _hadoop_fs(path, "-put", "-f", local, staged)
            _hadoop_fs(path, "-rm", "-f", "-skipTrash", path)
            _hadoop_fs(path, "-mv", staged, path)
        except BaseException:
            with contextlib.suppress(OSError):  # as much as can be: the error is what failed
                _hadoop_run(path, "-rm", "-f", "-skipTrash", staged)
            raise
    finally:
        os.unlink(local)


# a line of ``hadoop fs -ls``: permissions, [replication, owner, group,] size, date, time, path
# (the S3 connectors leave some of the middle out)
_LS_LINE = re.compile(r"(\S)\S*\s.*?\d{4}-\d\d-\d\d \d\d:\d\d (.+)$")


def _uri_path(uri):
    """The path part of a URI (``/a/b`` of ``hdfs://namenode:8020/a/b``), or ``uri`` itself."""
    if "://" not in uri:
        return uri
    return "/" + uri.split("://", 1)[1].partition("/")[2]


def _hadoop_list_files(directory):
    try:
        listing = _hadoop_fs(directory, "-ls", "-R", directory)
    except FileNotFoundError:  # nothing there: nothing under it, as for a local directory
        return []
    # hadoop prints each path as it likes (hdfs://namenode:8020/a/b for hdfs:///a): give
    # them in the form of ``directory``, as callers cut that prefix off
    base = directory.rstrip("/")
    base_path = _uri_path(base).rstrip("/")
    files = []
    for line in listing.decode("utf-8").splitlines():
        match = _LS_LINE.match(line)
        if match and match.group(1) == "-":
            path = _uri_path(match.group(2))
            if path == base_path:  # ``directory`` is a file
                files.append(base)
            elif path.startswith(base_path + "/"):
                files.append(base + path[len(base_path):])
    return sorted(files)
