"""The three jobs and ``build``, end to end on mrjob's inline and local runners, read back by pywb."""
import filecmp
import gzip
import os
import shutil
from pathlib import Path

import pytest

from helpers import REAL, gunzip_text, pywb_cdx, pywb_lookup
from webarchive_indexing.jobs.index_warcs import IndexWarcsJob
from webarchive_indexing.jobs.sample_splits import SampleSplitsJob
from webarchive_indexing.jobs.zip_cluster import ZipClusterJob
from webarchive_indexing import cli
from webarchive_indexing.commands.corpus import make_corpus
from webarchive_indexing.commands.build import BuildFailed, build
from webarchive_indexing.engines.mrjob_engine import run_job
from webarchive_indexing.options import BuildOptions
from webarchive_indexing.zipnum.reader import search_range
from webarchive_indexing.build.seqfile import read_text_keys
from webarchive_indexing.cdx.splits import parse_splits
from webarchive_indexing.build.tasks import finalize_cluster, write_shard
from webarchive_indexing.zipnum.layout import root_index


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus")
    make_corpus(root / "seg-a", files=2, captures=120, seed=21)
    make_corpus(root / "seg-b", files=1, captures=120, seed=22, fmt="arc")
    for name in os.listdir(root / "seg-a"):
        if name.endswith(".jsonl"):
            os.remove(root / "seg-a" / name)
    for name in os.listdir(root / "seg-b"):
        if name.endswith(".jsonl"):
            os.remove(root / "seg-b" / name)
    return root


def all_lines(out):
    """Every CDX line of a build's per-archive CDX files, sorted bytewise."""
    lines = []
    for root, _, files in os.walk(os.path.join(out, "cdx")):
        for name in files:
            if name.endswith(".cdx.gz"):
                lines += gunzip_text(os.path.join(root, name)).splitlines(True)
    return sorted(line.encode() for line in lines if not line.startswith(" CDX"))


def build_of(cluster):
    """The directory of the build whose shards ``cluster/cluster.idx`` names."""
    first = (cluster / "cluster.idx").read_text().split("\n", 1)[0]
    return cluster / first.split("\t")[1].rsplit("/", 1)[0]


def cluster_files(cluster):
    """Every file of a directory, by its path relative to it."""
    return {str(p.relative_to(cluster)): p.read_bytes() for p in sorted(cluster.rglob("*"))
            if p.is_file()}


def cluster_lines(cluster):
    """The lines of the shards of a published cluster (or of a directory of shards)."""
    cluster = Path(cluster)
    if (cluster / "cluster.idx").exists() and (cluster / "cluster.idx").stat().st_size:
        cluster = build_of(cluster)
    out = []
    for name in sorted(os.listdir(cluster)):
        if name.startswith("cdx-"):
            data = open(os.path.join(cluster, name), "rb").read()
            out += gzip.decompress(data).splitlines(True) if data else []
    return out


# -- each job alone, inline runner -----------------------------------------------------------

def test_index_job_inline(tmp_path):
    manifest = tmp_path / "warcs.txt"
    manifest.write_text(f"{REAL}/webrecorder+warcio__example.warc.gz\n"
                        f"0\t{REAL}/iipc+webarchive-commons__IAH-urls-wget.warc.gz\n")
    statuses = run_job(IndexWarcsJob, ["--cdx-dir", str(tmp_path / "cdx"), "--input-root", REAL,
                                       str(manifest)], "inline")
    assert sorted((s["name"], s["lines"], s["skipped"]) for s in statuses) == [
        ("iipc+webarchive-commons__IAH-urls-wget.warc.gz", 19, False),
        ("webrecorder+warcio__example.warc.gz", 2, False)]
    written = gunzip_text(tmp_path / "cdx" / "webrecorder+warcio__example.cdx.gz")
    assert written == pywb_cdx(f"{REAL}/webrecorder+warcio__example.warc.gz")
    again = run_job(IndexWarcsJob, ["--cdx-dir", str(tmp_path / "cdx"), str(manifest)], "inline")
    assert all(s["skipped"] for s in again)


def test_index_job_fail_mode_fails_the_task(tmp_path):
    bad = tmp_path / "bad.warc.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00 not really gzip")
    manifest = tmp_path / "warcs.txt"
    manifest.write_text(f"{bad}\n")
    with pytest.raises(Exception, match=rf"{bad}: offset 0: corrupt gzip"):
        run_job(IndexWarcsJob, ["--cdx-dir", str(tmp_path / "cdx"), "--on-error", "fail",
                                str(manifest)], "inline")
    assert not (tmp_path / "cdx" / "bad.cdx.gz").exists()


