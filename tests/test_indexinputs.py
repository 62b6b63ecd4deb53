"""Existing indexes as input (webarchive_indexing.inputs.indexes): flat CDXJ/CDX11/CDX9 files
from pywb, cdxj-indexer, OpenWayback-style tools and Common Crawl, plain or gzipped,
sorted or not; ZipNum clusters; how INPUT arguments are told apart; shard names from an
index or .loc that point outside the cluster."""
import gzip
import json
import os
import shutil

import pytest
from cdxj_indexer.main import write_cdx_index

import rangeserver
from helpers import REAL, pywb_cdx
from webarchive_indexing.zipnum import layout
from webarchive_indexing.inputs.indexes import MAX_PROBLEMS, IndexInputError, ZipNumCluster
from webarchive_indexing.zipnum.places import cluster_index
from webarchive_indexing.inputs.sources import open_index
from webarchive_indexing.inputs.discovery import expand, kind_of

WARC = os.path.join(REAL, "iipc+webarchive-commons__IAH-urls-wget.warc.gz")
CC_RECORDS = os.path.join(REAL, "cocrawler+cdx_toolkit__test_basics.jsonl")


def read(source):
    """The lines of ``source`` with their newlines (as files hold them)."""
    return [line + b"\n" for line in source.lines()]


def common_crawl_lines():
    """Real Common Crawl index lines (CC-MAIN-2025-33, as its index server returned them to
    cdx_toolkit's tests), put back into the CDXJ form of Common Crawl's cdx-NNNNN.gz shards."""
    lines = []
    with open(CC_RECORDS, encoding="utf-8") as fh:
        for response in fh:
            for record in json.loads(response)["response_text"].splitlines():
                fields = json.loads(record)
                key, timestamp = fields.pop("urlkey"), fields.pop("timestamp")
                lines.append(f"{key} {timestamp} {json.dumps(fields)}\n".encode())
    return lines


def test_pywb_cdxj_and_cdx11_with_header(tmp_path):
    """pywb's cdx-indexer output (sorted; CDX11 under its ' CDX N b a ...' header)."""
    for fmt, name in (("cdxj", "a.cdxj"), ("cdx11", "a.cdx"), ("cdx9", "b.cdx")):
        text = pywb_cdx(WARC, fmt)
        (tmp_path / name).write_text(text)
        source = open_index(str(tmp_path / name))
        assert source.format == fmt and source.kind == "cdx"
        lines = read(source)
        assert lines == [l.encode() for l in text.splitlines(True) if not l.startswith(" CDX")]
        assert len(lines) == 19 and source.unsorted is None and source.problems == []
        assert source.members == 0


def test_openwayback_style_cdx11_unsorted_and_crlf(tmp_path):
    """nla/outbackcdx's expected CDX11 of a wget WARC: a header, lines not in order."""
    source = open_index(os.path.join(REAL, "nla+outbackcdx__test1.cdx"))
    assert source.format == "cdx11"
    lines = read(source)
    assert len(lines) == 3 and source.problems == []
    assert source.unsorted == {"file": source.path, "line": 3}
    # the same with CRLF line ends and no newline after the last line
    crlf = tmp_path / "crlf.cdx"
    crlf.write_bytes(open(source.path, "rb").read().replace(b"\n", b"\r\n").rstrip(b"\r\n"))
    assert read(open_index(str(crlf))) == lines


def test_cdxj_indexer_output_unsorted_and_compressed(tmp_path):
    """cdxj-indexer writes records in file order without -s (unsorted), and with -c a
    gzip member per block of lines: both read as flat CDXJ."""
    plain = tmp_path / "plain.cdxj"
    write_cdx_index(str(plain), [WARC], {})
    source = open_index(str(plain))
    lines = read(source)
    assert source.format == "cdxj" and len(lines) == 19
    assert source.unsorted is not None and lines != sorted(lines)
    packed = tmp_path / "packed.cdxj.gz"
    write_cdx_index(str(tmp_path / "packed.idx"), [WARC],
                    {"sort": True, "compress": str(packed), "lines": 5})
    source = open_index(str(packed))
    assert read(source) == sorted(lines) and source.members == 4 and source.unsorted is None
    # its own .idx is not a ZipNum index: said so, with the line
    with pytest.raises(IndexInputError, match=r"packed.idx: not a ZipNum index line"):
        open_index(str(tmp_path / "packed.idx"), kind="cluster")


