"""The CDX API taking what pywb's clients send and refusing what would silently match
nothing: empty values and pywb's remote index's parameters (against pywb's own server),
unknown field names, digits of other scripts; and every answer's memory bounded (the
``serve`` process measured)."""
import json
import threading

import pytest
from pywb.warcserver.index.cdxobject import CDXObject
from pywb.warcserver.index.cdxops import cdx_sort_closest

import servers
from test_cdxapi import ALL, CROWD, ask, brute, collapse
from test_query import LINES
from webarchive_indexing.api import request as cdxapi, collection as collection_module
from webarchive_indexing.api.request import BadParameter
from webarchive_indexing.cli import main
from webarchive_indexing.api.collection import Collection
from webarchive_indexing.zipnum.reader import Cluster
from webarchive_indexing.zipnum.layout import write_cluster

EXIT_USAGE = 2
# README (Serving): what one answer in flight holds at most
ANSWER_MIB = 10


@pytest.fixture(scope="module")
def cluster_dir(tmp_path_factory):
    # blocks of 300 lines: pywb's server answers a query without page= with its first page
    # (10 blocks), here every line
    out = tmp_path_factory.mktemp("cluster")
    write_cluster(ALL, out, [], lines_per_block=300)
    return out


@pytest.fixture(scope="module")
def both(cluster_dir, tmp_path_factory):
    """Our server and pywb's on the same cluster: (ours, pywb's) CDX API URLs."""
    with servers.ours({"c": Collection("c", [Cluster(cluster_dir)])}) as ours, \
            servers.pywb(tmp_path_factory.mktemp("pywb"), {"c": str(cluster_dir / "cluster.idx")}) as pywb:
        yield ours + "/c/cdx", pywb + "/c/cdx"


def test_what_pywbs_remote_index_and_cdx_toolkit_send_is_answered_as_pywbs_server_answers(both):
    ours, pywb = both
    asked = 0
    for url, match_type in (("example.com/same", "exact"), ("http://example.com/", "exact"),
                            ("example.com/a", "prefix"), ("example.com", "domain"), ("nothing.example/", "exact")):
        for extra in (
                # RemoteIndexSource: a lookup with a timestamp, then without (calendar,
                # TimeMap, a fuzzy lookup by prefix)
                {"closest": "20150101", "sort": "closest", "limit": "100"}, {"closest": "", "sort": "closest"},
                {"sort": "closest"}, {"from_ts": "2015", "to": "20190630"}, {"from": "", "to": "", "limit": ""},
                {"fl": "", "filter": "=status:200", "collapse": "", "page": ""}, {"reverse": "", "sort": ""}):
            params = {"url": url, "matchType": match_type, "output": "json", "allowFuzzy": "false", "nosource": "true", **extra}
            got, want = servers.get(ours, **params), servers.get(pywb, **params)
            assert got[0] == want[0] == 200, (params, got)
            assert servers.json_lines(got[2]) == servers.json_lines(want[2]), params
            asked += bool(want[2])
    assert asked >= 25


def test_unknown_fields_are_refused_naming_the_known_ones(cluster_dir, capsys):
    with servers.ours({"c": Collection("c", [Cluster(cluster_dir)])}) as base:
        for params, name in (({"fl": "timestamp,timestmp"}, "fl"), ({"fields": "url,nosuch"}, "fl"),
                             ({"filter": "stauts:200"}, "filter"), ({"filter": "!~mimee:text"}, "filter"),
                             ({"collapse": "nosuchfield"}, "collapse"), ({"collapse": "digets:4"}, "collapse")):
            status, _, body = servers.get(base + "/c/cdx", url="example.com", **params)
            message = json.loads(body)["message"]
            assert status == 400 and message.startswith(f"{name}: unknown field ") and "timestamp, url, mime, status" in message
        # a known field a line lacks is pywb's: left out by fl, '' to a filter
        status, _, body = servers.get(base + "/c/cdx", url="example.com/same", fl="timestamp,languages", output="json")
        assert status == 200 and servers.json_lines(body) == [{"timestamp": "20200101000000"}] * 37 + [
            {"timestamp": "2020010100%04d" % i} for i in range(9)]
        assert servers.get(base + "/c/cdx", url="example.com/same", filter="languages:eng")[2] == b""
        assert servers.get(base + "/c/cdx", url="example.com/same", filter="!languages:eng", limit="2")[0] == 200
    for args, option in ((["--fl", "timestmp"], "--fl"), (["--filter", "stauts:200"], "--filter"),
                         (["--collapse", "nosuchfield"], "--collapse")):
        assert main(["query", str(cluster_dir), "example.com", *args]) == EXIT_USAGE
        err = capsys.readouterr().err
        assert err.startswith(f"webarchive-index query: {option}: unknown field ") and "filename" in err
    with pytest.raises(ValueError, match="unknown field 'stauts'"):
        list(cdxapi.process(LINES, filters=["stauts:200"]))


