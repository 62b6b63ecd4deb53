"""What ``build`` may delete and replace (issues 20.4-20.6, 21.16, 20.13): never a user's
files (``OUTDIR/indexes/``, as pywb's collections lay them out, even while it is read);
an update never takes one archive for another of the same name or CDX file, never
publishes a takedown that removed nothing, nor a cluster that did not change; and the
hints the commands print work as printed."""
import gzip
import json
import os
import re
import shutil

import pytest

from webarchive_indexing import cli
from webarchive_indexing.commands.corpus import make_corpus
from webarchive_indexing.build.indexprep import INDEXES_DIR, WORK_MARK

from test_launchers import built, corpus, files_of, run as run_script, script_env, settings, \
    write_env  # noqa: F401  (built, corpus: fixtures)
from test_pipeline import cluster_lines as shard_lines


def files(directory):
    return {str(p.relative_to(directory)): p.read_bytes()
            for p in sorted(directory.rglob("*")) if p.is_file()}


def cluster_lines(out):
    """Every line of the cluster published in ``out`` (without its newline)."""
    return [line.rstrip(b"\n") for line in shard_lines(out / "cluster")]


def build(*args):
    return cli.main(["build", *map(str, args), "--no-progress"])


@pytest.fixture
def crawls(tmp_path):
    """crawl-1: two archives; crawl-2: one; crawl-2 also as CDX files of ``cdx -o``."""
    make_corpus(tmp_path / "crawl-1", files=2, captures=15, seed=1)
    make_corpus(tmp_path / "crawl-2", files=1, captures=15, seed=2)
    assert cli.main(["cdx", str(tmp_path / "crawl-2"), "-o", str(tmp_path / "cdx-2")]) == 0
    return tmp_path


def index_of(crawls):
    """crawl-2's lines as a plain CDXJ file's text, and as two gzip members (which the jobs
    cannot read as they are: rewritten into OUTDIR/rewritten-indexes/)."""
    data = gzip.decompress((crawls / "cdx-2" / "CORPUS-002-00000.cdx.gz").read_bytes())
    lines = data.splitlines(True)
    return data, gzip.compress(b"".join(lines[:5])) + gzip.compress(b"".join(lines[5:]))


# -- 20.4: OUTDIR/indexes/ is the user's --------------------------------------------------------

