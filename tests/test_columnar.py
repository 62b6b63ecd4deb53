"""The columnar index: Parquet tables in Common Crawl's schema, read back by DuckDB, pyarrow
and Spark SQL, every column checked against the CDX line it came from; Common Crawl's
extra CDXJ fields (``--cdx-fields cc``); the SQL of docs/columnar.md, run as written.
"""
import datetime
import io
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import duckdb
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from warcio.archiveiterator import ArchiveIterator

import rangeserver
import s3server
from helpers import REAL, gunzip_text
from tables import CC_LAYOUT, export_table, lay_out_cc_excerpts, table_rows
from webarchive_indexing.columnar import schema
from webarchive_indexing.cdx import indexer
from webarchive_indexing.warc import walk as records
from webarchive_indexing.cli import main
from webarchive_indexing.commands.corpus import make_corpus
from webarchive_indexing.inputs.indexes import ZipNumCluster
from webarchive_indexing.zipnum.places import cluster_index
from webarchive_indexing.zipnum.layout import write_cluster

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "columnar.md")
UTC = datetime.timezone.utc

# The types of cc-index-schema-flat.json (commoncrawl/cc-index-table), as Spark names them
CC_SPARK_TYPES = (
    ["string"] * 14 + ["int", "string", "string", "timestamp", "smallint"] + ["string"] * 8
    + ["int", "int", "string"])


def index_tree(root, names, cdx_fields="cc"):
    """The CDX lines of the archives ``names`` (paths relative to ``root``, which become
    their CDX filenames)."""
    lines = []
    for name in names:
        result = indexer.index_file(os.path.join(root, name), name, cdx_fields=cdx_fields)
        assert not result.errors, result.errors
        lines += result.lines
    return sorted(lines)


