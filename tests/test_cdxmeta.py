"""What each CDX file was made from and its stored sample (webarchive_indexing.cdx.cdxmeta), and
--skip-existing trusting only CDX files that still match their archive and format (16.6)."""
import gzip
import heapq
import json
import os
import random

import pytest

from webarchive_indexing.commands import build as building
from webarchive_indexing.cdx import cdxmeta, splits
from webarchive_indexing.commands import corpus
from webarchive_indexing.build import tasks
from webarchive_indexing.cdx.cdxline import is_cdx_line
from webarchive_indexing.options import BuildOptions


def build(inputs, out, **options):
    return building.build(inputs, out, BuildOptions(progress=False, **options))


def random_text(rng, lines):
    return "".join(f"{rng.choice('abc')},x)/{rng.randrange(10 ** 6)} 2024{rng.randrange(10 ** 10):010d} "
                   f"{{\"n\": {rng.randrange(5)}}}\n" for _ in range(lines))


@pytest.mark.parametrize("seed", range(12))
def test_combined_samples_and_files_sampled_whole_give_the_exact_bottom_k(seed):
    rng = random.Random(seed)
    size = rng.choice([1, 5, 50, 300])
    texts, metas = [], []
    for _ in range(rng.randint(1, 12)):
        text = random_text(rng, rng.choice([0, 1, 10, 200, 1000]))
        texts.append(text)
        kind = rng.random()
        if kind < 0.15:
            metas.append(None)  # made by an older version, or by mrjob without a sample
        else:
            metas.append(cdxmeta.make("cdxj", {"size": 1}, text, rng.choice([0, 1, 8, 64, 400])))
    true = splits.Reservoir(size)
    for text in texts:
        for line in text.splitlines():
            true.add(line)
    pairs, whole = cdxmeta.combine(metas, size)
    for number in whole:
        _, full = cdxmeta.sample_of(texts[number], size)
        pairs += full
    assert heapq.nsmallest(size, pairs) == true.items()
    assert all(metas[n] is None or metas[n]["sample_size"] == 0
               or metas[n]["lines"] > metas[n]["sample_size"] for n in whole)


def test_meta_counts_lines_as_the_jobs_do_and_is_no_cdx_line(tmp_path):
    text = " CDX N b a m s k r M S V g\ncom,a)/ 2024 x\r\n\ncom,b)/ 2024 y\n"
    meta = cdxmeta.make("cdx11", {"size": 3, "mtime_ns": 4}, text, 10)
    assert meta["lines"] == 2 and [line for _, line in meta["sample"]] == sorted(
        ["com,a)/ 2024 x", "com,b)/ 2024 y"], key=splits.sample_key)
    cdx_path = str(tmp_path / "a.cdx.gz")
    cdxmeta.write(cdx_path, meta)
    written = (tmp_path / "a.cdx.gz.meta.json").read_text()
    assert written.count("\n") == 0 and not is_cdx_line(written)
    assert cdxmeta.read(cdx_path) == dict(meta, sample=[list(pair) for pair in meta["sample"]])
    (tmp_path / "a.cdx.gz.meta.json").write_text("{cut")
    assert cdxmeta.read(cdx_path) is None and cdxmeta.read(str(tmp_path / "none")) is None


@pytest.fixture
def archives(tmp_path):
    root = tmp_path / "warcs"
    corpus.make_corpus(root, files=2, captures=15, seed=3)
    for name in os.listdir(root):
        if name.endswith(".jsonl"):
            os.remove(root / name)
    return root


def cdx_lines(out):
    lines = []
    for name in sorted(os.listdir(out / "cdx")):
        if name.endswith(".cdx.gz"):
            lines += gzip.decompress((out / "cdx" / name).read_bytes()).decode().splitlines()
    return lines


def test_a_cdx_of_another_format_is_made_again(tmp_path, archives):
    out = tmp_path / "out"
    build([str(archives)], str(out), shards=2, lines_per_block=5, cdx_format="cdx11", runner="inline")
    assert cdx_lines(out)[0].startswith(" CDX")
    summary = build([str(archives)], str(out), shards=2, lines_per_block=5, runner="inline")
    assert summary.archives_skipped == 0 and summary.archives_reindexed == 2
    warnings = json.loads((out / "errors.json").read_text())["warnings"]
    assert [w["message"] for w in warnings] == ["indexed again: it is cdx11, not cdxj"] * 2
    assert all(line.split(" ", 2)[2].startswith("{") for line in cdx_lines(out))
    # the second build's shards
    cluster = gzip.decompress((out / "cluster" / "build-00002" / "cdx-00000.gz").read_bytes()).decode()
    assert all(line.split(" ", 2)[2].startswith("{") for line in cluster.splitlines())
    summary = build([str(archives)], str(out), shards=2, lines_per_block=5, runner="inline")
    assert summary.archives_skipped == 2


def test_stale_or_unrecorded_cdx_files_are_made_again(tmp_path, archives):
    out = tmp_path / "out"
    warcs = sorted(p for p in os.listdir(archives))
    build([str(archives)], str(out), shards=1, runner="inline")
    first = cdx_lines(out)
    # an archive that was still being written when it was indexed, cut after a whole
    # record: indexed without a problem, and it has grown since (same modification time)
    grown = archives / warcs[0]
    data = grown.read_bytes()
    fields = json.loads(first[len(first) // 4].split(" ", 2)[2])
    grown.write_bytes(data[: int(fields["offset"]) + int(fields["length"])])
    os.utime(grown, ns=(0, 0))
    summary = build([str(archives)], str(out), shards=1, runner="inline")
    assert not summary.errors and summary.lines < len(first) and summary.archives_reindexed == 1
    grown.write_bytes(data)
    os.utime(grown, ns=(0, 0))
    summary = build([str(archives)], str(out), shards=1, runner="inline")
    assert summary.archives_skipped == 1 and cdx_lines(out) == first
    # same size and content, another modification time; and a CDX file with no record
    os.utime(grown, ns=(10 ** 18, 10 ** 18))
    os.remove(out / "cdx" / (warcs[1].replace(".warc.gz", ".cdx.gz") + cdxmeta.SUFFIX))
    summary = build([str(archives)], str(out), shards=1)
    assert summary.archives_skipped == 0 and cdx_lines(out) == first
    assert summary.archives_reindexed == 2


def test_index_archive_says_why_it_indexed_again(tmp_path, archives):
    warc = str(sorted(archives.glob("*.warc.gz"))[0])
    cdx_dir = str(tmp_path / "cdx")
    cdx11, cdxj = tasks.Indexing(cdx_format="cdx11"), tasks.Indexing(cdx_format="cdxj")
    status = tasks.index_archive(warc, "a.warc.gz", cdx_dir, cdx11)
    assert status.stale is None and not status.skipped
    assert tasks.index_archive(warc, "a.warc.gz", cdx_dir, cdx11).skipped
    status = tasks.index_archive(warc, "a.warc.gz", cdx_dir, cdxj)
    assert status.stale == "it is cdx11, not cdxj" and not status.skipped
    os.utime(warc, ns=(1, 1))
    assert tasks.index_archive(warc, "a.warc.gz", cdx_dir, cdxj).stale == \
        "the archive changed since it was indexed"
    again = tasks.Indexing(cdx_format="cdxj", skip_existing=False)
    assert tasks.index_archive(warc, "a.warc.gz", cdx_dir, again).stale is None
