"""The Spark build (webarchive_indexing.engines.spark_engine, jobs/spark_build.py) on a real local[2] Spark:
byte-identical to the mrjob local runner's build of the same input.

The Spark context is conftest's session ``spark`` fixture (local[2]; one context
per process, shared with the SequenceFile tests).
"""
import filecmp
import gzip
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from webarchive_indexing.cdx import indexer
from webarchive_indexing.commands import corpus as corpus_mod
from webarchive_indexing.commands.build import BuildFailed, build
from webarchive_indexing.engines.spark_engine import group_files, read_cdx_lines, write_cluster
from webarchive_indexing.options import BuildOptions
from webarchive_indexing.inputs.discovery import InputError
from webarchive_indexing.cdx.splits import parse_splits
from webarchive_indexing.build.tasks import finalize_cluster

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
def _by_file(problems):
    return sorted(problems, key=lambda p: (p["file"], p["offset"], json.dumps(p, sort_keys=True)))


SUMMARY_FIELDS = ("archives", "archives_skipped", "records", "lines", "input_bytes", "shards",
                  "blocks", "cluster_bytes", "errors", "warnings", "published")


def _drop_manifests(directory):
    for name in os.listdir(directory):
        if name.endswith(".jsonl"):
            os.remove(os.path.join(directory, name))


@pytest.fixture(scope="module")
def sc(spark):
    assert spark.master == "local[2]"
    return spark


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """2 WARC files and 1 ARC file of 120 captures each (362 CDX lines)."""
    root = tmp_path_factory.mktemp("corpus")
    corpus_mod.make_corpus(root / "seg-a", files=2, captures=120, seed=21)
    corpus_mod.make_corpus(root / "seg-b", files=1, captures=120, seed=22, fmt="arc")
    _drop_manifests(root / "seg-a")
    _drop_manifests(root / "seg-b")
    return root


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A WARC and an ARC file with 5 CDX lines between them: fewer lines than shards."""
    root = tmp_path_factory.mktemp("tiny")
    corpus_mod.make_corpus(root / "w", files=1, captures=3, seed=5)
    corpus_mod.make_corpus(root / "a", files=1, captures=2, seed=6, fmt="arc")
    _drop_manifests(root / "w")
    _drop_manifests(root / "a")
    return root


def cluster_files(out):
    """The files of a build's cluster/, by their paths relative to it."""
    cluster = os.path.join(out, "cluster")
    return sorted(os.path.relpath(os.path.join(r, n), cluster)
                  for r, _, files in os.walk(cluster) for n in files)


def assert_same_build(mr_out, spark_out, mr, sp):
    """Both builds wrote the same bytes."""
    names = cluster_files(mr_out)
    assert names == cluster_files(spark_out) and "cluster.loc" in names
    _, mismatch, errors = filecmp.cmpfiles(mr_out / "cluster", spark_out / "cluster", names, shallow=False)
    assert mismatch == [] and errors == []
    for name in ("splits.txt", "splits.seq", "partitions.seq", "archives.txt"):
        assert (mr_out / name).read_bytes() == (spark_out / name).read_bytes(), name
    cdx_files = sorted(os.path.relpath(os.path.join(r, n), mr_out / "cdx")
                       for r, _, files in os.walk(mr_out / "cdx") for n in files)
    _, mismatch, errors = filecmp.cmpfiles(mr_out / "cdx", spark_out / "cdx", cdx_files, shallow=False)
    assert cdx_files and mismatch == [] and errors == []
    for field in SUMMARY_FIELDS:
        # the mrjob build lists problems in the order its runner's map tasks output them;
        # the Spark build in input order
        key = _by_file if field in ("errors", "warnings") else (lambda value: value)
        assert key(getattr(mr, field)) == key(getattr(sp, field)), field
    assert sp.out_dir == str(spark_out) and sp.seconds > 0


def split_lines(data):
    """Lines ending at b"\\n" only (bytes.splitlines also splits at b"\\r")."""
    return [line + b"\n" for line in data.split(b"\n")[:-1]]


