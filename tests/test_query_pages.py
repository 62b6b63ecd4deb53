"""The CDX server API over a cluster, against pywb's ZipNum reader and CDX operations:
pages (``page=``, ``pageSize=``, ``showNumPages``), filters, from/to, limit and output
formats; and the three ways of finding blocks in ``cluster.idx`` (root index,
binary search in pages, local file) giving the same answers."""
import json
import random

import pytest
from pywb.warcserver.index.cdxobject import CDXException, CDXObject
from pywb.warcserver.index.cdxops import process_cdx
from pywb.utils.memento import MementoUtils
from pywb.warcserver.index.query import CDXQuery

from helpers import pywb_page, pywb_page_info, pywb_params
from test_query import CONFIGS, LINES, QUERIES, brute
from webarchive_indexing.api import request as cdxapi
from webarchive_indexing.zipnum import idxfile, reader
from webarchive_indexing.cli import main
from webarchive_indexing.zipnum.reader import Cluster, IdxFile, search_range
from webarchive_indexing.zipnum.layout import parse_root, root_index, write_cluster

# a few queries of every kind: the page walks below are slow in pywb
PAGE_QUERIES = QUERIES[::12] + [("com", "domain"), ("example.com", "domain"), ("zzzz.zz", "host"),
                               ("0.0.0.0/", "exact"), ("*.example.com", None), ("example.com/a*", None)]


@pytest.fixture(scope="module", params=list(CONFIGS))
def cluster_dir(request, tmp_path_factory):
    out = tmp_path_factory.mktemp(request.param)
    # slices of ~10 idx lines: lookups cross slices, as on a large cluster
    write_cluster(LINES, out, **CONFIGS[request.param], root_slice_bytes=700)
    return out


@pytest.fixture(params=["root", "pages"])
def mode(request, monkeypatch, cluster_dir):
    """How the index is searched: its root, or binary search in (small) pages."""
    monkeypatch.setattr(idxfile, "PAGE_BYTES", 512)
    if request.param == "pages":
        (cluster_dir / "cluster.root").rename(cluster_dir / "cluster.root.off")
        yield request.param
        (cluster_dir / "cluster.root.off").rename(cluster_dir / "cluster.root")
        return
    yield request.param


def key_range(url, match_type):
    return tuple(k.encode() for k in search_range(url, match_type or "exact"))


def test_root_index_describes_the_idx(cluster_dir):
    idx = (cluster_dir / "cluster.idx").read_bytes()
    size, entries = parse_root((cluster_dir / "cluster.root").read_bytes())
    assert size == len(idx) and entries[0][1] == 0
    assert sum(length for _, _, length in entries) == len(idx)
    for key, offset, length in entries:
        piece = idx[offset:offset + length]
        assert piece.startswith(key + b"\t") and piece.endswith(b"\n")
        assert offset == 0 or idx[offset - 1:offset] == b"\n"
    assert root_index(idx, 700) == (cluster_dir / "cluster.root").read_bytes()


def test_root_index_of_nothing_and_bad_roots():
    assert parse_root(root_index(b"")) == (0, [])
    with pytest.raises(ValueError):
        parse_root(b"com,example)/ 2024\t0\t10\n")
    with pytest.raises(ValueError):
        parse_root(root_index(b"a 1\tcdx-00000.gz\t0\t10\t1\n")[:-1])  # cut short
    with pytest.raises(ValueError, match="not a cluster.idx line"):
        root_index(b"no tab here\n")


def test_pages_and_page_counts_equal_pywb(cluster_dir, mode):
    idx = cluster_dir / "cluster.idx"
    cluster = Cluster(cluster_dir)
    for url, mt in PAGE_QUERIES:
        start, end = key_range(url, mt)
        for page_size in (1, 4, 10):
            info = cluster.page_info(start, end, page_size)
            assert info == pywb_page_info(idx, url, mt, page_size), (url, mt, page_size)
            # every page pywb can compute: the counted ones, and one beyond for 0-page answers
            for page in range(max(info["pages"], 1)):
                try:
                    expected = pywb_page(idx, url, mt, page_size, page)
                except CDXException:
                    with pytest.raises(ValueError, match=f"Page {page} invalid"):
                        list(cluster.page(start, end, page, page_size))
                    continue
                assert list(cluster.page(start, end, page, page_size)) == expected, (url, mt, page_size, page)
            if info["pages"]:
                with pytest.raises(CDXException):
                    pywb_page(idx, url, mt, page_size, info["pages"])
                with pytest.raises(ValueError, match="Page .* invalid: First Page is 0"):
                    list(cluster.page(start, end, info["pages"], page_size))


