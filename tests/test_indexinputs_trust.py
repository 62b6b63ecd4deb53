"""Index inputs that must not go into a cluster as they are (issues 20.11, 21.12-21.14,
20.13): URL keys that are not SURT keys (Arquivo.pt's teste.cdx), refused or re-keyed
with --rekey; formats converted with --cdx-format; malformed CDXJ JSON; a UTF-8 byte
order mark; archive names a classic CDX line cannot carry; export's -o - and an
archive given to it. Every build here runs on the local engine and on the MRJob jobs
(inline runner), which must write the same cluster."""
import gzip
import json
import os
import random
import shutil

import pytest
from pywb.warcserver.index.cdxobject import CDXException, CDXObject

from helpers import REAL, pywb_cdx
from test_indexinputs import common_crawl_lines
from test_pipeline import cluster_files, cluster_lines
from webarchive_indexing import cli
from webarchive_indexing.cdx.cdxline import convert, location
from webarchive_indexing.inputs.indexes import IndexInputError
from webarchive_indexing.inputs.sources import open_index
from webarchive_indexing.inputs.discovery import kind_of

TESTE = os.path.join(REAL, "arquivo+webarchive-indexing__teste.cdx")
WARC = os.path.join(REAL, "iipc+webarchive-commons__IAH-urls-wget.warc.gz")
EXAMPLE = os.path.join(REAL, "webrecorder+warcio__example.warc.gz")
RUNNERS = ("local", "inline")


def build(capsys, out, *args):
    """``build -o out args``: its exit status and what it printed on stderr."""
    status = cli.main(["build", "-o", str(out), "--no-progress", *map(str, args)])
    return status, capsys.readouterr().err


def build_everywhere(capsys, tmp_path, *args, expected=cli.EXIT_OK):
    """The output directory of the local engine's build of ``args``, after checking that
    each engine built the same cluster, exiting with ``expected``; the stderr of the last
    build."""
    clusters = {}
    for runner in RUNNERS:
        out = tmp_path / f"out-{runner}"
        status, err = build(capsys, out, "--runner", runner, *args)
        assert status == expected, err
        clusters[runner] = cluster_files(out / "cluster")
    assert clusters["local"] == clusters["inline"]
    return tmp_path / "out-local", err


def query(capsys, out, *args):
    assert cli.main(["query", str(out), *args]) == cli.EXIT_OK
    return capsys.readouterr().out.splitlines()


# -- 20.11: URL keys that are not SURT keys ------------------------------------------------

def test_arquivo_non_surt_keys_are_refused_with_the_fix(tmp_path, capsys):
    """Arquivo.pt's teste.cdx (CDX9, keys 'mocho.pt/cab/...') built silently and then
    answered no query: now refused, naming the line and --rekey."""
    for extra in ([], ["--no-rekey"]):
        status, err = build(capsys, tmp_path / "out", *extra, TESTE)
        assert status == cli.EXIT_FAILED
        assert (f"{TESTE}: line 1: its URL keys are URLs, not SURT keys "
                "('mocho.pt/cab/5/rei_justino.php'") in err
        assert "use --rekey" in err
        assert not (tmp_path / "out" / "cluster" / "cluster.idx").exists()
    with pytest.raises(IndexInputError, match="not SURT keys"):
        open_index(TESTE)
    # SURT-keyed inputs, and keys of other schemes, are not taken for URLs
    path = tmp_path / "surt.cdx"
    path.write_text("".join(pywb_cdx(WARC, "cdx9")) + "dns:example.com 20200101000000 "
                    "dns:example.com text/dns 200 X - 1 a.warc.gz\n")
    assert open_index(str(path)).format == "cdx9"
    # a legend no command here converts from says so, and which converts between the others
    (tmp_path / "ia.cdx").write_text(" CDX A b e a m s c k r V v D d g n\n")
    with pytest.raises(IndexInputError, match=r"with the tool that wrote it \(build --cdx-format "
                                              r"converts between these three only\)"):
        open_index(str(tmp_path / "ia.cdx"))