def test_common_crawl_shard_and_cdxj_named_cdx_gz(tmp_path):
    """Common Crawl's cdx-NNNNN.gz (gzip members of 3000 lines; here of 4) and a gzipped
    CDXJ named .cdx.gz (as pywb's sample_archive/cdxj/example.cdx.gz): the content decides."""
    lines = sorted(common_crawl_lines())
    assert len(lines) == 10
    shard = tmp_path / "cdx-00017.gz"
    shard.write_bytes(b"".join(layout.gzip_block(lines[i:i + 4]) for i in range(0, 10, 4)))
    assert kind_of(str(shard)) == "cdx"
    source = open_index(str(shard))
    assert source.format == "cdxj" and read(source) == lines and source.members == 3
    named = tmp_path / "x.cdx.gz"
    named.write_bytes(gzip.compress(b"".join(lines)))
    assert read(open_index(str(named))) == lines


def test_malformed_lines_are_reported_with_file_and_line(tmp_path):
    good = pywb_cdx(WARC, "cdxj").splitlines(True)
    bad = good[:3] + [
        good[3][:len(good[3]) // 2] + "\n",               # cut short
        "com,example)/ 2014x {}\n",                      # timestamp not digits
        " 20140101000000 {}\n",                          # no key
        "com,example)/ 20140101000000 {\"a\": \"\xff\", \"offset\": \"1\", \"length\": \"2\"}\n",  # fine: UTF-8
    ] + good[4:]
    data = "".join(bad).encode() + b"com,example)/ 20140101000000 {\"a\": \"\xff\xfe\"}\n"
    path = tmp_path / "bad.cdxj"
    path.write_bytes(data)
    source = open_index(str(path))
    lines = read(source)
    assert [(p["line"], p["reason"].split(" (")[0]) for p in source.problems] == [
        (4, "its JSON block does not start with '{' and end with '}'"),
        (5, "timestamp '2014x' is not digits"),
        (6, "no URL key"),
        (len(bad) + 1, "not UTF-8 text")]
    assert source.malformed == 4 and len(lines) == len(bad) - 3
    assert all(p["file"] == str(path) for p in source.problems)
    # CDX11: the field count tells
    cdx11 = pywb_cdx(WARC, "cdx11").splitlines(True)
    (tmp_path / "bad.cdx").write_text("".join(cdx11[:2] + ["a 2014 b c\n"] + cdx11[2:]))
    source = open_index(str(tmp_path / "bad.cdx"))
    read(source)
    assert [(p["line"], p["reason"]) for p in source.problems] == [
        (3, "4 fields, not the 11 of cdx11 (N b a m s k r M S V g)")]


def test_problems_listed_are_bounded_but_all_counted(tmp_path):
    path = tmp_path / "junk.cdxj"
    path.write_bytes(b'a 1 {"offset": "0", "length": "1"}\n' + b"a 1 {\n" * (MAX_PROBLEMS + 50))
    source = open_index(str(path))
    assert len(read(source)) == 1
    assert source.malformed == MAX_PROBLEMS + 50 and len(source.problems) == MAX_PROBLEMS


def test_duplicate_lines_are_kept(tmp_path):
    text = pywb_cdx(WARC, "cdxj")
    (tmp_path / "twice.cdxj").write_text(text + text.splitlines(True)[0])
    source = open_index(str(tmp_path / "twice.cdxj"))
    lines = read(source)
    assert len(lines) == 20 and source.unsorted is not None
    (tmp_path / "dup.cdxj").write_text(text.splitlines(True)[0] * 3)
    source = open_index(str(tmp_path / "dup.cdxj"))
    assert len(read(source)) == 3 and source.unsorted is None


def test_what_is_not_an_index_is_said(tmp_path):
    (tmp_path / "notes.cdx").write_text("hello\nworld\n")
    with pytest.raises(IndexInputError, match=r"notes.cdx: not a CDX or CDXJ index"):
        open_index(str(tmp_path / "notes.cdx"))
    (tmp_path / "ia.cdx").write_text(" CDX A b e a m s c k r V v D d g n\n")
    with pytest.raises(IndexInputError, match=r"its CDX legend 'A b e a m s c k r V v D d g n' "
                                              r"is not one of the formats"):
        open_index(str(tmp_path / "ia.cdx"))
    with pytest.raises(IndexInputError, match="no such file"):
        open_index(str(tmp_path / "missing.cdxj"))
    cut = tmp_path / "cut.cdxj.gz"
    cut.write_bytes(gzip.compress(pywb_cdx(WARC).encode())[:-30])
    source = open_index(str(cut))
    with pytest.raises(IndexInputError, match=r"cut.cdxj.gz: the gzip member at byte 0 is cut short"):
        read(source)
    assert source.lines_read > 0  # what came before was given


def built_cluster(tmp_path, lines, shards=2, per_block=4):
    """A cluster written by zipnum.write_cluster; the lines sorted."""
    lines = sorted(lines)
    split = [lines[len(lines) // shards]] if shards == 2 else []
    layout.write_cluster(lines, str(tmp_path / "cluster"), split, per_block)
    return tmp_path / "cluster", lines


def test_cluster_read_shard_by_shard(tmp_path):
    cluster, lines = built_cluster(tmp_path, [l.encode() for l in pywb_cdx(WARC).splitlines(True)])
    source = open_index(str(cluster / "cluster.idx"))
    assert isinstance(source, ZipNumCluster) and source.format == "cdxj"
    assert source.shards == ["cdx-00000.gz", "cdx-00001.gz"]
    assert read(source) == lines and source.unsorted is None
    assert cluster_index(str(cluster)) == str(cluster / "cluster.idx")
    assert cluster_index(str(tmp_path)) == str(cluster / "cluster.idx")


def test_cluster_over_http_ranged_server(tmp_path):
    cluster, lines = built_cluster(tmp_path, common_crawl_lines())
    with rangeserver.serving(tmp_path) as server:
        source = open_index(server.url + "/cluster/cluster.idx")
        assert read(source) == lines
        assert cluster_index(server.url + "/cluster") == server.url + "/cluster/cluster.idx"


def test_pywb_style_cluster_with_loc_fallback(tmp_path):
    """pywb's sample_archive/zipcdx layout: the idx names shard 'zipnum', whose .loc line
    gives a bad location first, then the file relative to the .loc's directory."""
    lines = sorted(l.encode() for l in pywb_cdx(WARC, "cdx11").splitlines(True)[1:])
    data = b"".join(layout.gzip_block(lines[i:i + 5]) for i in range(0, len(lines), 5))
    (tmp_path / "zipnum-sample.cdx.gz").write_bytes(data)
    writer_part = b""
    offset = 0
    for n, i in enumerate(range(0, len(lines), 5), 1):
        block = layout.gzip_block(lines[i:i + 5])
        writer_part += layout.idx_line(layout.block_key(lines[i]), "zipnum", offset, len(block), n)
        offset += len(block)
    (tmp_path / "zipnum-sample.idx").write_bytes(writer_part)
    (tmp_path / "zipnum-sample.loc").write_text("zipnum\tx-bad-path-to-ignore-x\tzipnum-sample.cdx.gz\n")
    source = open_index(str(tmp_path / "zipnum-sample.idx"))
    assert source.format == "cdx11" and read(source) == lines


def test_cluster_names_outside_its_directory_are_not_read(tmp_path):
    """A .loc or an index naming a shard outside the cluster's directory (absolute, '..',
    a URL) is not read, and the error says so; the shard beside the index still is."""
    outside = tmp_path / "secret"
    outside.mkdir()
    lines = [l.encode() for l in pywb_cdx(WARC).splitlines(True)]
    (outside / "cdx-00000.gz").write_bytes(layout.gzip_block(lines))
    cluster, _ = built_cluster(tmp_path / "c", lines, shards=1)
    os.remove(cluster / "cdx-00000.gz")
    for location in (str(outside / "cdx-00000.gz"), "../../secret/cdx-00000.gz",
                     "file://" + str(outside / "cdx-00000.gz"), "http://127.0.0.1:9/cdx-00000.gz"):
        (cluster / "cluster.loc").write_text(f"cdx-00000.gz\t{location}\n")
        with pytest.raises(IndexInputError, match="outside the cluster's directory"):
            open_index(str(cluster / "cluster.idx"))
    # an index whose shard column climbs out
    idx = (cluster / "cluster.idx").read_bytes().replace(b"cdx-00000.gz", b"../../secret/cdx-00000.gz")
    (cluster / "cluster.idx").write_bytes(idx)
    os.remove(cluster / "cluster.loc")
    with pytest.raises(IndexInputError, match=r"shard '../../secret/cdx-00000.gz'.*outside"):
        open_index(str(cluster / "cluster.idx"))
    # the same over HTTP: the name is refused before any request
    with rangeserver.serving(tmp_path) as server:
        with pytest.raises(IndexInputError, match="outside the cluster's directory"):
            open_index(server.url + "/c/cluster/cluster.idx")
        assert not any("secret" in path for _, path, _ in server.requests)


def test_inputs_are_told_apart(tmp_path):
    """Archives, flat indexes (by name or by their first line), clusters (a cluster.idx, a
    directory holding one, a build's output directory), manifests."""
    shutil.copy(WARC, tmp_path / "a.warc.gz")
    shutil.copy(WARC, tmp_path / "noext")
    (tmp_path / "b.cdxj").write_text(pywb_cdx(WARC))
    (tmp_path / "c").write_text(pywb_cdx(WARC, "cdx11"))             # no extension: its header
    (tmp_path / "d").write_bytes(gzip.compress(pywb_cdx(WARC).encode()))  # gzipped CDXJ
    (tmp_path / "list.txt").write_text("a.warc.gz\nb.cdxj\n")
    lines = [l.encode() for l in pywb_cdx(WARC).splitlines(True)]
    build = tmp_path / "out"
    built_cluster(build, lines)
    (build / "archives.txt").write_text("")
    (build / "cdx").mkdir()
    (build / "cdx" / "a.cdx.gz").write_bytes(gzip.compress(b"".join(lines)))
    assert [kind_of(str(tmp_path / n)) for n in ("a.warc.gz", "noext", "b.cdxj", "c", "d",
                                                 "list.txt", "out/cluster/cluster.idx")] == [
        "archive", "archive", "cdx", "cdx", "cdx", "manifest", "cluster"]
    found = expand([str(tmp_path / n) for n in ("noext", "c", "d", "list.txt")] + [str(build)])
    assert [a.name for a in found.archives] == ["noext", "a.warc.gz"]
    assert [(i.name, i.kind) for i in found.indexes] == [
        ("c", "cdx"), ("d", "cdx"), ("b.cdxj", "cdx"), ("cluster/cluster.idx", "cluster")]
    assert [i.name for i in expand([str(tmp_path / "*.cdx*"), str(build / "*" / "*.idx")]).indexes] == [
        "b.cdxj", "cluster.idx"]
    # a directory search finds archives, flat indexes and clusters, each cluster once
    found = expand([str(tmp_path)])
    assert [a.name for a in found.archives] == ["a.warc.gz"]
    assert [(i.name, i.kind) for i in found.indexes] == [
        ("b.cdxj", "cdx"), ("out/cluster/cluster.idx", "cluster")]


# -- chunks: the engines' reading API ----------------------------------------------------------

def test_chunks_are_lists_of_lines_without_newlines_of_bounded_size(tmp_path):
    lines = sorted(common_crawl_lines() * 40)  # 400 lines of ~500 bytes, duplicates kept
    path = tmp_path / "cdx-00000.gz"
    path.write_bytes(b"".join(layout.gzip_block(lines[i:i + 30]) for i in range(0, 400, 30)))
    source = open_index(str(path))
    chunks = list(source.chunks(size=4096))
    assert [line for chunk in chunks for line in chunk] == [l.rstrip(b"\n") for l in lines]
    # about 4096 bytes each: the pieces read gathered up to 4096 or more, cut after a line
    longest = max(map(len, lines))
    sizes = [sum(len(line) + 1 for line in chunk) for chunk in chunks]
    assert min(sizes[:-1]) > 4096 - longest and max(sizes) <= 2 * 4096 and len(chunks) > 20
    assert source.lines_read == 400 and source.members == 14
    # read again, in one chunk: the same, the counters afresh
    assert list(source.chunks(size=1 << 20)) == [[l.rstrip(b"\n") for l in lines]]
    # small gzip members (cdxj-indexer -c writes one per few lines) make chunks of the size
    path.write_bytes(b"".join(layout.gzip_block(lines[i:i + 2]) for i in range(0, 400, 2)))
    chunks = list(source.chunks(size=8192))
    assert source.members == 200 and 10 < len(chunks) < 40
    assert source.lines_read == 400 and source.unsorted is None


def test_order_is_that_of_lines_without_their_newline(tmp_path):
    """'... g\\t' then '... g': in order with newlines (\\t < \\n), not without them, which
    is how a cluster sorts (the second is a prefix of the first)."""
    first, second = b"k 1 a b c d e f g\t", b"k 1 a b c d e f g"
    assert first + b"\n" < second + b"\n" and second < first
    path = tmp_path / "tab.cdx"
    path.write_bytes(b" CDX N b a m s k r V g\n" + first + b"\n" + second + b"\n")
    source = open_index(str(path))
    assert list(source.lines()) == [first, second]
    assert source.unsorted == {"file": str(path), "line": 3}


def test_unsorted_is_known_once_its_chunk_is_read(tmp_path):
    lines = [b'a%05d 20200101000000 {"offset": "0", "length": "1"}' % i for i in range(2000)]
    lines[1500], lines[1501] = lines[1501], lines[1500]
    (tmp_path / "a.cdxj").write_bytes(b"\n".join(lines) + b"\n")
    source = open_index(str(tmp_path / "a.cdxj"))
    seen = 0
    for chunk in source.chunks(size=4096):
        seen += len(chunk)
        assert (source.unsorted is not None) == (seen >= 1502)
    assert source.unsorted["line"] == 1502


def test_each_chunk_checked_at_once_is_what_line_by_line_checking_keeps(tmp_path):
    """Chunks of every size give the same lines and problems as chunks of one line (each
    line checked on its own), for lines of every kind: well-formed, ASCII or not, CRLF,
    malformed in each way, headers, blank; cut anywhere."""
    import random
    good = [l.rstrip(b"\n") for l in sorted(common_crawl_lines())]
    kinds = good + [
        b'com,example)/caf\xc3\xa9 20200101000000 {"url": "http://example.com/caf\xc3\xa9"}',
        b"com,example)/a 20200101000000 {}\r", b"com,example)/a 20200101000000 {}\r\r",
        b"com,ex\tample)/ 20200101000000 {}", b"com,ex\xc2\xa0ample)/ 20200101000000 {}",
        b"com,ex\x1fample)/ 20200101000000 {}", b"com,example)/ 2020\r0101 {}",
        b"com,example)/ 20200101000000 {}\rx}", b"com,example)/ 2020x {}",
        b" 20200101000000 {}", b"com,example)/ 20200101000000 {", b"\xff\xfe 1 {}",
        b"", b"  ", b" CDX N b a m s k r M S V g", b"com,example)/ 20200101000000",
    ]
    random.seed(5)
    data = b"\n".join(random.choice(kinds) for _ in range(3000))
    (tmp_path / "mixed.cdxj").write_bytes(good[0] + b"\n" + data)
    source = open_index(str(tmp_path / "mixed.cdxj"))
    one_by_one = [line for chunk in source.chunks(size=1) for line in chunk]
    expected = (one_by_one, source.problems, source.malformed, source.unsorted)
    assert 0 < source.malformed < 3000 - len(one_by_one) and source.unsorted is not None
    for size in (7, 300, 4096, 1 << 16, 1 << 20):
        got = [line for chunk in source.chunks(size=size) for line in chunk]
        assert (got, source.problems, source.malformed, source.unsorted) == expected, size
    # every line kept is one the jobs' readers keep, as they keep it
    from webarchive_indexing.cdx.cdxline import is_cdx_line
    assert all(is_cdx_line(line.decode("utf-8")) and b"\r" not in line for line in one_by_one)
    reasons = {p["reason"].split(" (")[0] for p in source.problems}
    assert {"white space in its URL key", "not UTF-8 text", "a carriage return",
            "timestamp '2020x' is not digits", "no URL key",
            "a CDX header of another format in a cdxj index"} <= reasons