def test_sample_and_cluster_jobs_inline(tmp_path, corpus):
    out = tmp_path / "out"
    summary = build([str(corpus)], str(out), BuildOptions(shards=1, runner="inline"))
    cdx_files = [os.path.join(r, n) for r, _, f in os.walk(out / "cdx") for n in f]
    splits = run_job(SampleSplitsJob, ["--shards", "5", "--scaler", "3", "--splits-dir",
                                       str(tmp_path), *cdx_files], "inline")
    assert len(splits) == 4 and splits == sorted(set(splits))
    assert parse_splits((tmp_path / "splits.txt").read_text()) == splits
    assert read_text_keys(open(tmp_path / "splits.seq", "rb")) == splits
    stats = run_job(ZipClusterJob, ["--splits", str(tmp_path / "splits.txt"), "--shards", "5",
                                    "--lines-per-block", "7", "--cluster-dir", str(tmp_path / "c"),
                                    *cdx_files], "inline")
    assert sum(s["lines"] for s in stats) == summary.lines
    assert cluster_lines(tmp_path / "c") == all_lines(out)


def test_cluster_job_refuses_splits_for_another_shard_count(tmp_path):
    splits = tmp_path / "splits.txt"
    splits.write_text("b\nc\n")
    cdx = tmp_path / "a.cdx"
    cdx.write_text("a 1 {}\n")
    with pytest.raises(Exception, match="make 3 shards, not --shards 5"):
        run_job(ZipClusterJob, ["--splits", str(splits), "--shards", "5", "--cluster-dir",
                                str(tmp_path / "c"), str(cdx)], "inline")


# -- build ----------------------------------------------------------------------------------

@pytest.mark.parametrize("shards,per_block", [(1, 3000), (4, 40), (9, 17)])
def test_build_engines_are_identical_and_pywb_reads_them(tmp_path, corpus, shards, per_block):
    runs = {}
    for runner in ("inline", "mrjob", "local") if shards == 4 else ("inline",):
        out = tmp_path / runner
        summary = build([str(corpus)], str(out), BuildOptions(shards=shards,
                                                              lines_per_block=per_block,
                                                              runner=runner))
        assert summary.published and summary.shards == shards and not summary.errors
        runs[runner] = out
    out = runs["inline"]
    cluster = out / "cluster"
    assert sorted(os.listdir(cluster)) == ["build-00001", "cluster.idx", "cluster.loc", "cluster.root"]
    shard_names = sorted([f"cdx-{i:05d}.gz" for i in range(shards)] +
                         [f"part-{i:05d}" for i in range(shards)] + ["contents.json"])
    assert sorted(os.listdir(cluster / "build-00001")) == shard_names
    assert (cluster / "cluster.root").read_bytes() == root_index((cluster / "cluster.idx").read_bytes())
    lines = all_lines(out)
    assert cluster_lines(cluster) == lines and len(lines) > 300
    splits = parse_splits((out / "splits.txt").read_text())
    assert len(splits) == shards - 1
    for other in ("mrjob", "local"):
        if other not in runs:
            continue
        # the same bytes, cluster.loc too (its locations are relative)
        names = ["cluster.idx", "cluster.loc", "cluster.root"] + [f"build-00001/{n}" for n in shard_names]
        match, mismatch, errors = filecmp.cmpfiles(cluster, runs[other] / "cluster", names, shallow=False)
        assert mismatch == [] and errors == []
        assert (out / "splits.seq").read_bytes() == (runs[other] / "splits.seq").read_bytes()
    idx = (cluster / "cluster.idx").read_text().splitlines()
    assert [int(l.split("\t")[4]) for l in idx] == list(range(1, len(idx) + 1))
    assert {l.split("\t")[1] for l in idx} <= {f"build-00001/cdx-{i:05d}.gz" for i in range(shards)}
    loc = (cluster / "cluster.loc").read_text().splitlines()
    assert loc == [f"build-00001/cdx-{i:05d}.gz\tbuild-00001/cdx-{i:05d}.gz" for i in range(shards)]
    for url, match_type in queries(lines):
        start, end = (k.encode() for k in search_range(url, match_type))
        expected = [l for l in lines if start <= l < end]
        assert pywb_lookup(cluster / "cluster.idx", url, match_type) == expected, (url, match_type)


