"""The 2012 Common Crawl URL index as an input (webarchive_indexing.inputs.legacy): indexes
written here by a small writer that follows the documented layout (reference.md section
6, Common Crawl's own description of the format), read locally and over HTTP ranges,
whole or by prefix, converted into CDX lines and built into a cluster."""
import json
import struct
import time

import pytest

import rangeserver
from helpers import pywb_lookup
from webarchive_indexing import cli
from webarchive_indexing.cdx.urlkey import url_key
from webarchive_indexing.inputs.indexes import IndexInputError
from webarchive_indexing.inputs.sources import open_index
from webarchive_indexing.inputs.discovery import kind_of
from webarchive_indexing.inputs.legacy import LegacyIndex, key_url

LOCATION = struct.Struct("<QQIQI")
# An ARC file date as the index holds it: milliseconds (2012-09-06 05:22:10.836 UTC)
DATE = 1346908930836


def _separator(last, first):
    """The shortest prefix of ``first`` above ``last``: the prefixed B-tree's separator."""
    for n in range(1, len(first) + 1):
        if first[:n] > last:
            return first[:n]
    return first


def _pack(first_child, entries, block_size):
    data = struct.pack("<I", first_child) + b"".join(
        sep + b"\0" + struct.pack("<I", child) for sep, child in entries)
    assert len(data) <= block_size
    return data.ljust(block_size, b"\0")


def write_legacy_index(path, items, block_size=256):
    """Write ``items`` ((key bytes, (segment, date, partition, offset, size)), sorted by key)
    as the 2012 index: header, index blocks (root = block 0), data blocks."""
    items = sorted(items)
    data, firsts, lasts, current = [], [], [], b""
    for key, location in items:
        item = key + b"\0" + LOCATION.pack(*location)
        if current and len(current) + len(item) > block_size:
            data.append(current.ljust(block_size, b"\0"))
            current = b""
        if not current:
            firsts.append(key)
        current += item
        if len(lasts) < len(firsts):
            lasts.append(key)
        lasts[-1] = key
    data.append(current.ljust(block_size, b"\0"))
    # one level of index blocks after another, bottom up: (separator, child) per child
    level = [(_separator(lasts[i - 1], firsts[i]) if i else b"", ("data", i))
             for i in range(len(data))]
    levels = []
    while True:
        nodes, used = [], block_size
        for sep, child in level:
            if used + len(sep) + 5 > block_size:
                nodes.append((sep, child, []))
                used = 4
            else:
                nodes[-1][2].append((sep, child))
                used += len(sep) + 5
        levels.append(nodes)
        if len(nodes) == 1:
            break
        level = [(sep, ("index", len(levels) - 1, j)) for j, (sep, _, _) in enumerate(nodes)]
    numbers, count = {}, 0
    for depth in reversed(range(len(levels))):  # the root is block 0
        for j in range(len(levels[depth])):
            numbers[("index", depth, j)] = count
            count += 1
    for i in range(len(data)):
        numbers[("data", i)] = count + i
    blocks = []
    for depth in reversed(range(len(levels))):
        for _, first, entries in levels[depth]:
            blocks.append(_pack(numbers[first], [(s, numbers[c]) for s, c in entries], block_size))
    with open(path, "wb") as fh:
        fh.write(struct.pack("<II", block_size, count))
        fh.writelines(blocks + data)
    return count, len(data)


def sample_items(n=200):
    """``n`` items of a few hosts, with the key form of the real index
    (``com.metafilter.ask/51007/:http``)."""
    hosts = ["com.example", "com.example.www", "org.iana.www", "com.metafilter.ask", "uk.co.bbc.news"]
    items = []
    for i in range(n):
        host = hosts[i % len(hosts)]
        scheme = "https" if i % 7 == 0 else "http"
        key = f"{host}/page/{i:04d}?q={i % 3}:{scheme}".encode()
        items.append((key, (1346876860782 + i % 2, DATE + i * 1000, 2000 + i % 5, 1000 * i, 500 + i)))
    return sorted(items)


