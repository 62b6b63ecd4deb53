"""Updates (webarchive_indexing.build.update, shardrun): a cluster merged with new lines, lines of
removed archives left out, byte-identical to a full build with the same split points."""
import os
import random
import shutil

import pytest

from webarchive_indexing.build import merge, tasks
from webarchive_indexing.zipnum import shardrun, layout
from webarchive_indexing.cdx import splits
from webarchive_indexing.build.update import ClusterChanged, update_shards

from test_mergebuild import Inline, assert_same_shards, reference_cluster


def cdxj(rng, filename):
    host = rng.choice(["com,example", "org,archive", "net,site%d" % rng.randrange(30)])
    return (b'%s)/%x %014d {"url": "http://x/", "filename": "%s"}'
            % (host.encode(), rng.randrange(1 << 10), rng.randrange(10 ** 14), filename.encode()))


def write_files(directory, rng, names, lines):
    paths, everything = [], []
    for name in names:
        lines_of = sorted(cdxj(rng, name) for _ in range(lines))
        everything += lines_of
        path = os.path.join(directory, name.replace("/", "_") + ".cdx")
        with open(path, "wb") as fh:
            fh.write(b"".join(line + b"\n" for line in lines_of))
        paths.append(path)
    return paths, everything


def runs_of(pool, paths, work, workers=2, removal=None):
    os.makedirs(work, exist_ok=True)
    return merge.make_runs(merge.Merging(pool, work, workers), paths,
                           [os.path.getsize(p) for p in paths], {p: 1 for p in paths}, 1000,
                           removal=removal)


def build_cluster(pool, paths, split_lines, cluster, work, per_block, workers=2):
    run_list, pairs, _, _ = runs_of(pool, paths, work)
    os.makedirs(cluster)
    written = merge.write_shards(merge.Merging(pool, work, workers), run_list, split_lines,
                                 [l for _, l in pairs], str(cluster), per_block)
    tasks.finalize_cluster(str(cluster), len(split_lines) + 1, written)
    for run in run_list:
        run.remove()


@pytest.mark.parametrize("shards,per_block,workers,new_files,remove", [
    (4, 10, 2, 1, []), (4, 10, 8, 3, ["crawl-1/*"]), (1, 7, 16, 2, ["crawl-0/b.warc.gz"]),
    (6, 1, 3, 0, ["crawl-2/*", "nothing*"]), (5, 25, 2, 1, ["*"])])
def test_update_equals_a_full_build_with_the_same_split_points(tmp_path, shards, per_block,
                                                                workers, new_files, remove):
    rng = random.Random(shards * 100 + per_block)
    pool = Inline()
    old_names = [f"crawl-{i}/{n}.warc.gz" for i in range(3) for n in "ab"]
    old_paths, old_lines = write_files(str(tmp_path), rng, old_names, 60)
    new_names = [f"crawl-new/{n}.warc.gz" for n in range(new_files)]
    new_paths, new_lines = write_files(str(tmp_path), rng, new_names, 40)
    everything = sorted(old_lines + new_lines)
    reservoir = splits.Reservoir(shards * 100)
    for line in old_lines:
        reservoir.add(line.decode())
    split_lines = splits.choose_splits([l for _, l in reservoir.items()], shards)
    build_cluster(pool, old_paths, split_lines, tmp_path / "old", str(tmp_path / "w1"), per_block)

    removal = shardrun.Removal(remove)
    kept = [line for line in everything if not removal.removed(line)]
    assert len(kept) < len(everything) or not remove or remove == ["nothing*"]
    # removed archives' lines go from the new inputs too
    new_runs, pairs, _, _ = runs_of(pool, new_paths, str(tmp_path / "w2"), removal=removal)
    (tmp_path / "new").mkdir()
    written, copied, removed = update_shards(merge.Merging(pool, str(tmp_path / "w2"), workers),
                                             new_runs, [l for _, l in pairs],
                                             str(tmp_path / "old"), split_lines, removal,
                                             str(tmp_path / "new"), per_block)
    assert sum(removed.values()) == len([line for line in old_lines if removal.removed(line)])
    expected = reference_cluster(kept, split_lines, tmp_path / "expected", per_block)
    assert_same_shards(tmp_path / "new", expected, shards)
    assert sorted(written) == list(range(shards))
    assert sum(s["lines"] for s in written.values()) == len(kept)
    if not new_files and not remove:
        assert copied == shards


