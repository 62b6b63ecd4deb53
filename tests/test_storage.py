"""``storage`` and ``inputs`` on S3, against moto's S3 server on 127.0.0.1 (tests/s3server.py)."""
import gzip
import logging
import os
import socket

import pytest
from botocore.exceptions import ClientError, ResponseStreamingError
from botocore.stub import Stubber

import s3server
from helpers import REAL
from webarchive_indexing import cli, storage
from webarchive_indexing.util import retry
from webarchive_indexing.storage import s3 as s3_storage
from webarchive_indexing.cdx.indexer import index_file
from webarchive_indexing.inputs.discovery import expand


@pytest.fixture(scope="module")
def s3():
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    with s3server.running() as endpoint:
        yield endpoint


@pytest.fixture
def bucket(s3):
    return s3server.new_bucket()


def test_the_client_talks_to_the_local_server_only(s3):
    client = s3_storage._client()
    assert client.meta.endpoint_url == s3 and s3.startswith("http://127.0.0.1:")
    # botocore counts max_attempts as retries after the first attempt
    assert client.meta.config.retries == {"total_max_attempts": 11, "mode": "adaptive"}
    with pytest.raises(s3server.ForeignHostError):
        socket.create_connection(("192.0.2.1", 443), timeout=1)


def test_round_trip(bucket):
    path = storage.join(bucket, "a", "b.txt")
    assert not storage.exists(path)
    storage.write_atomic(path, b"hello, world")
    assert storage.exists(path)
    assert storage.read_bytes(path) == b"hello, world"
    assert storage.size(path) == 12
    assert storage.read_range(path, 7, 5) == b"world"
    assert storage.read_range(path, 7, 50) == b"world"
    assert storage.read_range(path, 12, 5) == storage.read_range(path, 20, 5) == b""
    assert storage.abspath(path) == path
    storage.makedirs(storage.join(bucket, "nothing", "made"))
    assert list(storage.list_files(bucket)) == [path]
    storage.remove(path)
    storage.remove(path)  # already gone: fine, as for a local file
    assert not storage.exists(path)


def test_missing_objects_and_buckets(bucket):
    missing = storage.join(bucket, "missing.txt")
    for read in (storage.read_bytes, storage.size, storage.open_read):
        with pytest.raises(FileNotFoundError, match=f"NoSuchKey|Not Found.*{missing}"):
            read(missing)
    # S3 answers a HEAD on a key of a missing bucket with 404 as well: not "absent"
    with pytest.raises(FileNotFoundError, match="HeadBucket.*s3://no-such-bucket-x1"):
        storage.exists("s3://no-such-bucket-x1/key")
    with pytest.raises(FileNotFoundError, match="NoSuchBucket"):
        list(storage.list_files("s3://no-such-bucket-x1/"))
    with pytest.raises(FileNotFoundError, match="NoSuchBucket.*s3://no-such-bucket-x1/out/a.cdx.gz"):
        storage.write_atomic("s3://no-such-bucket-x1/out/a.cdx.gz", b"data")


@pytest.mark.parametrize("status,code,error", [(403, "AccessDenied", PermissionError),
                                               (500, "InternalError", OSError),
                                               (503, "SlowDown", OSError)])
def test_only_a_404_means_absent(bucket, status, code, error):
    path = storage.join(bucket, "key")
    with Stubber(s3_storage._client()) as stub:
        stub.add_client_error("head_object", code, http_status_code=status)
        with pytest.raises(error, match=f"{code}.*{path}") as raised:
            storage.exists(path)
        stub.assert_no_pending_responses()
    assert not isinstance(raised.value, FileNotFoundError)


def test_open_atomic_uploads_only_a_complete_file(bucket):
    path = storage.join(bucket, "out", "shard.gz")
    with storage.open_atomic(path) as fh:
        fh.write(b"first half ")
        assert not storage.exists(path)
        fh.write(b"second half")
    assert storage.read_bytes(path) == b"first half second half"

    with pytest.raises(RuntimeError):
        with storage.open_atomic(path) as fh:
            fh.write(b"never published")
            raise RuntimeError("the task died")
    assert storage.read_bytes(path) == b"first half second half"

    big = os.urandom(9 << 20)  # above boto3's 8 MB multipart threshold
    storage.write_atomic(path, big)
    assert storage.size(path) == len(big) and storage.read_bytes(path) == big


def test_open_read_peeks_and_resumes_a_broken_connection(bucket):
    data = os.urandom(3 * storage.READ_BUFFER + 123)
    path = storage.join(bucket, "big.bin")
    storage.write_atomic(path, data)
    with storage.open_read(path) as fh:
        assert fh.peek(2)[:2] == data[:2] and not fh.seekable()
        breaking = fh.raw.body = Breaking(fh.raw.body, every=2)
        assert fh.read() == data
        assert breaking.breaks == 1 and fh.raw.body is not breaking

    # resuming reads the same version of the object, or fails
    with storage.open_read(path) as fh:
        fh.raw.body = Breaking(fh.raw.body, every=1)
        storage.write_atomic(path, b"replaced")
        with pytest.raises(OSError, match=f"PreconditionFailed.*{path}"):
            fh.read()


