"""`recompress` and `zstd-dict`: records' bytes unchanged (the `zstd` and gzip tools give the
input's bytes back), outputs indexed and read by pywb, records found where warcio finds them,
bad input reported with nothing half written."""
import gzip
import os
import re
import shlex
import shutil
import subprocess

import pytest
import zstandard
from warcio.archiveiterator import ArchiveIterator

from helpers import REAL, fields_but_place, pywb_cdx, uncompressed, warcs
from webarchive_indexing import cli
from webarchive_indexing.cdx.indexer import index_file
from webarchive_indexing.warc.raw import PIECE, open_records

# uncompressed WARC samples that read whole (one named .warc is gzipped)
PLAIN_SAMPLES = sorted(n for n in os.listdir(REAL) if n.endswith(".warc")
                       and open(os.path.join(REAL, n), "rb").read(5) == b"WARC/"
                       and not n.endswith(("example-trunc.warc", "link-extraction-test.warc")))


@pytest.fixture(scope="module")
def crawl(tmp_path_factory):
    root = tmp_path_factory.mktemp("crawl")
    return root, warcs(root / "warcs", files=3, captures=60, seed=41)


# -- finding records ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", PLAIN_SAMPLES)
def test_records_are_where_warcio_finds_them(name):
    path = os.path.join(REAL, name)
    with open(path, "rb") as fh:
        it = ArchiveIterator(fh)
        warcio_offsets = [it.offset for _ in it]
    with open_records(path) as records:
        ours = [(record.offset, b"".join(record.pieces)) for record in records]
    assert [offset for offset, _ in ours] == warcio_offsets
    assert b"".join(data for _, data in ours) == open(path, "rb").read()


def test_pieces_of_a_large_record(crawl):
    _, paths = crawl
    with open_records(paths[0], piece=1000) as records:
        for record in records:
            pieces = list(record.pieces)
            assert all(len(p) <= 1000 for p in pieces[:-1]) and len(pieces[-1]) <= 1000 + 256
            assert record.size == sum(map(len, pieces))


# -- recompress ---------------------------------------------------------------------------------

def test_whole_file_gzip_into_warc_zst(crawl, tmp_path, capsys):
    _, paths = crawl
    whole = tmp_path / "whole.warc.gz"
    whole.write_bytes(gzip.compress(uncompressed(paths[0])))
    assert index_file(str(whole)).errors  # not indexable as it is
    out = tmp_path / "out" / "whole.warc.zst"
    assert cli.main(["recompress", str(whole), "-o", str(out), "--no-progress"]) == cli.EXIT_OK
    err = capsys.readouterr().err
    assert "archives: 1 (0 there already), 181 records" in err and "errors:   0" in err
    decoded = subprocess.run(["zstd", "-dc", str(out)], capture_output=True, check=True).stdout
    assert decoded == uncompressed(paths[0])
    cdx = (tmp_path / "out" / "whole.cdxj").read_text()
    assert cdx == "".join(index_file(str(out), "whole.warc.zst").lines)
    assert fields_but_place(cdx.splitlines()) == fields_but_place(index_file(paths[0]).lines)


def test_warc_zst_into_per_record_gzip_read_by_pywb(crawl, tmp_path):
    _, paths = crawl
    zst = tmp_path / "a.warc.zst"
    assert cli.main(["recompress", paths[1], "-o", str(zst), "--level", "19"]) == cli.EXIT_OK
    gz = tmp_path / "again" / "a.warc.gz"
    assert cli.main(["recompress", str(zst), "-o", str(gz), "--cdx", str(tmp_path / "a.cdx"),
                     "--cdx-format", "cdx11"]) == cli.EXIT_OK
    assert uncompressed(str(gz)) == uncompressed(paths[1])
    assert (tmp_path / "a.cdx").read_text() == pywb_cdx(str(gz), "cdx11", "a.warc.gz")


@pytest.mark.parametrize("name", PLAIN_SAMPLES)
def test_plain_warc_into_warc_zst(name, tmp_path):
    source = os.path.join(REAL, name)
    out = tmp_path / "x.warc.zst"
    assert cli.main(["recompress", source, "-o", str(out)]) == cli.EXIT_OK
    assert subprocess.run(["zstd", "-dc", str(out)], capture_output=True, check=True).stdout == \
        uncompressed(source)
    assert fields_but_place(index_file(str(out)).lines) == fields_but_place(index_file(source).lines)


