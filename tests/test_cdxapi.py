"""The CDX API's parameters over collections of one and two clusters, against brute force
over the clusters' lines: sort=reverse, sort=closest, limit=-N, collapse, resume keys, exact
counts, fl in every output, pages of a collection; pywb's own operations as the reference
for filters and from/to."""
import argparse
import json
import os
import random

import pytest
from pywb.warcserver.index.cdxobject import CDXObject
from pywb.warcserver.index.cdxops import cdx_clamp, cdx_filter
from warcio.timeutils import timestamp_to_sec

from test_query import LINES, QUERIES
from webarchive_indexing import options
from webarchive_indexing.api.request import (BadParameter, Capture, CdxRequest, Limits,
                                             parse_resume_key, resume_key)
from webarchive_indexing.cli import main
from webarchive_indexing.api.collection import Collection
from webarchive_indexing.zipnum.reader import Cluster, search_range
from webarchive_indexing.zipnum.layout import write_cluster

# one URL with many captures, many of one second, some byte-identical: resume keys must
# neither skip nor repeat among identical keys
SAME = 'com,example)/same 20200101000000 {"url": "http://example.com/same", "status": "%s", "digest": "%s", "mime": "text/html", "filename": "f.warc.gz", "offset": "%d", "length": "10"}\n'
CROWD = sorted([(SAME % ("200", "AAAA", 1)).encode()] * 12 + [(SAME % ("200", "B%03d" % (i // 3), i)).encode() for i in range(25)]
               + [(SAME.replace("20200101000000", "2020010100%04d" % i) % ("301", "C", i)).encode() for i in range(9)])
ALL = sorted(LINES + CROWD)


@pytest.fixture(scope="module")
def collections(tmp_path_factory):
    one = tmp_path_factory.mktemp("one")
    write_cluster(ALL, one, [ALL[len(ALL) // 2]], lines_per_block=7, root_slice_bytes=900)
    a, b = tmp_path_factory.mktemp("a"), tmp_path_factory.mktemp("b")
    rng = random.Random(2)
    halves = ([], [])
    for line in ALL:
        halves[rng.random() < 0.4].append(line)
    write_cluster(halves[0], a, [halves[0][len(halves[0]) // 3]], lines_per_block=5, root_slice_bytes=700)
    write_cluster(halves[1], b, [], lines_per_block=4)
    return {"one cluster": Collection("one", [Cluster(one)]),
            "two clusters": Collection("two", [Cluster(a), Cluster(b)])}


@pytest.fixture(params=["one cluster", "two clusters"])
def collection(request, collections):
    return collections[request.param]


def ask(collection, **params):
    request = CdxRequest.from_query({k: v if isinstance(v, list) else [str(v)] for k, v in params.items()})
    _, body = collection.answer(request)
    return b"".join(body)


def lines_of(body):
    return body.splitlines(keepends=True)


def brute(url, match_type="exact", filters=(), from_ts=None, to_ts=None):
    start, end = (k.encode() for k in search_range(url, match_type))
    selected = [line for line in ALL if start <= line < end]
    kept = cdx_filter((CDXObject(line) for line in selected), list(filters)) if filters else map(CDXObject, selected)
    if from_ts or to_ts:
        kept = cdx_clamp(kept, from_ts, to_ts)
    return [cdx.to_text().encode() for cdx in kept]


def collapse(lines, field, length=None):
    out, last = [], object()
    for line in lines:
        value = str(CDXObject(line).get(field, ""))[:length]
        if value != last:
            out.append(line)
            last = value
    return out


def closest(lines, timestamp):
    target = timestamp_to_sec(timestamp)
    return sorted(lines, key=lambda line: abs(timestamp_to_sec(line.split(b" ")[1].decode()) - target))


CASES = [("example.com", "domain"), ("example.com/same", "exact"), ("example.org/", "exact"),
         ("example.com/p/", "prefix"), ("com", "domain"), ("example.com/", "host"), ("zzz.zz/", "exact")]


def test_plain_lookups_equal_brute_force(collection):
    for url, mt in CASES + QUERIES[::9]:
        assert lines_of(ask(collection, url=url, matchType=mt)) == brute(url, mt), (url, mt)


@pytest.mark.parametrize("limit", [None, 1, 5, 40])
def test_reverse_and_last_n(collection, limit):
    for url, mt in CASES:
        expected = brute(url, mt)
        got = lines_of(ask(collection, url=url, matchType=mt, sort="reverse", **({"limit": limit} if limit else {})))
        assert got == expected[::-1][:limit], (url, mt)
        if limit:
            assert lines_of(ask(collection, url=url, matchType=mt, limit=-limit)) == expected[-limit:]
            # the last N of the reversed answer: the first N, last first
            assert lines_of(ask(collection, url=url, matchType=mt, sort="reverse", limit=-limit)) == expected[:limit][::-1]
    assert lines_of(ask(collection, url="example.com/same", limit=-1)) == brute("example.com/same")[-1:]
    # pywb's older spelling, reverse=..., true unless empty, 0, false, f or off (pywb's to_bool)
    for value, backwards in [("true", True), ("1", True), ("maybe", True), ("off", False), ("F", False), ("", False)]:
        expected = brute("example.com/same")
        assert lines_of(ask(collection, url="example.com/same", reverse=value)) == (
            expected[::-1] if backwards else expected), value


@pytest.mark.parametrize("spec", ["digest", "timestamp:8", "urlkey", "status", "timestamp:4", "d"])
def test_collapse(collection, spec):
    field, _, length = spec.partition(":")
    field = {"d": "digest"}.get(field, field)
    for url, mt in CASES:
        expected = collapse(brute(url, mt), field, int(length) if length else None)
        assert lines_of(ask(collection, url=url, matchType=mt, collapse=spec)) == expected, (url, mt)
        # collapsing keeps the first of each run in index order, whichever way it is read
        assert lines_of(ask(collection, url=url, matchType=mt, collapse=spec, sort="reverse")) == expected[::-1]
        assert lines_of(ask(collection, url=url, matchType=mt, collapse=spec, limit=-3)) == expected[-3:]
        filtered = collapse(brute(url, mt, ["!=status:404"]), field, int(length) if length else None)
        assert lines_of(ask(collection, url=url, matchType=mt, collapse=spec, filter=["!=status:404"])) == filtered


@pytest.mark.parametrize("timestamp", ["2015", "20200101000004", "20100101", "2030"])
def test_closest(collection, timestamp):
    for url, mt in CASES:
        for limit in (None, 1, 3, 50):
            extra = {"limit": limit} if limit else {}
            expected = closest(brute(url, mt), timestamp)[:limit]
            got = ask(collection, url=url, matchType=mt, sort="closest", closest=timestamp, **extra)
            assert lines_of(got) == expected, (url, mt, limit)
            # pywb sorts by closeness whenever closest= is there
            assert ask(collection, url=url, matchType=mt, closest=timestamp, **extra) == got
        filtered = closest(brute(url, mt, ["=status:200"]), timestamp)
        assert lines_of(ask(collection, url=url, matchType=mt, closest=timestamp, filter="=status:200")) == filtered
        collapsed = closest(collapse(brute(url, mt), "digest"), timestamp)
        assert lines_of(ask(collection, url=url, matchType=mt, closest=timestamp, collapse="digest")) == collapsed


def walk(collection, limit, **params):
    """Every line of a request, asked ``limit`` at a time with resume keys."""
    got, key, rounds = [], None, 0
    while True:
        extra = {"resumeKey": key} if key else {}
        body = ask(collection, limit=limit, showResumeKey="true", **params, **extra)
        if params.get("output") == "json":
            rows = [json.loads(line) for line in body.splitlines()]
            key = rows.pop()["resumeKey"] if rows and "resumeKey" in rows[-1] else None
            got += rows
        else:
            page, _, key_line = body.partition(b"\n\n")
            key = key_line.strip().decode() or None
            got += lines_of(page + b"\n" if key else body)
        rounds += 1
        if key is None:
            return got, rounds


@pytest.mark.parametrize("limit", [1, 4, 13])
def test_resume_keys_neither_skip_nor_repeat(collection, limit):
    for url, mt in [("example.com/same", "exact"), ("example.com", "domain")]:
        expected = brute(url, mt)
        got, rounds = walk(collection, limit, url=url, matchType=mt)
        assert got == expected and rounds == -(-len(expected) // limit)
        assert walk(collection, limit, url=url, matchType=mt, sort="reverse")[0] == expected[::-1]
        expected = collapse(brute(url, mt, ["!=status:301"]), "digest")
        assert walk(collection, limit, url=url, matchType=mt, filter="!=status:301", collapse="digest")[0] == expected
        assert walk(collection, limit, url=url, matchType=mt, filter="!=status:301", collapse="digest",
                    sort="reverse")[0] == expected[::-1]
    json_rows, _ = walk(collection, 5, url="example.com/same", output="json")
    assert json_rows == [json.loads(CDXObject(line).to_json()) for line in brute("example.com/same")]


def test_resume_key_is_checked(collection):
    line, copy = parse_resume_key(ask(collection, url="example.com/same", limit=3, showResumeKey="true")
                                  .split(b"\n\n")[1].strip().decode())
    assert line.startswith(b"com,example)/same ") and copy >= 1
    for bad in ("nonsense", "AAAA", ""):
        with pytest.raises(BadParameter, match="resumeKey"):
            ask(collection, url="example.com/same", resumeKey=bad or "x")
    other = ask(collection, url="example.org/", limit=1, showResumeKey="true").split(b"\n\n")[1].strip().decode()
    with pytest.raises(BadParameter, match="does not belong to this query"):
        ask(collection, url="example.com/same", resumeKey=other)
    # nothing more: no key
    assert b"\n\n" not in ask(collection, url="example.com/same", limit=1000, showResumeKey="true")


def test_exact_counts(collection):
    for url, mt in CASES + QUERIES[::7]:
        assert json.loads(ask(collection, url=url, matchType=mt, showNumCaptures="true")) == {"captures": len(brute(url, mt))}
    assert json.loads(ask(collection, url="example.com", matchType="domain", showNumCaptures="true",
                          filter="=status:200", **{"from": "2015"})) == {
        "captures": len(brute("example.com", "domain", ["=status:200"], "2015"))}


@pytest.mark.parametrize("output", ["json", "cdxj", "text", "cdx11"])
def test_fl_in_every_output(collection, output):
    fields = ["timestamp", "url", "status", "languages"]  # a field these lines lack
    got = lines_of(ask(collection, url="example.com", matchType="domain", fl=",".join(fields), output=output))
    cdxs = [CDXObject(line) for line in brute("example.com", "domain")]
    assert got == [(cdx.to_json(fields) if output == "json" else cdx.to_cdxj(fields) if output == "cdxj"
                    else cdx.to_text(fields)).encode() for cdx in cdxs]


def test_pages_of_a_collection_hold_every_line_once(collection):
    for url, mt in [("example.com", "domain"), ("com", "domain"), ("example.org/", "exact")]:
        info = json.loads(ask(collection, url=url, matchType=mt, showNumPages="true", pageSize=2))
        pages = [ask(collection, url=url, matchType=mt, page=p, pageSize=2) for p in range(info["pages"])]
        assert sorted(sum(map(lines_of, pages), [])) == brute(url, mt)
        with pytest.raises(BadParameter, match=f"Page {info['pages']} invalid: First Page is 0"):
            ask(collection, url=url, matchType=mt, page=info["pages"], pageSize=2)
        index = lines_of(ask(collection, url=url, matchType=mt, showPagedIndex="true"))
        assert len(index) == info["blocks"]
        rows = [json.loads(line) for line in lines_of(ask(collection, url=url, matchType=mt, showPagedIndex="true",
                                                          page=0, output="json", pageSize=2))]
        assert rows and set(rows[0]) == {"urlkey", "part", "offset", "length", "lineno"}


@pytest.mark.parametrize("params, param", [
    (dict(url=""), "url"), (dict(url="example.com", matchType="regex"), "matchType"),
    (dict(url="example.com", limit="ten"), "limit"), (dict(url="example.com", output="xml"), "output"),
    (dict(url="example.com", sort="random"), "sort"),
    (dict(url="example.com", closest="2024-01"), "closest"), (dict(url="example.com", collapse="digest:x"), "collapse"),
    (dict(url="example.com", pageSize="2"), "pageSize"), (dict(url="example.com", page="-1"), "page"),
    (dict(url="example.com", page="1", sort="reverse"), "page"), (dict(url="example.com", showNumPages="maybe"), "showNumPages"),
    (dict(url="example.com", showResumeKey="true", page="0"), "showResumeKey"),
    (dict(url="example.com", limit="-3", showResumeKey="true"), "limit"),
    (dict(url="example.com", filter="~url:("), "filter"), (dict(url="example.com", limit="500"), "limit"),
    (dict(url="example.com", filter="~url:" + "a" * 300), "filter"), (dict(url="example.com", pageSize="5000"), "pageSize"),
    (dict(url="example.com", showNumCaptures="true", showNumPages="true"), "showNumCaptures"),
])
def test_bad_parameters_are_named(params, param):
    limits = Limits(limit=100, page_size=1000, regex=200, filters=10, url=2000)
    with pytest.raises(BadParameter) as caught:
        CdxRequest.from_query({k: [v] for k, v in params.items()}, limits)
    assert caught.value.param == param


def test_query_command_has_the_api(tmp_path, capsysbinary):
    write_cluster(ALL, tmp_path, [ALL[len(ALL) // 2]], lines_per_block=7)

    def run(*args):
        try:
            status = main(["query", str(tmp_path), *args])
        except SystemExit as exc:  # argparse's own checks
            status = exc.code
        out, err = capsysbinary.readouterr()
        return status, out, err.decode()

    expected = brute("example.com/same")
    assert run("example.com/same", "--limit", "-2")[1] == b"".join(expected[-2:])
    assert run("example.com/same", "--sort", "reverse", "--limit", "3")[1] == b"".join(expected[::-1][:3])
    assert run("example.com/same", "--closest", "20200101000004", "--limit", "2")[1] == b"".join(
        closest(expected, "20200101000004")[:2])
    assert run("example.com/same", "--collapse", "digest")[1] == b"".join(collapse(expected, "digest"))
    assert json.loads(run("example.com/same", "--count")[1]) == {"captures": len(expected)}
    status, out, _ = run("example.com/same", "--limit", "4", "--show-resume-key")
    key = out.split(b"\n\n")[1].strip().decode()
    assert run("example.com/same", "--limit", "400", "--resume-key", key)[1] == b"".join(expected[4:])
    assert run("example.com/same", "--fl", "timestamp,status", "--output", "text", "--limit", "1")[1] == b"20200101000000 200\n"
    assert run("example.com/same", "--output", "link", "--limit", "2")[1].count(b'rel="memento"') == 2
    for bad, message in [(["--limit", "0"], "--limit"), (["--page-size", "2"], "--page-size: goes with --page"),
                         (["--limit", "-2", "--show-resume-key"], "--limit:"), (["--collapse", ":3"], "--collapse:"),
                         (["--resume-key", "zzz"], "--resume-key:"),
                         (["--sort", "closest"], "--closest: --sort closest needs --closest TIMESTAMP")]:
        status, out, err = run("example.com/same", *bad)
        assert status == 2 and out == b"" and message in err, (bad, err)


def test_query_options_and_api_parameters_are_one_table():
    # each option of query that mirrors a CDX API parameter makes the same request from
    # its flag as serve makes from the parameter: both come from options.CDX_API
    parser = argparse.ArgumentParser()
    options.add(parser, *options.CDX_API)
    key = resume_key(Capture(CROWD[0]))
    cases = [
        (["--match-type", "prefix"], {"matchType": "prefix"}), (["--from", "2020"], {"from": "2020"}),
        (["--from", "2020"], {"from_ts": "2020"}), (["--to", "2021"], {"to": "2021"}),
        (["--filter", "=status:200", "--filter", "!mime:png"], {"filter": ["=status:200", "!mime:png"]}),
        (["--limit", "-3"], {"limit": "-3"}), (["--output", "json"], {"output": "json"}),
        (["--fl", "url,s"], {"fl": "url,s"}), (["--fields", "timestamp"], {"fields": "timestamp"}),
        (["--sort", "reverse"], {"sort": "reverse"}), (["--closest", "2020"], {"closest": "2020"}),
        (["--collapse", "timestamp:8"], {"collapse": "timestamp:8"}),
        (["--page", "1", "--page-size", "3"], {"page": "1", "pageSize": "3"}),
        (["--show-num-pages"], {"showNumPages": "true"}), (["--show-paged-index"], {"showPagedIndex": "true"}),
        (["--count"], {"showNumCaptures": "true"}), (["--show-resume-key"], {"showResumeKey": "true"}),
        (["--resume-key", key], {"resumeKey": key}),
        (["--method", "POST", "--request-body", "a=1"], {"method": "POST", "requestBody": "a=1"}),
    ]
    named = {param for _, params in cases for param in params} | {"url"}
    assert named == {param for option in options.CDX_API for param in option.params}
    plain = _state(CdxRequest("example.com/same"))
    for argv, params in cases:
        from_args = CdxRequest.from_args(parser.parse_args(["example.com/same", *argv]))
        from_query = CdxRequest.from_query({"url": ["example.com/same"], **{
            name: value if isinstance(value, list) else [value] for name, value in params.items()}})
        assert _state(from_args) == _state(from_query) != plain, argv


def _state(request):
    return {name: value for name, value in vars(request).items() if name != "predicates"}


def test_the_readmes_python_lookup_prints_what_query_prints(tmp_path, capsys, monkeypatch):
    with open(os.path.join(os.path.dirname(__file__), "..", "README.md"), encoding="utf-8") as readme:
        text = readme.read()
    code = text.split("From Python, a lookup is one call", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    write_cluster(ALL, tmp_path / "out" / "cluster", [ALL[len(ALL) // 2]], lines_per_block=7)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md", "exec"), {})
    printed = capsys.readouterr().out
    assert main(["query", "out", "*.example.com", "--filter", "=status:200", "--limit", "5",
                 "--output", "json"]) == 0
    assert printed == capsys.readouterr().out and len(printed.splitlines()) == 5