def expected_line(key, location):
    segment, date, partition, offset, size = location
    url = key_url(key.decode())
    fields = {"url": url, "length": str(size), "offset": str(offset),
              "filename": f"common-crawl/parse-output/segment/{segment}/{date}_{partition}.arc.gz"}
    ts = time.strftime("%Y%m%d%H%M%S", time.gmtime(date // 1000))
    return f"{url_key(url)} {ts} {json.dumps(fields)}".encode()


@pytest.fixture
def index(tmp_path):
    items = sample_items()
    path = tmp_path / "url-index.1356128792"
    count, data_blocks = write_legacy_index(path, items)
    assert count >= 3 and data_blocks > 20  # two levels of index blocks at least
    return path, items


def test_key_url():
    assert key_url("com.metafilter.ask/51007/:http") == "http://ask.metafilter.com/51007/"
    assert key_url("com.example/path?a=b:https") == "https://example.com/path?a=b"
    assert key_url("com.example/") == "http://example.com/"
    assert key_url("com.example/a:b:http") == "http://example.com/a:b"


def test_whole_index_as_cdx_lines(index):
    path, items = index
    assert kind_of(str(path)) == "legacy"
    source = open_index(str(path))
    assert isinstance(source, LegacyIndex) and source.format == "cdxj"
    lines = list(source.lines())
    assert lines == [expected_line(k, loc) for k, loc in items]
    # the index's first key is www.example.com's ('.' sorts before '/')
    assert lines[0] == (b'com,example)/page/0001?q=1 20120906052211 {"url": '
                        b'"http://www.example.com/page/0001?q=1", "length": "501", "offset": "1000", '
                        b'"filename": "common-crawl/parse-output/segment/1346876860783/'
                        b'1346908931836_2001.arc.gz"}')
    # index order is not SURT order: reported, for the build to sort
    assert source.unsorted is not None and source.problems == []
    assert source.lines_read == 200


def test_cdx11_lines_say_what_is_not_there(index):
    path, items = index
    source = LegacyIndex(str(path), fmt="cdx11")
    first = next(source.lines()).decode()
    assert items[0][0] == b"com.example.www/page/0001?q=1:http"
    assert first == ("com,example)/page/0001?q=1 20120906052211 http://www.example.com/page/0001?q=1 "
                     "- - - - - 501 1000 common-crawl/parse-output/segment/1346876860783/"
                     "1346908931836_2001.arc.gz")


def test_prefix_search_reads_few_blocks(index, tmp_path):
    path, items = index
    wanted = [(k, loc) for k, loc in items if k.startswith(b"org.iana.www/page/01")]
    assert len(wanted) == 20
    with rangeserver.serving(tmp_path) as server:
        source = LegacyIndex(server.url + "/" + path.name, prefix=b"org.iana.www/page/01")
        lines = list(source.lines())
        assert lines == [expected_line(k, loc) for k, loc in wanted]
        # the header, one index block per level, one read of data blocks
        assert len(server.requests) <= 5
        server.requests.clear()
        whole = list(LegacyIndex(server.url + "/" + path.name).lines())
        assert whole == list(LegacyIndex(str(path)).lines())
        # the header, then the data blocks in ranges of 64 blocks, none past the end
        assert len(server.requests) == 2
    for prefix in (b"a", b"zz", b"com.example/page/0199", b"uk.co.bbc.news/page/0194?q=2:http"):
        found = [line for line in LegacyIndex(str(path), prefix=prefix).lines()]
        assert found == [expected_line(k, loc) for k, loc in items if k.startswith(prefix)]


def test_bad_items_are_reported_with_offsets(tmp_path):
    items = sample_items(20)
    items[3] = (b"com.example/\xff\xfe:http", items[3][1])
    items[5] = (items[5][0], (1, 10 ** 19, 1, 1, 1))  # no time
    path = tmp_path / "url-index.1"
    write_legacy_index(path, items)
    source = open_index(str(path))
    lines = list(source.lines())
    assert len(lines) == 18 and source.malformed == 2
    assert all(p["file"] == str(path) and p["offset"] > 8 for p in source.problems)
    assert [p["reason"].split(": ", 1)[1] for p in source.problems] == [
        f"its ARC file date {10 ** 19} is no time of the years 1000-9999",
        "'utf-8' codec can't decode byte 0xff in position 12: invalid start byte"]


def test_what_is_not_a_legacy_index(tmp_path):
    (tmp_path / "url-index.2").write_bytes(b"\x00\x01\x00\x00\x00\x00\x00\x00" + b"\0" * 100)
    with pytest.raises(IndexInputError, match="not a 2012 Common Crawl URL index"):
        open_index(str(tmp_path / "url-index.2"))
    # index blocks that point in a loop: the search says so
    path = tmp_path / "url-index.3"
    write_legacy_index(path, sample_items())
    data = bytearray(path.read_bytes())
    data[8:12] = struct.pack("<I", 0)  # the root's first child: the root itself
    path.write_bytes(bytes(data))
    with pytest.raises(IndexInputError, match="index blocks point in a loop"):
        list(LegacyIndex(str(path), prefix=b"a").lines())


@pytest.mark.parametrize("runner", ["inline", "local"])
def test_build_a_cluster_from_the_legacy_index(index, tmp_path, capsys, runner):
    path, items = index
    out = tmp_path / "out"
    assert cli.main(["build", str(path), "-o", str(out), "--shards", "2", "--lines-per-block", "16",
                     "--runner", runner, "--no-progress"]) == cli.EXIT_OK
    err = capsys.readouterr().err
    assert "indexes:  1 read, 200 CDX lines" in err
    assert cli.main(["export", str(out)]) == cli.EXIT_OK
    assert capsys.readouterr().out.encode().splitlines() == sorted(
        expected_line(k, loc) for k, loc in items)
    found = pywb_lookup(out / "cluster" / "cluster.idx", "ask.metafilter.com", "host")
    assert len(found) == 40
    # a part of it, by prefix
    part = tmp_path / "part"
    assert cli.main(["build", str(path), "-o", str(part), "--legacy-prefix", "uk.co.bbc",
                     "--runner", runner, "--no-progress"]) == cli.EXIT_OK
    assert "indexes:  1 read, 40 CDX lines" in capsys.readouterr().err
