"""Cluster lookups against a brute-force filter and against pywb's own ZipNum reader."""

import json
import random
import shutil

import pytest
import surt
from pywb.utils.canonicalize import calc_search_range
from pywb.warcserver.index.query import CDXQuery

from helpers import pywb_lookup
from webarchive_indexing.zipnum import reader as query
from webarchive_indexing.zipnum.reader import MATCH_TYPES, Cluster, DamagedCluster, search_range
from webarchive_indexing.zipnum.layout import write_cluster

HOSTS = [
    "example.com", "www.example.com", "WWW.Example.com", "blog.example.com", "a.b.example.com",
    "example-foo.com", "examplea.com", "example.com:8080", "example.org", "www.example.org",
    "example.co.uk", "shop.example.co.uk", "news.site.de", "foo.net", "1.2.3.4", "xn--bcher-kva.ch",
]
PATHS = [
    "", "/", "/a", "/a/", "/a/b", "/ab", "/a?b=2&a=1", "/a?a=1", "/index.html", "/A/Mixed%20Case",
    "/search?q=x&lang=en", "/path/to/page.html?id=7&x=", "/robots.txt",
]


def make_urls(rng):
    urls = [f"{scheme}://{host}{path}" for host in HOSTS for path in PATHS for scheme in ("http", "https")
            if rng.random() < 0.6]
    urls += [f"http://{rng.choice(HOSTS)}/p/{n}?s={rng.randint(0, 9)}" for n in range(700)]
    return urls


def make_lines(rng, urls):
    lines = []
    for url in urls:
        for _ in range(rng.randint(1, 4)):
            ts = f"20{rng.randint(10, 24):02d}{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}{rng.randint(0, 235959):06d}"
            record = {"url": url, "mime": "text/html", "status": rng.choice(["200", "301", "404"]),
                      "digest": f"{rng.getrandbits(64):016X}", "length": str(rng.randint(300, 90000)),
                      "offset": str(rng.randint(0, 10**9)), "filename": f"crawl/CC-{rng.randint(0, 9):05d}.warc.gz"}
            lines.append(f"{surt.surt(url)} {ts} {json.dumps(record)}\n".encode())
    # byte-identical duplicates, as a merged crawl can have; their count leaves a short last block
    lines += rng.sample(lines, 5 if (len(lines) + 5) % 7 else 6)
    return sorted(lines)


RNG = random.Random(20240712)
URLS = make_urls(RNG)
LINES = make_lines(RNG, URLS)
N = len(LINES)


