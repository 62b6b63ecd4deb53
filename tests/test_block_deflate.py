"""``build --block-deflate``: every deflate of ZipNum blocks writes standard gzip members that
pywb's ZipNum reader, ours and cdx_toolkit (through ``serve``) read alike; every engine
writes the same bytes for the same setting; ``contents.json`` records it and an update
keeps it (a cluster recorded without it is zlib-6)."""
import gzip
import json
import zlib

import pytest

import servers
from helpers import pywb_lookup
from test_pipeline import build_of, cluster_files, cluster_lines
from test_query import LINES, N
from webarchive_indexing import cli
from webarchive_indexing.api.collection import Collection
from webarchive_indexing.build import contents
from webarchive_indexing.commands.build import build
from webarchive_indexing.options import (BLOCK_DEFLATE_DEFAULT, BLOCK_DEFLATE_OLD,
                                         BLOCK_DEFLATES, BuildOptions)
from webarchive_indexing.zipnum import layout
from webarchive_indexing.zipnum.reader import Cluster

SPLITS = [LINES[N // 3], LINES[2 * N // 3]]
QUERIES = [("example.com", "domain"), ("example.co.uk/", "host"), ("foo.net/p/", "prefix"),
           ("http://example-foo.com/p/643?s=0", "exact")]


def blocks_of(shard):
    """The gzip members of a shard, as its part file cuts it."""
    data = shard.read_bytes()
    part = (shard.parent / ("part-" + shard.name[4:-3])).read_bytes()
    return [data[entry.offset:entry.offset + entry.length]
            for entry in map(layout.parse_idx_line, part.splitlines())]


def test_the_deflates_are_declared_once_and_each_is_a_known_library_and_level():
    assert set(layout.DEFLATES) == set(BLOCK_DEFLATES)
    assert BLOCK_DEFLATE_DEFAULT in BLOCK_DEFLATES and BLOCK_DEFLATE_OLD == "zlib-6"
    # the old bytes stay the old bytes: zlib level 6, gzip framing, mtime 0
    block = [b"com,example)/ 20240101000000 {}\n"] * 40
    old = zlib.compressobj(6, zlib.DEFLATED, 31)
    assert layout.gzip_block(block) == layout.gzip_block(block, "zlib-6") == \
        old.compress(b"".join(block)) + old.flush()


@pytest.mark.parametrize("deflate", BLOCK_DEFLATES)
def test_each_deflate_is_read_alike_by_pywb_and_ours(tmp_path, deflate):
    layout.write_cluster(LINES, tmp_path, SPLITS, lines_per_block=7, deflate=deflate)
    # each block a standard gzip member of its lines, by the setting's library
    shard = tmp_path / "cdx-00001.gz"
    members = blocks_of(shard)
    lines = [line for line in LINES if SPLITS[0] <= line < SPLITS[1]]
    assert [gzip.decompress(m) for m in members] == [
        b"".join(lines[i:i + 7]) for i in range(0, len(lines), 7)]
    assert members[0] == layout.DEFLATES[deflate](b"".join(lines[:7]))
    if not deflate.startswith("zlib-"):  # (zlib's 7-9 may make 6's bytes of small blocks)
        assert members != [layout.gzip_block(lines[i:i + 7]) for i in range(0, len(lines), 7)]
    cluster = Cluster(tmp_path)
    for url, match in QUERIES:
        ours = list(cluster.lookup(url, match))
        assert ours and ours == pywb_lookup(tmp_path / "cluster.idx", url, match)
    assert b"".join(gzip.decompress(shard.read_bytes()) for shard in
                    sorted(tmp_path.glob("cdx-*.gz"))) == b"".join(LINES)


def test_cdx_toolkit_reads_a_cluster_of_the_default_deflate_through_serve(tmp_path, capsysbinary):
    import cdx_toolkit
    from cdx_toolkit import myrequests
    myrequests.retry_info["default"]["minimum_interval"] = 0
    layout.write_cluster(LINES, tmp_path, SPLITS, lines_per_block=7, deflate=BLOCK_DEFLATE_DEFAULT)
    with servers.ours({"c": Collection("c", [Cluster(tmp_path)])}) as base:
        got = [capture.data for capture in
               cdx_toolkit.CDXFetcher(source=base + "/c/cdx").iter("*.example.com")]
    assert cli.main(["query", str(tmp_path), "*.example.com", "--output", "json"]) == 0
    assert got == [json.loads(line) for line in capsysbinary.readouterr()[0].splitlines()]
    assert len(got) > 100


@pytest.fixture(scope="module")
def cdx_inputs(tmp_path_factory):
    """Two thirds of LINES as one CDXJ file, the rest as another: a build and an update."""
    root = tmp_path_factory.mktemp("inputs")
    (root / "old.cdxj").write_bytes(b"".join(LINES[i] for i in range(N) if i % 3))
    (root / "new.cdxj").write_bytes(b"".join(LINES[i] for i in range(N) if not i % 3))
    return root


def record_of(out):
    return contents.read(str(out / "cluster"))


def same_bytes_as_the_local_engine(inputs, tmp_path, runner, deflate, **extra):
    """A build on ``runner`` with ``deflate`` is the local engine's, byte for byte, with the
    same split points; its record and its blocks say ``deflate``."""
    build(inputs, str(tmp_path / runner), BuildOptions(
        shards=3, lines_per_block=7, runner=runner, block_deflate=deflate, progress=False, **extra))
    build(inputs, str(tmp_path / "local"), BuildOptions(
        splits=str(tmp_path / runner / "splits.txt"), lines_per_block=7, workers=2,
        block_deflate=deflate, progress=False))
    assert cluster_files(tmp_path / runner / "cluster") == cluster_files(tmp_path / "local" / "cluster")
    assert record_of(tmp_path / runner)["block_deflate"] == deflate
    first = blocks_of(build_of(tmp_path / "local" / "cluster") / "cdx-00000.gz")[0]
    assert first == layout.DEFLATES[deflate](gzip.decompress(first))


# one case per engine (mrjob's inline and local runners, Spark), each against the local
# engine, each with another deflate than the library's zlib-6
@pytest.mark.parametrize("runner,deflate", [("inline", "isal-1"), ("mrjob", "zlib-1")])
def test_every_engine_writes_the_same_bytes_for_the_same_deflate(cdx_inputs, tmp_path, runner,
                                                                 deflate):
    same_bytes_as_the_local_engine([str(cdx_inputs / "old.cdxj")], tmp_path, runner, deflate)


def test_spark_writes_the_same_bytes_for_the_same_deflate(cdx_inputs, tmp_path, spark):
    same_bytes_as_the_local_engine([str(cdx_inputs / "old.cdxj")], tmp_path, "spark",
                                   "libdeflate-9", spark_context=spark)


def test_an_update_keeps_the_deflate_of_the_build_it_updates(cdx_inputs, tmp_path, capsys):
    old, new = str(cdx_inputs / "old.cdxj"), str(cdx_inputs / "new.cdxj")
    out, rebuilt = tmp_path / "out", tmp_path / "rebuilt"
    assert cli.main(["build", old, "-o", str(out), "--shards", "3", "--lines-per-block", "7",
                     "--block-deflate", "isal-2", "--no-progress"]) == cli.EXIT_OK
    assert record_of(out)["block_deflate"] == "isal-2"
    # another one asked for: refused, saying which the cluster has
    assert cli.main(["build", new, "-o", str(out), "--update", "--block-deflate",
                     "libdeflate-5", "--no-progress"]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert "--block-deflate libdeflate-5, but the cluster in" in err and \
        "was built with --block-deflate isal-2: an update keeps" in err
    # the same one asked for, or none: the cluster's
    assert cli.main(["build", new, "-o", str(out), "--update", "--block-deflate", "isal-2",
                     "--no-progress"]) == cli.EXIT_OK
    assert "7 lines a block, compressed by isal-2" in capsys.readouterr().err
    assert record_of(out)["block_deflate"] == "isal-2"
    assert cli.main(["build", old, new, "-o", str(rebuilt), "--splits", str(out / "splits.txt"),
                     "--lines-per-block", "7", "--block-deflate", "isal-2",
                     "--no-progress"]) == cli.EXIT_OK
    assert cluster_lines(out / "cluster") == LINES
    shards = sorted(p.name for p in build_of(rebuilt / "cluster").glob("cdx-*.gz"))
    assert len(shards) == 3 and all(
        (build_of(out / "cluster") / name).read_bytes()
        == (build_of(rebuilt / "cluster") / name).read_bytes() for name in shards)


def test_a_cluster_recorded_without_a_deflate_is_updated_as_zlib_6(cdx_inputs, tmp_path):
    """A cluster of an earlier version: its record has no block_deflate, its blocks zlib-6."""
    old, new = str(cdx_inputs / "old.cdxj"), str(cdx_inputs / "new.cdxj")
    out, rebuilt = tmp_path / "out", tmp_path / "rebuilt"
    build([old], str(out), BuildOptions(shards=2, lines_per_block=7, block_deflate="zlib-6",
                                        progress=False))
    path = build_of(out / "cluster") / contents.RECORD
    record = json.loads(path.read_bytes())
    del record["block_deflate"]
    path.write_text(json.dumps(record))
    build([new], str(out), BuildOptions(update=True, progress=False))
    assert record_of(out)["block_deflate"] == "zlib-6"
    build([old, new], str(rebuilt), BuildOptions(splits=str(out / "splits.txt"), lines_per_block=7,
                                                 block_deflate="zlib-6", progress=False))
    for name in ("cdx-00000.gz", "cdx-00001.gz"):
        assert (build_of(out / "cluster") / name).read_bytes() == \
            (build_of(rebuilt / "cluster") / name).read_bytes()


def test_a_record_of_a_deflate_this_version_does_not_write_is_refused(cdx_inputs, tmp_path,
                                                                       capsys):
    out = tmp_path / "out"
    build([str(cdx_inputs / "old.cdxj")], str(out), BuildOptions(progress=False))
    assert record_of(out)["block_deflate"] == BLOCK_DEFLATE_DEFAULT
    path = build_of(out / "cluster") / contents.RECORD
    path.write_text(path.read_text().replace(BLOCK_DEFLATE_DEFAULT, "brotli-11"))
    assert cli.main(["build", str(cdx_inputs / "new.cdxj"), "-o", str(out), "--update",
                     "--no-progress"]) == cli.EXIT_FAILED
    assert "says that the cluster's blocks were compressed by 'brotli-11', which this " \
           "version does not write" in capsys.readouterr().err
