"""The local engine (webarchive_indexing.localengine) against mrjob's inline runner and Spark:
the same clusters, split points and CDX files from the same inputs."""
import filecmp
import os
import shutil

import pytest

from webarchive_indexing import cdxmeta
from webarchive_indexing.localengine import LocalSteps, archive_sample_size
from webarchive_indexing.pipeline import build
from webarchive_indexing.spark import build_with_spark

from test_spark import corpus  # noqa: F401  (a fixture)

SAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "samples")


@pytest.fixture(scope="module")
def both(corpus, tmp_path_factory):
    """test_spark's corpus (2 WARC files and 1 ARC file, 362 CDX lines) and pywb's samples."""
    root = tmp_path_factory.mktemp("both")
    shutil.copytree(corpus, root / "corpus")
    shutil.copytree(SAMPLES, root / "samples")
    return root


def assert_same_cluster(a, b):
    names = sorted(os.listdir(a / "cluster"))
    assert names == sorted(os.listdir(b / "cluster"))
    same = [n for n in names if n != "cluster.loc"]
    _, mismatch, errors = filecmp.cmpfiles(a / "cluster", b / "cluster", same, shallow=False)
    assert mismatch == [] and errors == []
    for name in ("splits.txt", "splits.seq", "partitions.seq", "archives.txt"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    cdx_files = sorted(os.path.relpath(os.path.join(r, n), a / "cdx")
                       for r, _, files in os.walk(a / "cdx") for n in files if n.endswith(".cdx.gz"))
    _, mismatch, errors = filecmp.cmpfiles(a / "cdx", b / "cdx", cdx_files, shallow=False)
    assert cdx_files and mismatch == [] and errors == []


@pytest.mark.parametrize("shards,per_block,fmt,workers", [
    (1, 3000, "cdxj", 2), (4, 40, "cdx11", 2), (5, 1, "cdxj", 16), (30, 7, "cdxj", 3)])
def test_local_engine_equals_the_inline_runner(tmp_path, both, shards, per_block, fmt, workers):
    common = dict(shards=shards, lines_per_block=per_block, cdx_format=fmt)
    mr = build([str(both)], str(tmp_path / "mrjob"), runner="inline", **common)
    local = build([str(both)], str(tmp_path / "local"), engine=LocalSteps(shards, workers), **common)
    assert local.published and local.lines == mr.lines > 362 and local.shards == shards
    assert (local.blocks, local.cluster_bytes, local.records) == (mr.blocks, mr.cluster_bytes, mr.records)
    assert_same_cluster(tmp_path / "mrjob", tmp_path / "local")


def test_local_engine_equals_spark(tmp_path, both, spark):
    sp = build_with_spark(spark, [str(both)], str(tmp_path / "spark"), shards=3,
                          lines_per_block=25, cdx_bytes_per_task=1)
    local = build([str(both)], str(tmp_path / "local"), shards=3, lines_per_block=25,
                  engine=LocalSteps(3, 2))
    assert local.lines == sp.lines
    assert_same_cluster(tmp_path / "spark", tmp_path / "local")


def test_reused_cdx_files_with_small_or_no_samples_give_the_same_split_points(tmp_path, both):
    out = tmp_path / "local"
    # indexed for 1 shard: each archive keeps a sample too small for 20 shards
    build([str(both)], str(out), shards=1, engine=LocalSteps(1, 2))
    metas = [cdxmeta.read(str(p)) for p in out.rglob("*.cdx.gz")]
    assert {m["sample_size"] for m in metas} == {archive_sample_size(1, len(metas))}
    # and one made by mrjob, without a sample
    first = sorted(out.rglob("*.cdx.gz"))[0]
    cdxmeta.write(str(first), dict(cdxmeta.read(str(first)), sample_size=0, sample=[]))
    local = build([str(both)], str(out), shards=20, lines_per_block=10, engine=LocalSteps(20, 2))
    assert local.archives_skipped == local.archives
    build([str(both)], str(tmp_path / "mrjob"), shards=20, lines_per_block=10, runner="inline")
    assert_same_cluster(tmp_path / "mrjob", out)


def test_archive_sample_size():
    assert archive_sample_size(1, 1) == 100
    assert archive_sample_size(300, 80000) == 4 + 64
    assert archive_sample_size(4, 80) == 84