def test_arquivo_rekeyed_on_every_engine_then_found(tmp_path, capsys):
    out, _ = build_everywhere(capsys, tmp_path, "--rekey", TESTE)
    lines = [line.decode() for line in cluster_lines(out / "cluster")]
    assert len(lines) == 18
    # keys from the keys (the URL field holds the host only), the rest of each line kept
    original = open(TESTE, encoding="utf-8").read().splitlines()
    assert sorted(line.split(" ", 1)[1].rstrip("\n") for line in lines) == \
        sorted(line.split(" ", 1)[1].rstrip("\n") for line in original)
    assert ("pt,mocho)/cab/5/rei_justino.php 20061230223546 mocho.pt text/html 200 "
            "B3W3NZII6TU5L7PELLOFAN64B5QPDSOE - 95173778 "
            "FCCN-PT-HISTORICAL-ia400104.20090107105332.arc.gz\n") in lines
    found = query(capsys, out, "http://mocho.pt/cab/5/rei_justino.php", "--output", "json")
    assert [json.loads(line)["timestamp"] for line in found] == ["20061230223546"]
    assert len(query(capsys, out, "multimedia.iol.pt/*")) == 10
    assert len(query(capsys, out, "*.pt")) == 18


def test_rekey_takes_the_url_of_lines_that_have_one(tmp_path, capsys):
    """A CDXJ keyed by URL (a line's "url" absolute): its key made from that URL."""
    lines = pywb_cdx(WARC).splitlines(True)
    keyed = [line.replace("org,archive)/", "archive.org/", 1) for line in lines]
    (tmp_path / "plain.cdxj").write_text("".join(keyed))
    status, err = build(capsys, tmp_path / "refused", tmp_path / "plain.cdxj")
    assert status == cli.EXIT_FAILED and "not SURT keys ('archive.org/'" in err
    out, _ = build_everywhere(capsys, tmp_path, "--rekey", tmp_path / "plain.cdxj")
    assert cluster_lines(out / "cluster") == [line.encode() for line in sorted(lines)]


# -- converting formats ---------------------------------------------------------------------

def test_mixed_formats_name_the_command_that_converts_them(tmp_path, capsys):
    (tmp_path / "a.cdx").write_text(pywb_cdx(WARC, "cdx11"))
    (tmp_path / "b.cdxj").write_text(pywb_cdx(os.path.join(REAL, "iipc+jwarc__cc.warc.gz")))
    status, err = build(capsys, tmp_path / "out", tmp_path / "a.cdx", tmp_path / "b.cdxj")
    assert status == cli.EXIT_USAGE
    assert "convert them to one with --cdx-format (cdxj, cdx11 or cdx9)" in err
    # the command it names: the CDX11 lines made pywb's CDXJ lines
    out, _ = build_everywhere(capsys, tmp_path, "--cdx-format", "cdxj", tmp_path / "a.cdx",
                              tmp_path / "b.cdxj")
    expected = pywb_cdx(WARC).splitlines(True) + (tmp_path / "b.cdxj").read_text().splitlines(True)
    assert cluster_lines(out / "cluster") == sorted(line.encode() for line in expected)
    # and back: CDXJ to CDX11, pywb's CDX11 lines
    out2 = tmp_path / "back"
    status, err = build(capsys, out2, "--cdx-format", "cdx11", out / "cluster")
    assert status == cli.EXIT_OK, err
    assert cluster_lines(out2 / "cluster") == sorted(
        line.encode() for line in pywb_cdx(WARC, "cdx11").splitlines(True)[1:]
        + pywb_cdx(os.path.join(REAL, "iipc+jwarc__cc.warc.gz"), "cdx11").splitlines(True)[1:])
    # CDX9 has no length for the others
    (tmp_path / "c.cdx").write_text(pywb_cdx(WARC, "cdx9"))
    status, err = build(capsys, tmp_path / "nine", "--cdx-format", "cdxj", tmp_path / "c.cdx")
    assert status == cli.EXIT_USAGE and "is cdx9, which has no record length" in err
    (tmp_path / "to9").mkdir()
    out9, _ = build_everywhere(capsys, tmp_path / "to9", "--cdx-format", "cdx9", tmp_path / "a.cdx")
    assert cluster_lines(out9 / "cluster") == sorted(
        line.encode() for line in pywb_cdx(WARC, "cdx9").splitlines(True)[1:])


