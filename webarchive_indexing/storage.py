"""Reading and publishing files where the jobs keep them: local paths, ``s3://bucket/key``,
or Hadoop file systems (``hdfs:///path``, ``hdfs://namenode/path``, ``s3a://bucket/key``).

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
import secrets
import re
import shutil
import subprocess
import tempfile
import threading

from botocore.exceptions import (ClientError, IncompleteReadError, ReadTimeoutError,
                                 ResponseStreamingError)

# How often a read of one S3 object resumes after its connection broke.
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


def is_s3(path):
    return path.startswith("s3://")


def is_hadoop(path):
    """Whether ``path`` is on a Hadoop file system (``hdfs://``, ``s3a://``), reached with ``hadoop fs``."""
    return path.startswith(HADOOP_SCHEMES)


def is_remote(path):
    """Whether ``path`` is a URI (S3 or a Hadoop file system), not a path on local disk."""
    return is_s3(path) or is_hadoop(path)


def join(base, *parts):
    return "/".join([base.rstrip("/")] + [p.strip("/") for p in parts])


def _split(url):
    bucket, _, key = url[len("s3://"):].partition("/")
    return bucket, key


@functools.cache
def _client():
    import boto3
    from botocore.config import Config
    # boto3 clients are thread-safe, but making them is not (parallel downloads)
    with _CLIENT_LOCK:
        # adaptive mode also backs off when S3 answers SlowDown to many tasks at once
        return boto3.session.Session().client(
            "s3", config=Config(retries={"max_attempts": 10, "mode": "adaptive"}))


def _s3(url, operation, **params):
    """Call an S3 operation for ``url``; its errors become OSErrors naming ``url``."""
    try:
        return getattr(_client(), operation)(**params)
    except ClientError as exc:
        raise _s3_error(url, exc) from exc


def _s3_error(url, exc):
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    kind, code = {404: (FileNotFoundError, errno.ENOENT),
                  403: (PermissionError, errno.EACCES)}.get(status, (OSError, errno.EIO))
    return kind(code, str(exc), url)


def exists(path):
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
    if is_hadoop(path):
        _hadoop_fs(path, "-mkdir", "-p", path)
    # S3 has no directories: a key's prefix exists as soon as the key does
    elif not is_s3(path):
        os.makedirs(path, exist_ok=True)


@contextlib.contextmanager
def open_atomic(path):
    """A file to write ``path`` through; it appears under its name only once complete."""
    if is_hadoop(path):
        with _hadoop_open_atomic(path) as fh:
            yield fh
        return
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
    if is_hadoop(parent):
        path = join(parent, prefix + secrets.token_hex(4))
        _hadoop_fs(path, "-mkdir", "-p", path)
        return path
    if is_s3(parent):
        return join(parent, prefix + secrets.token_hex(4))
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
    if is_s3(path):
        bucket, key = _split(path)
        return _s3(path, "get_object", Bucket=bucket, Key=key)["Body"].read()
    with open(path, "rb") as fh:
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
    if not is_s3(path):
        with open(path, "rb") as fh:
            fh.seek(offset)
            return fh.read(length)
    if length <= 0:
        return b""
    bucket, key = _split(path)
    try:
        return _client().get_object(Bucket=bucket, Key=key,
                                    Range=f"bytes={offset}-{offset + length - 1}")["Body"].read()
    except ClientError as exc:
        # a range that starts at or past the end: nothing, as from a local file
        if exc.response["Error"].get("Code") == "InvalidRange":
            return b""
        raise _s3_error(path, exc) from exc


def open_read(path):
    """A binary file object reading ``path``; for S3 and Hadoop file systems, a stream
    that can ``peek`` but not seek."""
    if is_hadoop(path):
        return io.BufferedReader(_HadoopStream(path), READ_BUFFER)
    if is_s3(path):
        return io.BufferedReader(_S3Stream(path), READ_BUFFER)
    return open(path, "rb")


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
            except (ResponseStreamingError, ReadTimeoutError, IncompleteReadError):
                if attempt == RESUMES:
                    raise
                self.body.close()
                self.body = _s3(self.url, "get_object", Bucket=self.bucket, Key=self.key,
                                Range=f"bytes={self.pos}-", IfMatch=self.etag)["Body"]

    def close(self):
        if not self.closed:
            self.body.close()
        super().close()


def download(url, local_path):
    """Copy the S3 object (or Hadoop file) ``url`` to the local file ``local_path``."""
    os.makedirs(os.path.dirname(local_path) or ".", exist_ok=True)
    if is_hadoop(url):
        # streamed from ``-cat``: -get's handling of an existing file varies across versions
        with open_read(url) as src, open_atomic(local_path) as dst:
            shutil.copyfileobj(src, dst, READ_BUFFER)
        return
    bucket, key = _split(url)
    _s3(url, "download_file", Bucket=bucket, Key=key, Filename=local_path)


def list_files(directory):
    """Every file under ``directory`` (recursively; on S3, every key under the prefix), sorted."""
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
    except ClientError as exc:
        raise _s3_error(directory, exc) from exc


def remove(path):
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
    fd, local = tempfile.mkstemp(prefix="hadoop-put-")
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
        staged = f"{path}.tmp-{secrets.token_hex(4)}"
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
