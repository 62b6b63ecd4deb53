"""One owner for each ZipNum format: a ``cluster.idx`` line is parsed by
``layout.parse_idx_line``, a cluster's index is found by ``places.cluster_index``, its
``.loc`` read and its shards placed by ``places``, a shard named by ``layout`` and a name
from data kept below its place by ``storage.below``; every reader goes through them."""
import os
import shutil

import pytest

from webarchive_indexing import cli
from webarchive_indexing.build import tasks
from webarchive_indexing.build.splitsource import SplitsError, load_splits
from webarchive_indexing.commands.corpus import make_corpus
from webarchive_indexing.inputs import discovery
from webarchive_indexing.inputs.indexes import IndexInputError
from webarchive_indexing.inputs.sources import open_index
from webarchive_indexing.zipnum import layout, places
from webarchive_indexing.zipnum.reader import Cluster, DamagedCluster, open_cluster

import rangeserver


@pytest.fixture(scope="module")
def crawls(tmp_path_factory):
    root = tmp_path_factory.mktemp("crawls")
    for seed in (1, 2):
        make_corpus(root / f"crawl-{seed}", files=1, captures=20, seed=seed, hosts=3)
    return root


def build(*args):
    return cli.main(["build", *map(str, args), "--no-progress"])


def built(crawls, out, *extra):
    assert build(crawls / "crawl-1", "-o", out, "--shards", "2", "--lines-per-block", "4",
                 *extra) == cli.EXIT_OK
    return out / "cluster"


def test_a_malformed_idx_line_is_refused_alike_by_every_reader(crawls, tmp_path, capsys):
    """query, build --splits FROM a cluster, build --update and a cluster as an index input
    refuse a damaged cluster.idx line with one description of it."""
    cluster = built(crawls, tmp_path / "out")
    idx = cluster / "cluster.idx"
    lines = idx.read_bytes().splitlines(True)
    key, shard, _, length, number = lines[2].rstrip(b"\n").split(b"\t")
    bad = b"\t".join([key, shard, b"x12", length, number])
    idx.write_bytes(b"".join(lines[:2] + [bad + b"\n"] + lines[3:]))
    os.remove(cluster / "cluster.root")  # it describes the index as it was
    said = f"expected {layout.IDX_SHAPE}, found {bad!r}"
    with pytest.raises(DamagedCluster) as query:
        list(open_cluster(tmp_path / "out").lookup_range(b"", b"~"))
    with pytest.raises(SplitsError) as splits:
        load_splits(str(tmp_path / "out"))
    with pytest.raises(IndexInputError) as index_input:
        open_index(str(idx))
    assert said in str(query.value) and "line 3" in str(splits.value)
    assert said in str(splits.value) and said in str(index_input.value)
    capsys.readouterr()
    for args in ([crawls / "crawl-2", "-o", tmp_path / "other", "--splits", tmp_path / "out"],
                 [crawls / "crawl-2", "-o", tmp_path / "out", "--update"],
                 [idx, "-o", tmp_path / "again"]):
        assert build(*args) != cli.EXIT_OK, args
        err = capsys.readouterr().err
        assert said in err and "Traceback" not in err, args


def test_a_part_line_is_written_as_it_is_parsed():
    line = layout.idx_line(b"com,example)/ 20240101000000", "build-00001/cdx-00003.gz", 12, 345, 7)
    parsed = layout.parse_idx_line(line.rstrip(b"\n"))
    assert parsed == (b"com,example)/ 20240101000000", "build-00001/cdx-00003.gz", 12, 345, 7)
    assert layout.idx_line(*parsed) == line
    assert layout.parse_idx_line(b"a 1\tcdx-00000.gz\t0\t10\r").lineno is None
    for bad in (b"a 1\tcdx-00000.gz\t0", b"a1\tcdx-00000.gz\t0\t10", b"a 1\tcdx-00000.gz\t-1\t10",
                b"a 1\tcdx-00000.gz\t0\t10\t1\t2", b"a 1\t\xff\t0\t10", b""):
        with pytest.raises(layout.BadIdxLine, match="expected 'urlkey timestamp<TAB>shard"):
            layout.parse_idx_line(bad)


def two_clusters(crawls, place):
    """``place`` holding a cluster.idx of its own and a build's cluster/ below it, of other
    split points: which one a reader takes shows its search order."""
    built(crawls, place.parent / "below")
    shutil.move(place.parent / "below" / "cluster", place / "cluster")
    assert build(crawls / "crawl-2", "-o", place.parent / "own", "--shards", "3",
                 "--lines-per-block", "4") == cli.EXIT_OK
    for name in ("cluster.idx", "cluster.loc", "cluster.root"):
        shutil.copy(place.parent / "own" / "cluster" / name, place / name)
    for build_dir in (place.parent / "own" / "cluster").glob("build-*"):
        shutil.copytree(build_dir, place / build_dir.name)


