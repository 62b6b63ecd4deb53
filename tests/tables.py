"""What the tests of columnar tables share: real Common Crawl excerpts laid out as in
their crawls, a table's rows as DuckDB reads them, two tables compared."""
import os
import shutil

from helpers import REAL

# Real Common Crawl excerpts laid out under paths in the shape of their crawls' (the
# segments and file names are made up), and one archive that is not Common Crawl's
CC_LAYOUT = {
    "commoncrawl+whirlwind-python__whirlwind.warc.gz":
        "crawl-data/CC-MAIN-2024-22/segments/1715971057216.39/warc/"
        "CC-MAIN-20240517233122-20240518023122-00000.warc.gz",
    "chatnoir-eu+chatnoir-resiliparse__warcfile.warc.gz":
        "crawl-data/CC-MAIN-2020-34/segments/1596439738015.38/warc/"
        "CC-MAIN-20200808165417-20200808195417-00395.warc.gz",
    "webrecorder+cdxj-indexer__cc.warc.gz":
        "crawl-data/CC-MAIN-2018-05/segments/1516084886237.6/warc/"
        "CC-MAIN-20180116070444-20180116090444-00000.warc.gz",
    "iipc+jwarc__cc.warc.gz":
        "crawl-data/CC-MAIN-2018-05/segments/1516084886237.6/crawldiagnostics/"
        "CC-MAIN-20180116070444-20180116090444-00001.warc.gz",
    "iipc+webarchive-commons__IAH-urls-wget.warc.gz": "wget/IAH-urls-wget.warc.gz",
}


def export_table(location, table_dir, **options):
    """``export --format parquet`` of the cluster at ``location`` into ``table_dir``; the
    ``table.TableSummary``."""
    from webarchive_indexing.commands.export import export
    from webarchive_indexing.options import ExportOptions
    return export(ExportOptions(location=location, output=table_dir, format="parquet",
                                **options)).table


def lay_out_cc_excerpts(root):
    """Copy the excerpts of ``CC_LAYOUT`` to their paths under ``root``; ``root``."""
    for name, where in CC_LAYOUT.items():
        (root / where).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(os.path.join(REAL, name), root / where)
    return root


def table_rows(table_dir):
    """Every row of a table, with its partition columns, as DuckDB reads it."""
    import duckdb
    con = duckdb.connect()
    rel = con.sql(f"SELECT * FROM read_parquet('{table_dir}/*/*/*.parquet', "
                  "hive_partitioning = true)")
    names = rel.columns
    return [dict(zip(names, row)) for row in rel.fetchall()]


def table_files(table_dir):
    """The table's files, as its readers see them: not those whose names start with '.'
    (a local table's mark, publish.TABLE_MARK, which S3 tables do not have)."""
    return sorted(str(p.relative_to(table_dir)) for p in table_dir.rglob("*")
                  if p.is_file() and not p.name.startswith("."))


def assert_same_tables(ours, theirs):
    """The same files, each with the same rows in the same row groups (pyarrow) and the
    same bytes."""
    import pyarrow.parquet as pq
    names = table_files(ours)
    assert names and names == table_files(theirs)
    for name in names:
        a, b = pq.ParquetFile(ours / name), pq.ParquetFile(theirs / name)
        assert a.metadata.num_row_groups == b.metadata.num_row_groups, name
        assert a.read().equals(b.read()), name
        assert (ours / name).read_bytes() == (theirs / name).read_bytes(), name
