"""Reading and publishing files where the jobs keep them: local paths or ``s3://bucket/key``.

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
"""
import contextlib
import errno
import functools
import io
import os
import secrets
import shutil
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


def is_s3(path):
    return path.startswith("s3://")


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
    return path if is_s3(path) else os.path.abspath(path)


def makedirs(path):
    # S3 has no directories: a key's prefix exists as soon as the key does
    if not is_s3(path):
        os.makedirs(path, exist_ok=True)


@contextlib.contextmanager
def open_atomic(path):
    """A file to write ``path`` through; it appears under its name only once complete."""
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
    """
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
    if is_s3(path):
        bucket, key = _split(path)
        return _s3(path, "get_object", Bucket=bucket, Key=key)["Body"].read()
    with open(path, "rb") as fh:
        return fh.read()


def read_range(path, offset, length):
    """``length`` bytes of ``path`` from ``offset`` (fewer at its end)."""
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
    """A binary file object reading ``path``; for S3, a stream that can ``peek`` but not seek."""
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
    """Copy the S3 object ``url`` to the local file ``local_path``."""
    bucket, key = _split(url)
    os.makedirs(os.path.dirname(local_path) or ".", exist_ok=True)
    _s3(url, "download_file", Bucket=bucket, Key=key, Filename=local_path)


def list_files(directory):
    """Every file under ``directory`` (recursively; on S3, every key under the prefix), sorted."""
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
    if is_s3(path):
        bucket, key = _split(path)
        return _s3(path, "head_object", Bucket=bucket, Key=key)["ContentLength"]
    return os.path.getsize(path)
