"""Shards written by merging sorted CDX files (webarchive_indexing.build.merge): byte-identical
to one ShardWriter over the whole sorted input, whatever the pieces, runs and rounds."""
import gzip
import os
import random
from concurrent.futures import Future

import pytest

from webarchive_indexing.build import merge, runs
from webarchive_indexing.cdx import cdxfile, splits
from webarchive_indexing.zipnum import layout
from webarchive_indexing.engines.local_engine import process_pool


class Inline:
    """An executor that runs each task at once, in this process."""

    def submit(self, fn, *args):
        future = Future()
        future.set_result(fn(*args))
        return future


def cdx_line(rng):
    host = rng.choice(["com,example", "org,archive", "net,site%d" % rng.randrange(40)])
    return b"%s)/%x %014d {\"x\": %d}" % (host.encode(), rng.randrange(1 << 12),
                                          rng.randrange(10 ** 14), rng.randrange(9))


def write_inputs(directory, rng, files, lines, sorted_files=True):
    """``files`` CDX files (some gzipped, one with a CDX11-style header) of ``lines`` lines
    on average, with duplicate lines; returns their paths and all their lines."""
    paths, everything = [], []
    for n in range(files):
        lines_of = [cdx_line(rng) for _ in range(rng.randint(0, 2 * lines))]
        if lines_of and n % 3 == 0:
            lines_of += lines_of[: len(lines_of) // 4]  # duplicates
        if sorted_files:
            lines_of.sort()
        everything += lines_of
        data = b"".join(line + b"\n" for line in lines_of)
        if n % 4 == 1:
            data = b" CDX N b a m s k r M S V g\n" + data
        path = os.path.join(directory, f"in-{n:04d}.cdx" + (".gz" if n % 2 else ""))
        with open(path, "wb") as fh:
            fh.write(gzip.compress(data) if n % 2 else data)
        paths.append(path)
    return paths, sorted(everything)


def reference_cluster(lines, split_lines, directory, lines_per_block):
    layout.write_cluster((line + b"\n" for line in lines), directory,
                         [s.encode() for s in split_lines], lines_per_block)
    return directory


def assert_same_shards(got, expected, shards):
    for i in range(shards):
        for name in (layout.shard_name(i), layout.part_name(i)):
            assert (got / name).read_bytes() == (expected / name).read_bytes(), name


def build(pool, tmp_path, paths, shards, lines_per_block, workers, fan_in=merge.FAN_IN,
          memory=merge.MEMORY, stride=1, progress=None):
    work = tmp_path / "work"
    cluster = tmp_path / "cluster"
    work.mkdir()
    cluster.mkdir()
    sizes = [os.path.getsize(p) for p in paths]
    merging = merge.Merging(pool, str(work), workers, fan_in, memory, progress)
    run_list, pairs, unsorted, _ = merge.make_runs(
        merging, paths, sizes, {p: stride for p in paths}, shards * 100)
    sample = splits.merge(pairs, shards * 100)
    split_lines = splits.choose_splits(sample, shards)
    written = merge.write_shards(merging, run_list, split_lines, sample, str(cluster),
                                 lines_per_block)
    return cluster, split_lines, written, run_list, unsorted


@pytest.mark.parametrize("shards,lines_per_block,workers", [
    (1, 3000, 1), (1, 7, 8), (3, 1, 4), (5, 10, 64), (40, 3, 2)])
def test_shards_equal_one_writer_over_all_lines(tmp_path, shards, lines_per_block, workers):
    rng = random.Random(shards * 1000 + lines_per_block)
    paths, lines = write_inputs(str(tmp_path), rng, 12, 150)
    cluster, split_lines, written, _, unsorted = build(Inline(), tmp_path, paths, shards,
                                                       lines_per_block, workers)
    expected = reference_cluster(lines, split_lines, tmp_path / "expected", lines_per_block)
    assert_same_shards(cluster, expected, shards)
    assert sorted(written) == list(range(shards)) and unsorted == []
    assert sum(s["lines"] for s in written.values()) == len(lines)
    for shard, stats in written.items():
        part = (cluster / layout.part_name(shard)).read_bytes()
        assert stats["blocks"] == part.count(b"\n")
        assert stats["bytes"] == os.path.getsize(cluster / layout.shard_name(shard))


def test_sampling_every_line_gives_the_sample_jobs_sample(tmp_path):
    rng = random.Random(3)
    paths, lines = write_inputs(str(tmp_path), rng, 6, 100)
    _, split_lines, _, _, _ = build(Inline(), tmp_path, paths, 4, 10, 2)
    reservoir = splits.Reservoir(400)
    for line in lines:
        reservoir.add(line.decode())
    assert split_lines == splits.choose_splits([line for _, line in reservoir.items()], 4)


def test_sample_every_offers_a_fixed_subset_of_each_stream():
    offered = []

    class Keep:
        def add(self, line):
            offered.append(line)

    chunks = [[b"a", b"b", b"c"], [b"d"], [], [b"e", b"f", b"g", b"h"]]
    assert list(merge.sample_every(chunks, Keep(), 3)) == chunks
    assert offered == ["a", "d", "g"]


class Steps:
    """A progress display that keeps what it was shown: [label, count() at the end, total]."""

    def __init__(self):
        self.shown = []

    def step(self, label, count=None, total=None):
        self.shown.append([label, count, total])

    def done(self):
        self.shown[-1][1] = self.shown[-1][1]()


def test_many_small_files_within_a_low_fan_in(tmp_path, monkeypatch):
    rng = random.Random(11)
    paths, lines = write_inputs(str(tmp_path), rng, 60, 8)
    opened, most = [0], [0]
    read_chunks, run_chunks = cdxfile.read_chunks, runs.Run.chunks

    def counting(function):
        def counted(*args):
            opened[0] += 1
            most[0] = max(most[0], opened[0])
            try:
                yield from function(*args)
            finally:
                opened[0] -= 1
        return counted

    monkeypatch.setattr(cdxfile, "read_chunks", counting(read_chunks))
    monkeypatch.setattr(runs.Run, "chunks", counting(run_chunks))
    steps = Steps()
    cluster, split_lines, _, run_list, _ = build(Inline(), tmp_path, paths, 3, 5, 2, fan_in=3,
                                                 progress=steps)
    assert len(run_list) == 3 and most[0] == 3
    # 20 runs: 7 merges of at most 3, then 2 that leave exactly 3
    assert steps.shown[:3] == [["merging 60 CDX files into 20 sorted runs", 20, 20],
                               ["merging runs above the fan-in of 3, round 1", 7, 7],
                               ["merging runs above the fan-in of 3, round 2", 2, 2]]
    assert steps.shown[3][0].startswith("compressing 3 shards in ")
    expected = reference_cluster(lines, split_lines, tmp_path / "expected", 5)
    assert_same_shards(cluster, expected, 3)
    # nothing left in the work directory but the runs left and their indexes
    left = sorted(os.path.relpath(os.path.join(d, n), tmp_path / "work")
                  for d, _, names in os.walk(tmp_path / "work") for n in names)
    assert left == sorted(name for run in run_list
                          for name in (os.path.relpath(run.path, tmp_path / "work"),
                                       os.path.relpath(run.path, tmp_path / "work") + ".idx"))


def test_unsorted_inputs_are_sorted_in_bounded_memory_and_named(tmp_path):
    rng = random.Random(17)
    paths, lines = write_inputs(str(tmp_path), rng, 8, 200, sorted_files=False)
    cluster, split_lines, _, _, unsorted = build(Inline(), tmp_path, paths, 2, 9, 2, fan_in=4,
                                                 memory=2000)
    expected = reference_cluster(lines, split_lines, tmp_path / "expected", 9)
    assert_same_shards(cluster, expected, 2)
    assert sorted(unsorted) == sorted(p for p in paths if os.path.getsize(p) > 100)


def test_a_process_pool_writes_the_same_bytes(tmp_path):
    rng = random.Random(23)
    paths, lines = write_inputs(str(tmp_path), rng, 10, 300)
    with process_pool(2) as pool:
        cluster, split_lines, _, _, _ = build(pool, tmp_path, paths, 3, 20, 8)
    expected = reference_cluster(lines, split_lines, tmp_path / "expected", 20)
    assert_same_shards(cluster, expected, 3)


@pytest.mark.parametrize("damage", ["cut", "flipped"])
def test_a_broken_input_is_named(tmp_path, damage):
    rng = random.Random(1)
    paths, _ = write_inputs(str(tmp_path), rng, 3, 50)
    data = bytearray(open(paths[1], "rb").read())
    if damage == "cut":
        del data[len(data) // 2:]
    else:
        data[30] ^= 0xff
    with open(paths[1], "wb") as fh:
        fh.write(data)
    with pytest.raises(merge.InputFailed) as failed:
        build(Inline(), tmp_path, paths, 2, 10, 1)
    assert failed.value.path == paths[1]


def test_group_inputs_deals_evenly_within_the_fan_in():
    paths = [f"f{i}" for i in range(10)]
    sizes = [100, 1, 1, 1, 1, 1, 1, 1, 1, 50]
    groups = merge.group_inputs(paths, sizes, 3, fan_in=8)
    assert len(groups) == 3 and sorted(p for g in groups for p in g) == sorted(paths)
    assert ["f0"] in groups and ["f9"] in groups
    groups = merge.group_inputs(paths, sizes, 3, fan_in=4)
    assert sorted(map(len, groups)) == [2, 4, 4] and ["f0", "f8"] in groups
    assert len(merge.group_inputs(paths, sizes, 1, fan_in=3)) == 4
    assert merge.group_inputs(paths[:2], sizes[:2], 8) == [["f0"], ["f1"]]


def test_plan_pieces_cut_each_shard_at_sample_lines():
    sample = [f"k{i:03d}" for i in range(100)]
    split_lines = ["k050"]
    pieces = merge.plan_pieces(split_lines, sample, 10 ** 6, 4, 10)
    assert [p.shard for p in pieces] == sorted(p.shard for p in pieces)
    for shard, low, high in ((0, None, b"k050"), (1, b"k050", None)):
        mine = [p for p in pieces if p.shard == shard]
        assert len(mine) > 1 and mine[0].low == low and mine[-1].high == high
        assert all(a.high == b.low for a, b in zip(mine, mine[1:]))
        assert all((p.shard_low, p.shard_high) == (low, high) for p in mine)
    assert len(merge.plan_pieces(split_lines, sample, 100, 4, 3000)) == 2
    assert len(merge.plan_pieces([], [], 10 ** 9, 64, 3000)) == 1
