"""``build --parquet`` and ``build --cdx-fields cc`` on every engine: the table written by
the cluster job's tasks from the shards' own lines is the table ``export --format
parquet`` makes of the cluster published (the same files, byte for byte), and Common
Crawl's fields reach the cluster's lines through each engine.
"""
import os

import pytest

import s3server
from tables import (CC_LAYOUT, assert_same_tables, export_table, lay_out_cc_excerpts, table_files,
                    table_rows)
from webarchive_indexing.cdx import indexer
from webarchive_indexing import engines
from webarchive_indexing.zipnum import layout
from webarchive_indexing.commands import corpus as corpus_mod
from webarchive_indexing.commands.build import build
from webarchive_indexing.cli import main
from webarchive_indexing.inputs.indexes import ZipNumCluster
from webarchive_indexing.zipnum.places import cluster_index
from webarchive_indexing.options import BuildOptions, UsageError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# a build's table options, and the same for the export it is compared with
TABLE = {"row_group_rows": 40, "parquet_compression": "zstd"}


@pytest.fixture(scope="module")
def archives(tmp_path_factory):
    """Real Common Crawl excerpts under crawl-data paths, a wget archive and a generated
    corpus (2 WARC files, 1 ARC file)."""
    root = lay_out_cc_excerpts(tmp_path_factory.mktemp("archives"))
    corpus_mod.make_corpus(root / "gen", files=2, captures=100, seed=41)
    corpus_mod.make_corpus(root / "gen", files=1, captures=60, seed=42, fmt="arc")
    for name in os.listdir(root / "gen"):
        if name.endswith(".jsonl"):
            os.remove(root / "gen" / name)
    return root


def cluster_lines(out):
    """The lines of the cluster published in ``out``, in order, as its index names them."""
    return [line.decode("utf-8") + "\n"
            for line in ZipNumCluster(cluster_index(str(out))).lines()]


def expected_lines(root):
    """The lines of every archive under ``root`` as ``cdx --cdx-fields cc`` makes them."""
    lines = []
    for directory, _, names in os.walk(root):
        for name in names:
            path = os.path.join(directory, name)
            lines += indexer.index_file(path, os.path.relpath(path, root), cdx_fields="cc").lines
    return sorted(lines)


def check_build(summary, out, table, archives):
    """The cluster holds Common Crawl's fields; the table is export's of the cluster."""
    lines = cluster_lines(out)
    assert lines == expected_lines(archives) and len(lines) == summary.lines > 250
    assert sum('"languages": ' in line for line in lines) > 10
    assert summary.table.rows == summary.table.lines == len(lines)
    assert summary.table.error_count == 0 and summary.table.files
    assert summary.table.bytes == sum((table / name).stat().st_size for name in summary.table.files)
    exported = export_table(str(out), str(out.parent / "exported"), **TABLE)
    assert exported.rows == len(lines)
    assert_same_tables(table, out.parent / "exported")
    return lines


@pytest.fixture(scope="module")
def mrjob_build(tmp_path_factory, archives):
    """mrjob's local runner (the default engine): the table written in the cluster job's
    reducers, in their own processes."""
    base = tmp_path_factory.mktemp("mrjob")
    summary = build([str(archives)], str(base / "out"), BuildOptions(
        shards=3, lines_per_block=25, runner="local", cdx_fields="cc",
        parquet=str(base / "table"), **TABLE))
    return base, summary


def test_mrjob_build_parquet_is_the_export_of_its_cluster(mrjob_build, archives):
    base, summary = mrjob_build
    check_build(summary, base / "out", base / "table", archives)
    partitions = {(row["crawl"], row["subset"]) for row in table_rows(base / "table")}
    # rows of archives that are not Common Crawl's are in the crawl named by the output
    assert partitions == {("CC-MAIN-2024-22", "warc"), ("CC-MAIN-2020-34", "warc"),
                          ("CC-MAIN-2018-05", "warc"), ("CC-MAIN-2018-05", "crawldiagnostics"),
                          ("out", "warc")}
    assert not [name for name in os.listdir(base) if name.startswith(".table-build-")]


def test_spark_build_parquet_is_the_same_table(tmp_path, spark, mrjob_build, archives):
    """Spark's partition writer writes the same files as mrjob's reducers."""
    summary = build([str(archives)], str(tmp_path / "out"), BuildOptions(
        shards=3, lines_per_block=25, runner="spark", spark_context=spark, cdx_fields="cc",
        parquet=str(tmp_path / "table"), **TABLE))
    check_build(summary, tmp_path / "out", tmp_path / "table", archives)
    assert_same_tables(mrjob_build[0] / "table", tmp_path / "table")