class Breaking:
    """A response body whose connection breaks on its ``every``-th read."""

    def __init__(self, body, every):
        self.body, self.every, self.reads, self.breaks = body, every, 0, 0

    def readinto(self, buffer):
        self.reads += 1
        if self.reads % self.every == 0:
            self.breaks += 1
            raise ResponseStreamingError(error="connection reset by peer")
        return self.body.readinto(buffer)

    def close(self):
        self.body.close()



def test_fetch_range_gives_the_object_size(bucket):
    path = storage.join(bucket, "a.txt")
    storage.write_atomic(path, b"hello, world")
    assert storage.fetch_range(path, 7, 5) == (b"world", 12)
    assert storage.fetch_range(path, 7, 50) == (b"world", 12)
    assert storage.fetch_range(path, 12, 5) == storage.fetch_range(path, 20, 5) == (b"", 12)
    assert storage.fetch_range(path, 3, 0) == (b"", 12)
    missing = storage.join(bucket, "missing")
    with pytest.raises(FileNotFoundError, match=f"GET bytes=0-4: .*NoSuchKey.*{missing}"):
        storage.fetch_range(missing, 0, 5)


@pytest.mark.parametrize("breaking", ["raises", "short"])
def test_read_range_retries_a_body_that_breaks_off(bucket, monkeypatch, breaking):
    """botocore retries a request, not a body that breaks off while it streams: storage does."""
    path = storage.join(bucket, "a.txt")
    storage.write_atomic(path, b"hello, world")
    monkeypatch.setattr(retry.READS, "first", 0.001)
    client, responses = s3_storage._client(), []
    get_object = client.get_object

    def broken_get_object(**params):
        response = get_object(**params)
        responses.append(response)
        if len(responses) <= 2:
            response["Body"] = Cut(response["Body"], raises=breaking == "raises")
        return response

    monkeypatch.setattr(client, "get_object", broken_get_object)
    assert storage.read_range(path, 7, 5) == b"world" and len(responses) == 3
    responses.clear()
    monkeypatch.setattr(retry.READS, "attempts", 2)
    reason = "ResponseStreamingError" if breaking == "raises" else "a short body: 2 of 5 bytes"
    with pytest.raises(OSError, match=f"GET bytes=7-11 failed 2 times, the last with {reason}.*{path}"):
        storage.read_range(path, 7, 5)


