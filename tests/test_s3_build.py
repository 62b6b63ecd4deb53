"""``build`` and ``query`` with archives and output on S3 (moto's server on 127.0.0.1),
compared with a local build of the same archives."""
import gzip
import io
import json
import logging
import os
import pathlib

import pytest
from warcio.warcwriter import WARCWriter

import s3server
from helpers import REAL, pywb_lookup
from webarchive_indexing.cdx import cdxmeta
from webarchive_indexing import cli, storage
from webarchive_indexing.jobs import zip_cluster
from webarchive_indexing.commands.corpus import make_corpus
from webarchive_indexing.commands.build import BuildFailed, build
from webarchive_indexing.options import BuildOptions
from webarchive_indexing.build.publish import BUILD_PREFIX
from webarchive_indexing.zipnum.reader import Cluster, open_cluster


@pytest.fixture(scope="module")
def s3():
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    with s3server.running() as endpoint:
        yield endpoint


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus")
    make_corpus(root / "seg-a", files=2, captures=80, seed=31)
    make_corpus(root / "seg-b", files=1, captures=80, seed=32, fmt="arc")
    for seg in ("seg-a", "seg-b"):
        for name in os.listdir(root / seg):
            if name.endswith(".jsonl"):
                os.remove(root / seg / name)
    return root


@pytest.fixture(scope="module")
def warcs(s3, corpus):
    """The corpus in a bucket, under crawl/."""
    bucket = s3server.new_bucket()
    s3server.upload_tree(corpus, bucket + "/crawl")
    return bucket + "/crawl/"


def files(directory):
    """{relative path: bytes} of every file under a local directory."""
    return {str(path.relative_to(directory)): path.read_bytes()
            for path in sorted(pathlib.Path(directory).rglob("*")) if path.is_file()}


def test_s3_build_equals_local_build(tmp_path, corpus, warcs, capsys):
    local = tmp_path / "local"
    build([str(corpus)], str(local), BuildOptions(shards=3, lines_per_block=40, runner="inline"))
    out = s3server.new_bucket() + "/index/out"
    assert cli.main(["build", warcs, "-o", out, "--shards", "3", "--lines-per-block", "40",
                     "--runner", "local", "--no-progress"]) == cli.EXIT_OK
    assert f"webarchive-index query {out}" in capsys.readouterr().err

    got = tmp_path / "downloaded"
    s3server.download_tree(out, got)
    expected = files(local)
    built = files(got)
    # the same per-archive CDX files (names relative to the prefix) and split points
    same = sorted(n for n in expected if not n.startswith("cluster") and n != "archives.txt"
                  and not n.endswith(cdxmeta.SUFFIX))
    assert same and all(built[n] == expected[n] for n in same), same
    # what each CDX file was made from: a local file's size and mtime, an S3 object's size
    # and ETag
    metas = [n for n in expected if n.endswith(cdxmeta.SUFFIX)]
    assert len(metas) == len([n for n in same if n.endswith(".cdx.gz")])
    for name in metas:
        local_meta, s3_meta = json.loads(expected[name]), json.loads(built[name])
        source, local_source = s3_meta.pop("source"), local_meta.pop("source")
        assert source["size"] == local_source["size"] and set(source) == {"size", "etag"}
        # the local engine keeps a sample of each CDX file for its split points, mrjob none
        assert s3_meta.pop("sample_size") > 0 and len(s3_meta.pop("sample")) > 0
        assert local_meta.pop("sample_size") == 0 and local_meta.pop("sample") == []
        assert s3_meta == local_meta
    assert built["archives.txt"] == expected["archives.txt"].replace(f"{corpus}/".encode(), warcs.encode())
    # the cluster: the same bytes (the same layout on S3 as on a local disk), cluster.loc
    # too: its locations are relative to it
    record = "cluster/build-00001/contents.json"
    cluster = sorted(n for n in expected if n.startswith("cluster/") and n != record)
    assert "cluster/build-00001/cdx-00002.gz" in cluster
    assert all(built[n] == expected[n] for n in cluster), cluster
    # what the cluster holds: the same archives, their S3 paths and versions
    record, local_record = json.loads(built[record]), json.loads(expected[record])
    for entry in local_record["archives"].values():
        entry["path"] = entry["path"].replace(f"{corpus}/", warcs)
        entry["source"] = storage.version(entry["path"])
    assert record == local_record and len(record["archives"]) == 3
    assert len(built) == len(expected)

    # the downloaded cluster, read by pywb
    lines = sorted(line for line in gzip.decompress(b"".join(
        expected[f"cluster/build-00001/cdx-{i:05d}.gz"] for i in range(3))).splitlines(True))
    queries = queries_for(lines)
    for url, match_type in queries:
        assert (pywb_lookup(got / "cluster" / "cluster.idx", url, match_type)
                == pywb_lookup(local / "cluster" / "cluster.idx", url, match_type)), url

    # and queried in place: index downloaded, shards read with ranged GETs
    for url, match_type in queries:
        assert cli.main(["query", str(local), url, "--match-type", match_type]) == cli.EXIT_OK
        from_local = capsys.readouterr().out
        assert cli.main(["query", out, url, "--match-type", match_type]) == cli.EXIT_OK
        assert capsys.readouterr().out == from_local, url
    assert cli.main(["query", str(local), "*.com"]) == cli.EXIT_OK
    from_local = capsys.readouterr().out
    assert from_local.count("\n") == sum(1 for line in lines if line.startswith(b"com,")) > 0
    for location in (out + "/cluster", out + "/cluster/cluster.idx"):
        assert cli.main(["query", location, "*.com"]) == cli.EXIT_OK
        assert capsys.readouterr().out == from_local, location
    assert cli.main(["query", out + "/nothing", "example.com"]) == cli.EXIT_FAILED
    assert (f"no ZipNum index at {out}/nothing/cluster/cluster.idx or {out}/nothing/cluster.idx"
            in capsys.readouterr().err)