def test_many_archives_into_a_directory_with_a_dictionary(crawl, tmp_path, capsys, monkeypatch):
    root, paths = crawl
    monkeypatch.chdir(tmp_path)
    assert cli.main(["zstd-dict", str(root / "warcs"), "-o", "crawl.dict", "--size", "32768",
                     "--no-progress"]) == cli.EXIT_OK
    assert re.search(r"dictionary: crawl.dict, 32768 bytes, id \d+", capsys.readouterr().err)
    assert cli.main(["recompress", str(root / "warcs"), "-o", "zst", "--dictionary", "crawl.dict",
                     "--cdx", "index", "--processes", "2", "--no-progress"]) == cli.EXIT_OK
    assert "archives: 3 (0 there already)" in capsys.readouterr().err
    for path in paths:
        name = os.path.basename(path).replace(".warc.gz", "")
        out = tmp_path / "zst" / f"{name}.warc.zst"
        decoded = subprocess.run(["zstd", "-dc", "-D", "crawl.dict", str(out)], capture_output=True,
                                 check=True).stdout
        assert decoded == uncompressed(path)
        cdx = (tmp_path / "index" / f"{name}.cdxj").read_text()
        assert fields_but_place(cdx.splitlines()) == fields_but_place(index_file(path).lines)
        assert f'"filename": "{name}.warc.zst"' in cdx
    # again: what is there is left alone
    assert cli.main(["recompress", str(root / "warcs"), "-o", "zst", "--dictionary", "crawl.dict",
                     "--cdx", "index", "--skip-existing"]) == cli.EXIT_OK
    assert "archives: 3 (3 there already)" in capsys.readouterr().err


def test_a_record_over_a_frame_goes_into_several_frames(tmp_path):
    big = os.urandom(PIECE // 2) * 3  # compressible, larger than one frame may hold
    warc = tmp_path / "big.warc"
    block = b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n\r\n" + big
    warc.write_bytes(b"WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: http://example.com/big\r\n"
                     b"WARC-Date: 2024-01-01T00:00:00Z\r\nWARC-Record-ID: <urn:uuid:1>\r\n"
                     b"Content-Type: application/http; msgtype=response\r\n"
                     b"Content-Length: %d\r\n\r\n" % len(block) + block + b"\r\n\r\n")
    out = tmp_path / "big.warc.zst"
    assert cli.main(["recompress", str(warc), "-o", str(out)]) == cli.EXIT_OK
    data, frames, at = out.read_bytes(), [], 0
    reader = zstandard.ZstdDecompressor()
    while at < len(data):
        params = zstandard.get_frame_parameters(data[at:at + 18])
        obj = reader.decompressobj()
        obj.decompress(data[at:])
        frames.append(params)
        at = len(data) - len(obj.unused_data)
    assert len(frames) == 2 and all(f.window_size <= 8 << 20 and f.has_checksum for f in frames)
    assert uncompressed(str(out)) == warc.read_bytes()
    assert fields_but_place(index_file(str(out)).lines) == fields_but_place(index_file(str(warc)).lines)


def test_bad_input_is_reported_and_not_written(crawl, tmp_path, capsys):
    _, paths = crawl
    cut = tmp_path / "in" / "cut.warc.gz"
    cut.parent.mkdir()
    cut.write_bytes(open(paths[0], "rb").read()[:50000])
    arc = tmp_path / "in" / "example.arc"
    arc.write_bytes(open(os.path.join(REAL, "webrecorder+warcio__example.arc"), "rb").read())
    longer = tmp_path / "in" / "longer.warc"
    data = uncompressed(paths[1])
    n = int(re.search(rb"Content-Length: (\d+)", data).group(1))
    longer.write_bytes(data.replace(b"Content-Length: %d" % n, b"Content-Length: %d" % (n + 300), 1))
    good = tmp_path / "in" / "good.warc.gz"
    good.write_bytes(open(paths[2], "rb").read())
    assert cli.main(["recompress", str(tmp_path / "in"), "-o", str(tmp_path / "out"),
                     "--no-progress"]) == cli.EXIT_PARTIAL
    err = capsys.readouterr().err
    assert sorted(os.listdir(tmp_path / "out")) == ["good.cdxj", "good.warc.zst"]
    assert re.search(rf"error: {cut}: offset \d+: cannot read the file past here .*: Compressed "
                     r"file ended before the end-of-stream marker was reached", err)
    assert f"error: {arc}: offset 0: not a WARC record (found b'filedesc://" in err
    assert f"error: {longer}: offset 0: the record's Content-Length ({n + 300}) does not lead to " \
           "the next record" in err
    assert "errors:   3" in err


def test_a_failed_run_leaves_the_earlier_output(crawl, tmp_path, capsys):
    _, paths = crawl
    source = tmp_path / "a.warc.gz"
    source.write_bytes(open(paths[0], "rb").read())
    out = tmp_path / "a.warc.zst"
    assert cli.main(["recompress", str(source), "-o", str(out)]) == cli.EXIT_OK
    before = out.read_bytes(), (tmp_path / "a.cdxj").read_bytes()
    source.write_bytes(open(paths[0], "rb").read()[:30000])
    assert cli.main(["recompress", str(source), "-o", str(out)]) == cli.EXIT_FAILED
    assert "Compressed file ended" in capsys.readouterr().err
    assert (out.read_bytes(), (tmp_path / "a.cdxj").read_bytes()) == before
    assert sorted(os.listdir(tmp_path)) == ["a.cdxj", "a.warc.gz", "a.warc.zst"]


@pytest.mark.parametrize("args,message", [
    (["-o", "{tmp}/x.warc.zst"], "3 archives cannot go into the one file"),
    (["-o", "{tmp}/out", "--level", "23"], "--level 23: zst levels are 1 to 22"),
    (["-o", "{tmp}/x.warc.gz", "--level", "0"], "--level 0: gz levels are 1 to 9"),
    (["-o", "{tmp}/out", "--output-format", "gz", "--dictionary", "{tmp}/d"],
     "--dictionary goes with a .warc.zst output"),
    (["-o", "{tmp}/x.warc.gz", "--output-format", "zst"], "--output-format zst and the output"),
    (["-o", "{tmp}/out", "--dictionary", "{tmp}/missing.dict"], "cannot read the zstd dictionary"),
])
def test_recompress_usage_errors(crawl, tmp_path, capsys, args, message):
    root, paths = crawl
    inputs = [paths[0]] if "x.warc.gz" in args[1] else [str(root / "warcs")]
    args = [a.format(tmp=tmp_path) for a in args]
    assert cli.main(["recompress", *inputs, *args]) == cli.EXIT_USAGE
    assert message in capsys.readouterr().err
    assert os.listdir(tmp_path) == []


def test_inputs_that_would_meet_in_one_output_are_refused(crawl, tmp_path, capsys):
    root, paths = crawl
    os.mkdir(tmp_path / "in")
    shutil.copy(paths[0], tmp_path / "in" / "x.warc.gz")
    (tmp_path / "in" / "x.warc").write_bytes(uncompressed(paths[0]))
    assert cli.main(["recompress", str(tmp_path / "in"), "-o", str(tmp_path / "out")]) \
        == cli.EXIT_USAGE
    assert "would both be recompressed into " + str(tmp_path / "out" / "x.warc.zst") \
        in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "out")