def first_of_repeated_key():
    """Index of a line whose urlkey also starts the previous line: a split there cuts one URL's captures."""
    return next(i for i in range(3 * N // 4, N) if LINES[i].split(b" ")[0] == LINES[i - 1].split(b" ")[0])


def nothing_between(i):
    """A split pair enclosing no line: every line ends with \\n, none has LINES[i] as a proper prefix."""
    return [LINES[i] + b"\x00", LINES[i] + b"\x01"]


CONFIGS = {
    "one-shard": dict(splits=[], lines_per_block=7),
    "shards": dict(splits=[LINES[N // 4], LINES[N // 2], LINES[first_of_repeated_key()]], lines_per_block=7),
    "empty-shards": dict(splits=[b"!", *nothing_between(N // 3), LINES[N // 2], b"\xff"], lines_per_block=7),
    "block-per-line": dict(splits=[LINES[N // 3]], lines_per_block=1),
    "one-block": dict(splits=[], lines_per_block=3000),
}


@pytest.fixture(scope="module", params=list(CONFIGS))
def cluster_dir(request, tmp_path_factory):
    out = tmp_path_factory.mktemp(request.param)
    write_cluster(LINES, out, **CONFIGS[request.param])
    return out


def brute(start, end):
    return [line for line in LINES if start.encode() <= line < end.encode()]


def queries():
    """(url, match_type) pairs: hits, misses, range edges, TLDs, every match type."""
    rng = random.Random(7)
    qs = []
    for host in HOSTS:
        for mt in MATCH_TYPES:
            qs.append((f"{host}/", mt))
        qs += [(f"http://{host}/a", "prefix"), (f"{host}/a/", "prefix"), (f"{host}/a?", "prefix"),
               (f"https://{host}/a?b=2&a=1", "exact"), (f"{host}/p/1", "prefix")]
    qs += [(url, rng.choice(MATCH_TYPES)) for url in rng.sample(URLS, 40)]
    qs += [(tld, "domain") for tld in ("com", "org", "uk", "de", "ch", "4", "aaa", "zzz")]
    qs += [
        ("0.0.0.0/", "exact"), ("0.0.0.0", "domain"),        # before the first key
        ("zzzz.zz/", "exact"), ("zzzz.zz", "host"),          # after the last key
        ("example.com/nothing-here", "exact"), ("example.com/zz", "prefix"),
        ("notthere.example.com", "host"), ("exampl.com", "domain"),
    ]
    return qs


QUERIES = queries()


def test_queries_cover_hits_and_misses():
    sizes = [len(brute(*search_range(url, mt))) for url, mt in QUERIES]
    assert sum(1 for s in sizes if s == 0) >= 10
    assert sum(1 for s in sizes if s > 50) >= 10
    assert N > 2000 and N % 7  # the one-shard cluster ends with a short block


def test_lookup_matches_brute_force_and_pywb(cluster_dir):
    idx = cluster_dir / "cluster.idx"
    cluster = Cluster(cluster_dir)
    for url, mt in QUERIES:
        expected = brute(*search_range(url, mt))
        assert list(cluster.lookup(url, mt)) == expected, (url, mt)
        assert pywb_lookup(idx, url, mt) == expected, (url, mt)


@pytest.mark.parametrize("pattern", ["*.example.com", "example.com/a*", "*.com", "example.co.uk/*", "*.zzz", "foo.net"])
def test_patterns_match_pywb(cluster_dir, pattern):
    expected = pywb_lookup(cluster_dir / "cluster.idx", pattern, page_size=1)
    assert list(Cluster(cluster_dir).lookup(pattern)) == expected
    assert list(Cluster(cluster_dir).lookup(pattern, "host" if "*" in pattern else "exact")) == expected


def test_pywb_page_sizes_agree(cluster_dir):
    idx = cluster_dir / "cluster.idx"
    for url, mt in [("com", "domain"), ("example.com", "domain"), ("example.org/", "host")]:
        expected = list(Cluster(cluster_dir).lookup(url, mt))
        for max_blocks, page_size in [(1, None), (10, None), (3, 2), (3, 1000)]:
            assert pywb_lookup(idx, url, mt, max_blocks, page_size) == expected


def test_lookup_limit(cluster_dir):
    cluster = Cluster(cluster_dir)
    everything = list(cluster.lookup("com", "domain"))
    assert len(everything) > 100
    for limit in (1, 7, 8, 100, len(everything), len(everything) + 5):
        assert list(cluster.lookup("com", "domain", limit=limit)) == everything[:limit]
    assert list(cluster.lookup("com", "domain", limit=0)) == []


def test_lookup_range_arbitrary_keys(cluster_dir):
    """Start/end keys at, just before and just after every kind of line boundary."""
    cluster = Cluster(cluster_dir)
    rng = random.Random(3)
    for _ in range(150):
        a, b = sorted(rng.sample(LINES, 2))
        start = rng.choice([a, a[:rng.randint(1, len(a))], a.rstrip(b"\n") + b"\x00", a.split(b" ")[0]])
        end = rng.choice([b, b[:rng.randint(1, len(b))], b + b"\x00", b.split(b" ")[0] + b"!"])
        expected = [line for line in LINES if start <= line < end]
        assert list(cluster.lookup_range(start, end)) == expected, (start, end)


def test_lookup_is_lazy_and_reads_runs(tmp_path, monkeypatch):
    write_cluster(LINES, tmp_path, [], lines_per_block=7)
    cluster = Cluster(tmp_path, max_blocks_per_read=4)
    reads = []
    real_read = cluster._read_run
    monkeypatch.setattr(cluster, "_read_run", lambda run: (run and reads.append(len(run))) or real_read(run))

    results = cluster.lookup("com", "domain")
    assert reads == []
    next(results)
    assert reads == [4]
    results.close()

    reads.clear()
    lines = list(cluster.lookup("com", "domain"))
    # adjacent blocks of the shard come in reads of max_blocks_per_read (the last shorter)
    assert sum(reads) * 7 >= len(lines) and set(reads[:-1]) == {4}


def test_search_range_equals_pywb():
    urls = [*URLS[::7], "com", "uk", "example.com", "http://example.com/path/", "example.com/path?",
            "http://example.com/path/?", "http://www.Example.com/a?b=1&a=2", "urn:some:id", "a.b.c.d.e.f.example.com"]
    for url in urls:
        for mt in MATCH_TYPES:
            assert search_range(url, mt) == calc_search_range(url, mt), (url, mt)


@pytest.mark.parametrize("pattern", ["*.example.com", "example.com/path*", "*.com", "example.com/*", "http://example.com/"])
def test_search_range_patterns_equal_pywb_cdx_api(pattern):
    query = CDXQuery({"url": pattern})
    assert tuple(k.encode() for k in search_range(pattern)) == (query.key, query.end_key)


def test_search_range_wildcard_wins_over_match_type():
    assert search_range("example.com/path*", "exact") == search_range("example.com/path", "prefix")
    assert search_range("*.example.com", "host") == ("com,example)/", "com,example-")
    assert search_range("example.com/path", "prefix") == ("com,example)/path", "com,example)/pati")


@pytest.mark.parametrize("bad", ["regex", "", "Exact", None])
def test_search_range_rejects_unknown_match_type(bad):
    with pytest.raises(ValueError, match="exact, prefix, host, domain"):
        search_range("example.com", bad)


def test_search_range_rejects_empty_url():
    for url in ("", "*", "*."):
        with pytest.raises(ValueError, match="empty URL"):
            search_range(url, "exact")


def test_lookup_rejects_bad_match_type_before_iterating(tmp_path):
    write_cluster(LINES[:10], tmp_path, [])
    with pytest.raises(ValueError):
        Cluster(tmp_path).lookup("example.com", "nope")


def test_cluster_locations(tmp_path):
    write_cluster(LINES, tmp_path / "c", [LINES[N // 2]], lines_per_block=50)
    expected = brute(*search_range("example.com", "domain"))
    assert expected
    # the idx path itself
    assert list(Cluster(tmp_path / "c" / "cluster.idx").lookup("example.com", "domain")) == expected

    # shards moved below the cluster's directory: found through cluster.loc, first
    # readable location wins
    (tmp_path / "c" / "moved").mkdir()
    shutil.move(tmp_path / "c" / "cdx-00001.gz", tmp_path / "c" / "moved" / "elsewhere.gz")
    (tmp_path / "c" / "cluster.loc").write_text(
        f"cdx-00000.gz\t{tmp_path}/c/cdx-00000.gz\n"
        f"cdx-00001.gz\t{tmp_path}/c/missing.gz\tfile://{tmp_path}/c/moved/elsewhere.gz\n"
    )
    assert list(Cluster(tmp_path / "c").lookup("example.com", "domain")) == expected

    # relative locations are resolved against the .loc directory, as pywb does
    (tmp_path / "c" / "cluster.loc").write_text("cdx-00000.gz\tcdx-00000.gz\ncdx-00001.gz\tmoved/../moved/elsewhere.gz\n")
    assert list(Cluster(tmp_path / "c").lookup("example.com", "domain")) == expected

    # without cluster.loc, shards are looked for next to cluster.idx
    shutil.move(tmp_path / "c" / "moved" / "elsewhere.gz", tmp_path / "c" / "cdx-00001.gz")
    (tmp_path / "c" / "cluster.loc").unlink()
    assert list(Cluster(tmp_path / "c").lookup("example.com", "domain")) == expected

    (tmp_path / "c" / "cdx-00001.gz").unlink()
    with pytest.raises(OSError, match="cdx-00001.gz"):
        list(Cluster(tmp_path / "c").lookup("com", "domain"))
    with pytest.raises(FileNotFoundError):
        Cluster(tmp_path / "nowhere")


@pytest.mark.parametrize("location", [
    "{tmp}/elsewhere.gz", "file://{tmp}/elsewhere.gz", "../elsewhere.gz", "sub/../../elsewhere.gz",
    "http://127.0.0.1:9/cdx-00001.gz", "s3://bucket/cdx-00001.gz", "{tmp}/c-other/cdx-00001.gz",
    "/etc/passwd"])
def test_cluster_loc_outside_the_cluster_is_never_read(tmp_path, location, monkeypatch, caplog):
    """A .loc location outside the cluster's directory is ignored, whatever it holds: the
    shard is read beside the index, or not at all."""
    write_cluster(LINES, tmp_path / "c", [LINES[N // 2]], lines_per_block=50)
    shutil.copy(tmp_path / "c" / "cdx-00001.gz", tmp_path / "elsewhere.gz")
    (tmp_path / "c-other").mkdir()
    location = location.format(tmp=tmp_path)
    (tmp_path / "c" / "cluster.loc").write_text(f"cdx-00000.gz\tcdx-00000.gz\ncdx-00001.gz\t{location}\n")
    read = []
    real = query.storage.read_range
    monkeypatch.setattr(query.storage, "read_range", lambda path, *a: read.append(path) or real(path, *a))
    assert list(Cluster(tmp_path / "c").lookup_range(b"", b"~")) == LINES
    assert set(read) == {str(tmp_path / "c" / "cdx-00000.gz"), str(tmp_path / "c" / "cdx-00001.gz")}
    assert "cluster.loc line 2: ignoring" in caplog.text and "not below the cluster's directory" in caplog.text
    (tmp_path / "c" / "cdx-00001.gz").unlink()
    with pytest.raises(OSError, match="cannot read cdx-00001.gz"):
        list(Cluster(tmp_path / "c").lookup_range(b"", b"~"))
    assert all(path.startswith(str(tmp_path / "c")) for path in read)
    (tmp_path / "c" / "cluster.loc").write_text("../cdx-00001.gz\tcdx-00001.gz\n")
    with pytest.raises(DamagedCluster, match="is not a file below the cluster's directory"):
        Cluster(tmp_path / "c")


@pytest.mark.parametrize("shard", ["../elsewhere.gz", "/tmp/elsewhere.gz", "sub//x.gz", "a/./b.gz",
                                   "file:///tmp/elsewhere.gz", "http://127.0.0.1:9/x.gz", "a\\..\\b.gz", "x\x01.gz"])
def test_shard_names_outside_the_cluster_are_refused(tmp_path, shard):
    """A shard name from cluster.idx (no .loc) reads nothing outside the cluster's directory."""
    write_cluster(LINES, tmp_path / "c", [], lines_per_block=50)
    (tmp_path / "c" / "cluster.loc").unlink()
    (tmp_path / "c" / "cluster.root").unlink()
    shutil.copy(tmp_path / "c" / "cdx-00000.gz", tmp_path / "elsewhere.gz")
    idx = (tmp_path / "c" / "cluster.idx").read_bytes().replace(b"\tcdx-00000.gz\t", f"\t{shard}\t".encode())
    (tmp_path / "c" / "cluster.idx").write_bytes(idx)
    with pytest.raises(DamagedCluster, match="is not a file below the cluster's directory"):
        list(Cluster(tmp_path / "c").lookup("com", "domain"))


def test_empty_cluster(tmp_path):
    write_cluster([], tmp_path, [b"m"])
    assert list(Cluster(tmp_path).lookup("com", "domain")) == []