def shard_lines(out):
    lines = []
    for name in cluster_files(out):
        if os.path.basename(name).startswith("cdx-"):
            data = (out / "cluster" / name).read_bytes()
            lines += split_lines(gzip.decompress(data)) if data else []
    return lines


# -- whole builds, compared with mrjob's local runner -----------------------------------------

@pytest.mark.parametrize("data,shards,per_block,fmt,tasks", [
    ("corpus", 1, 3000, "cdxj", {}),
    # one CDX file per sampling/cluster task and one archive per indexing task: 3 partitions
    ("corpus", 4, 40, "cdx11", {"cdx_bytes_per_task": 1}),
    ("tiny", 12, 2, "cdxj", {"archives_per_task": 2, "cdx_bytes_per_task": 1}),
], ids=["corpus-1-shard", "corpus-4-shards-cdx11", "tiny-12-shards-empty"])
def test_spark_build_is_byte_identical_to_the_mrjob_build(request, tmp_path, sc, data, shards,
                                                         per_block, fmt, tasks):
    inputs = [str(request.getfixturevalue(data))]
    mr = build(inputs, str(tmp_path / "mrjob"), BuildOptions(shards=shards,
                                                             lines_per_block=per_block,
                                                             cdx_format=fmt, runner="mrjob"))
    sp = build(inputs, str(tmp_path / "spark"), BuildOptions(runner="spark", spark_context=sc,
                                                             shards=shards,
                                                             lines_per_block=per_block,
                                                             cdx_format=fmt, **tasks))
    assert sp.published and sp.shards == shards and not sp.errors
    assert_same_build(tmp_path / "mrjob", tmp_path / "spark", mr, sp)
    lines = shard_lines(tmp_path / "spark")
    assert lines == sorted(lines) and len(lines) == sp.lines
    assert len(parse_splits((tmp_path / "spark" / "splits.txt").read_text())) == shards - 1
    sizes = [os.path.getsize(tmp_path / "spark" / "cluster" / "build-00001" / f"cdx-{i:05d}.gz")
             for i in range(shards)]
    if data == "tiny":
        # 5 lines in 12 shards: the split points are 4 real lines then padding
        assert sp.lines == 5 and all(sizes[:5]) and sizes[5:] == [0] * 7
    else:
        assert sp.lines == 362 and all(sizes)


def test_rebuild_skips_indexed_archives_and_is_identical(tmp_path, sc, corpus):
    out = tmp_path / "out"
    build([str(corpus)], str(out), BuildOptions(runner="spark", spark_context=sc, shards=3,
                                                lines_per_block=50))
    first = {n: (out / "cluster" / n).read_bytes() for n in cluster_files(out)}
    again = build([str(corpus)], str(out), BuildOptions(runner="spark", spark_context=sc, shards=3,
                                                        lines_per_block=50))
    assert again.archives == again.archives_skipped == 3 and again.lines == 0
    # the same shards, as build-00002; the index names them
    second = {n: (out / "cluster" / n).read_bytes() for n in cluster_files(out)}
    assert {n.replace("build-00002", "build-00001"): d for n, d in second.items()
            if n.startswith("build-00002/")} == {n: d for n, d in first.items() if "/" in n}
    assert second["cluster.idx"] == first["cluster.idx"].replace(b"build-00001/", b"build-00002/")