def test_zstd_dict_on_too_little(tmp_path, capsys):
    assert cli.main(["zstd-dict", os.path.join(REAL, "webrecorder+warcio__example.warc.gz"),
                     "-o", str(tmp_path / "d")]) == cli.EXIT_FAILED
    err = capsys.readouterr().err
    assert "zstd could not train a 1048576-byte dictionary on 6 samples" in err
    assert "give more archives or a smaller --size" in err and not os.path.exists(tmp_path / "d")
    assert cli.main(["zstd-dict", str(tmp_path / "none"), "-o", str(tmp_path / "d")]) == cli.EXIT_USAGE
    assert "no such file, directory or archive" in capsys.readouterr().err


def test_zstd_dict_is_the_same_from_the_same_inputs(crawl, tmp_path):
    root, _ = crawl
    for name in ("a", "b"):
        assert cli.main(["zstd-dict", str(root / "warcs"), "-o", str(tmp_path / name), "--size",
                         "16384", "--processes", "2" if name == "a" else "1"]) == cli.EXIT_OK
    first = (tmp_path / "a").read_bytes()
    assert first[:4] == b"\x37\xa4\x30\xec" and first == (tmp_path / "b").read_bytes()


def test_readme_zstd_commands_as_written(tmp_path, monkeypatch, capsys):
    """The command lines of the README's .warc.zst section, in its order, on a generated crawl."""
    readme = open(os.path.join(os.path.dirname(os.path.dirname(__file__)), "README.md")).read()
    section = readme.split("## Zstandard WARCs")[1].split("\n## ")[0]
    block = section.split("```\n")[1]
    commands = [shlex.split(line) for line in block.splitlines() if line.strip()]
    assert [c[0] for c in commands] == ["webarchive-index"] * 5 + ["zstd"]
    (a, b) = warcs(tmp_path / "crawl", files=2, captures=300, seed=43)
    os.rename(a, tmp_path / "crawl" / "a.warc.gz")
    monkeypatch.chdir(tmp_path)
    for command in commands:
        if command[0] == "zstd":
            subprocess.run(command, check=True, capture_output=True)
        else:
            assert cli.main(command[1:]) == cli.EXIT_OK, command
    assert open("a.warc", "rb").read() == uncompressed("crawl/a.warc.gz")
    assert uncompressed("a.warc.gz") == uncompressed("crawl/a.warc.gz")
    assert sorted(os.listdir("crawl-zst")) == sorted(
        [n.replace(".warc.gz", e) for n in os.listdir("crawl") for e in (".cdxj", ".warc.zst")])
    assert fields_but_place(capsys.readouterr().out.splitlines()) == \
        fields_but_place(index_file("crawl/a.warc.gz").lines)
