"""Split points from a splits.txt, a splits.seq or an existing cluster (build --splits)."""
import pytest

from webarchive_indexing.cdx import splits
from webarchive_indexing.build import tasks
from webarchive_indexing.zipnum import layout
from webarchive_indexing.build.splitsource import SplitsError, load_splits

POINTS = [f"com,example)/{i:03d} 2024" for i in range(1, 10)]


@pytest.fixture
def written(tmp_path):
    tasks.write_splits(POINTS, str(tmp_path))
    return tmp_path


@pytest.mark.parametrize("name", ["splits.txt", "splits.seq"])
def test_splits_files_as_they_are_or_fewer_shards_evenly(written, name):
    path = str(written / name)
    assert load_splits(path) == load_splits(path, 10) == POINTS
    assert load_splits(path, 4) == splits.choose_splits(POINTS, 4) == [POINTS[2], POINTS[4], POINTS[6]]
    assert load_splits(path, 1) == []
    with pytest.raises(SplitsError, match="9 split points: they make at most 10 shards, not 11"):
        load_splits(path, 11)


def test_bad_splits_files_are_named(tmp_path):
    (tmp_path / "bad.txt").write_text("b\na\n")
    with pytest.raises(SplitsError, match=r"bad.txt: line 2: split 'a' is not greater"):
        load_splits(str(tmp_path / "bad.txt"))
    with pytest.raises(SplitsError, match="no such file"):
        load_splits(str(tmp_path / "none.txt"))
    with pytest.raises(SplitsError, match="a directory without a cluster.idx"):
        load_splits(str(tmp_path))
    (tmp_path / "cut.seq").write_bytes((tmp_path / "bad.txt").read_bytes() and b"SEQ\x06\x00")
    with pytest.raises(SplitsError, match="cut.seq"):
        load_splits(str(tmp_path / "cut.seq"))


@pytest.fixture
def cluster(tmp_path):
    lines = [b"com,example)/%03d 2024%010d x\n" % (i // 3, i) for i in range(300)]
    out = tmp_path / "out" / "cluster"
    layout.write_cluster(lines, str(out), [b"com,example)/050", b"com,example)/070"], 10)
    return out


def test_a_cluster_gives_its_block_keys_evenly(cluster):
    keys = [line.split("\t")[0] for line in (cluster / "cluster.idx").read_text().splitlines()]
    assert len(keys) == 30
    for path in (cluster, cluster / "cluster.idx", cluster.parent):
        assert load_splits(str(path)) == [keys[10], keys[20]]   # its own 3 shards
        assert load_splits(str(path), 5) == [keys[i * 30 // 5] for i in range(1, 5)]
    assert load_splits(str(cluster), 30) == keys[1:]
    with pytest.raises(SplitsError, match="30 distinct block keys: it can give at most 30 shards, not 31"):
        load_splits(str(cluster), 31)
    # a key goes before every line it starts: a block's first line lands in its key's shard
    first = sorted(keys)[10]
    assert splits.shard_of(first + " x", [first]) == 1


def test_a_text_file_is_not_taken_for_a_cluster(tmp_path):
    (tmp_path / "cluster.idx").write_text("b\t1\nA\t2\n")
    with pytest.raises(SplitsError, match="line 1: not a cluster.idx line"):
        load_splits(str(tmp_path))