# -- bad input --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def bad(tmp_path_factory):
    """good.warc.gz, cut.warc.gz (the same file cut inside a record), whole.warc.gz
    (whole-file gzip), empty.warc; and the offset at which cut.warc.gz breaks."""
    work = tmp_path_factory.mktemp("bad")
    warcs = work / "warcs"
    [good] = corpus_mod.make_corpus(work / "gen", files=1, captures=40, seed=31)
    [plain] = corpus_mod.make_corpus(work / "plain", files=1, captures=5, seed=32, gzip=False)
    records = corpus_mod.read_manifest(good)
    broken = next(r for r in records[len(records) // 2:] if r["warc_type"] == "response")
    cut_at = broken["offset"] + broken["length"] // 2
    warcs.mkdir()
    shutil.copy(good, warcs / "good.warc.gz")
    (warcs / "cut.warc.gz").write_bytes(pathlib.Path(good).read_bytes()[:cut_at])
    (warcs / "whole.warc.gz").write_bytes(gzip.compress(pathlib.Path(plain).read_bytes()))
    (warcs / "empty.warc").write_bytes(b"")
    return warcs, broken["offset"], good


def test_on_error_skip_keeps_readable_records_like_the_mrjob_build(tmp_path, sc, bad):
    warcs, broken_at, original = bad
    (tmp_path / "more.txt").write_text("missing.warc.gz\n")  # listed, not there: a problem
    inputs = [str(warcs), str(tmp_path / "more.txt")]
    mr = build(inputs, str(tmp_path / "mrjob"), BuildOptions(shards=3, lines_per_block=20,
                                                             runner="mrjob", on_error="skip"))
    sp = build(inputs, str(tmp_path / "spark"), BuildOptions(runner="spark", spark_context=sc,
                                                             shards=3, lines_per_block=20,
                                                             on_error="skip"))
    assert sp.published
    assert_same_build(tmp_path / "mrjob", tmp_path / "spark", mr, sp)
    reports = [json.loads((tmp_path / out / "errors.json").read_text()) for out in ("mrjob", "spark")]
    assert [_by_file(r["errors"]) for r in reports] == [_by_file(sp.errors)] * 2
    assert [r["warnings"] for r in reports] == [[], []]
    reasons = sorted((os.path.basename(e["file"]), e["offset"]) for e in sp.errors)
    assert reasons == [("cut.warc.gz", broken_at), ("empty.warc", 0), ("missing.warc.gz", 0),
                       ("whole.warc.gz", 0)]
    # the cut file's records before the broken one are in the cluster, nothing after
    full = indexer.index_file(str(original), "cut.warc.gz").lines
    kept = [l for l in full if int(json.loads(l.split(" ", 2)[2])["offset"]) < broken_at]
    assert 5 <= len(kept) < len(full)
    in_cluster = [l for l in shard_lines(tmp_path / "spark") if b'"filename": "cut.warc.gz"' in l]
    assert in_cluster == sorted(l.encode() for l in kept)
    assert (tmp_path / "spark" / "cdx" / "cut.cdx.gz.errors.json").exists()


def test_on_error_fail_publishes_nothing_and_keeps_the_old_cluster(tmp_path, sc, bad, tiny):
    warcs, _, _ = bad
    out = tmp_path / "out"
    build([str(tiny)], str(out), BuildOptions(runner="spark", spark_context=sc, shards=2))
    before = {n: (out / "cluster" / n).read_bytes() for n in cluster_files(out)}
    with pytest.raises(BuildFailed, match="3 problems in the input; no cluster was built") as failed:
        build([str(warcs)], str(out), BuildOptions(runner="spark", spark_context=sc, shards=2))
    assert failed.value.summary.archives == 4 and not failed.value.summary.published
    assert {n: (out / "cluster" / n).read_bytes() for n in cluster_files(out)} == before
    assert "cut.warc.gz" in (out / "errors.json").read_text()
    assert not [n for n in os.listdir(out) if n.startswith(".cluster-")]


def test_no_archives_is_refused(tmp_path, sc):
    with pytest.raises(InputError, match="no WARC/ARC files"):
        build([str(tmp_path)], str(tmp_path / "out"), BuildOptions(runner="spark", spark_context=sc))


# -- S3 (moto's server on 127.0.0.1) ----------------------------------------------------------

@pytest.fixture
def s3(sc):
    """The S3 server of test_s3_build.py, for this process and for Spark's Python workers,
    whose environment is the JVM's (from before the server) plus ``sc.environment``."""
    import s3server
    if any(name in os.environ for name in s3server.CLEARED):
        pytest.skip("an AWS variable that the Python workers would inherit is set")
    with s3server.running():
        saved = dict(sc.environment)
        sc.environment.update({n: v for n, v in os.environ.items() if n.startswith("AWS_")})
        try:
            yield s3server
        finally:
            sc.environment.clear()
            sc.environment.update(saved)


def test_s3_build_equals_the_mrjob_s3_build(tmp_path, sc, corpus, s3):
    bucket = s3.new_bucket()
    s3.upload_tree(corpus, bucket + "/crawl")
    inputs = [bucket + "/crawl/"]
    mr = build(inputs, bucket + "/mrjob", BuildOptions(shards=3, lines_per_block=40,
                                                       runner="inline"))
    sp = build(inputs, bucket + "/spark", BuildOptions(runner="spark", spark_context=sc, shards=3,
                                                       lines_per_block=40, cdx_bytes_per_task=1))
    assert sp.published and sp.lines == 362
    for field in SUMMARY_FIELDS:
        assert getattr(mr, field) == getattr(sp, field), field
    got = {out: s3.objects(f"{bucket}/{out}") for out in ("mrjob", "spark")}
    # everything but the cluster, byte for byte
    outside = sorted(n for n in got["mrjob"] if not n.startswith("cluster/"))
    assert outside == sorted(n for n in got["spark"] if not n.startswith("cluster/"))
    assert all(got["mrjob"][n] == got["spark"][n] for n in outside)
    # the cluster too
    assert all(got["mrjob"][n] == got["spark"][n] for n in got["mrjob"] if n.startswith("cluster/"))
    assert len(got["spark"]) == len(got["mrjob"])


# -- the cluster step alone: byte order, duplicates, odd characters ----------------------------

def test_cluster_step_sorts_by_utf8_bytes_and_keeps_duplicates(tmp_path, sc):
    # U+FF5E sorts before U+1F600 in UTF-8 (and code point) order, after it in UTF-16 order
    lines = ["com,example)/\uff5e 20240101000000 {}", "com,example)/\U0001f600 20240101000000 {}",
             "com,example)/a 20240101000000 {\"x\": \"a\rb\"}", "com,example)/caf\u00e9 20240101000000 {}",
             "com,example)/a 20240101000000 {}", "com,example)/a 20240101000000 {}",
             "org,example)/z 20240101000000 {}", "com,example)/\x7f 20240101000000 {}"]
    (tmp_path / "a.cdx.gz").write_bytes(gzip.compress(("\n".join(lines[:4]) + "\n").encode()))
    (tmp_path / "b.cdx").write_bytes((" CDX N b a\n\n" + "\r\n".join(lines[4:]) + "\r\n").encode())
    files = [str(tmp_path / "a.cdx.gz"), str(tmp_path / "b.cdx")]
    assert [l for f in files for l in read_cdx_lines(f)] == lines
    assert group_files(files, 1) == [[f] for f in files] and group_files(files) == [files]
    splits = ["com,example)/b", "com,example)/\uffff"]
    stats = write_cluster(sc, files, splits, 3, str(tmp_path / "c"), lines_per_block=2,
                          cdx_bytes_per_task=1)
    assert [stats[i]["lines"] for i in range(3)] == [3, 3, 2]
    finalize_cluster(str(tmp_path / "c"), 3, stats)
    got = []
    for i in range(3):
        got += split_lines(gzip.decompress((tmp_path / "c" / f"cdx-{i:05d}.gz").read_bytes()))
    assert got == sorted(l.encode() + b"\n" for l in lines)
    # shard 2 (from U+FFFF on) starts with U+1F600: by UTF-16 order it would be in shard 1
    assert got[5:7] == ["com,example)/\uff5e 20240101000000 {}\n".encode(),
                        "com,example)/\U0001f600 20240101000000 {}\n".encode()]
    with pytest.raises(ValueError, match="2 split points make 3 shards, not 4"):
        write_cluster(sc, files, splits, 4, str(tmp_path / "d"))


# -- spark-submit ------------------------------------------------------------------------------

def test_spark_submit_entry_script(tmp_path, bad):
    """jobs/spark_build.py under spark-submit (its own JVM, local[2]): exit status 3, the
    summary, and the same cluster as the mrjob build."""
    warcs, _, _ = bad
    spark_submit = os.path.join(os.path.dirname(sys.executable), "spark-submit")
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    args = [str(warcs), "--shards", "3", "--lines-per-block", "20", "--on-error", "skip",
            "--no-progress"]
    done = subprocess.run([spark_submit, "--master", "local[2]", "--conf", "spark.ui.enabled=false",
                           "--conf", "spark.ui.showConsoleProgress=false",
                           os.path.join(ROOT, "jobs", "spark_build.py"), *args,
                           "-o", str(tmp_path / "submitted")],
                          check=False, env=env, capture_output=True, text=True,
                          timeout=300)
    # spark-submit passes on the Python driver's stderr as its own stdout
    said = done.stdout + done.stderr
    assert done.returncode == 3, said[-3000:]
    assert "errors:   3" in said and "cluster:  3 shards" in said
    reference = build(args[:1], str(tmp_path / "mrjob"), BuildOptions(shards=3, lines_per_block=20,
                                                                      runner="inline",
                                                                      on_error="skip"))
    for error in reference.errors:
        assert f"error: {error['file']}: offset {error['offset']}: {error['reason']}\n" in said
    assert f"records:  {reference.records} read, {reference.lines} CDX lines" in said
    names = cluster_files(tmp_path / "mrjob")
    assert cluster_files(tmp_path / "submitted") == names
    _, mismatch, errors = filecmp.cmpfiles(tmp_path / "mrjob" / "cluster",
                                           tmp_path / "submitted" / "cluster", names, shallow=False)
    assert mismatch == [] and errors == []


def test_entry_script_in_process_uses_the_active_context(tmp_path, sc, tiny, capsys):
    from webarchive_indexing.jobs import spark_build
    out = tmp_path / "out"
    assert spark_build.main([str(tiny), "-o", str(out), "--shards", "2", "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "records:  13 read, 5 CDX lines" in err and "cluster:  2 shards" in err
    assert f"query it:  webarchive-index query {out}" in err
    assert sc.parallelize([1, 2]).sum() == 3     # not stopped: it was not made there
    (tmp_path / "nothing").mkdir()
    assert spark_build.main([str(tmp_path / "nothing"), "-o", str(out)]) == 2
    assert "no WARC/ARC files" in capsys.readouterr().err


def test_entry_script_usage_errors(capsys):
    from webarchive_indexing.jobs import spark_build
    with pytest.raises(SystemExit) as exit_:
        spark_build.main(["x", "-o", "y", "--shards", "0"])
    assert exit_.value.code == 2
    assert "expected a whole number of at least 1, got '0'" in capsys.readouterr().err
    opts = spark_build.parser().parse_args(["in", "-o", "out", "--no-skip-existing",
                                            "--input-root", "/r", "--cdx-format", "cdx11"])
    assert (opts.skip_existing, opts.input_root, opts.cdx_format, opts.shards) == \
        (False, ["/r"], "cdx11", None)  # None: 1, or as many as --splits makes


def test_entry_script_takes_split_points_from_elsewhere(tmp_path, sc, tiny):
    from webarchive_indexing.jobs import spark_build
    (tmp_path / "splits.txt").write_text("m\n")
    out = tmp_path / "out"
    assert spark_build.main([str(tiny), "-o", str(out), "--splits", str(tmp_path / "splits.txt"),
                             "--no-progress"]) == 0
    assert (out / "splits.txt").read_text() == "m\n" and len(cluster_files(out)) == 2 * 2 + 4


def test_cli_build_runner_spark(tmp_path, sc, tiny, capsys):
    from webarchive_indexing import cli
    args = [str(tiny), "--shards", "2", "--lines-per-block", "2", "--no-progress"]
    assert cli.main(["build", *args, "-o", str(tmp_path / "spark"), "--runner", "spark"]) == 0
    assert cli.main(["build", *args, "-o", str(tmp_path / "inline"), "--runner", "inline"]) == 0
    assert "cluster:  2 shards" in capsys.readouterr().err
    assert sc.parallelize([1]).count() == 1     # the active context is not stopped
    names = cluster_files(tmp_path / "inline")
    _, mismatch, errors = filecmp.cmpfiles(tmp_path / "inline" / "cluster",
                                           tmp_path / "spark" / "cluster", names, shallow=False)
    assert mismatch == [] and errors == [] and "cluster.idx" in names
    assert cli.main(["build", *args, "-o", str(tmp_path / "x"), "--spark-master", "local[1]"]) == 2
