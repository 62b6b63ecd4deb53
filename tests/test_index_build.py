"""``build`` from existing indexes mixed with archives (through mrjob's runners and Spark),
``export`` of a cluster as one flat file, and the names from input that become paths
under OUTDIR (issue 16.1: never outside it)."""
import gzip
import json
import os
import shlex
import shutil

import pytest
from cdxj_indexer.main import write_cdx_index

import s3server
from helpers import REAL, pywb_cdx, pywb_lookup
from test_indexinputs import common_crawl_lines
from test_pipeline import cluster_files, cluster_lines
from webarchive_indexing.cdx import cdxmeta
from webarchive_indexing import cli, storage
from webarchive_indexing.zipnum import layout
from webarchive_indexing.jobs.index_warcs import IndexWarcsJob
from webarchive_indexing.commands.build import build
from webarchive_indexing.engines.mrjob_engine import run_job
from webarchive_indexing.inputs.sources import open_index
from webarchive_indexing.inputs.discovery import InputError
from webarchive_indexing.options import BuildOptions
from webarchive_indexing.build.tasks import Indexing, index_archive

WARCS = [os.path.join(REAL, name) for name in (
    "iipc+webarchive-commons__IAH-urls-wget.warc.gz", "webrecorder+warcio__example.warc.gz",
    "chatnoir-eu+chatnoir-resiliparse__warcfile.warc.gz", "nla+outbackcdx__test1.warc.gz",
    "iipc+jwarc__cc.warc.gz")]


def shard_lines(out):
    return cluster_lines(os.path.join(out, "cluster"))


def text_lines(text):
    return [l.encode() for l in text.splitlines(True) if not l.startswith(" CDX")]


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """An archive and, from four other archives: pywb's sorted CDXJ, cdxj-indexer's
    unsorted CDXJ, a Common-Crawl-style shard of several gzip members (with real Common
    Crawl lines), and a ZipNum cluster; and every line the cluster must hold."""
    root = tmp_path_factory.mktemp("mixed")
    shutil.copy(WARCS[0], root / "a.warc.gz")
    (root / "pywb.cdxj").write_text(pywb_cdx(WARCS[1], filename="b.warc.gz"))
    write_cdx_index(str(root / "unsorted.cdxj"), [WARCS[2]], {})
    cc = sorted(common_crawl_lines())
    (root / "cdx-00000.gz").write_bytes(b"".join(layout.gzip_block(cc[i:i + 3]) for i in range(0, 10, 3)))
    clustered = sorted(text_lines(pywb_cdx(WARCS[3], filename="d.warc.gz"))
                       + text_lines(pywb_cdx(WARCS[4], filename="e.warc.gz")))
    layout.write_cluster(clustered, str(root / "old" / "cluster"), [clustered[2]], 2)
    expected = sorted(text_lines(pywb_cdx(WARCS[0], filename="a.warc.gz"))
                      + text_lines(pywb_cdx(WARCS[1], filename="b.warc.gz"))
                      + [l.encode() for l in open(root / "unsorted.cdxj")] + cc + clustered)
    inputs = [str(root / n) for n in ("a.warc.gz", "pywb.cdxj", "unsorted.cdxj", "cdx-00000.gz")]
    return inputs + [str(root / "old" / "cluster" / "cluster.idx")], expected


@pytest.mark.parametrize("runner", ["inline", "mrjob", "local"])
def test_archives_and_every_kind_of_index(mixed, tmp_path, runner, capsys):
    inputs, expected = mixed
    out = tmp_path / "out"
    assert cli.main(["build", *inputs, "-o", str(out), "--shards", "3", "--lines-per-block", "7",
                     "--runner", runner, "--no-progress"]) == cli.EXIT_OK
    err = capsys.readouterr().err
    assert "indexes:  4 read, " in err and "errors:   0" in err
    assert shard_lines(out) == expected
    # the unsorted and the multi-member inputs were noticed; what the jobs could read
    # whole went to them as it was, the rest was rewritten (the local engine reads every
    # input itself: nothing is rewritten)
    report = json.load(open(out / "errors.json"))
    assert [(os.path.basename(w["file"]), w["line"]) for w in report["warnings"]] == [("unsorted.cdxj", 3)]
    rewritten = sorted(os.listdir(out / "rewritten-indexes")) if runner != "local" else []
    assert rewritten == ([] if runner == "local" else [
        ".webarchive-index-work", "00002-cdx-00000.cdx.gz", "00003-cluster.cdx.gz"])
    assert not (runner == "local" and (out / "rewritten-indexes").exists())
    # pywb reads the cluster
    found = pywb_lookup(out / "cluster" / "cluster.idx", "commoncrawl.org", "domain")
    assert found == [l for l in expected if l.startswith(b"org,commoncrawl")]
    # exported: the same lines, in order
    assert cli.main(["export", str(out), "-o", str(tmp_path / "all.cdxj.gz")]) == cli.EXIT_OK
    assert gzip.open(tmp_path / "all.cdxj.gz").read() == b"".join(expected)
    assert f"exported: {len(expected)} lines (cdxj)" in capsys.readouterr().err


