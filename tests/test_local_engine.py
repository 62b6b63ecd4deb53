"""The local engine (engines/local_engine.py), the default of ``build``: byte-identical to
mrjob's inline runner and Spark from the same inputs; split points from elsewhere
(--splits); updates and removals byte-identical to full builds with the same split points."""
import filecmp
import glob
import gzip
import json
import os
import re
import shlex
import shutil
from pathlib import Path

import pytest

from webarchive_indexing.cdx import cdxmeta, splits
from webarchive_indexing import cli
from webarchive_indexing.build import contents, tasks
from webarchive_indexing.commands import corpus
from webarchive_indexing.storage import lock
from webarchive_indexing.commands.build import BuildFailed, build
from webarchive_indexing.engines.local_engine import archive_sample_size
from webarchive_indexing.inputs.discovery import InputError
from webarchive_indexing.options import BuildOptions, UsageError
from webarchive_indexing.zipnum.reader import Cluster

from test_spark import corpus as mixed  # noqa: F401  (a fixture)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLES = os.path.join(ROOT, "samples")


def run(inputs, out, **options):
    return build([str(i) for i in inputs], str(out), BuildOptions(progress=False, **options))


@pytest.fixture(scope="module")
def both(mixed, tmp_path_factory):
    """test_spark's corpus (2 WARC files and 1 ARC file, 362 CDX lines) and pywb's samples."""
    root = tmp_path_factory.mktemp("both")
    shutil.copytree(mixed, root / "corpus")
    shutil.copytree(SAMPLES, root / "samples")
    return root


def published(out):
    """``{name: bytes}`` of the cluster published in ``out``: the shards, part files and
    record of the build its index names, by their names, and its index and root with that
    build's directory left out of them (an update publishes in another build directory
    than a full build: the same bytes otherwise). Not the .loc, which also lists the
    shards of the build replaced."""
    cluster = Path(out) / "cluster"
    idx = (cluster / "cluster.idx").read_bytes()
    shard = idx.split(b"\n", 1)[0].split(b"\t")[1].decode() if idx else ""
    where = cluster / os.path.dirname(shard)
    files = {name: (where / name).read_bytes() for name in sorted(os.listdir(where))
             if (where / name).is_file() and not name.startswith("cluster.")}
    for name in ("cluster.idx", "cluster.root"):
        if (cluster / name).exists():
            files[name] = re.sub(rb"build-\d{5,}/", b"", (cluster / name).read_bytes())
    return files


def cluster_files(out):
    return sorted(published(out))


