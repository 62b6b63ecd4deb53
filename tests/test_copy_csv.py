"""``copy --records-csv``: the records a CSV names, as Common Crawl's WARC export takes a SQL
result, here written by DuckDB from a table exported from a cluster; header detection,
bad rows, duplicates, and a plan that remembers its file.
"""
import io
import json
import sys

import duckdb
import pytest
from warcio.archiveiterator import ArchiveIterator

from tables import export_table
from test_copy import REPO, launcher_env, run_launcher
from webarchive_indexing import cli
from webarchive_indexing.commands.copy import copy as run_copy
from webarchive_indexing.commands.build import build
from webarchive_indexing.commands.corpus import make_corpus, read_manifest
from webarchive_indexing.copy.csvrecords import read_records
from webarchive_indexing.options import BuildOptions

COLUMNS = "url, warc_filename, warc_record_offset, warc_record_length"


@pytest.fixture(scope="module")
def collection(tmp_path_factory):
    """Archives under crawl/ (their manifests beside them), their cluster and its table."""
    root = tmp_path_factory.mktemp("csv")
    paths = make_corpus(str(root / "crawl"), files=2, captures=80, seed=71, hosts=12)
    build([str(root / "crawl")], str(root / "index"), BuildOptions(shards=2, runner="inline"))
    export_table(str(root / "index"), str(root / "table"))
    manifest = {}
    for path in paths:
        for entry in read_manifest(path):
            manifest[path.rsplit("/", 1)[-1], entry["offset"]] = entry
    return root, manifest


def query(root, where, out, header=True):
    """A DuckDB query of the table, written as a CSV as Athena or DuckDB write one."""
    duckdb.execute(f"COPY (SELECT {COLUMNS} FROM read_parquet('{root}/table/*/*/*.parquet') "
                   f"WHERE {where} ORDER BY url_host_name DESC, warc_record_offset) "
                   f"TO '{out}' (HEADER {str(header).lower()})")
    names = ", ".join(f"'{name}'" for name in COLUMNS.split(", "))
    return duckdb.sql(f"SELECT warc_filename, warc_record_offset, warc_record_length "
                      f"FROM read_csv('{out}', header = {str(header).lower()}, "
                      f"names = [{names}])").fetchall()


def copied_records(out):
    """(WARC-Target-URI, WARC-Record-ID) of every record copied into ``out``, in order."""
    found = []
    for warc in sorted(out.glob("*.warc.gz")):
        with open(warc, "rb") as fh:
            found += [(r.rec_headers.get_header("WARC-Target-URI"),
                       r.rec_headers.get_header("WARC-Record-ID"))
                      for r in ArchiveIterator(fh) if r.rec_type != "warcinfo"]
    return found


def source_records(root, rows):
    found = []
    for filename, offset, length in rows:
        with open(root / "crawl" / filename, "rb") as fh:
            fh.seek(offset)
            record = next(ArchiveIterator(io.BytesIO(fh.read(length))))
            found.append((record.rec_headers.get_header("WARC-Target-URI"),
                          record.rec_headers.get_header("WARC-Record-ID")))
    return found


