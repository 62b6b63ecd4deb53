"""``s3://bucket/key``, through boto3's default credential chain and endpoint settings
(``AWS_ENDPOINT_URL_S3`` / ``AWS_ENDPOINT_URL`` point it at another server).

A failed request raises an ``OSError`` naming the URL (``FileNotFoundError`` for a 404,
``PermissionError`` for a 403), chained to botocore's error, so that callers treat it
like the same problem with a local file. A file is published by staging it in a local
temporary file and uploading it once complete: an object appears whole or not at all.
botocore retries requests itself (``S3_RETRIES``, adaptive mode); a ranged read also
retries a body that breaks off while it streams, and a request botocore gave up on early.
"""
import contextlib
import errno
import functools
import io
import os
import tempfile
import threading

from ..util import retry
from . import common

WRITABLE = True
RANGED_READS = True
# Retries botocore makes of an S3 request (its "max_attempts", which it counts after the first)
S3_RETRIES = 10
# Keys one DeleteObjects request takes.
DELETE_BATCH = 1000
_CLIENT_LOCK = threading.Lock()

# boto3 (and urllib3, through botocore) is imported where first needed: importing it takes
# longer than indexing a small archive.


@functools.cache
def _s3_failed():
    """An S3 request that failed, after botocore's retries: an error answer, no answer, or
    no credentials to sign it with."""
    from botocore.exceptions import ClientError, ConnectionError as BotoConnectionError
    from botocore.exceptions import HTTPClientError, NoCredentialsError, PartialCredentialsError
    return (ClientError, HTTPClientError, BotoConnectionError, NoCredentialsError,
            PartialCredentialsError)


@functools.cache
def _s3_broken():
    """An S3 object's body that broke off while it streamed (botocore retries only the
    request)."""
    from botocore.exceptions import IncompleteReadError, ReadTimeoutError, ResponseStreamingError
    from urllib3.exceptions import ProtocolError
    return ResponseStreamingError, IncompleteReadError, ReadTimeoutError, ProtocolError


def _split(url):
    bucket, _, key = url[len("s3://"):].partition("/")
    return bucket, key


def _s3_request_sent(request, **_):
    """botocore's ``before-send`` event (once per attempt): tell the request listeners."""
    if common.listening():
        params = request.context.get("input_params", {})  # what botocore keeps of the call
        if "Bucket" in params:
            key = params.get("Key") or params.get("Prefix")
            url = f"s3://{params['Bucket']}/{key}" if key else f"s3://{params['Bucket']}"
        else:
            url = request.url
        header = request.headers.get("Range")
        common.notify(request.method, url, common.byte_range(
            header.decode("latin-1") if isinstance(header, bytes) else header))
    # anything but None here would be taken as the answer, and nothing sent


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
    from botocore.exceptions import NoCredentialsError, PartialCredentialsError
    if isinstance(exc, (NoCredentialsError, PartialCredentialsError)):
        return PermissionError(errno.EACCES, f"{exc}: set AWS_ACCESS_KEY_ID and "
                               "AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, or run where an instance "
                               "role gives credentials", url)
    status = _s3_answer(exc).get("ResponseMetadata", {}).get("HTTPStatusCode")
    kind, code = {404: (FileNotFoundError, errno.ENOENT),
                  403: (PermissionError, errno.EACCES)}.get(status, (OSError, errno.EIO))
    return kind(code, f"{what}: {exc}" if what else str(exc), url)


def _fetch(url, offset, length):
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
            if (meta.get("HTTPStatusCode") in retry.TRANSIENT_STATUSES
                    and meta.get("RetryAttempts", S3_RETRIES) < S3_RETRIES):
                # botocore gave up early: its retry quota, shared by the client's threads,
                # runs dry under many SlowDowns. Back off and try again here.
                raise retry.Transient(retry.describe(exc)) from exc
            raise _s3_error(url, exc, what) from exc
        with contextlib.closing(response["Body"]) as body:
            data = body.read()
        return common.cut(url, offset, length, response.get("ContentRange"), data,
                    response["ContentLength"])

    return common.retrying(url, what, attempt, _s3_broken() + (retry.Transient,))


class _S3Stream(common.ResumingStream):
    """The bytes of an S3 object, from one GET; resumed (``common.ResumingStream``) from
    the same version of the object (its ETag)."""

    def __init__(self, url):
        super().__init__(url)
        self.bucket, self.key = _split(url)
        response = _s3(url, "get_object", Bucket=self.bucket, Key=self.key)
        self.body, self.etag = response["Body"], response["ETag"]

    def _read(self, buffer):
        return self.body.readinto(buffer)

    def _broken(self):
        return _s3_broken()

    def _reopen(self):
        self.body = _s3(self.url, "get_object", Bucket=self.bucket, Key=self.key,
                        Range=f"bytes={self.pos}-", IfMatch=self.etag)["Body"]

    def _close_answer(self):
        self.body.close()


# -- the API (see the package) -----------------------------------------------------------

def exists(path):
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


def size(path):
    bucket, key = _split(path)
    return _s3(path, "head_object", Bucket=bucket, Key=key)["ContentLength"]


def version(path):
    bucket, key = _split(path)
    head = _s3(path, "head_object", Bucket=bucket, Key=key)
    return {"size": head["ContentLength"], "etag": head["ETag"]}


def open_read(path):
    return io.BufferedReader(_S3Stream(path), common.READ_BUFFER)


read_range, fetch_range, read_bytes = common.ranged_reads(_fetch, size, open_read)


def download(url, local_path):
    bucket, key = _split(url)
    _s3(url, "download_file", Bucket=bucket, Key=key, Filename=local_path)


@contextlib.contextmanager
def open_atomic(path):
    with tempfile.TemporaryFile() as fh:
        yield fh
        fh.seek(0)
        bucket, key = _split(path)
        # multipart above 8 MB; the object appears only when the upload completes
        _s3(path, "upload_fileobj", Fileobj=fh, Bucket=bucket, Key=key)


def makedirs(path):
    pass  # S3 has no directories: a key's prefix exists as soon as the key does


def list_files(directory):
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
    # deleting a key that is not there succeeds
    bucket, key = _split(path)
    _s3(path, "delete_object", Bucket=bucket, Key=key)


def remove_tree(directory):
    bucket, _ = _split(directory)
    keys = [path[len(f"s3://{bucket}/"):] for path in list_files(directory)]
    for start in range(0, len(keys), DELETE_BATCH):
        batch = [{"Key": key} for key in keys[start:start + DELETE_BATCH]]
        failed = _s3(directory, "delete_objects", Bucket=bucket,
                     Delete={"Objects": batch, "Quiet": True}).get("Errors")
        if failed:
            raise OSError(errno.EIO, f"{len(failed)} keys not deleted, e.g. {failed[0]}", directory)