def test_a_value_a_classic_line_cannot_carry_is_escaped_or_a_problem(tmp_path):
    """A URL with a space goes to CDX11 percent-encoded (as pywb reads a URL there); a
    filename with one cannot go (pywb would read another format): the line is a problem."""
    line = (b'com,example)/a%20b 20200101000000 {"url": "http://example.com/a b", "offset": "1", '
            b'"length": "2", "filename": "x.warc.gz"}')
    converted = convert(line, "cdxj", "cdx11")
    assert converted == (b"com,example)/a%20b 20200101000000 http://example.com/a%20b - - - - - 2 1 "
                         b"x.warc.gz")
    assert CDXObject(converted)["filename"] == "x.warc.gz"
    (tmp_path / "a.cdxj").write_bytes(line + b"\n" + line.replace(b"x.warc", b"my x.warc") + b"\n")
    source = open_index(str(tmp_path / "a.cdxj"))
    source.target = "cdx11"
    assert list(source.lines()) == [converted]
    assert source.problems == [{"file": str(tmp_path / "a.cdxj"), "line": 2, "reason":
                                "cannot convert it: its filename 'my x.warc.gz' holds white "
                                "space, which a cdx11 line cannot carry"}]


# -- 21.12: malformed CDXJ lines ------------------------------------------------------------

GOOD = pywb_cdx(WARC).splitlines()
MALFORMED = {
    "invalid JSON": GOOD[0].replace('", "mime"', '" "mime"'),
    "no offset": GOOD[1].replace('"offset": ', '"place": '),
    "length not a number": GOOD[2].replace('"length": "', '"length": "x'),
    "two lines run together": GOOD[2] + GOOD[3],
    "offset negative": GOOD[3].replace('"offset": "', '"offset": -').replace('", "filename"', ', "filename"'),
}


def test_malformed_cdxj_lines_are_reported_and_left_out_on_every_engine(tmp_path, capsys):
    lines = GOOD + list(MALFORMED.values())
    (tmp_path / "bad.cdxj").write_text("\n".join(lines) + "\n")
    status, err = build(capsys, tmp_path / "refused", tmp_path / "bad.cdxj")
    assert status == cli.EXIT_FAILED
    path = tmp_path / "bad.cdxj"
    for number, why in ((len(GOOD) + 1, "its JSON block is not valid JSON: Expecting ','"),
                        (len(GOOD) + 2, "its JSON has no 'offset'"),
                        (len(GOOD) + 3, "its length 'x"),
                        (len(GOOD) + 4, "two lines run together"),
                        (len(GOOD) + 5, "its offset '-")):
        assert f"{path}: line {number}: {why}" in err
    assert not (tmp_path / "refused" / "cluster" / "cluster.idx").exists()
    out, err = build_everywhere(capsys, tmp_path, "--on-error", "skip", path,
                                expected=cli.EXIT_PARTIAL)
    assert f"{path}: line {len(GOOD) + 4}: two lines run together" in err
    assert cluster_lines(out / "cluster") == sorted((line + "\n").encode() for line in GOOD)
    # what read them later now reads every line
    for line in query(capsys, out, "archive.org/", "--output", "json"):
        record = json.loads(line)
        assert int(record["offset"]) >= 0 and int(record["length"]) > 0
    for line in cluster_lines(out / "cluster"):
        location(line)


def test_pywb_reads_every_cdxj_line_that_is_kept(tmp_path):
    """What is kept is what pywb's CDXObject reads, with an offset and a length; what is
    left out, pywb cannot read or has no place of a record."""
    for line in GOOD:
        assert kept_of(tmp_path, line) == [line]
        CDXObject(line.encode())
    for why, line in MALFORMED.items():
        assert kept_of(tmp_path, line) == [], why
        try:
            record = CDXObject(line.encode())
        except (ValueError, CDXException):
            continue
        assert not all(str(record.get(name, "")).isdigit() for name in ("offset", "length")), why