def test_copy_of_a_duckdb_query(collection, tmp_path, capsys):
    root, manifest = collection
    rows = query(root, "content_mime_type = 'text/html'", tmp_path / "records.csv")
    assert 20 < len(rows) and all((f, o) in manifest for f, o, _ in rows)
    args = ["copy", "copy", "--records-csv", str(tmp_path / "records.csv"), "-o",
            str(tmp_path / "out"), "--warc-prefix", str(root / "crawl"), "--records-per-file",
            "15", "--runner", "inline", "--no-progress"]
    assert cli.main(args) == 0
    err = capsys.readouterr().err
    assert f"plan:     {len(rows)} records" in err and "copied:   " in err
    assert copied_records(tmp_path / "out") == source_records(root, rows)
    with open(next((tmp_path / "out").glob("*.warc.gz")), "rb") as fh:
        info = next(ArchiveIterator(fh)).content_stream().read().decode()
    assert f"source-records: {tmp_path / 'records.csv'}" in info
    plan = json.loads((tmp_path / "out" / "plan" / "plan.json").read_text())
    assert plan["cluster"] is None and len(plan["records_sha1"]) == 40
    assert len(plan["chunks"]) == -(-len(rows) // 15)
    # a rerun: nothing to do; another file into the same output: refused
    assert cli.main(args) == 0
    assert "files were complete already" in capsys.readouterr().err
    query(root, "content_mime_type <> 'text/html'", tmp_path / "records.csv")
    assert cli.main(args) == cli.EXIT_USAGE
    assert "differs in: the records CSV (its SHA-1)" in capsys.readouterr().err


def test_check_and_plan(collection, tmp_path, capsys):
    root, _ = collection
    rows = query(root, "fetch_status = 200", tmp_path / "r.csv")
    assert cli.main(["copy", "check", "--records-csv", str(tmp_path / "r.csv"), "--json"]) == 0
    total = json.loads(capsys.readouterr().out)["total"]
    warcs = [(f, o, n) for f, o, n in rows if not f.endswith((".arc", ".arc.gz"))]
    assert total == {"captures": len(warcs), "warc_files": len({f for f, _, _ in warcs}),
                     "bytes": sum(n for _, _, n in warcs), "arc_captures": len(rows) - len(warcs)}
    assert cli.main(["copy", "plan", "--records-csv", str(tmp_path / "r.csv"), "-o",
                     str(tmp_path / "out")]) == 0
    assert capsys.readouterr().out == f"{tmp_path / 'out' / 'plan' / 'chunks.txt'}\n"


def test_header_found_or_not(collection, tmp_path):
    root, _ = collection
    with_header = query(root, "url_host_tld = 'com'", tmp_path / "a.csv")
    without = query(root, "url_host_tld = 'com'", tmp_path / "b.csv", header=False)
    assert with_header == without
    # other columns, in another order, quoted as Athena quotes every value
    duckdb.execute(f"COPY (SELECT warc_record_length, fetch_status, warc_filename, url, "
                   f"warc_record_offset FROM read_parquet('{root}/table/*/*/*.parquet') "
                   f"WHERE url_host_tld = 'com' ORDER BY url_host_name DESC, warc_record_offset) "
                   f"TO '{tmp_path / 'c.csv'}' (HEADER, FORCE_QUOTE *)")
    assert (tmp_path / "c.csv").read_text().startswith('"warc_record_length","fetch_status"')
    found = [[(r.filename, r.offset, r.length) for _, r in read_records(str(tmp_path / name))]
             for name in ("a.csv", "b.csv", "c.csv")]
    assert found == [with_header] * 3


def test_each_record_once(tmp_path):
    (tmp_path / "r.csv").write_text(f"{COLUMNS.replace(' ', '')}\n"
                                    "http://a/,x.warc.gz,10,5\n\n"
                                    "http://b/,x.warc.gz,20,5\n"
                                    "http://a/,x.warc.gz,10,5\n")
    assert [(url, r.offset) for url, r in read_records(str(tmp_path / "r.csv"))] == [
        ("http://a/", 10), ("http://b/", 20)]


@pytest.mark.parametrize("text,says", [
    ("url,warc_filename,warc_record_offset\nhttp://a/,x.warc.gz,1\n",
     "the header names no warc_record_length column"),
    ("http://a/,x.warc.gz,ten,5\n", "line 1: neither a header"),
    (f"{COLUMNS}\nhttp://a/,x.warc.gz,-1,5\n", "line 2: warc_record_offset '-1'"),
    (f"{COLUMNS}\nhttp://a/,x.warc.gz,1,0\n", "line 2: warc_record_offset '1' and warc_record_length '0'"),
    (f"{COLUMNS}\nhttp://a/,,1,5\n", "line 2: no warc_filename"),
    (f"{COLUMNS}\nhttp://a/,x.warc.gz\n", "line 2: 2 columns"),
])
def test_rows_that_name_no_record(tmp_path, capsys, text, says):
    (tmp_path / "r.csv").write_text(text.replace(", ", ","))
    assert cli.main(["copy", "plan", "--records-csv", str(tmp_path / "r.csv"), "-o",
                     str(tmp_path / "out")]) == cli.EXIT_USAGE
    assert says in capsys.readouterr().err
    assert not (tmp_path / "out" / "plan" / "plan.json").exists()


def test_one_source_of_records(collection, tmp_path, capsys):
    root, _ = collection
    (tmp_path / "r.csv").write_bytes(b"\xff\xfe not text\n")
    for args, says in (
            (["copy", "check", str(root / "index"), "--records-csv", "r.csv"],
             "--records-csv names the records itself"),
            (["copy", "check", "--domains", "example.com"], "no records to copy"),
            (["copy", "check", "--records-csv", str(tmp_path / "none.csv")],
             "no such records CSV"),
            (["copy", "check", "--records-csv", str(tmp_path / "r.csv")], "not a CSV file")):
        assert cli.main(args) == cli.EXIT_USAGE, args
        assert says in capsys.readouterr().err, args


def test_library_entry_point(collection, tmp_path):
    """``commands.copy.copy(CopyOptions(records_csv=...))``, as the command does."""
    from webarchive_indexing.options import CopyOptions
    root, _ = collection
    rows = query(root, "url_path = '/'", tmp_path / "r.csv")
    result = run_copy(CopyOptions(records_csv=str(tmp_path / "r.csv"),
                                      output=str(tmp_path / "out"),
                                      warc_prefix=str(root / "crawl"), runner="inline"))
    assert result.done and result.after.copied == len(rows) > 0
    assert copied_records(tmp_path / "out") == source_records(root, rows)


def test_launcher_takes_a_records_csv(collection, tmp_path):
    """scripts/runremotecopy.sh with COPY_RECORDS_CSV in place of a cluster and a selection
    (inline runner; the Hadoop path is the same job, tested in test_copy.py)."""
    root, _ = collection
    rows = query(root, "url_host_tld = 'org'", tmp_path / "records.csv")
    settings = dict(RUNNER="inline", MRJOB_CONF=REPO / "mrjob.conf.sample",
                    COPY_RECORDS_CSV="records.csv", COPY_OUTPUT="out",
                    WARC_PREFIX=root / "crawl", RECORDS_PER_FILE=7, PYTHON=sys.executable)
    result = run_launcher(launcher_env(tmp_path, **settings), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert copied_records(tmp_path / "out") == source_records(root, rows)
    both = dict(settings, COPY_CLUSTER=root / "index")
    result = run_launcher(launcher_env(tmp_path, **both), cwd=tmp_path)
    assert result.returncode == 2 and "COPY_RECORDS_CSV names the records itself" in result.stderr
    result = run_launcher(launcher_env(tmp_path), "--help")
    assert "COPY_RECORDS_CSV" in result.stdout