class Cut:
    """A response body that breaks off half way: raising, or as if it ended there."""

    def __init__(self, body, raises):
        self.body, self.raises = body, raises

    def read(self):
        data = self.body.read()
        if self.raises:
            raise ResponseStreamingError(error="connection reset by peer")
        return data[:len(data) // 2]

    def close(self):
        self.body.close()

def test_list_and_remove_tree(bucket):
    for key in ("seg/b.warc.gz", "seg/a/x.arc", "segment/c.warc", "top.warc"):
        storage.write_atomic(storage.join(bucket, key), b"x")
    assert list(storage.list_files(bucket + "/seg")) == [bucket + "/seg/a/x.arc", bucket + "/seg/b.warc.gz"]
    assert list(storage.list_files(bucket + "/seg/")) == list(storage.list_files(bucket + "/seg"))
    assert len(list(storage.list_files(bucket))) == 4
    storage.remove_tree(bucket + "/seg")
    assert list(storage.list_files(bucket)) == [bucket + "/segment/c.warc", bucket + "/top.warc"]


@pytest.fixture(scope="module")
def real_bucket(s3):
    """The real-world sample archives, in a bucket under samples/."""
    bucket = s3server.new_bucket()
    s3server.upload_tree(REAL, bucket + "/samples")
    return bucket


def test_index_file_reads_the_same_from_s3(real_bucket):
    """Every sample (gzipped, plain, ARC, broken) indexes the same streamed from S3."""
    names = sorted(n for n in os.listdir(REAL) if n.endswith((".warc.gz", ".warc", ".arc.gz", ".arc")))
    assert len(names) > 25
    for name in names:
        url = f"{real_bucket}/samples/{name}"
        local, remote = index_file(os.path.join(REAL, name), name), index_file(url, name)
        assert remote.lines == local.lines, name
        assert [(e.offset, e.reason) for e in remote.errors] == [(e.offset, e.reason) for e in local.errors]
        assert all(e.path == url for e in remote.errors)
    missing = index_file(f"{real_bucket}/samples/missing.warc.gz")
    assert [e.reason for e in missing.errors] == [
        "cannot open: An error occurred (NoSuchKey) when calling the GetObject operation: "
        "The specified key does not exist."]


def test_expand_s3_prefixes_manifests_and_input_roots(real_bucket, tmp_path):
    samples = real_bucket + "/samples"
    for key in ("crawl/seg-2/b.arc", "crawl/seg-1/a.warc.gz", "crawl/seg-1/notes.txt",
                "crawl-2/c.warc.gz"):
        storage.write_atomic(f"{real_bucket}/{key}", b"")
    archives, _, missing, roots, _ = expand([real_bucket + "/crawl/"])
    assert not missing and roots == [real_bucket + "/crawl"]
    assert [(a.path, a.name) for a in archives] == [(f"{real_bucket}/crawl/seg-1/a.warc.gz", "seg-1/a.warc.gz"),
                                                    (f"{real_bucket}/crawl/seg-2/b.arc", "seg-2/b.arc")]
    assert expand([real_bucket + "/crawl"])[0] == archives

    # a manifest on S3 (gzipped, as Common Crawl's warc.paths.gz): relative lines are
    # relative to it, and names relative to its prefix; a local manifest may list s3:// URLs
    listing = "# two archives\nsamples/webrecorder+warcio__example.warc.gz\n" \
              f"{samples}/webrecorder+warcio__example-space-in-url.arc\n"
    storage.write_atomic(samples + "/sub/warc.paths.gz", gzip.compress(listing.encode()))
    (tmp_path / "local.paths").write_text(f"{samples}/iipc+jwarc__cc.warc.gz\n")
    archives, _, missing, roots, _ = expand([samples + "/sub/warc.paths.gz", str(tmp_path / "local.paths")])
    assert not missing and roots == [samples + "/sub", str(tmp_path)]
    assert [(a.path, a.name) for a in archives] == [
        (f"{samples}/sub/samples/webrecorder+warcio__example.warc.gz",
         "samples/webrecorder+warcio__example.warc.gz"),
        (f"{samples}/webrecorder+warcio__example-space-in-url.arc",
         "webrecorder+warcio__example-space-in-url.arc"),
        (f"{samples}/iipc+jwarc__cc.warc.gz", "iipc+jwarc__cc.warc.gz")]

    archives = expand([samples + "/iipc+jwarc__cc.warc.gz"], [real_bucket + "/"]).archives
    assert [a.name for a in archives] == ["samples/iipc+jwarc__cc.warc.gz"]

    archives, _, missing, _, _ = expand([samples + "/nothing-here/", "s3://no-such-bucket-x2/crawl/",
                                         real_bucket + "/missing.paths"])
    assert archives == [] and missing == [samples + "/nothing-here/", "s3://no-such-bucket-x2/crawl/",
                                          real_bucket + "/missing.paths"]


def test_cli_cdx_reads_and_writes_s3(real_bucket, capsys):
    url = real_bucket + "/samples/webrecorder+warcio__example.warc.gz"
    assert cli.main(["cdx", url]) == cli.EXIT_OK
    printed = capsys.readouterr().out
    assert printed == "".join(index_file(os.path.join(REAL, "webrecorder+warcio__example.warc.gz")).lines)
    assert cli.main(["cdx", url, "-o", real_bucket + "/cdx"]) == cli.EXIT_OK
    written = storage.read_bytes(real_bucket + "/cdx/webrecorder+warcio__example.cdx.gz")
    assert gzip.decompress(written).decode() == printed


def test_read_range_backs_off_when_botocore_gives_up_early(bucket, monkeypatch):
    """botocore's retry quota, shared by a client's threads, runs dry under many
    SlowDowns: it then fails a request without retrying. storage retries that one;
    a SlowDown botocore retried in full is an error at once."""
    path = storage.join(bucket, "a.txt")
    storage.write_atomic(path, b"hello, world")
    monkeypatch.setattr(retry.READS, "first", 0.001)
    client, calls = s3_storage._client(), []
    get_object = client.get_object

    def slow_down(retries):
        return ClientError({"Error": {"Code": "SlowDown", "Message": "Please reduce your request rate."},
                            "ResponseMetadata": {"HTTPStatusCode": 503, "RetryAttempts": retries}},
                           "GetObject")

    def throttled_get_object(**params):
        calls.append(params)
        if len(calls) <= 2:
            raise slow_down(retries=0)
        return get_object(**params)

    monkeypatch.setattr(client, "get_object", throttled_get_object)
    assert storage.read_range(path, 7, 5) == b"world" and len(calls) == 3

    def exhausted_get_object(**params):
        calls.append(params)
        raise slow_down(retries=s3_storage.S3_RETRIES)

    calls.clear()
    monkeypatch.setattr(client, "get_object", exhausted_get_object)
    with pytest.raises(OSError, match=f"SlowDown.*{path}"):
        storage.read_range(path, 7, 5)
    assert len(calls) == 1
