"""``storage`` on Hadoop file systems (``hdfs://``, ``s3a://``) through ``hadoop fs``, on
real Apache Hadoop (scripts/hadoop-local): ``hdfs://`` on the session's pseudo-distributed
HDFS on 127.0.0.1, ``s3a://`` through Hadoop's S3A connector and the AWS SDK against moto's
S3 server on 127.0.0.1; and scripted ``hadoop`` commands ($HADOOP_BIN) for what a healthy
Hadoop does not do: failures, and the listing formats of other Hadoop versions."""
import os
import shutil
import subprocess
import textwrap

import boto3
import pytest

import hadoop_local
import s3server
from helpers import REAL
from webarchive_indexing import storage
from webarchive_indexing.storage import hadoop as hadoop_storage, s3 as s3_storage
from webarchive_indexing.cdx.indexer import index_file
from webarchive_indexing.build.tasks import index_archive



@pytest.fixture(autouse=True)
def no_boto3(monkeypatch):
    """Hadoop URIs go through `hadoop`, never boto3; no $HADOOP_BIN unless a test sets one."""
    monkeypatch.delenv("HADOOP_BIN", raising=False)

    def no_boto3():
        raise AssertionError("boto3 used for a Hadoop URI")

    monkeypatch.setattr(s3_storage, "_client", no_boto3)


@pytest.fixture(scope="module")
def hadoop_conf(hadoop_cluster, tmp_path_factory):
    """moto's S3 server with a bucket, and a HADOOP_CONF_DIR: the pseudo-cluster's, its HDFS
    the default file system, and S3A sent to that server (path-style requests over plain
    HTTP, fake credentials named in the configuration: no other credential is looked for)."""
    with s3server.running() as endpoint:
        bucket = s3server.new_bucket()[len("s3://"):]
        conf = tmp_path_factory.mktemp("hadoop-conf")
        for site in hadoop_cluster.conf.glob("*-site.xml"):
            shutil.copy(site, conf)
        s3a = {"fs.s3a.endpoint": endpoint, "fs.s3a.endpoint.region": "us-east-1",
               "fs.s3a.path.style.access": "true", "fs.s3a.connection.ssl.enabled": "false",
               "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
               "fs.s3a.access.key": "testing", "fs.s3a.secret.key": "testing"}
        core = (conf / "core-site.xml").read_text()
        (conf / "core-site.xml").write_text(core.replace("</configuration>", "".join(
            f"<property><name>{k}</name><value>{v}</value></property>\n" for k, v in s3a.items())
            + "</configuration>"))
        yield {"dir": conf, "bucket": bucket, "fs": hadoop_cluster.fs}