def test_unchanged_shards_are_copied_not_recompressed(tmp_path, monkeypatch):
    rng = random.Random(2)
    pool = Inline()
    paths, lines = write_files(str(tmp_path), rng, ["a.warc.gz", "b.warc.gz"], 200)
    split_lines = ["m", "o"]  # shard 1 ("m" to "o") holds only "net,..." and "org,..." lines
    build_cluster(pool, paths, split_lines, tmp_path / "old", str(tmp_path / "w1"), 10)
    new_path = tmp_path / "new.cdx"
    new_lines = sorted(b'com,new)/%d 20240101000000 {"filename": "n.warc.gz"}' % i for i in range(5))
    new_path.write_bytes(b"".join(line + b"\n" for line in new_lines))
    new_runs, _, _, _ = runs_of(pool, [str(new_path)], str(tmp_path / "w2"))
    compressed = []
    monkeypatch.setattr(layout, "gzip_block", lambda lines, *how, real=layout.gzip_block:
                        compressed.append(1) or real(lines, *how))
    (tmp_path / "new").mkdir()
    written, copied, _ = update_shards(merge.Merging(pool, str(tmp_path / "w2")), new_runs, [],
                                       str(tmp_path / "old"), split_lines,
                                       shardrun.Removal([]), str(tmp_path / "new"), 10)
    assert copied == 2
    assert len(compressed) == written[0]["blocks"]
    expected = reference_cluster(sorted(lines + new_lines), split_lines, tmp_path / "expected", 10)
    assert_same_shards(tmp_path / "new", expected, 3)


def test_a_cluster_of_other_blocks_or_split_points_is_refused(tmp_path):
    rng = random.Random(4)
    pool = Inline()
    paths, _ = write_files(str(tmp_path), rng, ["a.warc.gz"], 100)
    build_cluster(pool, paths, ["n"], tmp_path / "old", str(tmp_path / "w1"), 10)
    (tmp_path / "new").mkdir()
    args = (merge.Merging(pool, str(tmp_path)), [], [], str(tmp_path / "old"))
    with pytest.raises(ClusterChanged, match="not built with 20 lines per block"):
        update_shards(*args, ["n"], shardrun.Removal([]), str(tmp_path / "new"), 20)
    with pytest.raises(ClusterChanged, match="other split points"):
        update_shards(*args, ["o"], shardrun.Removal([]), str(tmp_path / "new"), 10)
    with pytest.raises(ClusterChanged, match="not one of the 1 shards"):
        update_shards(*args, [], shardrun.Removal([]), str(tmp_path / "new"), 10)
    # an index naming shards outside the cluster: refused, nothing read there
    idx = tmp_path / "old" / "cluster.idx"
    original = idx.read_bytes()
    (tmp_path / "elsewhere").mkdir()
    shutil.copy(tmp_path / "old" / "cdx-00000.gz", tmp_path / "elsewhere")
    for name in ("../elsewhere/cdx-00000.gz", "build-1/../../elsewhere/cdx-00000.gz",
                 str(tmp_path / "elsewhere" / "cdx-00000.gz")):
        idx.write_bytes(original.replace(b"\tcdx-00000.gz\t", f"\t{name}\t".encode()))
        with pytest.raises(ClusterChanged, match="not one of the 2 shards"):
            update_shards(*args, ["n"], shardrun.Removal([]), str(tmp_path / "new"), 10)


def test_filename_of_each_format():
    assert shardrun.filename_of(b'k 1 {"url": "u", "filename": "a/b\\"c.warc.gz"}') == 'a/b"c.warc.gz'
    assert shardrun.filename_of(b"k 1 u m s d r M 10 20 x.arc.gz") == "x.arc.gz"
    assert shardrun.filename_of(b'k 1 {"url": "u"}') is None
    removal = shardrun.Removal(["crawl/*.warc.gz"])
    assert removal.removed(b'k 1 {"filename": "crawl/deep/x.warc.gz"}')
    assert not removal.removed(b'k 1 {"filename": "other/x.warc.gz"}')
    assert removal.may_match(b'..."filename": "crawl/x.warc.gz"') and not removal.may_match(b"crawl/")
    # archives whose lines are replaced: their exact names, whatever they hold
    replaced = shardrun.Removal(["old/*"], ["a*[1].warc.gz"])
    assert replaced.removed(b'k 1 {"filename": "a*[1].warc.gz"}')
    assert not replaced.removed(b'k 1 {"filename": "ab1.warc.gz"}')
    assert replaced.removed(b'k 1 {"filename": "old/x"}') and replaced.may_match(b"a*[1].warc.gz")
    assert replaced.of_globs().globs == ["old/*"] and not replaced.of_globs().names
    assert not replaced.of_globs().removed(b'k 1 {"filename": "a*[1].warc.gz"}')


def test_a_damaged_cluster_is_refused_with_the_shard_named(tmp_path):
    rng = random.Random(5)
    pool = Inline()
    paths, _ = write_files(str(tmp_path), rng, ["a.warc.gz"], 100)
    build_cluster(pool, paths, [], tmp_path / "old", str(tmp_path / "w1"), 10)
    shard = tmp_path / "old" / "cdx-00000.gz"
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0xff
    shard.write_bytes(data)
    new_runs, _, _, _ = runs_of(pool, paths, str(tmp_path / "w2"))
    (tmp_path / "new").mkdir()
    with pytest.raises(ClusterChanged, match=r"cdx-00000.gz: the blocks at bytes \d+-\d+ cannot "
                                             r"be read .*: the cluster is damaged"):
        update_shards(merge.Merging(pool, str(tmp_path / "w2")), new_runs, [],
                      str(tmp_path / "old"), [], shardrun.Removal(["x"]), str(tmp_path / "new"), 10)