def test_inline_local_and_spark_write_the_same_cluster(mixed, tmp_path, spark):
    inputs, _ = mixed
    build(inputs, str(tmp_path / "inline"), BuildOptions(shards=2, lines_per_block=5, runner="inline"))
    build(inputs, str(tmp_path / "spark"), BuildOptions(shards=2, lines_per_block=5, runner="spark",
                                                        spark_context=spark))
    # the local engine samples index inputs one line in 16: the same split points given
    build(inputs, str(tmp_path / "local"), BuildOptions(
        splits=str(tmp_path / "inline" / "splits.txt"), lines_per_block=5, workers=2))
    inline = cluster_files(tmp_path / "inline" / "cluster")
    assert inline == cluster_files(tmp_path / "spark" / "cluster")
    assert inline == cluster_files(tmp_path / "local" / "cluster")


def test_spark_entry_script_takes_index_inputs(tmp_path, spark, capsys):
    """jobs/spark_build.py: CDX11 inputs and an archive beside them make a CDX11 cluster,
    as build does (--cdx-format defaults to the inputs' there too)."""
    from webarchive_indexing.jobs import spark_build
    shutil.copy(os.path.join(REAL, "nla+outbackcdx__test2.cdx"), tmp_path / "test2.cdx")
    shutil.copy(WARCS[3], tmp_path / "test1.warc.gz")
    out = tmp_path / "out"
    assert spark_build.main([str(tmp_path), "-o", str(out), "--no-progress"]) == 0
    assert "indexes:  1 read, 3 CDX lines" in capsys.readouterr().err
    assert shard_lines(out) == sorted(text_lines(pywb_cdx(WARCS[3], "cdx11", filename="test1.warc.gz"))
                                      + text_lines(open(tmp_path / "test2.cdx").read()))


@pytest.mark.parametrize("runner", ["inline", "mrjob", "local", "spark"])
def test_every_engine_puts_the_readers_lines_in_the_cluster(tmp_path, runner, request):
    """What a cluster holds of an index input is what indexinputs reads of it, on every
    engine: a file whose every line the jobs' readers take as the reader does goes to them
    as it is (CRLF, a line ending in two CRs, non-ASCII UTF-8, blank lines); one with lines
    they would take otherwise (not UTF-8: latin-1 for them; a cut JSON block, a CR inside,
    a key holding white space, by Unicode's rules too) is rewritten without those."""
    lines = text_lines(pywb_cdx(WARCS[0]))
    odd = (lines[0].replace(b"\n", b"\r\n") + lines[1].replace(b"\n", b"\r\r\n") + b"\n  \n"
           + 'com,example)/café 20200101000000 {"url": "http://example.com/café", "offset": "0", "length": "1"}\n'.encode()
           + b"".join(lines[2:]) + lines[5])
    (tmp_path / "odd.cdxj").write_bytes(odd)
    (tmp_path / "bad.cdxj").write_bytes(b"".join(lines[:3]) + b"".join(
        b"com,example)/%s 20200101000000 {}\n" % weird
        for weird in (b"caf\xe9", b"tab\there", b"nbsp\xc2\xa0x", b"cr\rx", b"cut {\"url\": \"x")))
    sources = [open_index(str(tmp_path / name)) for name in ("odd.cdxj", "bad.cdxj")]
    expected = sorted(line + b"\n" for source in sources for line in source.lines())
    assert [s.malformed for s in sources] == [0, 5] and len(expected) == 19 + 2 + 3
    options = BuildOptions(runner=runner, on_error="skip", shards=2, lines_per_block=4)
    if runner == "spark":
        options.spark_context = request.getfixturevalue("spark")
    summary = build([str(tmp_path / "odd.cdxj"), str(tmp_path / "bad.cdxj")], str(tmp_path / "out"),
                    options)
    assert summary.index_lines == len(expected) and len(summary.errors) == 5
    assert shard_lines(tmp_path / "out") == expected
    if runner != "local":  # which reads every input itself
        assert sorted(os.listdir(tmp_path / "out" / "rewritten-indexes")) == [
            ".webarchive-index-work", "00001-bad.cdx.gz"]