def queries_for(lines):
    """Exact, host, domain and prefix queries for some of the URLs of ``lines``."""
    keys = sorted({line.split(b" ", 1)[0].decode() for line in lines})
    queries = [("no-such-host.example", "exact"), ("com", "domain")]
    for key in keys[::max(1, len(keys) // 6)]:
        host, path = key.split(")", 1)
        name = ".".join(reversed(host.split(",")))
        queries += [(name + path, "exact"), (name, "host"), (name, "domain"), (name + "/", "prefix")]
    return queries


def cluster_objects(out):
    return s3server.objects(out + "/cluster")


def test_s3_update_and_removal_equal_local_full_builds(tmp_path, corpus, warcs):
    """An update of a cluster on S3 (the record found beside the published build's
    shards), then a removal: the shards of full local builds with the same split points,
    published in a build directory of their own as builds are."""
    out = s3server.new_bucket() + "/out"
    options = dict(progress=False, workers=2)
    build([warcs + "seg-a/"], out, BuildOptions(shards=3, lines_per_block=20, **options))
    splits_file = str(tmp_path / "splits.txt")
    storage.download(out + "/splits.txt", splits_file)
    update = build([warcs + "seg-b/"], out, BuildOptions(update=True, **options))
    assert (update.update.added, update.shards) == (1, 3)
    for name, inputs, removal, published_build in (
            ("both", ["seg-a", "seg-b"], None, "build-00002"),
            ("seg-b", ["seg-b"], "CORPUS-031-*", "build-00003")):
        if removal:
            build([], out, BuildOptions(update=True, remove=[removal], **options))
        local = tmp_path / name
        build([str(corpus / seg) for seg in inputs], str(local),
              BuildOptions(splits=splits_file, runner="inline", lines_per_block=20))
        published = cluster_objects(out)
        assert published["cluster.idx"].split(b"\t")[1].split(b"/")[0].decode() == published_build
        assert published["cluster.idx"].replace(published_build.encode(), b"build-00001") == \
            (local / "cluster" / "cluster.idx").read_bytes()
        for i in range(3):
            for shard in (f"cdx-{i:05d}.gz", f"part-{i:05d}"):
                assert published[f"{published_build}/{shard}"] == \
                    (local / "cluster" / "build-00001" / shard).read_bytes()
    assert not [name for name in storage.list_files(out + "/cdx") if "CORPUS-031" in name]


def lookup(idx, loc, tmp_path, out):
    """Every line of a cluster whose index and .loc are given as bytes, its shards on S3
    where the .loc says, relative to ``out/cluster/`` (copied beside the index, as a reader
    reads only there)."""
    for line in loc.decode().splitlines():
        shard, *locations = line.split("\t")
        # the first location that is there, as pywb reads a .loc (those of a failed
        # build are gone)
        for location in filter(storage.exists, (f"{out}/cluster/{name}" for name in locations)):
            os.makedirs(os.path.dirname(tmp_path / shard), exist_ok=True)
            (tmp_path / shard).write_bytes(storage.read_bytes(location))
            break
    (tmp_path / "cluster.idx").write_bytes(idx)
    return list(Cluster(tmp_path / "cluster.idx").lookup_range(b"", b"~"))


def test_failed_s3_builds_leave_the_published_cluster(tmp_path, warcs, monkeypatch):
    out = s3server.new_bucket() + "/out"
    build([warcs], out, BuildOptions(shards=2, lines_per_block=50, runner="inline"))
    published = cluster_objects(out)
    # idx, loc, root; a shard and a part file each; what it holds
    assert len(published) == 3 + 2 * 2 + 1
    lines = lookup(published["cluster.idx"], published["cluster.loc"], tmp_path, out)
    assert len(lines) > 200

    # bad input, --on-error fail: nothing of the cluster is touched
    bad = warcs + "seg-c/bad.warc.gz"
    storage.write_atomic(bad, open(f"{REAL}/webrecorder+warcio__example-bad-non-chunked.warc.gz", "rb").read())
    try:
        with pytest.raises(BuildFailed, match="1 problems in the input; no cluster was built"):
            build([warcs], out, BuildOptions(shards=2, runner="inline"))
    finally:
        storage.remove(bad)
    assert cluster_objects(out) == published
    assert "bad.warc.gz" in storage.read_bytes(out + "/errors.json").decode()

    # a shard that fails to upload: the new build's prefix goes, the old cluster stays
    def failing_shard(shard, lines, cluster_dir, *rest):
        if shard == 1:
            raise OSError("upload failed")
        return write_shard(shard, lines, cluster_dir, *rest)

    write_shard = zip_cluster.write_shard
    monkeypatch.setattr(zip_cluster, "write_shard", failing_shard)
    with pytest.raises(Exception, match="upload failed"):
        build([warcs], out, BuildOptions(shards=2, lines_per_block=10, runner="inline"))
    monkeypatch.undo()
    assert cluster_objects(out) == published

    # cluster.idx fails to upload after the new cluster.loc did: that .loc still
    # locates the published index's shards
    def failing_idx(path, data):
        if path.endswith("cluster.idx"):
            raise OSError("upload failed")
        write_atomic(path, data)

    write_atomic = storage.write_atomic
    monkeypatch.setattr(storage, "write_atomic", failing_idx)
    with pytest.raises(OSError, match="upload failed"):
        build([warcs], out, BuildOptions(shards=3, lines_per_block=10, runner="inline"))
    monkeypatch.undo()
    now = cluster_objects(out)
    assert now.pop("cluster.loc") != published["cluster.loc"]
    # the new build's root came before its index: readers find it does not fit and
    # search the published index without it
    assert now.pop("cluster.root") != published["cluster.root"]
    assert now == {n: data for n, data in published.items() if n not in ("cluster.loc", "cluster.root")}
    assert lookup(published["cluster.idx"], storage.read_bytes(out + "/cluster/cluster.loc"),
                  tmp_path, out) == lines
    assert list(open_cluster(out).lookup_range(b"", b"~")) == lines


def test_s3_rebuilds_keep_the_replaced_build_and_delete_older_ones(tmp_path, warcs):
    out = s3server.new_bucket() + "/out"
    build([warcs], out, BuildOptions(shards=2, lines_per_block=50, runner="inline"))
    storage.write_atomic(f"{out}/cluster/{BUILD_PREFIX}00099/cdx-00000.gz", b"")
    builds, indexes = [_builds(out) - {BUILD_PREFIX + "00099"}], [cluster_objects(out)]
    for per_block in (20, 30):
        build([warcs], out, BuildOptions(shards=2, lines_per_block=per_block, runner="inline"))
        builds.append(_builds(out) - set().union(*builds))
        indexes.append(cluster_objects(out))
    assert all(len(b) == 1 for b in builds)
    # the last two builds are left, the abandoned one and the first went
    assert _builds(out) == builds[1] | builds[2]
    [previous], [current] = builds[1], builds[2]
    idx, loc = indexes[2]["cluster.idx"], indexes[2]["cluster.loc"]
    assert {line.split(b"\t")[1].split(b"/")[0].decode() for line in idx.splitlines()} == {current}
    # cluster.loc: the current build's shards, then the previous one's
    assert [line.split("\t")[0] for line in loc.decode().splitlines()] == [
        f"{build}/cdx-{i:05d}.gz" for build in (current, previous) for i in range(2)]
    # a reader that pairs the previous index with the new .loc reads the same lines
    lines = lookup(idx, loc, tmp_path, out)
    assert lookup(indexes[1]["cluster.idx"], loc, tmp_path, out) == lines
    assert lines == sorted(lines) and len(lines) > 200

    # ``finalize`` (as after a Hadoop run) checks and indexes the shards where they are
    shards = f"{out}/cluster/{current}"
    assert cli.main(["finalize", shards, "--shards", "2"]) == cli.EXIT_OK
    assert storage.read_bytes(shards + "/cluster.idx") == idx.replace(f"{current}/".encode(), b"")
    assert storage.read_bytes(shards + "/cluster.loc").decode().splitlines() == [
        f"cdx-{i:05d}.gz\tcdx-{i:05d}.gz" for i in range(2)]


def _builds(out):
    """The build prefixes under ``out/cluster/``."""
    relative = (path[len(out + "/cluster/"):] for path in storage.list_files(out + "/cluster"))
    return {name.split("/")[0] for name in relative if "/" in name}


def test_s3_build_of_archives_without_lines_publishes_nothing(tmp_path, s3):
    # an archive of nothing but a warcinfo record: no CDX line, nothing worth publishing
    data = io.BytesIO()
    writer = WARCWriter(data, gzip=True)
    writer.write_record(writer.create_warcinfo_record("info.warc.gz", {"software": "test"}))
    bucket = s3server.new_bucket()
    storage.write_atomic(bucket + "/warcs/info.warc.gz", data.getvalue())
    with pytest.raises(BuildFailed, match="no input gave a CDX line"):
        build([bucket + "/warcs/"], bucket + "/out", BuildOptions(shards=2, runner="inline"))
    assert not list(storage.list_files(bucket + "/out/cluster"))
    # a published index that names no shard (finalize of empty shards makes one) is
    # replaced by the first build
    storage.write_atomic(bucket + "/out/cluster/cluster.idx", b"")
    storage.write_atomic(bucket + "/warcs/a.warc.gz", open(f"{REAL}/webrecorder+warcio__example.warc.gz", "rb").read())
    build([bucket + "/warcs/"], bucket + "/out", BuildOptions(shards=2, runner="inline"))
    assert _builds(bucket + "/out") == {"build-00001"}


def test_s3_archives_changed_in_place_are_indexed_again(s3, tmp_path, corpus):
    """16.6 on S3: a CDX file records its archive's size and ETag, so an archive replaced
    by another of the same size is indexed again by a rebuild with --skip-existing, and
    one left alone (or uploaded again as it was) is not."""
    bucket = s3server.new_bucket()
    s3server.upload_tree(corpus / "seg-a", bucket + "/crawl")
    out = bucket + "/out"
    options = BuildOptions(shards=2, progress=False, workers=2)
    first = build([bucket + "/crawl/"], out, options)
    assert first.archives == 2 and not first.archives_skipped
    name = sorted(n for n in os.listdir(corpus / "seg-a") if n.endswith(".warc.gz"))[0]
    key = f"{bucket}/crawl/{name}"
    original = (corpus / "seg-a" / name).read_bytes()
    # another MTIME in the header of its first gzip member: the same size, readable alike
    changed = original[:4] + bytes(4 * [0x5a]) + original[8:]
    assert len(changed) == len(original) and changed != original
    # the same bytes uploaded again: the same ETag, nothing indexed again
    for data, skipped, again in ((original, 2, 0), (changed, 1, 1), (changed, 2, 0)):
        with storage.open_atomic(key) as fh:
            fh.write(data)
        summary = build([bucket + "/crawl/"], out, options)
        assert (summary.archives_skipped, summary.archives_reindexed) == (skipped, again)
        meta = cdxmeta.read(f"{out}/cdx/{name.replace('.warc.gz', '.cdx.gz')}")
        assert meta["source"] == storage.version(key)
        assert set(meta["source"]) == {"size", "etag"}
