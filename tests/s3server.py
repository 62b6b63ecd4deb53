"""A real S3 API for the tests: moto's server on 127.0.0.1, in a thread of the test process.

    @pytest.fixture(scope="module")
    def s3():
        with s3server.running():
            yield

    def test_x(s3):
        bucket = s3server.new_bucket()     # "s3://test-1a2b3c4d"

Everything S3 goes to that server: boto3 and the subprocesses of mrjob's local
runner take its endpoint and fake credentials from the environment, no AWS
configuration file is read, the instance metadata service is off, and while
it runs a socket of this process that connects anywhere but 127.0.0.1 fails.
"""
import contextlib
import os
import secrets
import socket

import pytest
from moto.server import ThreadedMotoServer

from webarchive_indexing import storage
from webarchive_indexing.storage import s3 as s3_storage

# Variables that could send boto3 elsewhere or to real credentials.
CLEARED = ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN",
           "AWS_ENDPOINT_URL_S3", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE",
           "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI")
LOOPBACK = ("127.0.0.1", "::1", "::ffff:127.0.0.1")


class ForeignHostError(AssertionError):
    pass


def _loopback_only(connect):
    def guarded(sock, address, *args):
        if sock.family in (socket.AF_INET, socket.AF_INET6) and address[0] not in LOOPBACK:
            raise ForeignHostError(f"a test tried to connect to {address}")
        return connect(sock, address, *args)
    return guarded


@contextlib.contextmanager
def running():
    """Start the server, point boto3 (here and in child processes) at it; yield its URL."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    try:
        with pytest.MonkeyPatch.context() as patch:
            for name in CLEARED:
                patch.delenv(name, raising=False)
            for name, value in {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "testing",
                                "AWS_SECRET_ACCESS_KEY": "testing",
                                "AWS_DEFAULT_REGION": "us-east-1",
                                "AWS_EC2_METADATA_DISABLED": "true",
                                "AWS_CONFIG_FILE": os.devnull,
                                "AWS_SHARED_CREDENTIALS_FILE": os.devnull}.items():
                patch.setenv(name, value)
            patch.setattr(socket.socket, "connect", _loopback_only(socket.socket.connect))
            patch.setattr(socket.socket, "connect_ex", _loopback_only(socket.socket.connect_ex))
            s3_storage._client.cache_clear()  # a client made before has another endpoint
            yield endpoint
    finally:
        s3_storage._client.cache_clear()
        server.stop()


def new_bucket():
    """A new, empty bucket; its ``s3://`` URL."""
    name = "test-" + secrets.token_hex(4)
    s3_storage._client().create_bucket(Bucket=name)
    return f"s3://{name}"


def upload_tree(local_dir, url):
    """Upload every file under ``local_dir`` to ``url``, keeping relative paths."""
    for root, _, files in os.walk(local_dir):
        for name in files:
            path = os.path.join(root, name)
            with open(path, "rb") as fh:
                storage.write_atomic(storage.join(url, os.path.relpath(path, local_dir)), fh.read())


def download_tree(url, local_dir):
    """Download every object under ``url`` into ``local_dir``, keeping relative paths."""
    for path in storage.list_files(url):
        storage.download(path, os.path.join(local_dir, path[len(url.rstrip("/")) + 1:]))


def objects(url):
    """{relative key: bytes} of every object under ``url``."""
    return {path[len(url.rstrip("/")) + 1:]: storage.read_bytes(path) for path in storage.list_files(url)}