def test_all_pages_joined_equal_a_lookup(cluster_dir, mode):
    cluster = Cluster(cluster_dir)
    for url, mt in QUERIES:
        start, end = key_range(url, mt)
        expected = brute(start.decode(), end.decode())
        assert list(cluster.lookup_range(start, end)) == expected, (url, mt)
        info = cluster.page_info(start, end, 4)
        joined = [line for page in range(info["pages"]) for line in cluster.page(start, end, page, 4)]
        assert joined == expected, (url, mt)


def test_modes_read_what_they_promise(tmp_path, monkeypatch):
    """The root finds a key's slice without reading the index; the paged search reads
    O(log n) pages; both only what the scan reaches."""
    write_cluster(LINES, tmp_path, [], lines_per_block=2, root_slice_bytes=2000)
    reads = []
    real = IdxFile._read

    def read(idx, offset, length):  # every read of cluster.idx (a local one through its open file)
        reads.append((offset, length))
        return real(idx, offset, length)
    monkeypatch.setattr(IdxFile, "_read", read)
    _, entries = parse_root((tmp_path / "cluster.root").read_bytes())
    assert len(entries) > 20
    start, end = key_range("example.org/", "exact")
    expected = brute(start.decode(), end.decode())
    assert expected

    assert list(Cluster(tmp_path).lookup_range(start, end)) == expected
    # first the slice whose key is the last below the start, with the next one's head;
    # then only following slices, as far as the result reaches
    i = max(n for n, (key, _, _) in enumerate(entries) if key < start)
    _, offset, length = entries[i]
    assert reads[0] == (offset, length + min(idxfile.SLICE_OVERLAP, entries[i + 1][2]))
    assert [offset for offset, _ in reads] == [e[1] for e in entries[i:i + len(reads)]]

    reads.clear()
    monkeypatch.setattr(idxfile, "PAGE_BYTES", 1024)
    pages = -(-(tmp_path / "cluster.idx").stat().st_size // 1024)
    cluster = Cluster(IdxFile(str(tmp_path / "cluster.idx")), reader.MAX_BLOCKS_PER_READ)
    assert list(cluster.lookup_range(start, end)) == expected
    assert pages > 50 and 1 < len(reads) <= pages.bit_length() + 3
    assert all(length == 1024 and offset % 1024 == 0 for offset, length in reads)


def test_a_root_that_does_not_fit_its_index_is_ignored(tmp_path, caplog):
    """As after a build that published its root but failed to publish its index."""
    write_cluster(LINES, tmp_path, [LINES[len(LINES) // 2]], lines_per_block=5, root_slice_bytes=900)
    start, end = key_range("example.com", "domain")
    expected = brute(start.decode(), end.decode())
    root = (tmp_path / "cluster.root").read_bytes()

    # the root of another index (of another size)
    write_cluster(LINES, tmp_path, [LINES[len(LINES) // 2]], lines_per_block=6, root_slice_bytes=900)
    (tmp_path / "cluster.root").write_bytes(root)
    assert list(Cluster(tmp_path).lookup_range(start, end)) == expected
    assert "ignoring the root index" in caplog.text and "describes an index of" in caplog.text

    # a root of an index of the same size whose slices start elsewhere
    header, *entries = root_index((tmp_path / "cluster.idx").read_bytes(), 900).splitlines(keepends=True)
    shifted = [b"%s\t%d\t%s" % (key, int(offset) + 1, length) for key, offset, length in
               (entry.split(b"\t") for entry in entries)]
    (tmp_path / "cluster.root").write_bytes(header + b"".join(shifted))
    caplog.clear()
    assert list(Cluster(tmp_path).lookup_range(start, end)) == expected
    assert "its root does not describe bytes" in caplog.text

    # not a root at all
    (tmp_path / "cluster.root").write_bytes(b"garbage")
    caplog.clear()
    assert list(Cluster(tmp_path).lookup_range(start, end)) == expected
    assert "ignoring" in caplog.text and "not a cluster.root" in caplog.text


def test_empty_cluster_pages(tmp_path):
    write_cluster([], tmp_path, [])
    start, end = key_range("com", "domain")
    assert Cluster(tmp_path).page_info(start, end) == {"pages": 0, "pageSize": 10, "blocks": 0}
    assert list(Cluster(tmp_path).page(start, end, 0)) == []


FILTERS = [["=status:200"], ["!=status:404"], ["~url:https://"], ["mime:html"], ["~filename:.*0000[1-3]"],
           ["!~timestamp:201[0-5]"], ["example"], ["digest:A", "!status:301"], ["=statuscode:301"],
           ["~original:.*/p/"], ["=m:text/html"], ["=s:200"]]


def pywb_processed(lines, output, filters=(), from_ts=None, to_ts=None, limit=None):
    params = pywb_params("example.com", "domain", filter=list(filters), limit=limit,
                         **{"from": from_ts, "to": to_ts})
    # pywb's alias table maps 's' to length; the CDX legend (and we) to the status code
    params["filter"] = [f.replace("=s:", "=status:") for f in params["filter"]]
    cdxs = process_cdx((CDXObject(line) for line in lines), CDXQuery(params))
    if output == "json":
        return [cdx.to_json().encode() for cdx in cdxs]
    if output == "cdx11":
        return [cdx.to_text(list(cdxapi.CDX11_FIELDS)).encode() for cdx in cdxs]
    if output == "text":
        return [cdx.to_text().encode() for cdx in cdxs]
    if output == "link":
        return [link.encode() for link in MementoUtils.make_timemap(cdxs, {})]
    return [cdx.to_cdxj().encode() if not line_is_cdxj(cdx) else cdx.to_text().encode() for cdx in cdxs]


def line_is_cdxj(cdx):
    return cdx._from_json


def cdx11_lines():
    out = []
    for line in LINES:
        f = cdxapi.fields_of(line)
        out.append(" ".join(f.get(n, "-") for n in cdxapi.CDX11_FIELDS).encode() + b"\n")
    return sorted(out)


@pytest.mark.parametrize("lines", [LINES, cdx11_lines()], ids=["cdxj", "cdx11"])
def test_filters_ranges_limits_and_outputs_equal_pywb(lines):
    rng = random.Random(5)
    selected = [line for line in lines if line.startswith((b"com,example", b"com,example,"))]
    assert len(selected) > 200
    cases = [dict(filters=f) for f in FILTERS]
    cases += [dict(from_ts=ts) for ts in ("2015", "201806", "20200101000000")]
    cases += [dict(to_ts=ts) for ts in ("2015", "201806", "2019123")]
    cases += [dict(from_ts="2014", to_ts="2016", filters=["=status:200"], limit=5), dict(limit=1), dict(limit=10**6)]
    cases += [dict(filters=rng.sample(sum(FILTERS, []), 2)) for _ in range(5)]
    for case in cases:
        for output in cdxapi.OUTPUTS:
            expected = pywb_processed(selected, output, **case)
            assert list(cdxapi.process(selected, output=output, **case)) == expected, (case, output)
    assert list(cdxapi.process(selected, filters=["=status:999"])) == []


def test_non_ascii_urls_are_encoded_as_pywb_does():
    line = 'com,example)/caf%c3%a9 20240101000000 {"url": "http://example.com/café", "status": 200}\n'.encode()
    assert list(cdxapi.process([line], output="json")) == [CDXObject(line).to_json().encode()]
    assert json.loads(list(cdxapi.process([line], output="json"))[0])["status"] == "200"


@pytest.mark.parametrize("bad, message", [
    (dict(filters=["~url:("]), "bad regular expression"), (dict(filters=["!"]), "empty filter"),
    (dict(from_ts="2024-01"), "from must be a timestamp"), (dict(to_ts="123456789012345"), "to must be"),
    (dict(output="xml"), "unknown output")])
def test_process_rejects_bad_options(bad, message):
    with pytest.raises(ValueError, match=message):
        list(cdxapi.process(LINES[:3], **bad))
    with pytest.raises(ValueError):
        cdxapi.fields_of(b"a b c\n")


def run_query(capsysbinary, *args):
    status = main(["query", *map(str, args)])
    out, err = capsysbinary.readouterr()
    return status, out, err.decode()


def test_query_command(tmp_path, capsysbinary):
    write_cluster(LINES, tmp_path, [LINES[100]], lines_per_block=7, root_slice_bytes=500)
    start, end = key_range("example.com", "domain")
    everything = brute(start.decode(), end.decode())

    status, out, _ = run_query(capsysbinary, tmp_path, "*.example.com")
    assert status == 0 and out == b"".join(everything)
    status, out, _ = run_query(capsysbinary, tmp_path / "cluster.idx", "example.com", "--match-type", "domain",
                               "--filter", "=status:200", "--from", "2016", "--to", "2020", "--output", "json",
                               "--limit", "3")
    assert out.splitlines(keepends=True) == list(cdxapi.process(everything, ["=status:200"], "2016", "2020", 3, "json"))
    assert len(out.splitlines()) == 3

    status, out, _ = run_query(capsysbinary, tmp_path, "*.example.com", "--show-num-pages", "--page-size", "2")
    info = json.loads(out)
    assert info == Cluster(tmp_path).page_info(start, end, 2) and info["pages"] > 3
    pages = b"".join(run_query(capsysbinary, tmp_path, "*.example.com", "--page", p, "--page-size", "2")[1]
                     for p in range(info["pages"]))
    assert pages == b"".join(everything)
    status, _, err = run_query(capsysbinary, tmp_path, "*.example.com", "--page", info["pages"], "--page-size", "2")
    assert status == 1 and "invalid: First Page is 0" in err

    for bad in (["--page", "1", "--show-num-pages"], ["--page-size", "2"], ["--from", "x"], ["--filter", "~a:("]):
        status, out, err = run_query(capsysbinary, tmp_path, "*.example.com", *bad)
        assert status == 2 and out == b"" and err.startswith("webarchive-index query: ")
    status, _, err = run_query(capsysbinary, tmp_path / "nowhere", "*.example.com")
    assert status == 1 and "no ZipNum index" in err


def test_backwards_and_counts_equal_brute_force(cluster_dir, mode):
    """lookup_range_back is lookup_range last first, count_range its length, with the root
    and with the paged search, for every query and for arbitrary keys (whole lines too)."""
    cluster = Cluster(cluster_dir)
    for url, mt in QUERIES:
        start, end = key_range(url, mt)
        expected = brute(start.decode(), end.decode())
        assert list(cluster.lookup_range_back(start, end)) == expected[::-1], (url, mt)
        assert cluster.count_range(start, end) == len(expected), (url, mt)
    rng = random.Random(11)
    for _ in range(60):
        a, b = sorted(rng.sample(LINES, 2))
        start = rng.choice([a, a[:rng.randint(1, len(a))], a.split(b" ")[0], b"", b"\x00"])
        end = rng.choice([b, b + b"\x00", b.split(b" ")[0] + b"!", b"\xff"])
        expected = [line for line in LINES if start <= line < end]
        assert list(cluster.lookup_range_back(start, end)) == expected[::-1], (start, end)
        assert cluster.count_range(start, end) == len(expected), (start, end)


def test_counts_read_only_the_ends_and_each_shards_last_block(tmp_path, monkeypatch):
    splits = [LINES[len(LINES) // 3], LINES[2 * len(LINES) // 3]]
    write_cluster(LINES, tmp_path, splits, lines_per_block=7)
    cluster = Cluster(tmp_path)
    reads = []
    real = cluster._read
    monkeypatch.setattr(cluster, "_read", lambda shard, offset, length: reads.append((shard, offset)) or real(shard, offset, length))
    start, end = b"0", b"zz"
    assert cluster.count_range(start, end) == len(LINES) > 2000
    blocks = -(-len(LINES) // 7)
    # the first block (full), a sample of a full one, the last of each shard and the last
    assert len(reads) <= 5 < blocks
    reads.clear()
    assert cluster.count_range(start, end) == len(LINES)
    assert len(reads) <= 4  # the number of lines a block holds is known now
