"""Remote clusters, over HTTP (a range-serving web server on 127.0.0.1) and S3 (moto's
server): the same answers as the local cluster, in few requests, streamed."""
import json
import random
import shutil

import pytest

import rangeserver
import s3server
from test_query import LINES, N, QUERIES, brute
from webarchive_indexing.zipnum import idxfile, reader
from webarchive_indexing import storage
from webarchive_indexing.cli import main
from webarchive_indexing.zipnum.reader import Cluster, open_cluster, search_range
from webarchive_indexing.zipnum.layout import write_cluster

SPLITS = [LINES[N // 5], LINES[N // 2], LINES[4 * N // 5]]


@pytest.fixture(scope="module")
def cluster_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("site") / "indexes"
    # ~30 root slices, blocks of 20 lines: lookups cross slices, shards and blocks
    write_cluster(LINES, out / "cluster", SPLITS, lines_per_block=20, root_slice_bytes=600)
    return out


@pytest.fixture(scope="module")
def server(cluster_dir):
    with rangeserver.serving(cluster_dir) as running:
        yield running


def key_range(url, match_type):
    return tuple(k.encode() for k in search_range(url, match_type))


def runs_of(cluster_dir, url, match_type):
    """Block reads a lookup makes (the local cluster's count)."""
    cluster = Cluster(cluster_dir / "cluster")
    reads = []
    real = cluster._read
    cluster._read = lambda shard, offset, length: reads.append(offset) or real(shard, offset, length)
    list(cluster.lookup(url, match_type))
    return len(reads)


@pytest.mark.parametrize("where", ["/indexes/cluster/cluster.idx", "/indexes/cluster", "/indexes"])
def test_http_cluster_answers_like_the_local_one(cluster_dir, where, tmp_path):
    site = tmp_path / "site"
    shutil.copytree(cluster_dir, site / "indexes")
    with rangeserver.serving(site) as server:
        cluster = open_cluster(server.url + where)
        for url, mt in QUERIES:
            assert list(cluster.lookup(url, mt)) == brute(*search_range(url, mt)), (url, mt)
        start, end = key_range("example.com", "domain")
        local = Cluster(cluster_dir / "cluster")
        info = cluster.page_info(start, end, 3)
        assert info == local.page_info(start, end, 3) and info["pages"] > 5
        for page in range(info["pages"]):
            assert list(cluster.page(start, end, page, 3)) == list(local.page(start, end, page, 3))


def test_a_cold_lookup_makes_at_most_three_requests(cluster_dir, server):
    """Root, one slice of cluster.idx, one run of blocks: for every lookup whose result
    lies in one run of adjacent blocks (at most MAX_BLOCKS_PER_READ, one shard)."""
    rng = random.Random(11)
    checked = 0
    captured = [json.loads(line.split(b" ", 2)[2])["url"] for line in rng.sample(LINES, 60)]
    for url, mt in QUERIES + [(url, "exact") for url in captured]:
        server.requests.clear()
        expected = brute(*search_range(url, mt))
        assert list(open_cluster(server.url + "/cluster/cluster.idx").lookup(url, mt)) == expected
        made = [(method, path) for method, path, _ in server.requests]
        assert made[0] == ("GET", "/cluster/cluster.root")
        if runs_of(cluster_dir, url, mt) == 1:
            assert len(made) <= 3, (url, mt, server.requests)
            checked += 1
    assert checked > 100


def test_lookups_stream(cluster_dir, server):
    """The first lines of a large result come after a few requests, not after all."""
    start, end = key_range("com", "domain")
    everything = brute(start.decode(), end.decode())
    assert len(everything) > 1000
    server.requests.clear()
    lines = open_cluster(server.url + "/cluster").lookup_range(start, end)
    assert [next(lines) for _ in range(5)] == everything[:5]
    assert len(server.requests) == 3
    assert list(lines) == everything[5:]
    assert len(server.requests) > 10


def test_without_root_the_index_is_binary_searched(cluster_dir, tmp_path, monkeypatch):
    site = tmp_path / "site"
    write_cluster(LINES, site, SPLITS, lines_per_block=20, root_slice_bytes=600)
    (site / "cluster.root").unlink()
    monkeypatch.setattr(idxfile, "PAGE_BYTES", 1024)
    pages = -(-(site / "cluster.idx").stat().st_size // 1024)
    with rangeserver.serving(site) as server:
        for url, mt in QUERIES[::4]:
            server.requests.clear()
            assert list(open_cluster(server.url + "/cluster.idx").lookup(url, mt)) == brute(*search_range(url, mt))
            idx_reads = [r for _, path, r in server.requests if path == "/cluster.idx"]
            if runs_of(cluster_dir, url, mt) == 1:
                assert len(idx_reads) <= pages.bit_length() + 3


def test_missing_remote_cluster(server):
    with pytest.raises(FileNotFoundError, match="no ZipNum index at .*/nothing/cluster/cluster.idx or "):
        open_cluster(server.url + "/nothing")


def test_query_verbose_prints_the_requests(server, capsysbinary):
    assert main(["query", server.url + "/cluster/cluster.idx", "example.org/", "--verbose"]) == 0
    out, err = capsysbinary.readouterr()
    assert out == b"".join(brute(*search_range("example.org/", "exact")))
    requests = [line for line in err.decode().splitlines() if line.startswith("request: ")]
    assert requests[0] == f"request: GET {server.url}/cluster/cluster.root"
    assert 2 <= len(requests) <= 3 and all("bytes=" in r for r in requests[1:])


@pytest.fixture(scope="module")
def s3():
    with s3server.running():
        yield


def test_s3_cluster_in_three_requests(s3, cluster_dir, capsysbinary):
    bucket = s3server.new_bucket()
    s3server.upload_tree(cluster_dir, bucket + "/out")
    made = []

    def listen(method, url, byte_range):
        made.append((method, url, byte_range))

    storage.add_request_listener(listen)
    try:
        for location in (bucket + "/out", bucket + "/out/cluster", bucket + "/out/cluster/cluster.idx"):
            for url, mt in QUERIES[::6]:
                made.clear()
                assert list(open_cluster(location).lookup(url, mt)) == brute(*search_range(url, mt)), (location, url)
                if runs_of(cluster_dir, url, mt) == 1:
                    assert len(made) <= 3, made
                    assert made[0][1] == bucket + "/out/cluster/cluster.root"
    finally:
        storage.remove_request_listener(listen)
    assert main(["query", bucket + "/out", "*.example.org", "--output", "cdx11"]) == 0
    out, _ = capsysbinary.readouterr()
    assert len(out.splitlines()) == len(brute(*search_range("example.org", "domain")))


@pytest.mark.parametrize("shard", ["../secret.gz", "../../secret.gz", "/secret.gz", "//127.0.0.1/secret.gz",
                                   "http://127.0.0.1:{port}/secret.gz", "s3://bucket/secret.gz", "a/../../secret.gz"])
def test_remote_shard_names_outside_the_cluster_are_never_fetched(tmp_path, shard):
    """A remote cluster.idx naming a shard elsewhere (another path, host or scheme) is
    refused: nothing outside the cluster's own location is requested."""
    site = tmp_path / "site"
    write_cluster(LINES, site / "indexes" / "cluster", [], lines_per_block=20)
    (site / "secret.gz").write_bytes((site / "indexes" / "cluster" / "cdx-00000.gz").read_bytes())
    with rangeserver.serving(site) as server:
        idx = site / "indexes" / "cluster" / "cluster.idx"
        port = server.url.rsplit(":", 1)[1]
        idx.write_bytes(idx.read_bytes().replace(b"\tcdx-00000.gz\t", f"\t{shard.format(port=port)}\t".encode()))
        (site / "indexes" / "cluster" / "cluster.root").unlink()
        with pytest.raises(reader.DamagedCluster, match="is not a file below the cluster's directory"):
            list(open_cluster(server.url + "/indexes").lookup("com", "domain"))
        assert not any("secret" in path for _, path, _ in server.requests)