class ShardsOnly:
    """An engine that knows nothing of tables (as a new one would): mrjob's inline runner
    whose cluster job is never handed ``engine.table``."""

    def __init__(self, name, settings):
        from webarchive_indexing.engines.mrjob_engine import MrjobEngine
        self.engine = MrjobEngine("inline", settings)
        self.table, self.tables_written = None, []

    def __getattr__(self, name):
        return getattr(self.engine, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.engine.close()

    def write_cluster(self, *args):
        return self.engine.write_cluster(*args)

    def write_tables(self, cluster_dir, shards):
        from webarchive_indexing.engines import Engine
        self.tables_written.append(list(shards))
        return Engine.write_tables(self, cluster_dir, shards)


def test_an_engine_that_writes_no_table_gets_build_parquet(tmp_path, monkeypatch, mrjob_build,
                                                             archives):
    """The table of an engine whose shard tasks do not write it: each shard's files written
    from the shard once written (one task per shard, on a pool of processes), the same
    table as the reducers write."""
    import sys
    import types
    made = []
    module = types.ModuleType("webarchive_indexing.engines.shards_only")
    module.ENGINE = lambda name, settings: made.append(ShardsOnly(name, settings)) or made[-1]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(engines.ENGINES, "local", "shards_only")
    summary = build([str(archives)], str(tmp_path / "out"), BuildOptions(
        shards=3, lines_per_block=25, runner="local", cdx_fields="cc",
        parquet=str(tmp_path / "table"), **TABLE))
    assert [sorted(shards) for shards in made[0].tables_written] == [[0, 1, 2]]
    check_build(summary, tmp_path / "out", tmp_path / "table", archives)
    assert_same_tables(mrjob_build[0] / "table", tmp_path / "table")


def test_a_shard_table_from_a_shard_written(tmp_path, mrjob_build):
    """What Engine.write_tables does for one shard: the files the reducer wrote, and none
    for a shard without lines."""
    from webarchive_indexing.columnar.table import Table
    from webarchive_indexing.build.tasks import write_shard, write_shard_table
    base, summary = mrjob_build
    (cluster,) = (base / "out" / "cluster").glob("build-*")
    table = Table(str(tmp_path / "t"), "out", TABLE["row_group_rows"], TABLE["parquet_compression"])
    stats = write_shard_table(1, str(cluster), table)
    files = [name for name in table_files(base / "table") if name.endswith("part-00001.parquet")]
    assert sorted(stats["files"]) == files and stats["rows"] == stats["lines"] > 0
    for name in files:
        assert (tmp_path / "t" / name).read_bytes() == (base / "table" / name).read_bytes()
    write_shard(7, [], str(tmp_path / "c"))
    empty = write_shard_table(7, str(tmp_path / "c"), table)
    assert (empty["rows"], empty["lines"], empty["files"]) == (0, 0, [])


def test_build_parquet_of_a_cluster_input(tmp_path, mrjob_build):
    """A cluster as build's input (its lines go into the new cluster as they are): the same
    shards, so the same table."""
    base, summary = mrjob_build
    again = build([str(base / "out" / "cluster")], str(tmp_path / "again"), BuildOptions(
        shards=3, lines_per_block=25, runner="inline", parquet=str(tmp_path / "table"),
        crawl="out", **TABLE))
    assert again.table.rows == summary.table.rows and not again.errors
    assert_same_tables(base / "table", tmp_path / "table")


def test_shard_numbers_name_the_table_files():
    assert [layout.shard_number(name) for name in (
        "cdx-00000.gz", "build-20261125T010203Z-x/cdx-00042.gz", "cdx-1.gz", "part-00001",
        "shard.gz", "00001", "cdx-00001.gz.bak")] == [0, 42, 1, None, None, None, None]


def test_inline_build_from_the_command_line(tmp_path, archives, capsys, monkeypatch):
    def read_back(*args):
        raise AssertionError("the cluster job's reducers write the table, nothing reads it back")

    monkeypatch.setattr(engines.Engine, "write_tables", read_back)
    table = tmp_path / "table"
    args = ["build", str(archives), "-o", str(tmp_path / "out"), "--shards", "2",
            "--runner", "inline", "--cdx-fields", "cc", "--parquet", str(table), "--no-progress"]
    assert main(args + ["--crawl", "my-crawl", "--row-group-rows", "100",
                        "--parquet-compression", "gzip"]) == 0
    err = capsys.readouterr().err
    lines = cluster_lines(tmp_path / "out")
    assert lines == expected_lines(archives)
    files = table_files(table)
    assert f"table:    {len(lines)} rows from {len(lines)} lines, {len(files)} Parquet files" in err
    assert "crawl=my-crawl/subset=warc/part-00000.parquet" in files
    assert f"read_parquet('{table}/*/*/*.parquet', hive_partitioning = true)" in err
    rows = table_rows(table)
    assert len(rows) == len(lines)
    assert {row["crawl"] for row in rows if not row["warc_filename"].startswith("crawl-data/")} \
        == {"my-crawl"}
    # a second build replaces the table whole
    before = {name: (table / name).read_bytes() for name in files}
    assert main(args) == 0
    capsys.readouterr()
    assert {p.parent.parent.name for p in table.rglob("*.parquet")} == {"crawl=out", *{
        f"crawl={where.split('/')[1]}" for where in CC_LAYOUT.values() if "crawl-data" in where}}
    assert before != {name: (table / name).read_bytes() for name in table_files(table)}


def test_the_spark_entry_script_takes_the_options():
    from jobs.spark_build import parser
    args = parser().parse_args(["w", "-o", "out", "--cdx-fields", "cc", "--parquet", "t",
                                "--crawl", "c", "--row-group-rows", "9"])
    options = BuildOptions.from_args(args, runner="spark")
    assert (options.cdx_fields, options.parquet, options.crawl, options.row_group_rows,
            options.parquet_compression) == ("cc", "t", "c", 9, "zstd")


@pytest.mark.parametrize("extra,message", [
    (["--cdx-fields", "cc", "--cdx-format", "cdx11"], "--cdx-fields cc needs --cdx-format cdxj"),
    (["--parquet", "{out}/cluster/t"], "would mix with or replace"),
    (["--parquet", "{out}"], "would mix with or replace"),
    (["--parquet", "{out}/cdx"], "would mix with or replace"),
    (["--crawl", "x"], "--crawl goes with --parquet DIR, which writes a table"),
    (["--row-group-rows", "9", "--parquet-compression", "gzip"],
     "--row-group-rows and --parquet-compression go with --parquet DIR"),
])
def test_options_that_cannot_work(tmp_path, archives, capsys, extra, message):
    out = tmp_path / "out"
    extra = [arg.format(out=out) for arg in extra]
    assert main(["build", str(archives / "gen"), "-o", str(out), "--runner", "inline",
                 "--no-progress", *extra]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("extra,message", [
    (["--crawl", "x"], "--crawl goes with --format parquet, which writes a table"),
    (["--format", "parquet"], "--format parquet writes a table: give its directory with -o DIR"),
])
def test_export_options_that_cannot_work(mrjob_build, capsys, extra, message):
    base, _ = mrjob_build
    assert main(["export", str(base / "out"), "--no-progress", *extra]) == 2
    captured = capsys.readouterr()
    assert message in captured.err and not captured.out


def test_export_never_writes_over_its_cluster(mrjob_build, capsys):
    base, _ = mrjob_build
    before = sorted(os.listdir(base / "out" / "cluster"))
    for table in (base / "out", base / "out" / "cluster", base / "out" / "cluster" / "t"):
        assert main(["export", str(base / "out"), "--format", "parquet", "-o", str(table),
                     "--no-progress"]) == 2
        assert "would mix with or replace" in capsys.readouterr().err
    assert sorted(os.listdir(base / "out" / "cluster")) == before


def test_a_local_table_needs_tasks_here(tmp_path, archives):
    """On Hadoop the tasks write the table: a local directory would end up on its nodes."""
    with pytest.raises(UsageError, match="give an s3:// or hdfs:// directory"):
        build([str(archives / "gen")], str(tmp_path / "out"), BuildOptions(
            runner="hadoop", parquet=str(tmp_path / "table")))
    assert sorted(os.listdir(tmp_path)) == ["out"]


def test_a_failed_build_publishes_no_table(tmp_path, archives, capsys):
    """A build that publishes no cluster publishes no table, and leaves the table there."""
    table = tmp_path / "table"
    table.mkdir()
    (table / "old.parquet").write_bytes(b"the table before")
    (table / ".webarchive-index-table").write_text("")  # a table of an earlier build
    broken = tmp_path / "warcs"
    broken.mkdir()
    data = (archives / CC_LAYOUT["iipc+jwarc__cc.warc.gz"]).read_bytes()
    (broken / "cut.warc.gz").write_bytes(data[:len(data) // 2])
    assert main(["build", str(broken), "-o", str(tmp_path / "out"), "--runner", "inline",
                 "--parquet", str(table), "--no-progress"]) == 1
    assert "no cluster was built" in capsys.readouterr().err
    assert table_files(table) == ["old.parquet"]
    assert sorted(os.listdir(tmp_path)) == ["out", "table", "warcs"]


@pytest.fixture(scope="module")
def s3():
    with s3server.running():
        yield


def test_build_parquet_to_s3(tmp_path, archives, s3, capsys):
    """A table on S3 goes into an empty prefix, and is never written over."""
    bucket = s3server.new_bucket()
    args = ["build", str(archives / "gen"), "-o", bucket + "/out", "--runner", "inline",
            "--parquet", bucket + "/table", "--no-progress", *(
                f"--{k.replace('_', '-')}={v}" for k, v in TABLE.items())]
    assert main(args) == 0
    capsys.readouterr()
    s3server.download_tree(bucket + "/table", str(tmp_path / "table"))
    s3server.download_tree(bucket + "/out/cluster", str(tmp_path / "out" / "cluster"))
    export_table(str(tmp_path / "out"), str(tmp_path / "exported"), **TABLE)
    assert_same_tables(tmp_path / "table", tmp_path / "exported")
    assert main(args) == 2
    assert "is not empty: write the table to a new prefix" in capsys.readouterr().err
    assert table_files(tmp_path / "table") == ["crawl=out/subset=warc/part-00000.parquet"]