@pytest.fixture
def hadoop(hadoop_conf, tmp_path, monkeypatch):
    """Real ``hadoop`` first on PATH, recording each call, a client of the pseudo-cluster
    and of S3A on moto; this test's places there, below a directory of its own (the
    cluster and the bucket are shared)."""
    recorder = hadoop_local.recording(tmp_path / "bin", tmp_path / "calls.jsonl")
    monkeypatch.setenv("PATH", f"{recorder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("HADOOP_CONF_DIR", str(hadoop_conf["dir"]))
    root = f"/storage-tests/{tmp_path.name}"
    return {"log": tmp_path / "calls.jsonl", "bin": recorder / "hadoop", "fs": hadoop_conf["fs"],
            "hdfs": f"hdfs://{root}", "namenode": f"{hadoop_conf['fs']}{root}",
            "s3a": f"s3a://{hadoop_conf['bucket']}{root}", "bucket": hadoop_conf["bucket"]}


def fs_calls(hadoop):
    """The ``hadoop fs`` commands run so far, without ``fs``."""
    return [argv[1:] for argv in hadoop_local.calls(hadoop["log"]) if argv[:1] == ["fs"]]


def scripted(tmp_path, monkeypatch, body):
    """$HADOOP_BIN: a shell script (``body``), e.g. one that fails some commands."""
    path = tmp_path / "scripted-hadoop"
    path.write_text("#!/bin/sh\n" + textwrap.dedent(body))
    path.chmod(0o755)
    monkeypatch.setenv("HADOOP_BIN", str(path))
    return path


def stored(hadoop, uri):
    """The bytes at ``uri``, read around ``storage``: the object from S3 with boto3; the
    file from HDFS by the NameNode's address."""
    if uri.startswith("s3a://"):
        bucket, key = uri[len("s3a://"):].split("/", 1)
        return boto3.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read()
    path = "/" + uri.split("://", 1)[1].partition("/")[2]
    return subprocess.run([str(hadoop_local.HADOOP), "fs", "-cat", hadoop["fs"] + path],
                          check=True, capture_output=True).stdout


@pytest.mark.cluster
# the default file system's (hdfs:///) and S3A's; the NameNode's by its address below
@pytest.mark.parametrize("kind", ["hdfs", "s3a"])
def test_round_trip(hadoop, kind, tmp_path):
    base = hadoop[kind] + "/data"
    path = storage.join(base, "a", "b.txt")
    assert storage.backend_name(path) == "hadoop"
    assert storage.abspath(path) == path
    assert not storage.exists(path)
    storage.write_atomic(path, b"hello, world")  # a/ did not exist: made on the way
    assert stored(hadoop, path) == b"hello, world"
    assert storage.exists(path) and storage.exists(storage.join(base, "a"))
    assert storage.read_bytes(path) == b"hello, world"
    assert storage.size(path) == 12
    assert storage.read_range(path, 7, 5) == b"world"
    assert storage.read_range(path, 7, 50) == b"world"
    assert storage.read_range(path, 12, 5) == storage.read_range(path, 20, 5) == b""
    assert storage.read_range(path, 0, 0) == b""
    with storage.open_read(path) as fh:
        assert fh.peek(5)[:5] == b"hello" and not fh.seekable()
        assert fh.read() == b"hello, world"

    storage.write_atomic(path, b"replaced")
    assert storage.read_bytes(path) == b"replaced"
    storage.write_atomic(storage.join(base, "empty"), b"")
    assert storage.read_bytes(storage.join(base, "empty")) == b""
    with storage.open_read(storage.join(base, "empty")) as fh:
        assert fh.read() == b""

    storage.makedirs(storage.join(base, "made", "deep"))
    assert storage.exists(storage.join(base, "made", "deep"))
    storage.write_atomic(storage.join(base, "a", "c", "d.txt"), b"d")
    # files only (no directories, no temporary names left), sorted, named as the base names them
    assert list(storage.list_files(base)) == [storage.join(base, "a", "b.txt"),
                                              storage.join(base, "a", "c", "d.txt"),
                                              storage.join(base, "empty")]
    assert list(storage.list_files(base + "/")) == list(storage.list_files(base))
    assert list(storage.list_files(path)) == [path]
    assert list(storage.list_files(storage.join(base, "nothing-here"))) == []

    storage.download(path, str(tmp_path / "got" / "b.txt"))
    assert (tmp_path / "got" / "b.txt").read_bytes() == b"replaced"

    storage.makedirs(storage.join(base, "cluster", "build-00001"))
    assert storage.exists(storage.join(base, "cluster", "build-00001"))

    storage.remove(path)
    storage.remove(path)  # already gone: fine, as for a local file
    assert not storage.exists(path)
    storage.remove_tree(storage.join(base, "a"))
    storage.remove_tree(storage.join(base, "a"))
    assert not storage.exists(storage.join(base, "a", "c", "d.txt"))
    assert list(storage.list_files(base)) == [storage.join(base, "empty")]
    # every one of them went through `hadoop fs`, s3a:// too (boto3 would have failed)
    assert all(argv[-1].startswith(base.split("://")[0]) for argv in fs_calls(hadoop)
               if argv[0] in ("-test", "-cat", "-stat", "-mkdir", "-ls"))


@pytest.mark.cluster
def test_uris_naming_the_namenode(hadoop):
    """hdfs://host:port/... (the default file system's, named): what depends on the form of
    the URI (hadoop prints its own form back) round trips; the rest is test_round_trip's."""
    base = hadoop["namenode"] + "/data"
    path = storage.join(base, "a", "b.txt")
    assert not storage.exists(path)
    storage.write_atomic(path, b"hello, world")
    assert stored(hadoop, path) == b"hello, world" == storage.read_bytes(path)
    assert storage.size(path) == 12 and storage.read_range(path, 7, 5) == b"world"
    storage.write_atomic(storage.join(base, "c.txt"), b"c")
    assert list(storage.list_files(base)) == [path, storage.join(base, "c.txt")]
    assert list(storage.list_files(base + "/")) == list(storage.list_files(base))
    storage.remove_tree(storage.join(base, "a"))
    assert list(storage.list_files(base)) == [storage.join(base, "c.txt")]


@pytest.mark.cluster
def test_missing_files(hadoop, tmp_path):
    missing = hadoop["hdfs"] + "/data/missing.txt"
    for read in (storage.read_bytes, storage.size, storage.open_read,
                 lambda p: storage.read_range(p, 0, 10),
                 lambda p: storage.download(p, str(tmp_path / "x"))):
        with pytest.raises(FileNotFoundError, match=f"No such file or directory.*{missing}"):
            read(missing)
    assert not (tmp_path / "x").exists()
    storage.remove(missing)
    storage.remove_tree(hadoop["hdfs"] + "/data/missing-dir")


@pytest.mark.cluster
def test_open_atomic_publishes_only_a_complete_file(hadoop):
    out = hadoop["hdfs"] + "/out"
    path = out + "/shard.gz"
    with storage.open_atomic(path) as fh:
        fh.write(b"first half ")
        assert not storage.exists(path)
        fh.write(b"second half")
    assert storage.read_bytes(path) == b"first half second half"
    # one -put onto the target (its directory made when -put found none): FsShell uploads
    # beside it and renames
    [put, mkdir, put_again] = [argv for argv in fs_calls(hadoop) if argv[0] not in ("-test", "-cat")]
    assert put[:2] == ["-put", "-f"] and put[-1] == path and put_again == put
    assert mkdir == ["-mkdir", "-p", out]

    with pytest.raises(RuntimeError):
        with storage.open_atomic(path) as fh:
            fh.write(b"never published")
            raise RuntimeError("the task died")
    with pytest.raises(RuntimeError):
        with storage.open_atomic(out + "/new.gz") as fh:
            fh.write(b"never published")
            raise RuntimeError("the task died")
    assert storage.read_bytes(path) == b"first half second half"
    assert list(storage.list_files(out)) == [path]

    big = os.urandom(3 * storage.READ_BUFFER + 123)
    storage.write_atomic(path, big)
    assert storage.size(path) == len(big) and storage.read_bytes(path) == big
    with storage.open_read(path) as fh:
        assert fh.read(10) == big[:10]  # and closing early stops `hadoop fs -cat`
    assert storage.read_range(path, storage.READ_BUFFER + 5, 7) == big[storage.READ_BUFFER + 5:][:7]


@pytest.mark.cluster
def test_a_failed_upload_leaves_no_target_and_no_temporary_file(hadoop):
    """A real failure half-way: HDFS refuses the file's first block (a space quota), after
    FsShell made the file it uploads into."""
    out = hadoop["hdfs"] + "/out"
    storage.write_atomic(out + "/kept.cdx.gz", b"old")
    subprocess.run([str(hadoop["bin"]), "org.apache.hadoop.hdfs.tools.DFSAdmin",
                    "-setSpaceQuota", "1k", "/" + out.split(":///", 1)[1]],
                   check=True, capture_output=True)
    for name in ("a.cdx.gz", "kept.cdx.gz"):
        with pytest.raises(OSError, match="-put exited with status 1: .*quota") as raised:
            storage.write_atomic(f"{out}/{name}", b"data")
        assert raised.value.filename == f"{out}/{name}"
        assert not isinstance(raised.value, FileNotFoundError)
    # neither the new file nor what FsShell uploaded into; the old file as it was
    assert list(storage.list_files(out)) == [out + "/kept.cdx.gz"]
    assert storage.read_bytes(out + "/kept.cdx.gz") == b"old"


@pytest.mark.cluster
def test_exists_is_false_only_for_an_absent_path(hadoop, tmp_path, monkeypatch):
    assert storage.exists("hdfs:///") and not storage.exists("hdfs:///absent")
    assert not storage.exists(f"s3a://{hadoop['bucket']}/absent")
    # -test prints nothing for an absent path; log lines around do not make it an error
    scripted(tmp_path, monkeypatch, """\
        echo "WARN util.NativeCodeLoader: Unable to load native-hadoop library" >&2; exit 1
        """)
    assert not storage.exists("hdfs:///absent")
    # but it exits 1 after an error it printed, too
    scripted(tmp_path, monkeypatch, """\
        echo "test: Permission denied: user=alice, access=EXECUTE, inode=/secret" >&2; exit 1
        """)
    with pytest.raises(PermissionError, match="test: Permission denied.*hdfs:///secret/x"):
        storage.exists("hdfs:///secret/x")
    scripted(tmp_path, monkeypatch, """\
        echo "-test: java.net.UnknownHostException: namenode" >&2; exit 255
        """)
    with pytest.raises(OSError, match="exited with status 255.*UnknownHostException") as raised:
        storage.exists("hdfs://namenode/x")
    assert type(raised.value) is OSError


def test_without_hadoop_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(hadoop_storage.HadoopNotFound, match="set HADOOP_BIN or put hadoop on PATH.*hdfs:///x"):
        storage.exists("hdfs:///x")
    monkeypatch.setenv("HADOOP_BIN", str(tmp_path / "no-such-hadoop"))
    with pytest.raises(hadoop_storage.HadoopNotFound, match="cannot run .*no-such-hadoop"):
        storage.open_read("hdfs:///x")
    # not "absent": callers that treat FileNotFoundError so must not take it for that
    assert not issubclass(hadoop_storage.HadoopNotFound, FileNotFoundError)


def test_a_stream_cut_short_raises(tmp_path, monkeypatch):
    scripted(tmp_path, monkeypatch, """\
        head -c 100000 /dev/zero
        echo "cat: Connection reset by peer" >&2; exit 1
        """)
    with storage.open_read("hdfs:///big") as fh:
        with pytest.raises(OSError, match="-cat exited with status 1: cat: Connection reset.*hdfs:///big"):
            fh.read()
    with pytest.raises(OSError, match="Connection reset"):
        storage.read_bytes("hdfs:///big")


def test_list_files_reads_what_real_hadoop_prints(tmp_path, monkeypatch):
    """Fully qualified paths from HDFS, S3A's lines without owner and group, log lines,
    spaces in names: each file named the way the caller named the directory."""
    (tmp_path / "hdfs.ls").write_text(textwrap.dedent("""\
        drwxr-xr-x   - hdfs supergroup          0 2024-05-01 10:00 hdfs://nn.example:8020/out/cdx
        -rw-r--r--   3 hdfs supergroup       1234 2024-05-01 10:00 hdfs://nn.example:8020/out/cdx/a b.cdx.gz
        -rw-r--r--+  3 hdfs supergroup          0 2024-05-01 10:01 hdfs://nn.example:8020/out/archives.txt
        """))
    (tmp_path / "s3a.ls").write_text(textwrap.dedent("""\
        drwxrwxrwx   -          0 2024-05-01 10:02 s3a://bucket/out/seg
        -rw-rw-rw-   1        512 2024-05-01 10:02 s3a://bucket/out/seg/x.warc.gz
        """))
    scripted(tmp_path, monkeypatch, f"""\
        echo "WARN util.NativeCodeLoader: Unable to load native-hadoop library" >&2
        cat {tmp_path}/"${{4%%:*}}.ls"
        """)
    assert list(storage.list_files("hdfs:///out/")) == [
        "hdfs:///out/archives.txt", "hdfs:///out/cdx/a b.cdx.gz"]
    assert list(storage.list_files("s3a://bucket/out")) == ["s3a://bucket/out/seg/x.warc.gz"]


@pytest.mark.cluster
def test_index_archives_on_hdfs(hadoop, tmp_path):
    """What a task does: read an archive streamed from HDFS, publish its CDX there."""
    crawl, cdx = hadoop["hdfs"] + "/crawl", hadoop["hdfs"] + "/out/cdx"
    names = ["iipc+jwarc__cc.warc.gz", "webrecorder+warcio__example-trunc.warc",
             "webrecorder+warcio__bad.arc"]
    for name in names:
        storage.write_atomic(f"{crawl}/{name}", open(os.path.join(REAL, name), "rb").read())
        local, remote = index_file(os.path.join(REAL, name), name), index_file(f"{crawl}/{name}", name)
        assert remote.lines == local.lines and remote.records == local.records
        assert [e.as_dict()["reason"] for e in remote.errors] == [e.as_dict()["reason"] for e in local.errors]
    status = index_archive(f"{crawl}/{names[0]}", names[0], cdx)
    expected = index_archive(os.path.join(REAL, names[0]), names[0], str(tmp_path / "cdx"))
    published = tmp_path / "cdx" / os.path.basename(status.cdx)
    assert storage.read_bytes(status.cdx) == published.read_bytes()
    assert status.records == expected.records and status.bytes == expected.bytes
    # a rerun finds it and skips it
    assert index_archive(f"{crawl}/{names[0]}", names[0], cdx).skipped


@pytest.mark.cluster
def test_build_to_hdfs_equals_a_local_build(hadoop, tmp_path, capsys):
    """`build` with archives and output on HDFS (the inline runner, real HDFS):
    the same cluster as a local build, published with its index last, and queryable."""
    from webarchive_indexing import cli
    from webarchive_indexing.commands.corpus import make_corpus
    hdfs = hadoop["hdfs"]
    warcs = make_corpus(tmp_path / "warcs", files=2, captures=40, seed=31)
    for warc in warcs:
        storage.write_atomic(f"{hdfs}/in/{os.path.basename(warc)}", open(warc, "rb").read())
    args = ["--shards", "2", "--lines-per-block", "9", "--runner", "inline", "--no-progress"]
    assert cli.main(["build", f"{hdfs}/in/", "-o", f"{hdfs}/out", *args]) == cli.EXIT_OK
    assert cli.main(["build", str(tmp_path / "warcs"), "-o", str(tmp_path / "local"), *args]) == 0
    local_idx = (tmp_path / "local" / "cluster" / "cluster.idx").read_bytes().splitlines()
    idx = storage.read_bytes(f"{hdfs}/out/cluster/cluster.idx").splitlines()
    # the same layout, the same bytes: the shard column names the build's directory
    assert idx == local_idx and idx[0].split(b"\t")[1] == b"build-00001/cdx-00000.gz"
    for name in ("cluster.loc", "cluster.root", *(f"build-00001/{n}-0000{i}{e}" for i in (0, 1)
                                                  for n, e in (("cdx", ".gz"), ("part", "")))):
        local = (tmp_path / "local" / "cluster" / name).read_bytes()
        assert storage.read_bytes(f"{hdfs}/out/cluster/{name}") == local, name
    capsys.readouterr()
    assert cli.main(["query", f"{hdfs}/out", "*.com", "--limit", "5"]) == 0
    hits = capsys.readouterr().out
    assert cli.main(["query", str(tmp_path / "local"), "*.com", "--limit", "5"]) == 0
    assert hits == capsys.readouterr().out and hits.count("\n") == 5