@pytest.mark.parametrize("named", ["out", "cluster"])
def test_every_reader_finds_the_same_cluster_idx(crawls, tmp_path, named):
    """One search order: query, export, an index input and build --splits take the same
    index of a location (a directory named cluster: its own first; else cluster/ first)."""
    place = tmp_path / "x" / named
    place.mkdir(parents=True)
    two_clusters(crawls, place)
    expected = place / "cluster.idx" if named == "cluster" else place / "cluster" / "cluster.idx"
    assert places.cluster_index(str(place)) == str(expected)
    assert open_cluster(place).idx.path == str(expected)
    keys = [layout.parse_idx_line(line).key.decode() for line in expected.read_bytes().splitlines()]
    shards = len({layout.parse_idx_line(line).shard for line in expected.read_bytes().splitlines()})
    assert load_splits(str(place)) == load_splits(str(expected)) and len(load_splits(str(place))) == shards - 1
    assert set(load_splits(str(place))) <= set(keys)
    with rangeserver.serving(tmp_path) as server:
        url = f"{server.url}/x/{named}"
        found = server.url + "/" + str(expected.relative_to(tmp_path))
        assert places.cluster_index(url) == found
        assert open_cluster(url).idx.path == found
        assert load_splits(url) == load_splits(str(place))


def test_a_loc_is_read_alike_by_query_and_index_inputs(crawls, tmp_path, caplog):
    """An index input reads a cluster's .loc as query does: a shard name that climbs out
    is refused with the same words, a location outside left out with a warning."""
    cluster = built(crawls, tmp_path / "out")
    loc = cluster / "cluster.loc"
    first = loc.read_text().splitlines()[0].split("\t")[0]
    original = loc.read_text()
    loc.write_text(original + "../elsewhere.gz\tcdx-00000.gz\n")
    with pytest.raises(DamagedCluster) as query:
        Cluster(cluster)
    with pytest.raises(IndexInputError) as index_input:
        open_index(str(cluster / "cluster.idx"))
    said = "shard '../elsewhere.gz' is not a file below the cluster's directory"
    assert said in str(query.value) and said in str(index_input.value)
    loc.write_text(original.replace(f"{first}\t{first}", f"{first}\t/etc/{first}"))
    caplog.clear()
    lines = list(Cluster(cluster).lookup_range(b"", b"~"))
    from_query = caplog.text
    caplog.clear()
    assert [line.rstrip(b"\n") for line in lines] == list(open_index(str(cluster / "cluster.idx")).lines())
    assert f"ignoring '/etc/{first}'" in from_query and f"ignoring '/etc/{first}'" in caplog.text


def test_shard_names_have_one_pattern(tmp_path, crawls):
    assert [discovery.kind_of(name) for name in ("s3://b/cdx-00001.gz", "s3://b/cdx-1.gz",
                                                  "s3://b/xcdx-00001.gz")] == ["cdx", "cdx", None]
    assert [layout.named_here(name) for name in ("cdx-00001.gz", "part-00001", "cdx-123456.gz",
                                                 "cdx-000001.gz", "cdx-1.gz", "part-1")] == [
        True, True, True, False, False, False]
    # a build removes what builds wrote directly in cluster/, not a file named otherwise
    cluster = built(crawls, tmp_path / "out")
    (cluster / "cdx-000001.gz").write_bytes(b"the user's")
    (cluster / "cdx-00001.gz").write_bytes(b"an old layout's")
    built(crawls, tmp_path / "out", "--no-skip-existing")
    assert (cluster / "cdx-000001.gz").read_bytes() == b"the user's"
    assert not (cluster / "cdx-00001.gz").exists()


def test_an_update_reads_nothing_through_a_link_out_of_the_cluster(crawls, tmp_path, capsys):
    """The build directory the index names, a symbolic link to elsewhere: an update takes
    neither its record nor its shards (``storage.below``)."""
    cluster = built(crawls, tmp_path / "out")
    build_dir = next(cluster.glob("build-*"))
    shutil.move(build_dir, tmp_path / "elsewhere")
    os.symlink(tmp_path / "elsewhere", build_dir)
    capsys.readouterr()
    assert build(crawls / "crawl-2", "-o", tmp_path / "out", "--update") != cli.EXIT_OK
    assert "names shards outside" in capsys.readouterr().err


def test_shard_statistics_have_one_shape(tmp_path):
    lines = [b"com,example)/%03d 20240101000000 {}\n" % i for i in range(10)]
    totals = layout.write_cluster(lines, tmp_path / "whole", [lines[6]], lines_per_block=4)
    stats = {0: tasks.write_shard(0, [l.decode().rstrip("\n") for l in lines[:6]], str(tmp_path / "c"), 4),
             1: tasks.write_shard(1, [l.decode().rstrip("\n") for l in lines[6:]], str(tmp_path / "c"), 4)}
    assert stats[0] == layout.shard_stats(0, 6, 2, stats[0]["bytes"])
    assert tasks.finalize_cluster(str(tmp_path / "c"), 2, stats) == totals == layout.cluster_totals(
        2, stats.values())
    assert (tmp_path / "c" / "cluster.idx").read_bytes() == (tmp_path / "whole" / "cluster.idx").read_bytes()


def test_a_new_loc_carries_over_the_lines_of_the_build_it_replaces():
    """``places.loc_lines_of``, publish's one way to read the ``.loc`` lines it carries over:
    those of one build's shards, or of shards beside the index, byte for byte."""
    data = (b"build-00001/cdx-00000.gz\t/data/a/build-00001/cdx-00000.gz\r\n"
            b"cdx-00000.gz\tcdx-00000.gz\n"
            b"build-00002/cdx-00000.gz\tbuild-00002/cdx-00000.gz\n"
            b"build-000010/cdx-00000.gz\tx\n")
    assert places.loc_lines_of(data, "build-00001") == (
        b"build-00001/cdx-00000.gz\t/data/a/build-00001/cdx-00000.gz\r\n")
    assert places.loc_lines_of(data) == b"cdx-00000.gz\tcdx-00000.gz\n"
    assert places.loc_lines_of(b"", "build-00001") == b""