def queries(lines):
    keys = sorted({l.split(b" ", 1)[0].decode() for l in lines})
    hosts = sorted({k.split(")", 1)[0] for k in keys})
    picked = keys[:: max(1, len(keys) // 15)]
    out = [(",".join(reversed(k.split(")", 1)[0].split(","))) + k.split(")", 1)[1], "exact") for k in picked]
    for host in hosts[:: max(1, len(hosts) // 8)]:
        name = ".".join(reversed(host.split(",")))
        out += [(name, "host"), (name, "domain"), (name + "/", "prefix")]
    return out + [("com", "domain"), ("no-such-host.example", "exact"), ("aaaa.aa", "domain")]


def test_more_shards_than_lines_leaves_empty_shards(tmp_path):
    out = tmp_path / "out"
    summary = build([f"{REAL}/webrecorder+warcio__example.warc.gz"], str(out), BuildOptions(shards=5,
                                                                                            runner="inline"))
    sizes = [os.path.getsize(out / "cluster" / "build-00001" / f"cdx-{i:05d}.gz") for i in range(5)]
    assert summary.lines == 2 and sizes[0] > 0 and sizes[2:] == [0, 0, 0]
    assert pywb_lookup(out / "cluster" / "cluster.idx", "example.com", "domain") == all_lines(out)


def test_rebuild_is_byte_identical_and_skips_indexed_archives(tmp_path, corpus):
    out = tmp_path / "out"
    build([str(corpus)], str(out), BuildOptions(shards=3, lines_per_block=50, runner="inline"))
    first = cluster_files(out / "cluster")
    summary = build([str(corpus)], str(out), BuildOptions(shards=3, lines_per_block=50,
                                                          runner="inline"))
    assert summary.archives_skipped == summary.archives == 3
    # the same shards as build-00002, beside those of build-00001 (a reader of the index
    # it replaced still reads them); the index names the new build's
    second = cluster_files(out / "cluster")
    assert {n: d for n, d in second.items() if n.startswith("build-00002/")} == \
        {n.replace("build-00001", "build-00002"): d for n, d in first.items() if n.startswith("build-00001/")}
    assert {n: d for n, d in second.items() if n.startswith("build-00001/")} == \
        {n: d for n, d in first.items() if n.startswith("build-00001/")}
    assert second["cluster.idx"] == first["cluster.idx"].replace(b"build-00001/", b"build-00002/")
    assert second["cluster.loc"] == (first["cluster.loc"].replace(b"build-00001/", b"build-00002/")
                                     + first["cluster.loc"])
    # the next build removes build-00001
    build([str(corpus)], str(out), BuildOptions(shards=3, lines_per_block=50, runner="inline"))
    assert sorted(os.listdir(out / "cluster")) == ["build-00002", "build-00003", "cluster.idx",
                                                   "cluster.loc", "cluster.root"]


def bad_collection(tmp_path):
    warcs = tmp_path / "warcs"
    warcs.mkdir()
    shutil.copy(f"{REAL}/webrecorder+warcio__example.warc.gz", warcs / "good.warc.gz")
    shutil.copy(f"{REAL}/webrecorder+warcio__example-bad-non-chunked.warc.gz", warcs / "whole.warc.gz")
    data = open(f"{REAL}/iipc+webarchive-commons__IAH-urls-wget.warc.gz", "rb").read()
    (warcs / "cut.warc.gz").write_bytes(data[:20000])
    (warcs / "empty.warc").write_bytes(b"")
    return warcs


def test_on_error_fail_publishes_nothing_and_keeps_the_old_cluster(tmp_path):
    out = tmp_path / "out"
    build([f"{REAL}/webrecorder+warcio__example.warc.gz"], str(out), BuildOptions(runner="inline"))
    before = (out / "cluster" / "cluster.idx").read_bytes()
    # an archive a manifest lists that is not there is a problem of the input like the others
    manifest = tmp_path / "more.txt"
    manifest.write_text("missing.warc.gz\n")
    with pytest.raises(BuildFailed, match="4 problems in the input; no cluster was built") as failed:
        build([str(bad_collection(tmp_path)), str(manifest)], str(out), BuildOptions(runner="inline"))
    reasons = sorted((os.path.basename(e["file"]), e["offset"]) for e in failed.value.summary.errors)
    assert reasons == [("cut.warc.gz", 14426), ("empty.warc", 0), ("missing.warc.gz", 0), ("whole.warc.gz", 0)]
    assert (out / "cluster" / "cluster.idx").read_bytes() == before
    assert "errors" in (out / "errors.json").read_text()


@pytest.mark.parametrize("typo", ["warcs/", "warc/*.warc.gz"])
def test_an_input_that_names_nothing_is_refused_before_anything_is_written(tmp_path, capsys, typo,
                                                                          monkeypatch):
    """Issue 16 item 7: a typo'd input with --on-error skip published an empty cluster over
    a good one (exit 3)."""
    out = tmp_path / "out"
    build([f"{REAL}/webrecorder+warcio__example.warc.gz"], str(out), BuildOptions(runner="inline"))
    before = cluster_files(out)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "warcs").mkdir()  # exists, but "warcs/" lists no archive... only with a typo
    if typo == "warcs/":
        typo = "warcz/"
    code = cli.main(["build", typo, "-o", str(out), "--on-error", "skip", "--runner", "inline"])
    assert code == cli.EXIT_USAGE
    assert f"no such file, directory or archive: {typo} (nothing was written)" in capsys.readouterr().err
    assert cluster_files(out) == before
    # with a good input beside it too
    code = cli.main(["build", f"{REAL}/webrecorder+warcio__example.warc.gz", typo, "-o", str(out),
                     "--on-error", "skip", "--runner", "inline"])
    assert code == cli.EXIT_USAGE and cluster_files(out) == before


def test_nothing_readable_publishes_nothing(tmp_path, capsys):
    out = tmp_path / "out"
    build([f"{REAL}/webrecorder+warcio__example.warc.gz"], str(out), BuildOptions(runner="inline"))
    before = cluster_files(out / "cluster")
    (tmp_path / "bad.warc.gz").write_bytes(b"\x1f\x8b\x08\x00 not really gzip")
    code = cli.main(["build", str(tmp_path / "bad.warc.gz"), "-o", str(out), "--on-error", "skip",
                     "--runner", "inline"])
    assert code == cli.EXIT_FAILED
    assert "no input gave a CDX line: there is nothing to publish" in capsys.readouterr().err
    assert cluster_files(out / "cluster") == before


def test_on_error_skip_indexes_every_readable_record(tmp_path, capsys):
    warcs = bad_collection(tmp_path)
    out = tmp_path / "out"
    code = cli.main(["build", str(warcs), "-o", str(out), "--on-error", "skip", "--runner", "inline",
                     "--shards", "2"])
    assert code == cli.EXIT_PARTIAL
    err = capsys.readouterr().err
    assert f"error: {warcs}/cut.warc.gz: offset 14426: gzip member is truncated" in err
    assert "errors:   3" in err
    cut = [l for l in all_lines(out) if b'"filename": "cut.warc.gz"' in l]
    full = pywb_cdx(f"{REAL}/iipc+webarchive-commons__IAH-urls-wget.warc.gz", filename="cut.warc.gz")
    assert cut == sorted(l.encode() for l in full.splitlines(True) if int(l.split('"offset": "')[1].split('"')[0]) < 14426)
    assert len(cut) >= 5
    assert cluster_lines(out / "cluster") == all_lines(out)
    assert (out / "cdx" / "cut.cdx.gz.errors.json").exists()
    # a rerun does not trust the partial CDX of a file that had errors
    build([str(warcs)], str(out), BuildOptions(shards=2, runner="inline", on_error="skip"))


def test_splits_seq_read_by_hadoop_equals_splits_txt(tmp_path, corpus, spark):
    out = tmp_path / "out"
    build([str(corpus)], str(out), BuildOptions(shards=6, runner="inline"))
    text = parse_splits((out / "splits.txt").read_text())
    assert len(text) == 5
    assert [k for k, _ in spark.sequenceFile(str(out / "splits.seq")).collect()] == text
    partitions = [k for k, _ in spark.sequenceFile(str(out / "partitions.seq")).collect()]
    assert partitions == ["00001", "00002", "00003", "00004", "00005"]


def cluster_job_output(tmp_path, corpus, shards, per_block):
    """What the Hadoop flow leaves for finalize: a build's CDX files and split points, then
    the shards the cluster job wrote into ``job/cluster`` (those without lines written
    empty, as scripts/runzipcluster.sh does on the local runners); and that build."""
    out = tmp_path / "out"
    build([str(corpus)], str(out), BuildOptions(shards=shards, lines_per_block=per_block,
                                                runner="inline"))
    cdx_files = [os.path.join(r, n) for r, _, f in os.walk(out / "cdx") for n in f]
    cluster = tmp_path / "job" / "cluster"
    stats = run_job(ZipClusterJob, ["--splits", str(out / "splits.txt"), "--shards", str(shards),
                                    "--lines-per-block", str(per_block), "--cluster-dir",
                                    str(cluster), *cdx_files], "inline")
    for shard in set(range(shards)) - {s["shard"] for s in stats}:
        write_shard(shard, [], str(cluster))
    return cluster, out


def test_finalize_publishes_only_a_complete_cluster(tmp_path, corpus, capsys):
    cluster, out = cluster_job_output(tmp_path, corpus, 3, 30)
    # the job's cluster directory, or the directory holding it (issue 16 item 16)
    for given in (cluster, cluster.parent):
        assert cli.main(["finalize", str(given), "--shards", "3"]) == cli.EXIT_OK
        assert f"in {cluster}\n" in capsys.readouterr().err
        # the build's index, but naming the shards beside it; its .loc relative to itself
        assert (cluster / "cluster.idx").read_bytes() == \
            (out / "cluster" / "cluster.idx").read_bytes().replace(b"build-00001/", b"")
        assert (cluster / "cluster.loc").read_text().splitlines() == \
            [f"cdx-{i:05d}.gz\tcdx-{i:05d}.gz" for i in range(3)]
        (cluster / "cluster.idx").unlink()
    # where readers find the shards, if not beside the .loc
    assert cli.main(["finalize", str(cluster), "--shards", "3", "--location", "s3://b/c"]) == 0
    assert (cluster / "cluster.loc").read_text().splitlines() == \
        [f"cdx-{i:05d}.gz\ts3://b/c/cdx-{i:05d}.gz" for i in range(3)]
    (cluster / "cluster.idx").unlink()
    (cluster / "cdx-00001.gz").unlink()
    assert cli.main(["finalize", str(cluster.parent), "--shards", "3"]) == cli.EXIT_FAILED
    assert "shard 1 is incomplete" in capsys.readouterr().err
    assert not (cluster / "cluster.idx").exists()


# -- the command line ------------------------------------------------------------------------

def test_cli_build_query_and_cdx(tmp_path, capsys):
    out = tmp_path / "out"
    assert cli.main(["build", REAL + "/webrecorder+warcio__example.warc.gz",
                     REAL + "/iipc+webarchive-commons__IAH-urls-wget.warc.gz",
                     "-o", str(out), "--runner", "inline", "--no-progress"]) == cli.EXIT_OK
    err = capsys.readouterr().err
    assert "records:  42 read, 21 CDX lines" in err
    assert f"query it:  webarchive-index query {out} '*.example.com' --limit 10" in err
    assert cli.main(["query", str(out), "archive.org/images/*"]) == 0
    got = capsys.readouterr().out.splitlines()
    assert len(got) == 6 and all(l.startswith("org,archive)/images/") for l in got)
    assert cli.main(["query", str(out / "cluster" / "cluster.idx"), "*.archive.org", "--limit", "2"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 2
    assert cli.main(["cdx", REAL + "/webrecorder+warcio__example.arc", "--cdx-format", "cdx11"]) == 0
    assert capsys.readouterr().out == pywb_cdx(REAL + "/webrecorder+warcio__example.arc", "cdx11")


def test_cli_usage_errors(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["build", "x", "-o", str(tmp_path), "--shards", "0"])
    assert exit_.value.code == 2
    assert "expected a whole number of at least 1, got '0'" in capsys.readouterr().err
    assert cli.main(["build", str(tmp_path), "-o", str(tmp_path / "o")]) == cli.EXIT_USAGE
    assert "no WARC/ARC files" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
    for command in (["cdx"], ["cdx", "-o", str(tmp_path / "o")]):
        assert cli.main([*command, str(tmp_path / "missing.warc.gz")]) == cli.EXIT_USAGE
        assert "no such file, directory or archive: " in capsys.readouterr().err
        assert not (tmp_path / "o").exists()


def test_no_root_index(tmp_path, corpus):
    out = tmp_path / "out"
    build([str(corpus)], str(out), BuildOptions(shards=2, lines_per_block=40, runner="inline",
                                                root_index=False))
    assert not (out / "cluster" / "cluster.root").exists()
    # finalize with a root, then without: the older root goes rather than describe another index
    cluster, _ = cluster_job_output(tmp_path, corpus, 2, 40)
    finalize_cluster(str(cluster), 2)
    assert (cluster / "cluster.root").read_bytes() == root_index((cluster / "cluster.idx").read_bytes())
    assert cli.main(["finalize", str(cluster), "--shards", "2", "--no-root-index"]) == 0
    assert not (cluster / "cluster.root").exists() and (cluster / "cluster.idx").exists()