def kept_of(tmp_path, line):
    """What an index holding ``line`` after a good line keeps of it."""
    path = tmp_path / "one.cdxj"
    path.write_text(GOOD[0] + "\n" + line + "\n")
    return [kept.decode() for kept in open_index(str(path)).lines()][1:]


def test_chunks_checked_at_once_keep_what_each_line_checked_alone_keeps(tmp_path):
    """The quick check of a whole chunk (a grammar of flat JSON) takes no line that the
    check of one line (JSON parsed) refuses, for JSON of every kind."""
    good = [line.rstrip(b"\n") for line in sorted(common_crawl_lines())]
    kinds = good + [line.encode() for line in MALFORMED.values()] + [
        b'a)/ 1 {"offset": 1, "length": 0}', b'a)/ 1 {"length": "2", "offset": "01"}',
        b'a)/ 1 {"offset": 01, "length": 1}', b'a)/ 1 {"offset": 1.0, "length": 1}',
        b'a)/ 1 {"offset": "1", "length": "1", "x": {"nested": [1, 2]}}',
        b'a)/ 1 {"offset": "1", "length": "1", "x": NaN}',
        b'a)/ 1 {"offset": "1", "length": "1",}', b'a)/ 1 {"offset": "1" "length": "1"}',
        b'a)/ 1 {"offset": "1", "length": "\\u0031"}', b'a)/ 1 {"offset": "\xd9\xa1", "length": "1"}',
        b'a)/ 1 {"offset": "1", "length": "1", "u": "\\x"}', b'a)/ 1 {"offset": "1", "length": "1", "u": "\t"}',
        b'a)/ 1 {"offset":"1","length":"1"}', b'a)/ 1 {"offset": true, "length": "1"}',
        b'a)/ 1 {"url": "x\\"offset\\": \\"1\\", ", "length": "1"}',
        b'a)/ 1 {"offset": "1", "length": "1", "u": "caf\xc3\xa9 }"}',
        b'a)/ 1 {"offset": "1", "length": "1"} ', b'a)/ 1  {"offset": "1", "length": "1"}',
    ]
    random.seed(7)
    data = b"\n".join(random.choice(kinds) for _ in range(2000))
    (tmp_path / "mixed.cdxj").write_bytes(good[0] + b"\n" + data + b"\n")
    source = open_index(str(tmp_path / "mixed.cdxj"))
    by_line = [line for chunk in source.chunks(size=1) for line in chunk]
    problems = list(source.problems)
    for size in (64, 1000, 1 << 18):
        assert [line for chunk in source.chunks(size=size) for line in chunk] == by_line
        assert source.problems == problems
    assert set(by_line) - set(good) == {
        b'a)/ 1 {"offset": 1, "length": 0}', b'a)/ 1 {"length": "2", "offset": "01"}',
        b'a)/ 1 {"offset": "1", "length": "1", "x": {"nested": [1, 2]}}',
        b'a)/ 1 {"offset": "1", "length": "\\u0031"}', b'a)/ 1 {"offset":"1","length":"1"}',
        b'a)/ 1 {"offset": "1", "length": "1", "u": "caf\xc3\xa9 }"}'}


# -- 21.13: a UTF-8 byte order mark ---------------------------------------------------------