def test_one_cluster_holds_one_format(tmp_path, capsys):
    (tmp_path / "a.cdxj").write_text(pywb_cdx(WARCS[1]))
    (tmp_path / "b.cdx").write_text(pywb_cdx(WARCS[0], "cdx11"))
    code = cli.main(["build", str(tmp_path / "a.cdxj"), str(tmp_path / "b.cdx"), "-o",
                     str(tmp_path / "out"), "--runner", "inline"])
    assert code == cli.EXIT_USAGE
    assert (f"one cluster holds one CDX format, but the index inputs mix cdxj ({tmp_path}/a.cdxj...), "
            f"cdx11 ({tmp_path}/b.cdx...): convert them to one with --cdx-format") in capsys.readouterr().err
    assert not (tmp_path / "out" / "cluster").exists()
    # the command that error names converts (tests/test_indexinputs_trust.py)
    code = cli.main(["build", str(tmp_path / "b.cdx"), "-o", str(tmp_path / "out"),
                     "--cdx-format", "cdxj", "--runner", "inline"])
    assert code == cli.EXIT_OK
    assert shard_lines(tmp_path / "out") == sorted(text_lines(pywb_cdx(WARCS[0])))


def test_cdx11_inputs_make_a_cdx11_cluster_with_the_archives(tmp_path, capsys):
    """OpenWayback-style CDX11 (nla/outbackcdx's, with its header, unsorted): the archives
    beside it are indexed as CDX11 too; the export starts with the header."""
    shutil.copy(os.path.join(REAL, "nla+outbackcdx__test2.cdx"), tmp_path / "test2.cdx")
    shutil.copy(WARCS[3], tmp_path / "test1.warc.gz")
    out = tmp_path / "out"
    assert cli.main(["build", str(tmp_path), "-o", str(out), "--runner", "inline",
                     "--no-progress"]) == cli.EXIT_OK
    ours = text_lines(pywb_cdx(WARCS[3], "cdx11", filename="test1.warc.gz"))
    theirs = text_lines(open(tmp_path / "test2.cdx").read())
    assert shard_lines(out) == sorted(ours + theirs)
    capsys.readouterr()
    assert cli.main(["export", str(out / "cluster")]) == cli.EXIT_OK
    assert capsys.readouterr().out.encode() == b" CDX N b a m s k r M S V g\n" + b"".join(sorted(ours + theirs))


def test_malformed_lines_fail_or_are_skipped(tmp_path, capsys):
    good = pywb_cdx(WARCS[0]).splitlines(True)
    bad = tmp_path / "bad.cdxj"
    bad.write_text("".join(good[:5] + ['com,x)/ 2014 {"url": "cut\n'] + good[5:]))
    out = tmp_path / "out"
    code = cli.main(["build", str(bad), "-o", str(out), "--runner", "inline", "--no-progress"])
    assert code == cli.EXIT_FAILED
    err = capsys.readouterr().err
    assert (f"error: {bad}: line 6: its JSON block does not start with '{{' and end with '}}' "
            "(cut short?)") in err
    assert not (out / "cluster").exists()
    assert json.load(open(out / "errors.json"))["errors"] == [
        {"file": str(bad), "line": 6, "reason": "its JSON block does not start with '{' and end "
                                               "with '}' (cut short?)"}]
    code = cli.main(["build", str(bad), "-o", str(out), "--runner", "inline", "--no-progress",
                     "--on-error", "skip"])
    assert code == cli.EXIT_PARTIAL
    assert shard_lines(out) == [l.encode() for l in good]
    assert sorted(os.listdir(out / "rewritten-indexes")) == [".webarchive-index-work",
                                                             "00000-bad.cdx.gz"]


def test_a_cut_index_keeps_what_came_before_with_skip(tmp_path, capsys):
    lines = text_lines(pywb_cdx(WARCS[0]))
    cut = tmp_path / "cut.cdxj.gz"
    cut.write_bytes(b"".join(layout.gzip_block(lines[i:i + 5]) for i in range(0, 19, 5))[:-20])
    out = tmp_path / "out"
    code = cli.main(["build", str(cut), "-o", str(out), "--runner", "inline", "--no-progress",
                     "--on-error", "skip"])
    assert code == cli.EXIT_PARTIAL
    assert "is cut short" in capsys.readouterr().err
    # the three whole members, and the lines of the cut one that came out whole
    kept = shard_lines(out)
    assert 15 <= len(kept) < 19 and kept == lines[:len(kept)]