def test_digits_of_other_scripts_and_bad_collapse_are_refused(cluster_dir, capsys):
    with servers.ours({"c": Collection("c", [Cluster(cluster_dir)])}) as base:
        for params, name in (({"limit": "٣"}, "limit"), ({"limit": "-٣"}, "limit"), ({"limit": "+3"}, "limit"),
                             ({"page": "٠"}, "page"), ({"pageSize": "٣", "page": "0"}, "pageSize"),
                             ({"collapse": "timestamp:٣"}, "collapse"), ({"collapse": "timestamp:²"}, "collapse"),
                             ({"from": "٢٠١٥"}, "from"), ({"closest": "٢٠١٥"}, "closest"),
                             ({"collapse": "nosuchfield"}, "collapse")):
            status, _, body = servers.get(base + "/c/cdx", url="example.com", **params)
            assert status == 400 and json.loads(body)["message"].startswith(f"{name}: "), params
    for args in (["--limit", "٣"], ["--page", "٣"], ["--page-size", "٣", "--page", "0"], ["--limit", "²"],
                 ["--collapse", "timestamp:٣"], ["--from", "٢٠١٥"]):
        try:
            code = main(["query", str(cluster_dir), "example.com", *args])
        except SystemExit as exited:  # argparse's
            code = exited.code
        assert code == EXIT_USAGE, args
        assert "Traceback" not in capsys.readouterr().err


def pywbs_closest(lines, closest, limit):
    return [cdx.to_text().encode() for cdx in cdx_sort_closest(closest, map(CDXObject, lines), limit)]


def test_sort_closest_over_several_urls_holds_at_most_held_lines(cluster_dir, monkeypatch):
    collection = Collection("c", [Cluster(cluster_dir)])
    lines = brute("example.com", "domain")
    assert len(lines) > 200
    # a limit over the bound is refused before anything is read; an exact URL streams any
    for params in ({"matchType": "domain"}, {"collapse": "digest"}):
        with pytest.raises(BadParameter, match=f"limit: at most {cdxapi.HELD_LINES} with sort=closest"):
            ask(collection, url="example.com", closest="2015", limit=cdxapi.HELD_LINES + 1, **params)
    assert ask(collection, url="example.com/same", closest="2015", limit=cdxapi.HELD_LINES + 1)
    monkeypatch.setattr(cdxapi, "HELD_LINES", 100)
    monkeypatch.setattr(collection_module, "HELD_LINES", 100)
    got = ask(collection, url="example.com", matchType="domain", closest="2015", limit=100).splitlines(keepends=True)
    assert got == pywbs_closest(lines, "2015", 100)
    # without limit: all of them if there are no more than it holds, else a 400 naming limit
    small = brute("example.com/a", "prefix")
    assert 0 < len(small) <= 100
    assert ask(collection, url="example.com/a", matchType="prefix", closest="2015").splitlines(keepends=True) == \
        pywbs_closest(small, "2015", 100)
    with pytest.raises(BadParameter, match="limit: sort=closest over more than 100 captures"):
        ask(collection, url="example.com", matchType="domain", closest="2015")


def test_closest_reads_a_crowded_second_again_rather_than_hold_it(cluster_dir, monkeypatch):
    collection = Collection("c", [Cluster(cluster_dir)])
    crowd = brute("example.com/same")
    assert crowd == CROWD
    expected = {limit: pywbs_closest(crowd, "20200101000005", limit) for limit in (1, 5, 30, 46)}
    for held in (cdxapi.HELD_LINES, 3):  # 37 captures of one second before the target
        monkeypatch.setattr(collection_module, "HELD_LINES", held)
        for limit, lines in expected.items():
            assert ask(collection, url="example.com/same", closest="20200101000005", limit=limit).splitlines(keepends=True) == lines