def assert_same_cluster(a, b, cdx=True):
    """The same cluster, split points and archives in ``a`` and ``b``; the same CDX files
    if ``cdx`` (after an update, ``b`` lists the archives in another order)."""
    files = published(a)
    assert "contents.json" in files and "cdx-00000.gz" in files
    assert sorted(files) == cluster_files(b)
    assert [name for name in files if files[name] != published(b)[name]] == []
    for name in ("splits.txt", "splits.seq", "partitions.seq"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    archives = [(out / "archives.txt").read_text().splitlines() for out in (a, b)]
    assert archives[0] == archives[1] if cdx else sorted(archives[0]) == sorted(archives[1])
    if cdx:
        cdx_files = sorted(os.path.relpath(os.path.join(r, n), a / "cdx")
                           for r, _, files in os.walk(a / "cdx") for n in files
                           if n.endswith(".cdx.gz"))
        _, mismatch, errors = filecmp.cmpfiles(a / "cdx", b / "cdx", cdx_files, shallow=False)
        assert cdx_files and mismatch == [] and errors == []


# -- the same clusters as the other engines ---------------------------------------------------

@pytest.mark.parametrize("shards,per_block,fmt,workers", [
    (1, 3000, "cdxj", 2), (4, 40, "cdx11", 2), (5, 1, "cdxj", 16), (30, 7, "cdxj", 3)])
def test_local_engine_equals_the_inline_runner(tmp_path, both, shards, per_block, fmt, workers):
    common = dict(shards=shards, lines_per_block=per_block, cdx_format=fmt)
    mr = run([both], tmp_path / "mrjob", runner="inline", **common)
    local = run([both], tmp_path / "local", workers=workers, **common)
    assert local.published and local.lines == mr.lines > 362 and local.shards == shards
    assert (local.blocks, local.cluster_bytes, local.records) == (mr.blocks, mr.cluster_bytes, mr.records)
    assert_same_cluster(tmp_path / "mrjob", tmp_path / "local")


def test_local_engine_equals_spark(tmp_path, both, spark):
    sp = run([both], tmp_path / "spark", runner="spark", spark_context=spark, shards=3,
             lines_per_block=25, cdx_bytes_per_task=1)
    local = run([both], tmp_path / "local", shards=3, lines_per_block=25, workers=2)
    assert local.lines == sp.lines
    assert_same_cluster(tmp_path / "spark", tmp_path / "local")


def test_the_fan_in_limit_with_many_small_archives(tmp_path):
    """Twenty archives merged two at a time (rounds of merges), on two workers."""
    corpus.make_corpus(tmp_path / "warcs", files=20, captures=6, seed=8)
    mr = run([tmp_path / "warcs"], tmp_path / "mrjob", shards=3, lines_per_block=4,
             runner="inline")
    local = run([tmp_path / "warcs"], tmp_path / "local", shards=3, lines_per_block=4,
                fan_in=2, workers=2)
    assert local.archives == 20 and local.lines == mr.lines
    assert_same_cluster(tmp_path / "mrjob", tmp_path / "local")


def test_reused_cdx_files_with_small_or_no_samples_give_the_same_split_points(tmp_path, both):
    out = tmp_path / "local"
    # indexed for 1 shard: each archive keeps a sample too small for 20 shards
    run([both], out, shards=1, workers=2)
    metas = [cdxmeta.read(str(p)) for p in out.rglob("*.cdx.gz")]
    assert {m["sample_size"] for m in metas} == {archive_sample_size(1, len(metas))}
    # and one made by mrjob, without a sample
    first = sorted(out.rglob("*.cdx.gz"))[0]
    cdxmeta.write(str(first), dict(cdxmeta.read(str(first)), sample_size=0, sample=[]))
    local = run([both], out, shards=20, lines_per_block=10, workers=2)
    assert local.archives_skipped == local.archives
    run([both], tmp_path / "mrjob", shards=20, lines_per_block=10, runner="inline")
    assert_same_cluster(tmp_path / "mrjob", out)


def test_archive_sample_size():
    assert archive_sample_size(1, 1) == 100
    assert archive_sample_size(300, 80000) == 4 + 64
    assert archive_sample_size(4, 80) == 84


# -- split points from elsewhere --------------------------------------------------------------

@pytest.mark.parametrize("source,shards", [("splits.txt", None), ("splits.seq", None),
                                           ("splits.txt", 3), ("cluster", None),
                                           ("cluster/cluster.idx", 5), ("", 2)])
def test_splits_from_a_file_or_a_cluster(tmp_path, both, source, shards):
    first = tmp_path / "first"
    run([both], first, shards=6, lines_per_block=20, workers=2)
    given = str(first / source)
    local = run([both], tmp_path / "local", splits=given, shards=shards, lines_per_block=20,
                workers=2)
    expected = len(splits.parse_splits((first / "splits.txt").read_text())) + 1 \
        if shards is None else shards
    assert local.shards == expected
    written = tasks.read_splits(str(tmp_path / "local" / "splits.txt"))
    assert len(written) == expected - 1
    if source.startswith("splits") and shards is None:
        assert written == tasks.read_splits(str(first / "splits.txt"))
    run([both], tmp_path / "mrjob", splits=given, shards=shards, lines_per_block=20,
        runner="inline")
    assert_same_cluster(tmp_path / "mrjob", tmp_path / "local")


def test_bad_splits_sources_are_named(tmp_path, both):
    # refused before anything is read or written
    with pytest.raises(UsageError, match="--splits: .*none.txt: no such file"):
        run([both], tmp_path / "out", splits=str(tmp_path / "none.txt"))
    (tmp_path / "two.txt").write_text("a\nb\n")
    with pytest.raises(UsageError, match="holds 2 split points: they make at most 3 shards, not 4"):
        run([both], tmp_path / "out", splits=str(tmp_path / "two.txt"), shards=4)
    (tmp_path / "one.txt").write_text("a\n")
    with pytest.raises(UsageError, match="holds 1 split point: they make at most 2 shards, not 3"):
        run([both], tmp_path / "out", splits=str(tmp_path / "one.txt"), shards=3)
    assert not (tmp_path / "out" / "cdx").exists()


# -- updates ------------------------------------------------------------------------------------

@pytest.fixture
def crawls(tmp_path):
    """Three crawls of archives, indexed into separate directories."""
    for number, files in ((1, 3), (2, 2), (3, 1)):
        corpus.make_corpus(tmp_path / f"crawl-{number}", files=files, captures=25, seed=number)
    return tmp_path


def cluster_lines(out):
    lines = []
    for name, data in published(out).items():
        if name.startswith("cdx-"):
            lines += gzip.decompress(data).splitlines() if data else []
    return lines


def test_updates_and_removals_equal_full_builds_with_the_same_split_points(crawls, tmp_path):
    out, splits_file = tmp_path / "out", str(tmp_path / "out" / "splits.txt")
    first = run([crawls / "crawl-1"], out, shards=4, lines_per_block=7, workers=2)
    before = published(out)["cdx-00000.gz"]

    update = run([crawls / "crawl-2", crawls / "crawl-3"], out, update=True, workers=2)
    assert (update.update.added, update.update.held, update.shards) == (3, 0, 4)
    run([crawls / f"crawl-{n}" for n in (1, 2, 3)], tmp_path / "full", splits=splits_file,
        lines_per_block=7, runner="inline")
    assert_same_cluster(tmp_path / "full", out, cdx=False)
    assert cluster_lines(out) != [] and published(out)["cdx-00000.gz"] != before

    # the same again, and archives it holds given again: nothing added, nothing changed,
    # nothing published again
    held, idx = published(out), (out / "cluster" / "cluster.idx").read_bytes()
    again = run([crawls / "crawl-1", crawls / "crawl-3"], out, update=True, workers=2)
    assert (again.update.added, again.update.replaced, again.update.held) == (0, 0, 4)
    assert not again.published and not again.update.published
    assert published(out) == held and (out / "cluster" / "cluster.idx").read_bytes() == idx

    # withdrawals: no INPUT needed; their CDX files go too
    removed = run([], out, update=True, remove=["CORPUS-002-*", "nothing*"],
                  allow_empty_remove=True, workers=2)
    assert removed.update.removed == 2 and removed.update.lines_removed > 0
    run([crawls / "crawl-1", crawls / "crawl-3"], tmp_path / "rest", splits=splits_file,
        lines_per_block=7, runner="inline")
    assert_same_cluster(tmp_path / "rest", out, cdx=False)
    assert not list((out / "cdx").glob("CORPUS-002-*"))
    assert len(list((out / "cdx").glob("CORPUS-001-*.cdx.gz"))) == 3
    record = json.loads(published(out)[contents.RECORD])
    assert sorted(record["archives"]) == sorted(os.listdir(crawls / "crawl-1")
                                                + os.listdir(crawls / "crawl-3"))[::2]
    assert first.shards == 4


def test_an_archive_changed_since_replaces_its_lines(crawls, tmp_path):
    out = tmp_path / "out"
    run([crawls / "crawl-1"], out, shards=2, lines_per_block=5, workers=2)
    # an archive that was still being written: cut after a whole record, then whole
    archive = sorted((crawls / "crawl-1").glob("*.warc.gz"))[1]
    data = archive.read_bytes()
    line = gzip.decompress((out / "cdx" / archive.name.replace(".warc.gz", ".cdx.gz"))
                           .read_bytes()).splitlines()[10]
    fields = json.loads(line.split(b" ", 2)[2])
    archive.write_bytes(data[:int(fields["offset"]) + int(fields["length"])])
    run([crawls / "crawl-1"], tmp_path / "cut", shards=2, lines_per_block=5, workers=2)
    shutil.copytree(tmp_path / "cut", tmp_path / "updated")
    archive.write_bytes(data)
    update = run([crawls / "crawl-1"], tmp_path / "updated", update=True, workers=2)
    assert (update.update.replaced, update.update.held, update.archives_reindexed) == (1, 2, 1)
    run([crawls / "crawl-1"], tmp_path / "full", lines_per_block=5, runner="inline",
        splits=str(tmp_path / "cut" / "splits.txt"))
    assert_same_cluster(tmp_path / "full", tmp_path / "updated", cdx=False)


def test_what_updates_refuse(crawls, tmp_path, capsys):
    out = str(tmp_path / "out")
    with pytest.raises(UsageError, match="there is no cluster in .* to update: build one first"):
        run([crawls / "crawl-1"], out, update=True)
    assert not os.path.exists(os.path.join(out, "cdx"))
    run([crawls / "crawl-1"], out, shards=2, workers=2)
    published = (tmp_path / "out" / "cluster" / "cluster.idx").read_bytes()
    for missing in ([tmp_path / "missing.warc.gz"], [crawls / "crawl-2", tmp_path / "missing.warc.gz"]):
        with pytest.raises(InputError, match="no such file, directory or archive: .*missing"):
            run(missing, out, update=True)
    # a manifest naming an archive that is not there: a problem of the input
    (tmp_path / "list.txt").write_text(f"{tmp_path / 'missing.warc.gz'}\n")
    with pytest.raises(BuildFailed, match="1 problems in the input; no cluster was built"):
        run([tmp_path / "list.txt"], out, update=True)
    assert (tmp_path / "out" / "cluster" / "cluster.idx").read_bytes() == published
    assert cli.main(["build", str(crawls / "crawl-2"), "-o", out, "--update", "--cdx-format",
                     "cdx11"]) == cli.EXIT_USAGE
    assert "--cdx-format cdx11, but the cluster in" in capsys.readouterr().err
    os.remove(os.path.join(out, "cluster", "build-00001", contents.RECORD))
    with pytest.raises(BuildFailed, match="no record of what it holds .* not built by `webarchive-index build`"):
        run([crawls / "crawl-2"], out, update=True)
    usage = [(["--remove", "x*"], "--remove goes with --update"),
             (["--update", "--shards", "3"], "leave out --shards"),
             (["--update", "--splits", "s.txt", "--lines-per-block", "9"],
              "leave out --splits, --lines-per-block"),
             (["--update", "--runner", "mrjob"], "--update runs on the local engine"),
             (["--update", "--parquet", str(tmp_path / "table")], "--parquet goes without --update"),
             (["--runner", "inline", "--workers", "2"], "--workers goes with --runner local"),
             (["--fan-in", "1"], "--fan-in must be at least 2"),
             (["--splits", str(tmp_path / "none.txt")], "--splits: ")]
    for args, message in usage:
        capsys.readouterr()
        assert cli.main(["build", str(crawls / "crawl-2"), "-o", out, *args]) == cli.EXIT_USAGE
        assert message in capsys.readouterr().err
    assert cli.main(["build", "-o", out, "--update"]) == cli.EXIT_USAGE
    assert "only --update --remove GLOB goes without" in capsys.readouterr().err
    with pytest.raises(UsageError):
        build([], out, BuildOptions(update=True))


def test_the_command_shows_each_phase_and_what_an_update_did(crawls, tmp_path, capsys):
    out = str(tmp_path / "out")
    assert cli.main(["build", str(crawls / "crawl-1"), "-o", out, "--shards", "2",
                     "--workers", "2", "--no-progress"]) == cli.EXIT_OK
    err = capsys.readouterr().err
    for step in ("[1/3] indexing 3 archives", "[2/3] sampling split points for 2 shards",
                 "  merging 3 CDX files into 2 sorted runs", "[3/3] writing 2 shards",
                 "cluster:  2 shards"):
        assert step in err, err
    assert cli.main(["build", str(crawls / "crawl-2"), "-o", out, "--update", "--remove",
                     "CORPUS-001-00000*", "--no-progress"]) == cli.EXIT_OK
    err = capsys.readouterr().err
    for step in ("[1/3] indexing 2 archives", "[2/3] the cluster's split points and lines per "
                 "block: 2 shards, 3000 lines a block", "[3/3] updating the 2 shards: 2 CDX "
                 "files merged in", "update:   2 archives added, 0 replaced (indexed again), 0 "
                 "already in the cluster; 1 removed (", "cluster:  2 shards (0 copied unchanged)"):
        assert step in err, err
    # a removal alone: no archive read, so no line about archives; counts in the singular
    assert cli.main(["build", "-o", out, "--update", "--remove", "CORPUS-002-00000*",
                     "--no-progress"]) == cli.EXIT_OK
    err = capsys.readouterr().err
    for step in ("[3/3] updating the 2 shards: the lines of 1 archive taken out",
                 "update:   0 archives added, 0 replaced (indexed again), 0 already in the "
                 "cluster; 1 removed ("):
        assert step in err, err
    assert "archives:" not in err and "merged in" not in err
    # index inputs alone: what was read is the indexes' line
    cdx_file = next(path for path in glob.glob(os.path.join(out, "cdx", "**", "*.cdx.gz"),
                                               recursive=True))
    assert cli.main(["build", cdx_file, "-o", str(tmp_path / "again"), "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "[1/3] reading 1 index input\n" in err and "  merging 1 index input into 1 sorted run\n" in err
    assert "indexes:  1 read" in err and "archives:" not in err, err


def documented_commands(path):
    """The command lines of the code blocks of a document."""
    commands, inside = [], False
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("```"):
                inside = not inside
            elif inside and line.startswith("webarchive-index "):
                commands.append(shlex.split(line))
    return commands


def test_the_commands_of_docs_local_engine_run_as_written(tmp_path, monkeypatch):
    corpus.make_corpus(tmp_path / "warcs", files=2, captures=30, seed=1)
    corpus.make_corpus(tmp_path / "new-warcs", files=1, captures=30, seed=2)
    monkeypatch.chdir(tmp_path)
    commands = documented_commands(os.path.join(ROOT, "docs", "local-engine.md"))
    assert len(commands) == 7
    for command in commands:
        assert cli.main(command[1:] + ["--no-progress"]) == cli.EXIT_OK, command
    # added, then removed again: the first build's cluster, as mrjob's runner builds it
    assert_same_cluster(tmp_path / "with-mrjob", tmp_path / "out")
    # from the first build's CDX files: the same lines
    assert cluster_lines(tmp_path / "from-cdx") == cluster_lines(tmp_path / "with-mrjob")
    assert len(cluster_lines(tmp_path / "again")) > len(cluster_lines(tmp_path / "out"))
    assert len(tasks.read_splits(str(tmp_path / "other" / "splits.txt"))) == 1


# -- index inputs --------------------------------------------------------------------------------

@pytest.fixture
def cdx_inputs(crawls, tmp_path):
    """The crawls' archives indexed into CDX files (``cdx -o``): crawl-1 as they are; one
    of crawl-2 unsorted, another as two gzip members."""
    for number in (1, 2):
        assert cli.main(["cdx", str(crawls / f"crawl-{number}"), "-o",
                         str(tmp_path / f"cdx-{number}")]) == cli.EXIT_OK
    first, second = sorted((tmp_path / "cdx-2").glob("*.cdx.gz"))
    lines = gzip.decompress(first.read_bytes()).splitlines(True)
    first.write_bytes(gzip.compress(b"".join(lines[::2] + lines[1::2])))
    lines = gzip.decompress(second.read_bytes()).splitlines(True)
    second.write_bytes(gzip.compress(b"".join(lines[:5])) + gzip.compress(b"".join(lines[5:])))
    for path in tmp_path.glob("cdx-*/*.meta.json"):
        path.unlink()  # index inputs are CDX files of their own, with no record
    return tmp_path / "cdx-1", tmp_path / "cdx-2"


def test_index_inputs_on_the_local_engine_equal_the_jobs(cdx_inputs, tmp_path, capsys):
    inputs = [str(directory) for directory in cdx_inputs]
    run(inputs, tmp_path / "mrjob", shards=3, lines_per_block=6, runner="inline")
    local = run(inputs, tmp_path / "local", splits=str(tmp_path / "mrjob" / "splits.txt"),
                lines_per_block=6, workers=2, fan_in=2)
    assert local.indexes == 5 and local.index_lines > 100 and not local.errors
    assert [w["message"].startswith("not sorted") for w in local.warnings] == [True]
    assert_same_cluster(tmp_path / "mrjob", tmp_path / "local", cdx=False)
    # sampled on its own: other split points, the same lines
    run(inputs, tmp_path / "sampled", shards=3, lines_per_block=6, workers=2)
    assert cluster_lines(tmp_path / "sampled") == cluster_lines(tmp_path / "local")


def test_updates_with_index_inputs(cdx_inputs, tmp_path):
    first, second = (str(directory) for directory in cdx_inputs)
    out, splits_file = tmp_path / "out", str(tmp_path / "out" / "splits.txt")
    run([first], out, shards=3, lines_per_block=6, workers=2)
    update = run([second], out, update=True, workers=2)
    assert (update.update.indexes_added, update.index_lines > 0) == (2, True)
    run([first, second], tmp_path / "full", splits=splits_file, lines_per_block=6,
        runner="inline")
    assert_same_cluster(tmp_path / "full", out, cdx=False)
    # given again: not added again
    held = published(out)
    again = run([second], out, update=True, workers=2)
    assert (again.update.indexes_added, again.update.indexes_held) == (0, 2)
    assert [w["message"] for w in again.warnings] == ["already in the cluster: not added again"] * 2
    assert published(out) == held
    # the lines of an archive they name, taken out
    removed = run([], out, update=True, remove=["CORPUS-001-00001.warc.gz"], workers=2)
    assert removed.update.lines_removed > 0 and removed.update.removed == 0
    assert not [line for line in cluster_lines(out) if b"CORPUS-001-00001.warc.gz" in line]
    assert len(cluster_lines(out)) == len(cluster_lines(tmp_path / "full")) - \
        removed.update.lines_removed


def test_a_malformed_line_in_an_update_fails_it(cdx_inputs, tmp_path):
    first, _ = cdx_inputs
    out = tmp_path / "out"
    run([first], out, shards=2, workers=2)
    published = (out / "cluster" / "cluster.idx").read_bytes()
    (tmp_path / "bad.cdxj").write_bytes(b'com,example)/ 20240101000000 {"url": "x", "offset": "0", "length": "1"}\nnot a line\n')
    with pytest.raises(BuildFailed, match="1 problems in the input"):
        run([tmp_path / "bad.cdxj"], out, update=True, workers=2)
    assert (out / "cluster" / "cluster.idx").read_bytes() == published
    errors = json.loads((out / "errors.json").read_text())["errors"]
    assert [(os.path.basename(e["file"]), e["line"]) for e in errors] == [("bad.cdxj", 2)]


def test_an_update_takes_the_lock_and_publishes_as_builds_do(crawls, tmp_path):
    out = tmp_path / "out"
    run([crawls / "crawl-1"], out, shards=2, workers=2)
    cluster = out / "cluster"
    old_idx = (cluster / "cluster.idx").read_bytes()
    old_lines = list(Cluster(cluster / "cluster.idx").lookup_range(b"", b"~"))
    with lock.hold(str(out), "build"):
        with pytest.raises(lock.Busy, match="is being written by 'webarchive-index build'"):
            run([crawls / "crawl-2"], out, update=True)
        with pytest.raises(lock.Busy):
            run([], out, update=True, remove=["CORPUS-001-*"])
    assert (cluster / "cluster.idx").read_bytes() == old_idx
    run([crawls / "crawl-2"], out, update=True, workers=2)
    idx = (cluster / "cluster.idx").read_bytes()
    assert b"\tbuild-00002/cdx-00000.gz\t" in idx and b"build-00001/" not in idx
    # the replaced build stays for the readers of the index they loaded; the .loc names both
    (cluster / "old.idx").write_bytes(old_idx)
    assert list(Cluster(cluster / "old.idx").lookup_range(b"", b"~")) == old_lines
    loc = (cluster / "cluster.loc").read_text().splitlines()
    assert loc[:2] == [f"build-00002/cdx-{i:05d}.gz\tbuild-00002/cdx-{i:05d}.gz" for i in range(2)]
    assert loc[2:] == [f"build-00001/cdx-{i:05d}.gz\tbuild-00001/cdx-{i:05d}.gz" for i in range(2)]
    # the next update replaces that one; the oldest goes
    run([], out, update=True, remove=["CORPUS-002-*"], workers=2)
    assert sorted(p.name for p in cluster.glob("build-*")) == ["build-00002", "build-00003"]
    assert not (out / lock.LOCK_NAME).exists()


def test_work_directories_of_killed_builds_are_removed(crawls, tmp_path):
    """A killed build leaves its runs in its work directory: the next engine to work there
    removes those of processes that are gone, and no other."""
    import subprocess
    import sys
    work = tmp_path / "work"
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    names = [f"webarchive-index-{gone}-x1", f"webarchive-index-{os.getpid()}-x2", "other"]
    for name in names:
        (work / name).mkdir(parents=True)
        (work / name / "run-000000.run").write_bytes(b"a 1 {}\n")
    run([crawls / "crawl-3"], tmp_path / "out", work_dir=str(work), workers=2)
    assert sorted(os.listdir(work)) == sorted(names[1:])