def test_duplicates_are_kept_and_unsorted_input_sorted(tmp_path):
    lines = text_lines(pywb_cdx(WARCS[0]))
    (tmp_path / "a.cdxj").write_bytes(b"".join(reversed(lines)) + lines[0] + lines[0])
    summary = build([str(tmp_path / "a.cdxj")], str(tmp_path / "out"), BuildOptions(runner="inline"))
    assert shard_lines(tmp_path / "out") == sorted(lines + [lines[0], lines[0]])
    assert summary.index_lines == 21 and summary.warnings[0]["line"] == 2


def test_a_build_output_as_input_and_a_rebuild_with_more_shards(mixed, tmp_path):
    inputs, expected = mixed
    build(inputs, str(tmp_path / "first"), BuildOptions(shards=1, runner="inline"))
    summary = build([str(tmp_path / "first")], str(tmp_path / "second"),
                    BuildOptions(shards=4, lines_per_block=3, runner="inline"))
    assert summary.indexes == 1 and summary.index_lines == len(expected)
    assert shard_lines(tmp_path / "second") == expected


def test_nothing_to_build_names_indexes_too(tmp_path):
    (tmp_path / "notes").mkdir()
    with pytest.raises(InputError, match=r"no WARC/ARC files .* or indexes \(.cdx, .cdxj, .cdx.gz, .cdxj.gz, cluster.idx\) found"):
        build([str(tmp_path / "notes")], str(tmp_path / "out"), BuildOptions(runner="inline"))
    assert not (tmp_path / "out").exists()


def test_cdx_command_says_an_index_is_no_archive(tmp_path, capsys):
    (tmp_path / "a.cdxj").write_text(pywb_cdx(WARCS[1]))
    assert cli.main(["cdx", str(tmp_path / "a.cdxj")]) == cli.EXIT_USAGE
    assert "a.cdxj is an index, not an archive" in capsys.readouterr().err


def test_export_refuses_an_unsorted_cluster(tmp_path, capsys):
    lines = text_lines(pywb_cdx(WARCS[0]))
    layout.write_cluster(lines, str(tmp_path / "c"), [], 5)
    # swap two blocks' content: each block still sorted, the shard not
    data = open(tmp_path / "c" / "cdx-00000.gz", "rb").read()
    idx = open(tmp_path / "c" / "cluster.idx", "rb").read().splitlines()
    spans = [tuple(int(x) for x in line.split(b"\t")[2:4]) for line in idx]
    blocks = [data[o:o + n] for o, n in spans]
    (tmp_path / "c" / "cdx-00000.gz").write_bytes(blocks[1] + blocks[0] + b"".join(blocks[2:]))
    target = tmp_path / "all.cdxj"
    assert cli.main(["export", str(tmp_path / "c"), "-o", str(target)]) == cli.EXIT_FAILED
    assert "the cluster is not sorted" in capsys.readouterr().err
    assert not target.exists()
    assert cli.main(["export", str(tmp_path / "nothing")]) == cli.EXIT_FAILED
    assert "no ZipNum index at" in capsys.readouterr().err