def test_the_last_n_read_twice_are_those_held_before(tmp_path):
    """limit=-N finds the Nth line from the end, then reads on from it: the same lines as
    the last N held, also when the Nth is one of identical lines spread over two clusters."""
    a, b = tmp_path / "a", tmp_path / "b"
    write_cluster(ALL[::2], a, [], lines_per_block=4)
    write_cluster(ALL[1::2], b, [], lines_per_block=3)
    collection = Collection("ab", [Cluster(a), Cluster(b)])
    for url, extra in (("example.com/same", {}), ("example.com/same", {"collapse": "digest"}),
                       ("example.com/same", {"filter": "!=status:301"}), ("example.com/p/*", {"collapse": "urlkey"})):
        expected = brute(url.rstrip("*"), "prefix" if "*" in url else "exact", [extra["filter"]] if "filter" in extra else ())
        if "collapse" in extra:
            expected = collapse(expected, extra["collapse"])
        assert len(expected) > 5
        for n in range(1, len(expected) + 3):
            assert ask(collection, url=url, limit=-n, **extra).splitlines(keepends=True) == expected[-n:], (url, extra, n)
            assert ask(collection, url=url, limit=-n, sort="reverse", **extra).splitlines(keepends=True) == \
                expected[:n][::-1], (url, extra, n)


def test_cdx_toolkit_through_serve_with_what_it_sends(cluster_dir):
    import cdx_toolkit
    with servers.ours({"c": Collection("c", [Cluster(cluster_dir)])}) as base:
        fetcher = cdx_toolkit.CDXFetcher(source=base + "/c/cdx")
        got = [c.data for c in fetcher.get("example.com/same", from_ts="20200101000002", to="2020",
                                           filter=["=status:301"], closest="20200101000005", sort="closest", limit=5)]
        want = ask(Collection("c", [Cluster(cluster_dir)]), url="example.com/same", output="json", closest="20200101000005",
                   filter="=status:301", limit=5, **{"from": "20200101000002", "to": "2020"})
        assert got == [json.loads(line) for line in want.splitlines()] and len(got) == 5


def vm_hwm_mib(pid):
    with open(f"/proc/{pid}/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:")) / 1024


def test_serves_memory_stays_within_the_readmes_bound(tmp_path):
    """README: a worker holds its block cache (--cache-mb), 16 MiB of index per cluster,
    and at most ANSWER_MIB for each answer in flight. Four answers at once that once held
    what they found (limit=-N, sort=closest over a domain) are measured in the process."""
    lines = []
    for i in range(150_000):
        host, page = i // 5000, (i // 10) % 500
        url = f"http://h{host:03d}.big.example/path/to/page-{page:05d}.html"
        lines.append((f'example,big,h{host:03d})/path/to/page-{page:05d}.html 20{10 + i % 10}0101{i % 86400:06d} '
                      f'{{"url": "{url}", "mime": "text/html", "status": "200", "digest": "{i:032d}", "length": '
                      f'"{1000 + i % 5000}", "offset": "{i * 3000}", "filename": "crawl-data/CC-MAIN-2024-22/'
                      f'segments/1715971057216.39/warc/CC-MAIN-20240517-{i % 100:05d}.warc.gz"}}\n').encode())
    lines.sort()
    write_cluster(lines, tmp_path, [], lines_per_block=3000)
    del lines
    cache_mb, answers = 8, 4
    with servers.command([f"c={tmp_path}", "--workers", "1", "--cache-mb", str(cache_mb), "--no-log"]) as (base, process):
        started = vm_hwm_mib(process.pid)
        status, _, body = servers.get(base + "/c/cdx", url="*.big.example", output="json")  # every block once
        assert status == 200 and body.count(b"\n") == 150_000
        del body
        results = []

        def ask_(params):
            status, _, body = servers.get(base + "/c/cdx", url="*.big.example", **params)
            results.append((status, body.count(b"\n")))

        asks = [{"limit": "-120000"}, {"limit": "-120000", "sort": "reverse"},
                {"sort": "closest", "closest": "2015", "limit": str(cdxapi.HELD_LINES)}, {"closest": "2015"}]
        threads = [threading.Thread(target=ask_, args=(params,)) for params in asks]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        peak = vm_hwm_mib(process.pid)
    assert peak <= started + cache_mb + 16 + answers * ANSWER_MIB, (started, peak)
    assert sorted(results) == [(200, cdxapi.HELD_LINES), (200, 120_000), (200, 120_000), (400, 1)]