@pytest.mark.parametrize("command", ["build", "export"])
def test_a_directory_of_the_users_is_never_replaced_by_a_table(crawls, capsys, command):
    """--parquet DIR / export -o DIR replace a table's directory whole: only one of the
    tool's tables (marked), an empty directory or none; a user's files stay."""
    out, table = crawls / "out", crawls / "mine"
    table.mkdir()
    (table / "notes.txt").write_text("my notes")
    args = (["build", crawls / "crawl-1", "-o", out, "--cdx-fields", "cc", "--parquet", table]
            if command == "build" else ["export", out, "--format", "parquet", "-o", table])
    if command == "export":
        assert build(crawls / "crawl-1", "-o", out, "--cdx-fields", "cc") == 0
    capsys.readouterr()
    assert cli.main([*map(str, args), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"{table} holds files that webarchive-index did not write" in err, err
    assert files(table) == {"notes.txt": b"my notes"}
    (table / "notes.txt").unlink()  # an empty directory is taken, and the table marked
    assert cli.main([*map(str, args), "--no-progress"]) == 0
    assert (table / ".webarchive-index-table").is_file()
    names = set(files(table))
    assert any(name.endswith(".parquet") for name in names)
    assert cli.main([*map(str, args), "--no-progress"]) == 0  # its own table is replaced
    assert set(files(table)) == names


@pytest.mark.parametrize("runner", ["inline", "mrjob", "local", "spark"])
def test_a_users_indexes_directory_survives_also_when_it_is_read(crawls, runner, request):
    out = crawls / "out"
    plain, members = index_of(crawls)
    users = out / "indexes"
    users.mkdir(parents=True)
    (users / "index.cdxj").write_bytes(plain)
    (users / "notes.txt").write_text("the user's\n")
    (crawls / "two-members.cdx.gz").write_bytes(members)
    before = files(users)
    options = ["--runner", runner]
    if runner == "spark":
        request.getfixturevalue("spark")  # one context per process: the session's
        from webarchive_indexing.commands.build import build as build_
        from webarchive_indexing.options import BuildOptions
        build_options = BuildOptions(runner="spark", progress=False)
        build_options.spark_context = request.getfixturevalue("spark")
        for _ in range(2):
            summary = build_([str(crawls / "crawl-1"), str(users / "index.cdxj"),
                              str(crawls / "two-members.cdx.gz")], str(out), build_options)
            assert summary.published and not summary.errors
    else:
        for _ in range(2):  # again: what the first build rewrote is cleared, not the user's
            assert build(crawls / "crawl-1", users / "index.cdxj", crawls / "two-members.cdx.gz",
                         "-o", out, *options) == cli.EXIT_OK
    assert files(users) == before
    lines = cluster_lines(out)
    assert set(plain.splitlines()) <= set(lines) and len(lines) > 2 * len(plain.splitlines())
    rewritten = sorted(os.listdir(out / INDEXES_DIR)) if runner != "local" else []
    assert rewritten == ([] if runner == "local" else [WORK_MARK, "00001-two-members.cdx.gz"])


def test_a_rewrites_directory_without_the_mark_is_not_the_builds(crawls, capsys):
    out = crawls / "out"
    _, members = index_of(crawls)
    (crawls / "two-members.cdx.gz").write_bytes(members)
    (out / INDEXES_DIR).mkdir(parents=True)
    (out / INDEXES_DIR / "mine.txt").write_text("not the build's\n")
    assert build(crawls / "two-members.cdx.gz", "-o", out, "--runner", "inline") == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert f"{out / INDEXES_DIR} holds files that webarchive-index did not write" in err
    assert "move them, or give another OUTDIR" in err and "Traceback" not in err
    assert os.listdir(out / INDEXES_DIR) == ["mine.txt"] and os.listdir(out) == [INDEXES_DIR]
    # the build's own: cleared at each build; an input in it would be deleted before it is read
    os.remove(out / INDEXES_DIR / "mine.txt")
    assert build(crawls / "two-members.cdx.gz", "-o", out, "--runner", "inline") == cli.EXIT_OK
    rewrite = out / INDEXES_DIR / "00000-two-members.cdx.gz"
    kept = rewrite.read_bytes()
    capsys.readouterr()
    assert build(rewrite, "-o", out, "--runner", "inline") == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert f"{rewrite} is in {out / INDEXES_DIR}, which the build clears" in err
    assert rewrite.read_bytes() == kept


def test_only_the_builds_directories_go_from_the_cluster(crawls):
    out = crawls / "out"
    (out / "cluster" / "build-notes").mkdir(parents=True)
    (out / "cluster" / "build-notes" / "readme.txt").write_text("the user's\n")
    for _ in range(3):
        assert build(crawls / "crawl-1", "-o", out) == cli.EXIT_OK
    assert sorted(p.name for p in (out / "cluster").glob("build-*")) == [
        "build-00002", "build-00003", "build-notes"]
    assert (out / "cluster" / "build-notes" / "readme.txt").read_text() == "the user's\n"


# -- 20.5, 21.16: an archive is the file it was read from --------------------------------------

def published_state(out):
    """What an update that publishes nothing leaves as it was."""
    return {name: data for name, data in files(out).items()
            if not name.startswith(("errors.json", ".webarchive-index"))}


def test_an_update_refuses_an_archive_named_as_another_in_the_cluster(crawls, capsys):
    out = crawls / "out"
    assert build(crawls / "crawl-1", "-o", out) == cli.EXIT_OK
    other = crawls / "elsewhere" / "CORPUS-001-00000.warc.gz"
    other.parent.mkdir()
    shutil.copy(crawls / "crawl-2" / "CORPUS-002-00000.warc.gz", other)
    before = published_state(out)
    capsys.readouterr()
    assert build(other, "-o", out, "--update") == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert (f"{other} and {crawls / 'crawl-1' / 'CORPUS-001-00000.warc.gz'} (in the cluster) "
            "are both named 'CORPUS-001-00000.warc.gz'") in err
    assert "--update --remove 'CORPUS-001-00000.warc.gz'" in err and "Traceback" not in err
    assert published_state(out) == before  # its CDX file too


def test_an_update_refuses_an_archive_indexed_into_the_cdx_file_of_another(crawls, capsys):
    out = crawls / "out"
    first = crawls / "one" / "a%5Cx.warc.gz"
    second = crawls / "two" / "a\\x.warc.gz"  # its CDX file: cdx/a%5Cx.cdx.gz too
    for path, source in ((first, "crawl-1/CORPUS-001-00000.warc.gz"),
                         (second, "crawl-2/CORPUS-002-00000.warc.gz")):
        path.parent.mkdir()
        shutil.copy(crawls / source, path)
    assert build(first, "-o", out) == cli.EXIT_OK
    before = published_state(out)
    assert "cdx/a%5Cx.cdx.gz" in before
    capsys.readouterr()
    assert build(second, "-o", out, "--update") == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert (f"{second} and {first} (in the cluster, named 'a%5Cx.warc.gz') would both be "
            "indexed into cdx/a%5Cx.cdx.gz") in err
    assert published_state(out) == before


def test_an_archive_changed_in_its_place_still_replaces_its_lines(crawls):
    out = crawls / "out"
    assert build(crawls / "crawl-1", "-o", out) == cli.EXIT_OK
    archive = crawls / "crawl-1" / "CORPUS-001-00001.warc.gz"
    shutil.copy(crawls / "crawl-2" / "CORPUS-002-00000.warc.gz", archive)
    assert build(crawls / "crawl-1", "-o", out, "--update") == cli.EXIT_OK


# -- 20.6: a takedown that removes nothing --------------------------------------------------

def test_a_remove_glob_that_removes_nothing_fails_and_each_says_what_it_removed(crawls, capsys):
    out = crawls / "out"
    assert build(crawls / "crawl-1", crawls / "crawl-2", "-o", out) == cli.EXIT_OK
    before, lines = published_state(out), cluster_lines(out)
    capsys.readouterr()
    for extra in ([], ["--no-allow-empty-remove"], ["--remove", "CORPUS-002-*"]):
        assert build("-o", out, "--update", "--remove", "exmaple*", *extra) == cli.EXIT_USAGE
        err = capsys.readouterr().err
        assert "--remove 'exmaple*': matches no archive and no line of the cluster, nothing was " \
               "published" in err and "--allow-empty-remove" in err, err
        assert "CORPUS-002" not in err.split("--remove", 1)[1].split("\n")[0]
        assert published_state(out) == before
    assert build(crawls / "crawl-1", "-o", out, "--allow-empty-remove") == cli.EXIT_USAGE
    assert "--allow-empty-remove goes with --remove GLOB" in capsys.readouterr().err
    # allowed: nothing removed, nothing else to do: nothing published
    assert build("-o", out, "--update", "--remove", "exmaple*", "--allow-empty-remove") == 0
    err = capsys.readouterr().err
    assert "removed:  'exmaple*': 0 archives, 0 lines" in err
    assert "cluster:  unchanged, nothing published" in err and published_state(out) == before
    # each GLOB: the archives and lines it took out
    assert build("-o", out, "--update", "--remove", "CORPUS-002-*", "--remove", "*-001-00000*"
                 ) == cli.EXIT_OK
    err = capsys.readouterr().err
    gone = {glob: [line for line in lines if re.search(pattern, line)]
            for glob, pattern in (("CORPUS-002-*", rb'"filename": "CORPUS-002-'),
                                  ("*-001-00000*", rb'"filename": "CORPUS-001-00000'))}
    assert (f"removed:  'CORPUS-002-*': 1 archive (CORPUS-002-00000.warc.gz), "
            f"{len(gone['CORPUS-002-*'])} lines") in err, err
    assert (f"removed:  '*-001-00000*': 1 archive (CORPUS-001-00000.warc.gz), "
            f"{len(gone['*-001-00000*'])} lines") in err
    assert len(cluster_lines(out)) == len(lines) - sum(map(len, gone.values())) > 0


def test_a_remove_glob_that_removes_no_line_of_an_index_input_fails(crawls, capsys):
    """The cluster holds an index input: whether a GLOB matches its lines is known only
    once its shards are read; nothing is published either."""
    out = crawls / "out"
    assert build(crawls / "crawl-1", crawls / "cdx-2", "-o", out) == cli.EXIT_OK
    before = published_state(out)
    builds = sorted(os.listdir(out / "cluster"))
    capsys.readouterr()
    assert build("-o", out, "--update", "--remove", "exmaple*") == cli.EXIT_USAGE
    assert "--remove 'exmaple*': matches no archive and no line" in capsys.readouterr().err
    assert published_state(out) == before and sorted(os.listdir(out / "cluster")) == builds
    # one that names only lines of the index input: taken out, and said so
    assert build("-o", out, "--update", "--remove", "CORPUS-002-*") == cli.EXIT_OK
    assert re.search(r"removed:  'CORPUS-002-\*': 0 archives, [1-9]\d* lines",
                     capsys.readouterr().err)


# -- 21.16: an update with nothing to do publishes nothing -----------------------------------

def test_an_update_with_nothing_new_publishes_nothing(crawls, capsys):
    out = crawls / "out"
    assert build(crawls / "crawl-1", crawls / "cdx-2", "-o", out, "--shards", "2") == 0
    before = published_state(out)
    stamp = (out / "cluster" / "cluster.idx").stat().st_mtime_ns
    capsys.readouterr()
    assert build(crawls / "crawl-1", crawls / "cdx-2", "-o", out, "--update") == cli.EXIT_OK
    err = capsys.readouterr().err
    assert "update:   0 archives added, 0 replaced (indexed again), 2 already in the cluster" in err
    assert "cluster:  unchanged, nothing published: nothing to add, replace or remove" in err
    assert "[3/3]" not in err and "copied unchanged" not in err
    assert published_state(out) == before
    assert (out / "cluster" / "cluster.idx").stat().st_mtime_ns == stamp


# -- 20.13: the hints work as printed ---------------------------------------------------------

def test_runall_inline_needs_no_mrjob_conf(tmp_path, corpus, built):  # noqa: F811
    # index_env.sample.sh's default, ./mrjob.conf, is not there: inline uses none
    values = settings(tmp_path, corpus, MRJOB_CONF="./mrjob.conf")
    result = run_script("runall.sh", script_env(write_env(tmp_path / "env.sh", **values)),
                        cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "--no-conf" in result.stderr and "--conf-path" not in result.stderr
    assert files_of(tmp_path / "cdx") == files_of(built / "cdx")


def test_copy_status_after_a_plan_advises_the_copy(crawls, capsys):
    out = crawls / "out"
    assert build(crawls / "crawl-1", "-o", out) == cli.EXIT_OK
    host = cluster_lines(out)[0].split(b")", 1)[0].decode().split(",")
    capsys.readouterr()
    assert cli.main(["copy", "plan", str(out), "--domains", ".".join(reversed(host)), "-o",
                     str(crawls / "copy")]) == cli.EXIT_OK
    capsys.readouterr()
    assert cli.main(["copy", "status", str(crawls / "copy")]) == cli.EXIT_FAILED
    said = capsys.readouterr().out
    assert "missing:" in said and "rerun the same command" not in said
    assert "run `webarchive-index copy copy` with the arguments of the plan" in said


@pytest.mark.parametrize("key,url", [
    ("136,48,187,91)/x", "http://91.187.48.136/x"),
    ("com,example:8080)/a", "http://example.com:8080/a"),
    ("2001:db8::1)/x", "http://[2001:db8::1]/x"),
    ("org,example)/", "http://example.org/")])
def test_the_query_hint_finds_what_it_names(tmp_path, capsys, key, url):
    (tmp_path / "in.cdxj").write_text(
        f'{key} 20240101000000 {{"url": "{url}", "filename": "a.warc.gz", "offset": "0", '
        '"length": "10", "status": "200"}\n')
    assert build(tmp_path / "in.cdxj", "-o", tmp_path / "out") == cli.EXIT_OK
    hint = re.search(r"query it:  webarchive-index query (\S+) '([^']+)' --limit 10",
                     capsys.readouterr().err)
    assert hint and hint[1] == str(tmp_path / "out")
    assert cli.main(["query", hint[1], hint[2], "--limit", "10"]) == cli.EXIT_OK
    found = capsys.readouterr().out.splitlines()
    assert [line.split(" ", 1)[0] for line in found] == [key], (hint[2], found)
    if key.startswith("org,"):
        assert hint[2] == "*.example.org"


def test_a_removal_deletes_no_file_outside_the_cdx_directory_whatever_the_record_says(crawls):
    out = crawls / "out"
    assert build(crawls / "crawl-1", "-o", out) == cli.EXIT_OK
    record_path = out / "cluster" / "build-00001" / "contents.json"
    record = json.loads(record_path.read_text())
    record["archives"]["CORPUS-001-00000.warc.gz"]["cdx"] = "../../victim.cdx.gz"
    record_path.write_text(json.dumps(record))
    (crawls / "victim.cdx.gz").write_text("the user's\n")
    assert build("-o", out, "--update", "--remove", "CORPUS-001-00000*") == cli.EXIT_OK
    assert (crawls / "victim.cdx.gz").read_text() == "the user's\n"


def test_on_s3_too_the_users_indexes_stay_and_only_marked_rewrites_go(crawls, capsys):
    import logging

    import s3server
    from webarchive_indexing import storage
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    _, members = index_of(crawls)
    (crawls / "two-members.cdx.gz").write_bytes(members)
    with s3server.running():
        out = s3server.new_bucket() + "/out"
        storage.write_atomic(f"{out}/indexes/index.cdxj", b"the user's\n")
        for _ in range(2):
            assert build(crawls / "crawl-1", crawls / "two-members.cdx.gz", "-o", out,
                         "--runner", "inline") == cli.EXIT_OK
        assert storage.read_bytes(f"{out}/indexes/index.cdxj") == b"the user's\n"
        assert sorted(storage.list_files(f"{out}/{INDEXES_DIR}")) == [
            f"{out}/{INDEXES_DIR}/{WORK_MARK}", f"{out}/{INDEXES_DIR}/00000-two-members.cdx.gz"]
        other = s3server.new_bucket() + "/out"
        storage.write_atomic(f"{other}/{INDEXES_DIR}/mine.txt", b"not the build's\n")
        capsys.readouterr()
        assert build(crawls / "two-members.cdx.gz", "-o", other, "--runner", "inline") == 2
        assert "holds files that webarchive-index did not write" in capsys.readouterr().err
        assert list(storage.list_files(other)) == [f"{other}/{INDEXES_DIR}/mine.txt"]
