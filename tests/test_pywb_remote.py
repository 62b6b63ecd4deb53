"""pywb 2.10 with ``serve`` as its remote index (``index: cdx+http://.../NAME/cdx``) against
pywb reading the same cluster directly: replay, the calendar's data, TimeMaps and fuzzy
matching answer the same. pywb's RemoteIndexSource sends ``closest=`` empty when it has
no timestamp (the calendar, TimeMaps, a fuzzy lookup), which serve once refused."""
import os
import shutil

import pytest
from warcio.archiveiterator import ArchiveIterator

import servers
from test_serve import LogCapture
from webarchive_indexing.commands.build import build
from webarchive_indexing.options import BuildOptions
from webarchive_indexing.api.serve import open_collections

SAMPLE = os.path.join(os.path.dirname(__file__), "..", "samples", "IAH-urls-wget.warc.gz")


@pytest.fixture(scope="module")
def pywb_both(tmp_path_factory):
    """pywb with two collections of the same archive: ``remote`` (its index: serve) and
    ``local`` (the cluster itself); yields (pywb's URL, serve's access log)."""
    tmp = tmp_path_factory.mktemp("remote")
    warcs = tmp / "warcs"
    warcs.mkdir()
    shutil.copy(SAMPLE, warcs)
    build([str(warcs)], str(tmp / "out"), BuildOptions(runner="inline"))
    log = LogCapture()
    with servers.ours(open_collections([f"c={tmp / 'out'}"]), access_log=log) as ours, \
            servers.pywb(tmp, {"remote": {"index": f"cdx+{ours}/c/cdx", "archive_paths": f"{warcs}/"},
                               "local": {"index": str(tmp / "out" / "cluster" / "cluster.idx"),
                                         "archive_paths": f"{warcs}/"}}) as pywb:
        yield pywb, log


def both(pywb, path):
    """pywb's answers for ``path`` (with ``{c}`` for the collection) from either
    collection: (status, body) each, the remote's with its collection's name as the local's."""
    remote = servers.get(pywb + path.format(c="remote"))
    local = servers.get(pywb + path.format(c="local"))
    return (remote[0], remote[2].replace(b"remote", b"local")), (local[0], local[2])


def captures():
    with open(SAMPLE, "rb") as fh:
        for record in ArchiveIterator(fh):
            if record.rec_type == "response":
                date = record.rec_headers.get_header("WARC-Date")
                yield record.rec_headers.get_header("WARC-Target-URI"), "".join(filter(str.isdigit, date))


def test_replay_and_fuzzy_matching_through_serve(pywb_both):
    pywb, log = pywb_both
    replayed = 0
    for url, stamp in captures():
        for mode in ("id_", ""):  # the archived bytes, and pywb's rewritten page
            remote, local = both(pywb, f"/{{c}}/{stamp}{mode}/{url}")
            assert remote == local and remote[0] < 400, (url, mode)
            replayed += 1
        # a cache-busting query pywb's fuzzy rules take away: a second lookup by prefix
        # with closest= empty
        remote, local = both(pywb, f"/{{c}}/{stamp}id_/{url}{'&' if '?' in url else '?'}_=1234")
        assert remote == local, url
    assert replayed == 32
    remote, _ = both(pywb, "/{c}/20131021215315id_/http://archive.org/images/star.png?_=1234")
    assert remote[0] == 200 and remote[1].startswith(b"\x89PNG")
    assert "closest=&sort=closest&matchType=prefix" in log.text and '" 400 ' not in log.text


@pytest.mark.parametrize("url", ["http://archive.org/", "archive.org/images/*", "http://www.archive.org/robots.txt"])
def test_calendar_and_timemaps_through_serve(pywb_both, url):
    pywb, log = pywb_both
    # the calendar's data: pywb's /cdx, as its query page asks it
    remote, local = both(pywb, f"/{{c}}/cdx?output=json&url={url}")
    assert remote[0] == local[0] == 200
    rows = servers.json_lines(remote[1], drop=("source", "source-coll", "load_url"))
    assert rows == servers.json_lines(local[1], drop=("source", "source-coll", "load_url")) and rows
    if "*" in url:
        return
    remote, local = both(pywb, f"/{{c}}/timemap/link/{url}")
    assert remote == local and remote[0] == 200 and remote[1].count(b'rel="memento"') >= 1
    remote, local = both(pywb, f"/{{c}}/timemap/json/{url}")
    rows = servers.json_lines(remote[1], drop=("source", "source-coll", "load_url"))
    assert rows == servers.json_lines(local[1], drop=("source", "source-coll", "load_url")) and rows
    assert '" 400 ' not in log.text