def test_a_byte_order_mark_is_left_out_and_said_and_the_first_capture_found(tmp_path, capsys):
    path = tmp_path / "bom.cdxj"
    path.write_bytes(b"\xef\xbb\xbf" + pywb_cdx(WARC).encode())
    source = open_index(str(path))
    assert list(source.lines())[0] == GOOD[0].encode()
    assert source.unsorted is None
    assert source.notes == [{"file": str(path), "line": 1, "message":
                             "a UTF-8 byte order mark (BOM) at the start: left out"}]
    out, err = build_everywhere(capsys, tmp_path, path)
    assert "not sorted" not in err
    assert f"{path}: line 1: a UTF-8 byte order mark (BOM) at the start: left out" in err
    assert cluster_lines(out / "cluster") == [(line + "\n").encode() for line in sorted(GOOD)]
    first = GOOD[0].split(" ")
    found = query(capsys, out, "http://archive.org/", "--output", "json")
    assert first[0] == "org,archive)/" and json.loads(found[0])["timestamp"] == first[1]
    # a CDX11 file with its header after the mark
    path = tmp_path / "bom.cdx"
    path.write_bytes(b"\xef\xbb\xbf" + pywb_cdx(WARC, "cdx11").encode())
    source = open_index(str(path))
    assert source.format == "cdx11" and len(list(source.lines())) == len(GOOD)
    assert source.problems == []
    # and told from its first bytes when its name does not say
    (tmp_path / "bom-index").write_bytes(path.read_bytes())
    assert kind_of(str(tmp_path / "bom-index")) == "cdx"


# -- 21.14: archive names a line cannot carry -----------------------------------------------

def test_names_with_white_space_are_refused_for_classic_lines_and_kept_in_cdxj(tmp_path, capsys):
    """pywb's CDX11 writer writes a name as it is, and its reader then takes the line
    for another format (12 fields: CDX9 and three 'orig.' fields) with another filename; a
    line end cuts it. CDXJ's JSON escapes both."""
    archives = tmp_path / "in"
    archives.mkdir()
    names = ("my archive.warc.gz", "new\nline.warc.gz")
    for name in names:
        shutil.copy(EXAMPLE, archives / name)
    misread = CDXObject(pywb_cdx(EXAMPLE, "cdx11", filename=names[0]).splitlines()[1].encode())
    assert (misread["filename"], misread["orig.filename"]) == ("1228", "archive.warc.gz")
    for fmt in ("cdx11", "cdx9"):
        status, err = build(capsys, tmp_path / fmt, "--cdx-format", fmt, archives)
        assert status == cli.EXIT_FAILED
        assert (f"{archives / names[0]}: offset 0: its name 'my archive.warc.gz' holds white "
                f"space, which a {fmt} line cannot carry") in err
        assert "its name 'new\\nline.warc.gz' holds white space" in err
    # (the MRJob jobs get their inputs one a line: a line end in a name is no name there)
    status, err = build(capsys, tmp_path / "out", archives)
    assert status == cli.EXIT_OK, err
    out = tmp_path / "out"
    found = query(capsys, out, "http://example.com/", "--output", "json")
    assert sorted({json.loads(line)["filename"] for line in found}) == sorted(names)
    for line in cluster_lines(out / "cluster"):
        assert CDXObject(line)["filename"] in names
    status = cli.main(["cdx", "--cdx-format", "cdx11", str(archives / names[0])])
    assert status != cli.EXIT_OK
    assert "holds white space, which a cdx11 line cannot carry" in capsys.readouterr().err


# -- 20.13: export -o -, and an archive given to export -------------------------------------

def test_export_dash_prints_and_an_archive_is_said_to_be_one(tmp_path, capsys, monkeypatch):
    out, _ = build_everywhere(capsys, tmp_path, WARC)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["export", str(out), "-o", "-", "--no-progress"]) == cli.EXIT_OK
    printed = capsys.readouterr()
    assert not (tmp_path / "-").exists()
    assert "to stdout" in printed.err
    assert cli.main(["export", str(out), "--no-progress"]) == cli.EXIT_OK
    assert capsys.readouterr().out == printed.out and printed.out.count("\n") == len(GOOD)
    assert cli.main(["export", WARC, "--no-progress"]) == cli.EXIT_FAILED
    err = capsys.readouterr().err
    assert f"{WARC} is gzip data (a WARC or ARC file, a .cdx.gz?), not a ZipNum index " \
           "(cluster.idx): export reads the clusters" in err
    assert "index line" not in err