def test_export_into_a_pipe_that_closes_early(tmp_path):
    """export | head: the reader stopping is no failure (exit 0, no message)."""
    import subprocess
    import sys
    lines = [b'com,example)/%06d 20200101000000 {"offset": "0", "length": "1"}\n' % i for i in range(20000)]
    layout.write_cluster(lines, str(tmp_path / "c"), [], 100)
    run = subprocess.run(f"set -o pipefail; {shlex.quote(sys.executable)} -m webarchive_indexing.cli export "
                         f"{shlex.quote(str(tmp_path / 'c'))} --no-progress | head -1",
                         shell=True, capture_output=True, executable="/bin/bash",
                         env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert run.stdout == lines[0] and run.returncode == 0
    assert b"Broken pipe" not in run.stderr and b"Traceback" not in run.stderr


# -- names from input that become paths (issue 16.1) ------------------------------------------

def tree(path):
    """Every file under ``path`` but the record beside each CDX file (``cdxmeta``)."""
    return sorted(os.path.relpath(os.path.join(r, f), path) for r, _, fs in os.walk(path)
                  for f in fs if not f.endswith(cdxmeta.SUFFIX))


def test_manifest_lines_climbing_out_stay_below_outdir(tmp_path, capsys):
    """A manifest line ../../elsewhere/a.warc.gz: the archive is read, its CDX is written
    below OUTDIR (its name is its base name: it is under no root)."""
    (tmp_path / "data" / "lists").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    shutil.copy(WARCS[1], tmp_path / "elsewhere" / "a.warc.gz")
    (tmp_path / "data" / "lists" / "warcs.txt").write_text("../../elsewhere/a.warc.gz\n")
    before = tree(tmp_path)
    out = tmp_path / "data" / "out"
    assert cli.main(["cdx", str(tmp_path / "data" / "lists" / "warcs.txt"), "-o", str(out)]) == 0
    assert tree(tmp_path) == sorted(before + ["data/out/a.cdx.gz"])
    assert b'"filename": "a.warc.gz"' in gzip.open(out / "a.cdx.gz").read()


def test_backslashes_and_dots_in_names_are_neutralised(tmp_path):
    """A local file named with backslashes and dots, and names as an S3 listing or a Hadoop
    manifest could give them, reach index_archive: the CDX stays below the CDX directory,
    the filename field keeps the name."""
    shutil.copy(WARCS[1], tmp_path / "a\\..\\..\\b.warc.gz")
    found = cli.main(["cdx", str(tmp_path / "a\\..\\..\\b.warc.gz"), "-o", str(tmp_path / "o1")])
    assert found == 0 and tree(tmp_path / "o1") == ["a%5C..%5C..%5Cb.cdx.gz"]
    cdx_dir = tmp_path / "deep" / "cdx"
    for name, where in (("../../../evil.warc.gz", "%2E%2E/%2E%2E/%2E%2E/evil.cdx.gz"),
                        ("/abs/x.warc.gz", "abs/x.cdx.gz"),
                        ("a//./b.warc.gz", "a/b.cdx.gz"),
                        ("nul\x00and\nnewline.warc.gz", "nul%00and%0Anewline.cdx.gz"),
                        ("..", "%2E%2E.cdx.gz")):
        status = index_archive(WARCS[1], name, str(cdx_dir), Indexing(skip_existing=False))
        assert status.cdx == str(cdx_dir / where)
        assert json.dumps(name)[1:-1].encode() in gzip.open(status.cdx).read()
    assert tree(tmp_path / "deep") == sorted(
        "cdx/" + w for w in ("%2E%2E/%2E%2E/%2E%2E/evil.cdx.gz", "abs/x.cdx.gz", "a/b.cdx.gz",
                             "nul%00and%0Anewline.cdx.gz", "%2E%2E.cdx.gz"))


def test_the_index_job_keeps_names_below_its_cdx_dir(tmp_path):
    """jobs/index_warcs.py takes a manifest from the user (scripts/runindexwarcs.sh): a path
    climbing out of --input-root gives a name with '..', neutralised."""
    (tmp_path / "crawl").mkdir()
    shutil.copy(WARCS[1], tmp_path / "a.warc.gz")
    manifest = tmp_path / "warcs.txt"
    manifest.write_text(f"{tmp_path}/crawl/../a.warc.gz\n")
    statuses = run_job(IndexWarcsJob, ["--cdx-dir", str(tmp_path / "out"), "--input-root",
                                       str(tmp_path / "crawl"), str(manifest)], "inline")
    assert [s["name"] for s in statuses] == ["../a.warc.gz"]
    assert tree(tmp_path / "out") == ["%2E%2E/a.cdx.gz"]


@pytest.fixture(scope="module")
def s3():
    with s3server.running():
        yield


def test_hostile_s3_keys_and_indexes_on_s3(s3, tmp_path, capsys):
    """A bucket listing someone else controls: keys with '..', empty segments and
    backslashes index into CDX files below OUTDIR, with their true names as filename;
    an index and a cluster on S3 are inputs too."""
    bucket = s3server.new_bucket()
    keys = ["crawl/x/../../../../var/www/a.warc.gz", "crawl//abs/b.warc.gz",
            "crawl/c\\..\\d.warc.gz", "crawl/ok/e.warc.gz"]
    for key in keys:
        storage.write_atomic(f"{bucket}/{key}", open(WARCS[1], "rb").read())
    storage.write_atomic(f"{bucket}/crawl/more.cdxj", pywb_cdx(WARCS[0]).encode())
    lines = text_lines(pywb_cdx(WARCS[4]))
    layout.write_cluster(lines, str(tmp_path / "c"), [], 3)
    for name in os.listdir(tmp_path / "c"):
        storage.write_atomic(f"{bucket}/old/{name}", open(tmp_path / "c" / name, "rb").read())
    out = tmp_path / "out"
    code = cli.main(["build", bucket + "/crawl/", bucket + "/old/cluster.idx", "-o", str(out),
                     "--runner", "inline", "--no-progress"])
    err = capsys.readouterr().err
    assert code == cli.EXIT_OK, err
    assert tree(out / "cdx") == ["abs/b.cdx.gz", "c%5C..%5Cd.cdx.gz", "ok/e.cdx.gz",
                                 "x/%2E%2E/%2E%2E/%2E%2E/%2E%2E/var/www/a.cdx.gz"]
    names = {json.loads(l.split(b" ", 2)[2])["filename"] for l in shard_lines(out)}
    assert names >= {"x/../../../../var/www/a.warc.gz", "/abs/b.warc.gz", "c\\..\\d.warc.gz",
                     "ok/e.warc.gz"}
    warned = json.load(open(out / "errors.json"))["warnings"]
    assert sum("is not a plain relative path" in w["message"] for w in warned) == 3
    assert (f"warning: {bucket}/crawl/x/../../../../var/www/a.warc.gz: offset 0: its name "
            "'x/../../../../var/www/a.warc.gz' is not a plain relative path: its CDX is written "
            "to cdx/x/%2E%2E/%2E%2E/%2E%2E/%2E%2E/var/www/a.cdx.gz") in err
    assert len(shard_lines(out)) == 4 * 2 + 19 + len(lines)
    # export reads a cluster on S3 and writes to S3
    assert cli.main(["export", bucket + "/old/cluster.idx"]) == cli.EXIT_OK
    assert capsys.readouterr().out.encode() == b"".join(lines)
    assert cli.main(["export", str(out), "-o", bucket + "/flat/all.cdxj.gz"]) == cli.EXIT_OK
    assert gzip.decompress(storage.read_bytes(bucket + "/flat/all.cdxj.gz")) == b"".join(shard_lines(out))


def test_the_commands_of_docs_indexes_md_run_as_written(tmp_path, monkeypatch, capsys):
    """Each '$ webarchive-index ...' line of docs/indexes.md, in a directory holding what
    they name."""
    from test_legacyindex import sample_items, write_legacy_index
    doc = os.path.join(os.path.dirname(os.path.dirname(__file__)), "docs", "indexes.md")
    commands = [line[2:] for line in open(doc, encoding="utf-8") if line.startswith("$ webarchive-index ")]
    assert len(commands) == 7
    (tmp_path / "warcs").mkdir()
    shutil.copy(WARCS[0], tmp_path / "warcs")
    (tmp_path / "old-cdx").mkdir()
    (tmp_path / "old-cdx" / "b.cdxj").write_text(pywb_cdx(WARCS[1]))
    (tmp_path / "old-cdx" / "c.cdxj.gz").write_bytes(gzip.compress(pywb_cdx(WARCS[2]).encode()))
    (tmp_path / "more.cdxj.gz").write_bytes(gzip.compress(pywb_cdx(WARCS[4]).encode()))
    write_legacy_index(tmp_path / "url-index.1356128792", sample_items())
    shutil.copy(os.path.join(REAL, "arquivo+webarchive-indexing__teste.cdx"), tmp_path / "teste.cdx")
    monkeypatch.chdir(tmp_path)
    for command in commands:
        assert cli.main(shlex.split(command)[1:]) == cli.EXIT_OK, (command, capsys.readouterr().err)
    exported = gzip.open(tmp_path / "all.cdxj.gz").read().splitlines(True)
    assert exported == shard_lines(tmp_path / "out") and len(exported) > 19 + 2
    assert len(shard_lines(tmp_path / "out2")) == len(exported) + 1
    assert len(shard_lines(tmp_path / "cc2012")) == 80
    # old-cdx/ converted to CDX11: pywb's CDX11 of the same archives
    assert (tmp_path / "all.cdx").read_text().splitlines(True) == [" CDX N b a m s k r M S V g\n"] + sorted(
        pywb_cdx(WARCS[1], "cdx11").splitlines(True)[1:] + pywb_cdx(WARCS[2], "cdx11").splitlines(True)[1:])
    assert len(shard_lines(tmp_path / "arquivo")) == 18 and all(
        line.startswith(b"pt,") for line in shard_lines(tmp_path / "arquivo"))