def make_cluster(lines, cluster_dir, shards, lines_per_block=7):
    data = sorted(line.encode("utf-8") for line in lines)
    splits = sorted({data[len(data) * i // shards] for i in range(1, shards)})
    write_cluster(data, cluster_dir, splits, lines_per_block)
    return data


def check_row(row, line, collection):
    """Each column of ``row`` against the CDX line it came from, derived here apart from
    ccschema (urllib's URL split, the line's own fields, the WARC path's parts)."""
    key, timestamp, rest = line.rstrip("\n").split(" ", 2)
    data = json.loads(rest)
    url = data["url"]
    assert row["url_surtkey"] == key and row["url"] == url
    assert row["fetch_time"] == datetime.datetime.strptime(timestamp, "%Y%m%d%H%M%S").replace(tzinfo=UTC)
    assert row["fetch_status"] == (int(data["status"]) if data.get("status", "-").isdigit() else -1)
    for column, field in (("content_digest", "digest"), ("content_mime_type", "mime"),
                          ("content_mime_detected", "mime-detected"), ("content_charset", "charset"),
                          ("content_languages", "languages"), ("content_truncated", "truncated"),
                          ("fetch_redirect", "redirect"), ("warc_filename", "filename")):
        assert row[column] == data.get(field), column
    assert row["warc_record_offset"] == int(data["offset"])
    assert row["warc_record_length"] == int(data["length"])
    parts = urlsplit(url)
    assert row["url_protocol"] == parts.scheme
    if parts.scheme in ("http", "https"):
        assert row["url_port"] == parts.port and row["url_path"] == parts.path
        assert row["url_query"] == (parts.query if "?" in url else None)
        host = parts.hostname.rstrip(".")
        if re.fullmatch(r"[\d.]+", host):
            assert row["url_host_name"] == host and row["url_host_name_reversed"] is None
            assert row["url_host_tld"] is row["url_host_registered_domain"] is None
        else:
            host = host.encode("idna").decode("ascii")
            labels = host.split(".")[::-1]
            assert row["url_host_name"] == host
            assert row["url_host_name_reversed"] == ".".join(labels)
            assert [row[c] for c in ("url_host_tld", "url_host_2nd_last_part",
                                     "url_host_3rd_last_part", "url_host_4th_last_part",
                                     "url_host_5th_last_part")] == (labels + [None] * 5)[:5]
            for suffix, domain in (("url_host_registry_suffix", "url_host_registered_domain"),
                                   ("url_host_private_suffix", "url_host_private_domain")):
                if row[domain] is not None:
                    assert row[domain].endswith("." + row[suffix])
                    assert ("." + host).endswith("." + row[domain])
                    assert row[domain].count(".") == row[suffix].count(".") + 1
    match = re.match(r"crawl-data/([^/]+)/segments/([^/]+)/(warc|robotstxt|crawldiagnostics)/",
                     data["filename"])
    expected = match.groups() if match else (collection, None, "warc")
    assert (row["crawl"], row["warc_segment"], row["subset"]) == expected


def metadata_of_responses(path):
    """{(url, WARC-Date second): {"charset", "languages"}} of each response, from the
    metadata record that refers to it (read with warcio, parsed here)."""
    responses, found = {}, {}
    with open(path, "rb") as fh:
        for record in ArchiveIterator(fh):
            headers = record.rec_headers
            if record.rec_type == "response":
                responses[headers.get_header("WARC-Record-ID")] = (
                    headers.get_header("WARC-Target-URI"),
                    re.sub(r"\D", "", headers.get_header("WARC-Date"))[:14])
            elif record.rec_type == "metadata":
                fields = dict(line.split(": ", 1) for line in
                              record.content_stream().read().decode().splitlines() if ": " in line)
                expected = {}
                if "charset-detected" in fields:
                    expected["charset"] = fields["charset-detected"]
                codes = [lang["code-iso-639-3"] for lang in
                         json.loads(fields.get("languages-cld2", "{}")).get("languages", [])]
                if codes:
                    expected["languages"] = ",".join(dict.fromkeys(codes))
                response = responses.get(headers.get_header("WARC-Concurrent-To"))
                if response is not None:
                    found[response] = expected
    return found


def check_row_groups_sorted(path, row_group_rows):
    """Common Crawl's check (are_part_min_max_increasing.py): each row group's min
    url_surtkey is at least the previous one's max; and the file says it is sorted; every
    row group but the last has ``row_group_rows`` rows."""
    meta = pq.ParquetFile(path).metadata
    previous = None
    for i in range(meta.num_row_groups):
        group = meta.row_group(i)
        assert group.num_rows == row_group_rows or i == meta.num_row_groups - 1
        stats = group.column(0).statistics
        assert group.column(0).path_in_schema == "url_surtkey" and stats.has_min_max
        assert previous is None or previous <= stats.min
        assert stats.min <= stats.max
        previous = stats.max
        assert [c.column_index for c in group.sorting_columns] == [0]
    return meta.num_row_groups


# -- the schema's rules ---------------------------------------------------------------------

@pytest.mark.parametrize("host, expected", [
    # (name, tld ... 5th, registry suffix, registered domain, private suffix, private domain, reversed)
    ("www.example.com", ("www.example.com", "com", "example", "www", None, None,
                         "com", "example.com", "com", "example.com", "com.example.www")),
    ("news.bbc.co.uk", ("news.bbc.co.uk", "uk", "co", "bbc", "news", None,
                        "co.uk", "bbc.co.uk", "co.uk", "bbc.co.uk", "uk.co.bbc.news")),
    ("bucket.s3.amazonaws.com", ("bucket.s3.amazonaws.com", "com", "amazonaws", "s3", "bucket",
                                 None, "com", "amazonaws.com", "s3.amazonaws.com",
                                 "bucket.s3.amazonaws.com", "com.amazonaws.s3.bucket")),
    ("co.uk", ("co.uk", "uk", "co", None, None, None, "co.uk", None, "co.uk", None, "uk.co")),
    ("a.b.c.d.e.f.example.org", ("a.b.c.d.e.f.example.org", "org", "example", "f", "e", "d",
                                 "org", "example.org", "org", "example.org",
                                 "org.example.f.e.d.c.b.a")),
    ("host.notatld", ("host.notatld", "notatld", "host", None, None, None,
                      None, None, None, None, "notatld.host")),
    ("www.bücher.ch.", ("www.xn--bcher-kva.ch", "ch", "xn--bcher-kva", "www", None, None,
                        "ch", "xn--bcher-kva.ch", "ch", "xn--bcher-kva.ch", "ch.xn--bcher-kva.www")),
    ("caf%c3%a9.fr", ("xn--caf-dma.fr", "fr", "xn--caf-dma", None, None, None,
                      "fr", "xn--caf-dma.fr", "fr", "xn--caf-dma.fr", "fr.xn--caf-dma")),
    ("192.168.1.20", ("192.168.1.20",) + (None,) * 10),
    ("3232235796", ("192.168.1.20",) + (None,) * 10),
    ("[2001:db8::1]", ("[2001:db8::1]",) + (None,) * 10),
])
def test_host_columns_follow_cc_index_table(host, expected):
    assert schema.host_parts(host) == expected


@pytest.mark.parametrize("url, expected", [
    ("https://Example.COM:8443/a/b.html?q=1&r=2#top", ("https", "example.com", 8443, "/a/b.html", "q=1&r=2")),
    ("http://example.com", ("http", "example.com", None, "", None)),
    ("http://example.com/?", ("http", "example.com", None, "/", "")),
    ("http://user:secret@example.com:80/x", ("http", "example.com", 80, "/x", None)),
    ("http:/example.com/one-slash", ("http", "example.com", None, "/one-slash", None)),
    ("https:///example.com/three", ("https", "example.com", None, "/three", None)),
    ("dns:www.example.com", ("dns", "www.example.com", None, None, None)),
    ("whois://whois.iana.org/example.com", ("whois", "example.com", None, "/example.com", None)),
    ("urn:uuid:1234", ("urn", None, None, None, None)),
])
def test_url_columns_split_as_java_url(url, expected):
    assert schema.url_parts(url) == expected


def test_common_urls_split_alike_on_both_paths(corpus_table):
    """url_parts splits most URLs with one regular expression: the same parts as the
    general split of every URL of a corpus (odd hosts, ports, escapes, queries)."""
    _, _, lines, _ = corpus_table
    urls = [json.loads(line.split(" ", 2)[2])["url"] for line in lines]
    urls += ["http://a.com:/x", "http://a.com:8080", "http://a.com?q", "HTTP://A.com/", "http://a.com#f?x"]
    assert sum(bool(schema.PLAIN_URL.match(url)) for url in urls) > len(urls) * 0.9
    for url in urls:
        assert schema.url_parts(url) == schema._split_url(url), url


def test_crawl_segment_and_subset_from_common_crawl_paths():
    assert schema.cc_file_parts(
        "crawl-data/CC-MAIN-2024-22/segments/1715971057216.39/robotstxt/x.warc.gz") == (
        "CC-MAIN-2024-22", "1715971057216.39", "robotstxt")
    assert schema.cc_file_parts(
        "crawl-data/CC-NEWS/2019/01/CC-NEWS-20190101042830-00057.warc.gz") == (
        "CC-NEWS-2019-01", "20190101042830-00057", "news-warc")
    assert schema.cc_file_parts("local/crawl-data/x.warc.gz") is None


def test_lines_that_cannot_be_rows():
    good = '{"url": "http://a.com/", "filename": "f.warc.gz", "offset": "0", "length": "9"}'
    assert schema.row_of("com,a)/ 2024 " + good, "c")["fetch_time"] == 1704067200000
    for line, reason in (
            ("com,a)/ 20240230000000 " + good, "day is out of range"),
            ("com,a)/ 2024013112 " + good.replace('"0"', '"2147483648"'), "does not fit"),
            ("com,a)/ 20240101000000 {not json", "bad JSON"),
            ("com,a)/ 20240101000000 " + good.replace('"url"', '"uri"'), "with a URL key"),
            ("com,a)/ 20240101000000 http://a.com/ text/html 200", "known format")):
        with pytest.raises(schema.LineError, match=reason):
            schema.row_of(line, "c")


def test_classic_cdx11_lines_become_rows():
    row = schema.row_of("com,example)/ 20140127171200 http://example.com/ text/html 302 "
                          "ABCD http://example.com/x - 1043 333 example.warc.gz", "c")
    assert (row["fetch_status"], row["fetch_redirect"], row["warc_record_offset"],
            row["warc_record_length"], row["content_mime_detected"]) == (
        302, "http://example.com/x", 333, 1043, None)


def test_public_suffix_list_is_never_fetched(tmp_path):
    """The suffixes come from tldextract's bundled snapshot, with the network closed and
    nothing read from or written to a cache."""
    script = textwrap.dedent("""
        import socket
        import requests
        import tldextract.suffix_list

        def refuse(*args, **kwargs):
            raise OSError("no network in this test")

        socket.socket.connect = socket.create_connection = requests.Session.send = refuse
        original = tldextract.suffix_list.find_first_response

        def find_first_response(cache, urls, *args, **kwargs):
            assert not urls, urls  # asked for no list from anywhere: the snapshot is used
            return original(cache, urls, *args, **kwargs)

        tldextract.suffix_list.find_first_response = find_first_response
        from webarchive_indexing.columnar import schema
        print(schema.host_parts("forums.bbc.co.uk")[6:10])
        print(schema.host_parts("me.github.io")[6:10])
    """)
    env = dict(os.environ, HOME=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / "cache"),
               TLDEXTRACT_CACHE=str(tmp_path / "tld"))
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                         check=True).stdout
    assert out.splitlines() == ["('co.uk', 'bbc.co.uk', 'co.uk', 'bbc.co.uk')",
                                "('io', 'github.io', 'github.io', 'me.github.io')"]
    assert list(tmp_path.rglob("*")) == []


# -- Common Crawl's CDXJ fields -------------------------------------------------------------

def test_cc_fields_of_real_common_crawl_excerpts():
    path = os.path.join(REAL, "chatnoir-eu+chatnoir-resiliparse__warcfile.warc.gz")
    expected = metadata_of_responses(path)
    lines = indexer.index_file(path, "x.warc.gz", cdx_fields="cc").lines
    pywb = indexer.index_file(path, "x.warc.gz").lines
    assert len(lines) == len(pywb) == 16
    for line, plain in zip(lines, pywb):
        key, ts, rest = line.split(" ", 2)
        data = json.loads(rest)
        found = {k: data[k] for k in ("charset", "languages") if k in data}
        assert found == expected[(data["url"], ts)]
        # the same line as pywb's, with Common Crawl's keys after filename
        assert plain.rstrip("}\n") == line.split(', "charset"')[0].rstrip("}\n")
    assert '"languages": "deu,eng,dan"}' in "".join(lines)
    truncated = indexer.index_file(os.path.join(REAL, "webrecorder+cdxj-indexer__cc.warc.gz"),
                               "cc.warc.gz", cdx_fields="cc").lines
    assert truncated[0].endswith('"filename": "cc.warc.gz", "truncated": "length"}\n')


def test_cc_fields_on_a_corpus_with_both_walkers(tmp_path, monkeypatch):
    (path,) = make_corpus(str(tmp_path), files=1, captures=150, seed=5)
    outcomes = []
    for compiled in (True, False):
        with monkeypatch.context() as patch:
            if not compiled:
                patch.setattr(records, "CompiledMembers", None)
            result = indexer.index_file(path, "c.warc.gz", cdx_fields="cc")
        outcomes.append((result.lines, result.records, result.errors))
    assert outcomes[0] == outcomes[1]
    lines = outcomes[0][0]
    expected = metadata_of_responses(path)
    locations = {}
    with open(path, "rb") as fh:
        for record in ArchiveIterator(fh):
            if record.rec_type == "response":
                locations[record.rec_headers.get_header("WARC-Target-URI")] = \
                    record.http_headers.get_header("Location")
    redirects = 0
    for line in lines:
        _, ts, rest = line.split(" ", 2)
        data = json.loads(rest)
        if data.get("mime") == "warc/revisit" or (data["url"], ts) not in expected:
            assert not {"charset", "languages", "redirect"} & set(data)
            continue
        assert {k: data[k] for k in ("charset", "languages") if k in data} == expected[(data["url"], ts)]
        status = data.get("status", "")
        if status.startswith("3") and status != "304" and locations.get(data["url"]):
            redirects += 1
            assert data["redirect"] == urljoin(data["url"], locations[data["url"]])
        else:
            assert "redirect" not in data
    assert redirects and any("languages" in line for line in lines)
    # pywb's lines are these, without Common Crawl's keys
    plain = indexer.index_file(path, "c.warc.gz").lines
    stripped = [re.sub(r', "(charset|languages|truncated|redirect)": "[^"]*"', "", line)
                for line in lines]
    assert stripped == plain


def test_cc_metadata_languages_as_common_crawl_joins_them():
    payload = (b'fetchTimeMs: 12\r\ncharset-detected: windows-1251\r\nlanguages-cld2: '
               b'{"reliable":true,"text-bytes":9,"languages":[{"code":"sr","code-iso-639-3":"srp"},'
               b'{"code":"sr-ME","code-iso-639-3":"srp"},{"code":"en","code-iso-639-3":"eng"}]}\r\n')
    assert indexer.cc_metadata(payload) == {"charset": "windows-1251", "languages": "srp,eng"}
    assert indexer.cc_metadata(b"fetchTimeMs: 12\r\nlanguages-cld2: {\"reliable\":false,\"text-bytes\":3}\r\n") == {}


def test_cc_fields_need_cdxj(capsys):
    with pytest.raises(ValueError, match="need the CDXJ format"):
        indexer.index_file(os.path.join(REAL, "iipc+jwarc__cc.warc.gz"), fmt="cdx11", cdx_fields="cc")
    assert main(["cdx", "--cdx-fields", "cc", "--cdx-format", "cdx11",
                 os.path.join(REAL, "iipc+jwarc__cc.warc.gz")]) == 2
    assert "needs --cdx-format cdxj" in capsys.readouterr().err


def test_redirect_targets():
    class Headers:
        def __init__(self, location):
            self.location = location

        def get_header(self, name):
            return self.location if name == "Location" else None

    base = "http://example.com/a/b"
    assert indexer._redirect(base, "301", Headers("../c?x=1")) == "http://example.com/c?x=1"
    assert indexer._redirect(base, "302", Headers("https://other.org/")) == "https://other.org/"
    assert indexer._redirect(base, "304", Headers("/c")) is None
    assert indexer._redirect(base, "200", Headers("/c")) is None
    assert indexer._redirect(base, "301", Headers("/a b")) is None
    assert indexer._redirect(base, "301", Headers(None)) is None


# -- tables ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def cc_table(tmp_path_factory):
    """A table exported from a cluster of the real Common Crawl excerpts (with Common
    Crawl's CDXJ fields) laid out under their crawl-data paths, and one wget archive."""
    base = tmp_path_factory.mktemp("cc")
    root = lay_out_cc_excerpts(base / "warcs")
    lines = index_tree(str(root), CC_LAYOUT.values())
    make_cluster(lines, str(base / "out" / "cluster"), shards=3)
    summary = export_table(str(base / "out"), str(base / "table"), row_group_rows=10)
    return base, root, lines, summary


def test_table_of_real_excerpts(cc_table):
    base, root, lines, summary = cc_table
    assert summary.error_count == 0 and summary.lines == summary.rows == len(lines)
    rows = table_rows(base / "table")
    assert len(rows) == len(lines)
    by_line = {}
    for row in rows:
        by_line.setdefault((row["url_surtkey"], row["warc_filename"], row["warc_record_offset"]), row)
    for line in lines:
        data = json.loads(line.split(" ", 2)[2])
        check_row(by_line[(line.split(" ", 1)[0], data["filename"], int(data["offset"]))], line, "out")
    # responses of Common Crawl WARCs take charset and languages from their metadata records
    for name, where in CC_LAYOUT.items():
        for (url, ts), expected in metadata_of_responses(root / where).items():
            (row,) = [r for r in rows if r["url"] == url and r["warc_filename"] == where
                      and r["fetch_time"].strftime("%Y%m%d%H%M%S") == ts]
            assert (row["content_charset"], row["content_languages"]) == (
                expected.get("charset"), expected.get("languages"))
    partitions = {(r["crawl"], r["subset"]) for r in rows}
    assert partitions == {("CC-MAIN-2024-22", "warc"), ("CC-MAIN-2020-34", "warc"),
                          ("CC-MAIN-2018-05", "warc"), ("CC-MAIN-2018-05", "crawldiagnostics"),
                          ("out", "warc")}
    whirlwind = [r for r in rows if r["url"] == "https://an.wikipedia.org/wiki/Escopete"]
    assert [(r["content_languages"], r["content_charset"], r["url_host_private_domain"])
            for r in whirlwind] == [("spa", "UTF-8", "wikipedia.org")]
    for name in summary.files:
        assert check_row_groups_sorted(base / "table" / name, 10) >= 1
    # pyarrow's own dataset reader: the same rows, the same partitions
    dataset = ds.dataset(str(base / "table"), format="parquet", partitioning="hive")
    assert dataset.count_rows() == len(lines)
    assert sorted(dataset.to_table(columns=["crawl"]).column("crawl").to_pylist()) == \
        sorted(r["crawl"] for r in rows)


def test_table_of_common_crawl_index_records(tmp_path):
    """Real records of Common Crawl's index (their server's answers for CC-MAIN-2025-33,
    as recorded by cdx_toolkit's tests) as cluster lines: warc, robotstxt and
    crawldiagnostics partitions, redirects, languages and the charset their server calls
    ``encoding``."""
    with open(os.path.join(REAL, "cocrawler+cdx_toolkit__test_basics.jsonl")) as fh:
        answers = [json.loads(line) for line in fh]
    lines = []
    for answer in answers:
        for text in answer["response_text"].splitlines():
            record = json.loads(text)
            key, timestamp = record.pop("urlkey"), record.pop("timestamp")
            lines.append(f"{key} {timestamp} {json.dumps(record)}\n")
    assert len(lines) == 10
    make_cluster(lines, str(tmp_path / "cc" / "cluster"), shards=2, lines_per_block=3)
    summary = export_table(str(tmp_path / "cc"), str(tmp_path / "table"))
    rows = table_rows(tmp_path / "table")
    assert summary.error_count == 0 and len(rows) == 10
    for row in rows:
        line = next(line for line in lines if f'"offset": "{row["warc_record_offset"]}"' in line)
        data = json.loads(line.split(" ", 2)[2])
        check_row(row, line.replace('"encoding"', '"charset"'), None)
        assert row["crawl"] == "CC-MAIN-2025-33"
        assert row["content_charset"] == data.get("encoding")
        assert row["url_host_registered_domain"] == "commoncrawl.org"
    subsets = {}
    for row in rows:
        subsets.setdefault(row["subset"], set()).add(
            (row["fetch_status"], row["fetch_redirect"], row["content_languages"]))
    assert subsets == {"warc": {(200, None, "eng")},
                       "robotstxt": {(301, "https://commoncrawl.org/", None)},
                       "crawldiagnostics": {(301, "https://commoncrawl.org/", None)}}


@pytest.fixture(scope="module")
def corpus_table(tmp_path_factory):
    base = tmp_path_factory.mktemp("corpus")
    paths = make_corpus(str(base / "warcs"), files=2, captures=300, seed=21)
    lines = index_tree(str(base / "warcs"), [os.path.basename(p) for p in paths])
    make_cluster(lines, str(base / "out" / "cluster"), shards=3, lines_per_block=20)
    summary = export_table(str(base / "out" / "cluster" / "cluster.idx"), str(base / "table"),
                           crawl="generated", row_group_rows=50)
    return base, paths, lines, summary


def test_table_of_generated_corpus(corpus_table):
    base, paths, lines, summary = corpus_table
    rows = table_rows(base / "table")
    assert summary.error_count == 0 and len(rows) == summary.rows == len(lines) > 500
    assert summary.shards == 3 and len(summary.files) == 3
    by_line = {(r["url_surtkey"], r["warc_filename"], r["warc_record_offset"]): r for r in rows}
    for line in lines:
        data = json.loads(line.split(" ", 2)[2])
        check_row(by_line[(line.split(" ", 1)[0], data["filename"], int(data["offset"]))],
                  line, "generated")
    expected = {}
    for path in paths:
        for (url, ts), found in metadata_of_responses(path).items():
            expected[(os.path.basename(path), url, ts)] = found
    checked = 0
    for row in rows:
        found = expected.get((row["warc_filename"], row["url"], row["fetch_time"].strftime("%Y%m%d%H%M%S")))
        if found is not None and row["content_mime_type"] != "warc/revisit":
            assert (row["content_charset"], row["content_languages"]) == (
                found.get("charset"), found.get("languages"))
            checked += row["content_languages"] is not None
    assert checked > 50
    assert any(row["fetch_redirect"] for row in rows)
    assert {row["url_host_name"] for row in rows if row["url_host_name_reversed"] is None}
    for name in summary.files:
        assert check_row_groups_sorted(base / "table" / name, 50) > 1


def test_one_host_query_skips_most_row_groups(corpus_table):
    """A one-host query has to read only the row groups whose url_surtkey range can hold
    the host (their statistics say which), and DuckDB's answer is the right one."""
    base, _, lines, summary = corpus_table
    host = max({line.split(")", 1)[0] for line in lines},
               key=lambda h: sum(line.startswith(h + ")") for line in lines))
    low, high = host + ")", host + "*"
    expected = sorted(line.split(" ", 1)[0] for line in lines if low <= line < high)
    got = duckdb.sql(f"SELECT url_surtkey FROM read_parquet('{base}/table/*/*/*.parquet') "
                     f"WHERE url_surtkey >= '{low}' AND url_surtkey < '{high}' "
                     "ORDER BY url_surtkey").fetchall()
    assert [key for key, in got] == expected
    groups = candidates = 0
    for name in summary.files:
        meta = pq.ParquetFile(base / "table" / name).metadata
        for i in range(meta.num_row_groups):
            stats = meta.row_group(i).column(0).statistics
            groups += 1
            candidates += stats.min < high and stats.max >= low
    assert candidates <= 3 < groups


def test_export_over_http_and_from_the_cli(corpus_table, tmp_path, capsys):
    base, _, lines, summary = corpus_table
    with rangeserver.serving(str(base / "out")) as server:
        code = main(["export", server.url + "/cluster/cluster.idx", "--format", "parquet",
                     "-o", str(tmp_path / "t"), "--crawl", "generated", "--row-group-rows", "50",
                     "--no-progress"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert f"table:    {len(lines)} rows from {len(lines)} lines, 3 Parquet files" in err
    for ours, theirs in zip(sorted(base.glob("table/*/*/*")), sorted((tmp_path / "t").rglob("*.parquet"))):
        assert pq.read_table(ours).equals(pq.read_table(theirs))
    # a second export replaces the table whole
    assert main(["export", str(base / "out"), "--format", "parquet", "-o", str(tmp_path / "t"),
                 "--parquet-compression", "gzip", "--no-progress"]) == 0
    assert {p.parent.parent.name for p in (tmp_path / "t").rglob("*.parquet")} == {"crawl=out"}
    assert sorted(os.listdir(tmp_path)) == ["t"]


@pytest.fixture(scope="module")
def s3():
    with s3server.running():
        yield


def test_export_from_and_to_s3(corpus_table, s3, tmp_path, capsys):
    base, _, lines, summary = corpus_table
    bucket = s3server.new_bucket()
    s3server.upload_tree(str(base / "out" / "cluster"), bucket + "/out/cluster")
    args = ["export", bucket + "/out", "--format", "parquet", "-o", bucket + "/table",
            "--crawl", "generated", "--row-group-rows", "50", "--no-progress"]
    assert main(args) == 0
    s3server.download_tree(bucket + "/table", str(tmp_path / "t"))
    assert sorted(str(p.relative_to(tmp_path / "t")) for p in (tmp_path / "t").rglob("*")
                  if p.is_file()) == [f"crawl=generated/subset=warc/part-0000{i}.parquet" for i in range(3)]
    for ours, theirs in zip(sorted(base.glob("table/*/*/*")), sorted((tmp_path / "t").rglob("*.parquet"))):
        assert pq.read_table(ours).equals(pq.read_table(theirs))
    capsys.readouterr()
    # an S3 table is never written over (S3 cannot replace one whole)
    assert main(args) == 2
    assert "is not empty: write the table to a new prefix" in capsys.readouterr().err


def test_cdx_command_with_cc_fields_into_files(tmp_path):
    path = os.path.join(REAL, "commoncrawl+whirlwind-python__whirlwind.warc.gz")
    assert main(["cdx", "--cdx-fields", "cc", "-o", str(tmp_path), path]) == 0
    (written,) = tmp_path.glob("*.cdx.gz")
    assert gunzip_text(written).endswith('"charset": "UTF-8", "languages": "spa"}\n')


def test_bad_and_unsorted_lines(tmp_path, capsys):
    good = ('com,a)/ 20240101000000 {"url": "http://a.com/", "filename": "f.warc.gz", '
            '"offset": "0", "length": "9"}\n')
    bad = good.replace("20240101000000", "20241301000000").replace("com,a)/", "com,b)/")
    make_cluster([good, bad], str(tmp_path / "c" / "cluster"), shards=1)
    assert main(["export", str(tmp_path / "c"), "--format", "parquet", "-o", str(tmp_path / "t"),
                 "--no-progress"]) == 3
    err = capsys.readouterr().err
    assert "error: shard 0 line 2 (com,b)/): bad timestamp '20241301000000'" in err
    assert len(table_rows(tmp_path / "t")) == 1
    # lines whose keys do not sort as the lines do (a control character sorts before the
    # space after a key)
    tab = good.replace("com,a)/", "com,a)/\x01x")
    write_cluster([tab.encode(), good.encode()], str(tmp_path / "u" / "cluster"), [])
    assert main(["export", str(tmp_path / "u"), "--format", "parquet", "-o", str(tmp_path / "t"),
                 "--no-progress"]) == 1
    assert "not sorted by URL key" in capsys.readouterr().err
    assert len(table_rows(tmp_path / "t")) == 1  # the table there before is kept


# -- the docs, as written ------------------------------------------------------------------

def doc_blocks(kind):
    """The fenced blocks of docs/columnar.md whose first line starts with ``kind``."""
    blocks, body = [], None
    for line in open(DOC, encoding="utf-8"):
        if line.startswith("```"):
            if body is not None:
                blocks.append("".join(body))
            body = [] if body is None else None
        elif body is not None:
            body.append(line)
    return [block for block in blocks if block.startswith(kind)]


def test_doc_command_lines(tmp_path, monkeypatch, capsys):
    """build --parquet, then export of its cluster: the same table; cdx --cdx-fields cc."""
    monkeypatch.chdir(tmp_path)
    shutil.copytree(os.path.join(ROOT, "samples"), "samples")
    blocks = doc_blocks("webarchive-index")
    assert len(blocks) == 3
    build, export = blocks[0].splitlines()
    assert main(build.split()[1:]) == 0
    built = {str(p): p.read_bytes() for p in Path("table").rglob("*.parquet")}
    assert main(export.split()[1:]) == 0
    assert built == {str(p): p.read_bytes() for p in Path("table").rglob("*.parquet")}
    cluster_lines = sum(1 for _ in ZipNumCluster(cluster_index("out")).lines())
    assert duckdb.sql("SELECT count(*) FROM read_parquet('table/*/*/*.parquet')").fetchall() == [
        (cluster_lines,)]
    assert cluster_lines > 30 and len(built) == 4
    capsys.readouterr()
    (command,) = blocks[2].splitlines()
    assert main(command.split()[1:]) == 0
    assert [capsys.readouterr().out] == doc_blocks("org,wikipedia")


def test_doc_copy_from_a_query(cc_table, monkeypatch, capsys):
    """The records of a DuckDB query of a table, written as a CSV, copied as written."""
    base, root, lines, _ = cc_table
    monkeypatch.chdir(base)
    con = duckdb.connect()
    (query,) = [block for block in doc_blocks("-- DuckDB") if "records.csv" in block]
    con.execute(query)
    expected = con.sql("SELECT warc_filename, warc_record_offset, warc_record_length "
                       "FROM read_csv('records.csv')").fetchall()
    assert len(expected) > 10
    check, copy = doc_blocks("webarchive-index")[1].splitlines()
    assert main(check.split()[1:]) == 0
    total = capsys.readouterr().out.splitlines()[-1].split()
    assert total[:3] == [str(len(expected)), str(len({f for f, _, _ in expected})),
                         str(sum(n for _, _, n in expected))]
    assert main(copy.split()[1:]) == 0
    copied = []
    for warc in sorted(Path("extract").glob("*.warc.gz")):
        with open(warc, "rb") as fh:
            copied += [record.rec_headers.get_header("WARC-Record-ID")
                       for record in ArchiveIterator(fh) if record.rec_type != "warcinfo"]
    sources = []
    for filename, offset, length in expected:
        with open(root / filename, "rb") as fh:
            fh.seek(offset)
            record = next(ArchiveIterator(io.BytesIO(fh.read(length))))
            sources.append(record.rec_headers.get_header("WARC-Record-ID"))
    assert copied == sources  # every record, once, in the file's order


def test_doc_duckdb_sql(cc_table, monkeypatch):
    base, _, lines, _ = cc_table
    monkeypatch.chdir(base)
    con = duckdb.connect()
    blocks = doc_blocks("-- DuckDB")
    assert len(blocks) == 3
    archive_org = con.sql(blocks[0]).fetchall()
    assert len(archive_org) == 10 and all("archive.org" in url for url, *_ in archive_org)
    statements = [s for s in blocks[1].split(";") if s.strip()]
    for statement in statements[:-1]:
        con.execute(statement)
    counts = {(crawl, subset): n for n, crawl, subset in con.sql(statements[-1]).fetchall()}
    assert sum(counts.values()) == len(lines) and counts[("CC-MAIN-2020-34", "warc")] == 16
    con.execute(blocks[2])
    with open("records.csv") as fh:
        header, *records = fh.read().splitlines()
    assert header == "url,warc_filename,warc_record_offset,warc_record_length" and records


def test_doc_spark_sql(cc_table, spark):
    base, _, lines, _ = cc_table
    (block,) = doc_blocks("# Spark SQL")
    block = block.replace('"table"', repr(str(base / "table")))
    from pyspark.sql import SparkSession
    session = SparkSession.builder.getOrCreate()
    namespace = {}
    exec(compile(block, DOC, "exec"), namespace)
    table = session.table("ccindex")
    assert [f.dataType.simpleString() for f in table.schema.fields] == CC_SPARK_TYPES + ["string", "string"]
    assert [f.name for f in table.schema.fields] == [c for c, _, _ in schema.COLUMNS] + ["crawl", "subset"]
    assert table.count() == len(lines)
    top = session.sql("SELECT url_host_tld, COUNT(*) AS n FROM ccindex WHERE subset = 'warc' "
                      "GROUP BY url_host_tld ORDER BY n DESC LIMIT 1").collect()
    assert top[0]["url_host_tld"] == "org"


def test_doc_athena_statements_on_spark_hive(cc_table, tmp_path):
    """No Athena here: its statements, as written, run on Spark SQL with a Hive metastore
    (the Hive DDL and MSCK REPAIR TABLE Athena implements), in a process of their own."""
    base, _, lines, _ = cc_table
    statements = [s.replace("s3://my-bucket/cc-index/table/", (base / "table").as_uri() + "/")
                  for s in doc_blocks("-- Athena")]
    assert len(statements) == 4
    script = textwrap.dedent("""
        import json, sys
        from pyspark.sql import SparkSession
        work = sys.argv[1]
        spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
                 .config("spark.sql.catalogImplementation", "hive")
                 .config("spark.sql.warehouse.dir", work + "/warehouse")
                 .config("spark.driver.extraJavaOptions", "-Dderby.system.home=" + work)
                 .config("spark.sql.ansi.enabled", "true")
                 .config("spark.sql.ansi.doubleQuotedIdentifiers", "true").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        results = []
        for statement in json.load(sys.stdin):
            if statement.startswith("-- Athena\\nCREATE EXTERNAL"):
                spark.sql("USE ccindex")
            results.append([list(row) for row in spark.sql(statement.strip().rstrip(";")).collect()])
        print(json.dumps(results))
    """)
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], input=json.dumps(statements),
                          capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout.splitlines()[-1])
    expected = [[data["url"], data["filename"], int(data["offset"]), int(data["length"])]
                for data in (json.loads(line.split(" ", 2)[2]) for line in lines)
                if "/CC-MAIN-2018-05/" in data["filename"] and "/warc/" in data["filename"]
                and "commoncrawl.org" in data["url"]]
    assert results[3] == expected and len(expected) == 1
