"""WACZ files as input (issue 25): their ``archive/`` WARC files indexed in place, each CDX
line naming the WACZ and the record's offset in it (and its entry), so that pywb replays
and ``copy`` extracts straight out of the WACZ. The WACZ files are py-wacz's (``wacz
create``), the references pywb's indexer and replay run on the same WARC files unpacked."""
import io
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

import rangeserver
import s3server
import servers
from helpers import REAL, pywb_cdx
from webarchive_indexing import cli
from webarchive_indexing.api.serve import open_collections
from webarchive_indexing.cdx.indexer import index_file
from webarchive_indexing.commands.build import build
from webarchive_indexing.commands.report import EXIT_PARTIAL
from webarchive_indexing.commands.zstd_dict import sample_file
from webarchive_indexing.inputs.discovery import cdx_name, expand, kind_of
from webarchive_indexing.options import BuildOptions

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "samples"
BIN = Path(sys.executable).parent
# What each WACZ holds, as py-wacz packs it
PACKS = {"a.wacz": ["example.warc.gz", "IAH-urls-wget.warc.gz"],
         "b.wacz": ["CC-MAIN-2024-22-whirlwind.warc.gz"]}
MORE = {"c.wacz": ["CC-MAIN-2020-34-excerpt.warc.gz"]}


def wacz_create(output, warcs):
    """py-wacz's ``wacz create -o output WARC...``, in the WARCs' directory."""
    done = subprocess.run([str(BIN / "wacz"), "create", "-o", str(output), *map(str, warcs)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def packs(tmp_path_factory):
    """``waczs/`` (py-wacz's packages of the samples) and ``warcs/`` (the same WARC files)."""
    root = tmp_path_factory.mktemp("wacz")
    (root / "warcs").mkdir()
    (root / "waczs").mkdir()
    (root / "more").mkdir()
    for name, warcs in {**PACKS, **MORE}.items():
        for warc in warcs:
            shutil.copy(SAMPLES / warc, root / "warcs" / warc)
        wacz_create(root / ("more" if name in MORE else "waczs") / name,
                    [root / "warcs" / warc for warc in warcs])
    (root / "warcs" / MORE["c.wacz"][0]).unlink()
    return root


def _json_line(line):
    key, stamp, data = line.split(" ", 2)
    return key, stamp, json.loads(data)


def expected_lines(wacz, warc_dir, names=None):
    """pywb's lines of each WARC packed in ``wacz`` (or of its entries ``names``), made to
    point into it: filename the WACZ, offset where the WARC's bytes are in the WACZ (found
    by looking for them), and the entry's name after it."""
    data = Path(wacz).read_bytes()
    names = names or [n for n in zipfile.ZipFile(wacz).namelist() if n.startswith("archive/")]
    lines = []
    for name in names:
        warc = (Path(warc_dir) / name.split("/", 1)[1]).read_bytes()
        start = data.find(warc)
        assert start > 0 and data.find(warc, start + 1) < 0
        for line in pywb_cdx(str(Path(warc_dir) / name.split("/", 1)[1])).splitlines():
            key, stamp, fields = _json_line(line)
            fields.update(offset=str(int(fields["offset"]) + start), filename=Path(wacz).name,
                          entry=name)
            lines.append((key, stamp, fields))
    return sorted(lines, key=repr)


def our_lines(text):
    return sorted((_json_line(line) for line in text.splitlines()), key=repr)


def test_a_wacz_is_indexed_in_place_as_pywb_indexes_its_warcs(packs):
    for name in PACKS:
        wacz = packs / "waczs" / name
        result = index_file(str(wacz), name)
        assert not result.errors and result.lines
        ours = our_lines("".join(result.lines))
        assert [(k, s, list(f)) for k, s, f in ours][0][2][-2:] == ["filename", "entry"]
        assert ours == expected_lines(wacz, packs / "warcs")
        # each line's bytes in the WACZ are the record's gzip member, as pywb reads them
        data = wacz.read_bytes()
        for _, _, fields in ours:
            member = data[int(fields["offset"]):][:int(fields["length"])]
            record = next(ArchiveIterator(io.BytesIO(member)))
            assert record.rec_headers.get_header("WARC-Target-URI") == fields["url"]
        assert result.records > len(ours)  # warcinfo and requests read, not listed


def test_a_wacz_is_an_archive_by_its_name_and_by_its_content(packs, tmp_path):
    wacz = packs / "waczs" / "a.wacz"
    assert kind_of(str(wacz)) == "archive"
    unnamed = tmp_path / "crawl-package"
    shutil.copy(wacz, unnamed)
    assert kind_of(str(unnamed)) == "archive"
    assert index_file(str(unnamed), "a.wacz").lines == index_file(str(wacz), "a.wacz").lines
    found = expand([str(packs / "waczs")])
    assert [a.name for a in found.archives] == ["a.wacz", "b.wacz"]
    assert cdx_name("crawls/a.wacz") == "crawls/a.wacz.cdx.gz"


def test_cdx11_lines_point_into_the_wacz_too(packs):
    wacz = packs / "waczs" / "a.wacz"
    lines = index_file(str(wacz), "a.wacz", "cdx11").lines
    cdxj = {(k, s, f["offset"]) for k, s, f in our_lines("".join(index_file(str(wacz)).lines))}
    assert {(p[0], p[1], p[9]) for p in (line.split() for line in lines)} == cdxj
    assert all(line.split()[10] == "a.wacz" for line in lines)


def cluster_lines(out):
    """Every line of a built cluster, in order (as ``export`` writes them)."""
    flat = Path(f"{out}.export")
    assert cli.main(["export", str(out), "-o", str(flat), "--no-progress"]) == 0
    return flat.read_text().splitlines()


@pytest.fixture(scope="module")
def built(packs):
    """One cluster of the directory of WACZ files, and one of the same WARC files."""
    options = dict(shards=2, lines_per_block=5, progress=False)
    summary = build([str(packs / "waczs")], str(packs / "out"), BuildOptions(**options))
    assert not summary.errors
    build([str(packs / "warcs")], str(packs / "out-warcs"), BuildOptions(**options))
    return packs / "out", packs / "out-warcs"


@pytest.mark.parametrize("runner", ["inline", "mrjob", "spark"])
def test_every_engine_builds_the_same_cluster_of_waczs(request, packs, built, tmp_path, runner):
    extra = {"spark_context": request.getfixturevalue("spark")} if runner == "spark" else {}
    build([str(packs / "waczs")], str(tmp_path / "out"),
          BuildOptions(shards=2, lines_per_block=5, progress=False, runner=runner, **extra))
    assert cluster_lines(tmp_path / "out") == cluster_lines(built[0])


def test_the_cluster_of_many_waczs_is_their_warcs_lines(packs, built):
    ours = our_lines("\n".join(cluster_lines(built[0])))
    wanted = sorted((line for name in PACKS
                     for line in expected_lines(packs / "waczs" / name, packs / "warcs")), key=repr)
    assert ours == wanted
    assert len(ours) == len(cluster_lines(built[1]))


def captures(warc_dir):
    """(url, timestamp) of the responses of the WARC files in ``warc_dir``."""
    for path in sorted(Path(warc_dir).glob("*.warc.gz")):
        with open(path, "rb") as fh:
            for record in ArchiveIterator(fh):
                if record.rec_type == "response":
                    date = record.rec_headers.get_header("WARC-Date")
                    yield (record.rec_headers.get_header("WARC-Target-URI"),
                           "".join(filter(str.isdigit, date))[:14])


def test_pywb_replays_out_of_the_waczs_through_the_cluster_and_serve(packs, built, tmp_path):
    """pywb 2.10 with three collections of the same captures: the WACZ cluster read
    directly, the same cluster through ``serve`` (pywb's remote index), and the cluster
    of the WARC files unpacked; every capture replays alike from all three, archived
    bytes and rewritten page."""
    out, out_warcs = built
    waczs, warcs = f"{packs / 'waczs'}/", f"{packs / 'warcs'}/"
    with servers.ours(open_collections([f"c={out}"])) as ours, \
            servers.pywb(tmp_path, {
                "wacz": {"index": str(out / "cluster" / "cluster.idx"), "archive_paths": waczs},
                "served": {"index": f"cdx+{ours}/c/cdx", "archive_paths": waczs},
                "warc": {"index": str(out_warcs / "cluster" / "cluster.idx"),
                         "archive_paths": warcs}}) as pywb:
        replayed = 0
        for url, stamp in captures(packs / "warcs"):
            for mode in ("id_", ""):
                answers = [servers.get(f"{pywb}/{coll}/{stamp}{mode}/{url}")
                           for coll in ("warc", "wacz", "served")]
                bodies = [body.replace(coll.encode(), b"C") for (_, _, body), coll
                          in zip(answers, ("warc", "wacz", "served"))]
                assert answers[0][0] < 400 and {a[0] for a in answers} == {answers[0][0]}, url
                assert bodies[1] == bodies[0] == bodies[2], (url, mode)
                replayed += 1
        assert replayed >= 36
        status, _, body = servers.get(f"{ours}/c/cdx", url="example.com", output="json")
        rows = [json.loads(line) for line in body.splitlines()]
        assert status == 200 and {r["filename"] for r in rows} == {"a.wacz"}
        assert {r["entry"] for r in rows} == {"archive/example.warc.gz"}


def test_query_answers_from_the_cluster_of_waczs(built, capsys):
    assert cli.main(["query", str(built[0]), "archive.org/images/*", "--fl",
                     "url,filename,entry"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines and all(line.endswith('"filename": "a.wacz", "entry": '
                                       '"archive/IAH-urls-wget.warc.gz"}') for line in lines)


def test_a_wacz_given_as_a_cluster_is_said_to_be_one(packs):
    done = subprocess.run([str(BIN / "webarchive-index"), "query", str(packs / "waczs" / "a.wacz"),
                           "example.com"], capture_output=True, text=True)
    assert done.returncode != 0 and not done.stdout and "Traceback" not in done.stderr
    said = f"{packs / 'waczs' / 'a.wacz'} is a ZIP file (a WACZ?), not a ZipNum index"
    assert said in done.stderr


def warc_records(directory):
    """Every record of the WARC files of ``directory`` but their warcinfo, as bytes (its
    headers and its content), sorted."""
    found = []
    for path in sorted(Path(directory).glob("*.warc.gz")):
        with open(path, "rb") as fh:
            for record in ArchiveIterator(fh):
                if record.rec_type != "warcinfo":
                    found.append(record.rec_headers.to_bytes() + record.content_stream().read())
    return sorted(found)


def test_copy_extracts_from_waczs_the_records_of_their_warcs(packs, built, tmp_path):
    for cluster, prefix, copied in ((built[0], packs / "waczs", tmp_path / "from-wacz"),
                                    (built[1], packs / "warcs", tmp_path / "from-warc")):
        assert cli.main(["copy", "copy", str(cluster), "--domains", "example.com,archive.org",
                         "-o", str(copied), "--warc-prefix", str(prefix), "--no-progress"]) == 0
    records = warc_records(tmp_path / "from-wacz")
    assert len(records) > 15 and records == warc_records(tmp_path / "from-warc")
    # each record's gzip member copied byte for byte, the same as from the WARC files
    assert copied_members(tmp_path / "from-wacz") == copied_members(tmp_path / "from-warc")


def copied_members(directory):
    """The gzip members of a copy's outputs that its .cdxj files list, sorted."""
    members = []
    for cdxj in Path(directory).glob("*.cdxj"):
        data = cdxj.with_suffix(".warc.gz").read_bytes()
        for _, _, fields in map(_json_line, cdxj.read_text().splitlines()):
            members.append(data[int(fields["offset"]):][:int(fields["length"])])
    assert members
    return sorted(members)


def test_update_adds_new_wacz_files(packs, built, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(packs / "waczs", tmp_path / "waczs")
    options = dict(shards=2, lines_per_block=5, progress=False)
    build([str(tmp_path / "waczs")], str(out), BuildOptions(**options))
    shutil.copy(packs / "more" / "c.wacz", tmp_path / "waczs")
    summary = build([str(tmp_path / "waczs")], str(out), BuildOptions(update=True,
                                                                      progress=False))
    assert summary.archives - summary.archives_skipped == 1 and not summary.errors
    build([str(tmp_path / "waczs")], str(tmp_path / "fresh"), BuildOptions(**options))
    assert cluster_lines(out) == cluster_lines(tmp_path / "fresh")
    assert any('"filename": "c.wacz"' in line for line in cluster_lines(out))


def test_a_wacz_over_http_is_read_in_ranges(packs):
    local = index_file(str(packs / "waczs" / "a.wacz"))
    local_size = (packs / "waczs" / "a.wacz").stat().st_size
    with rangeserver.serving(packs / "waczs") as web:
        remote = index_file(web.url + "/a.wacz")
        # the stream opened to see how the file starts, then ranged reads of its parts
        first, *ranged = web.requests
        assert first == ("GET", "/a.wacz", None) and all(r[2] for r in ranged)
        spans = [[int(n) for n in r[2].removeprefix("bytes=").split("-")] for r in ranged]
        assert sum(end + 1 - start for start, end in spans) < 1.2 * local_size
    assert remote.lines == local.lines and not remote.errors


def test_a_build_of_waczs_on_s3_is_the_local_build(packs, built, tmp_path):
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    with s3server.running():
        bucket = s3server.new_bucket()
        s3server.upload_tree(packs / "waczs", bucket + "/waczs")
        summary = build([bucket + "/waczs/"], str(tmp_path / "out"),
                        BuildOptions(shards=2, lines_per_block=5, progress=False))
    assert not summary.errors
    assert cluster_lines(tmp_path / "out") == cluster_lines(built[0])


def test_zstd_dict_samples_a_wacz_as_its_warcs(packs, tmp_path):
    budget = 1 << 30
    _, samples, problems = sample_file(str(packs / "waczs" / "a.wacz"), budget)
    wanted = [s for warc in PACKS["a.wacz"]
              for s in sample_file(str(packs / "warcs" / warc), budget)[1]]
    assert not problems and samples == wanted
    assert cli.main(["zstd-dict", str(packs / "waczs"), "-o", str(tmp_path / "d.dict"),
                     "--size", "4096", "--no-progress"]) == 0


def test_recompress_makes_one_warc_of_a_waczs_warcs(packs, tmp_path):
    assert cli.main(["recompress", str(packs / "waczs" / "a.wacz"), "-o",
                     str(tmp_path / "a.warc.zst"), "--no-progress"]) == 0
    for warc in PACKS["a.wacz"]:
        shutil.copy(SAMPLES / warc, tmp_path)
    records = all_records(tmp_path / "a.warc.zst")
    assert len(records) > 20
    assert records == [r for warc in PACKS["a.wacz"] for r in all_records(tmp_path / warc)]


def all_records(path):
    """Every record of a WARC file as FastWARC reads it (its headers and content), in order."""
    from fastwarc.stream_io import GzipReader, ZstdReader
    from fastwarc.warc import ArchiveIterator as FastIterator
    stream = (ZstdReader if str(path).endswith(".zst") else GzipReader)(str(path))
    return [(str(r.headers), r.reader.read()) for r in FastIterator(stream, parse_http=False)]


# -- what is not read in place: refused, named, the rest read ---------------------------------

def _stored(zf, name, data, **info):
    zinfo = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))
    for key, value in info.items():
        setattr(zinfo, key, value)
    zf.writestr(zinfo, data, compress_type=info.get("compress_type", zipfile.ZIP_STORED))


def test_entries_that_cannot_be_read_in_place_are_refused_by_name(packs, tmp_path):
    import zstandard
    warc = (SAMPLES / "example.warc.gz").read_bytes()
    bad = tmp_path / "bad.wacz"
    with zipfile.ZipFile(bad, "w") as zf:
        _stored(zf, "archive/deflated.warc.gz", warc, compress_type=zipfile.ZIP_DEFLATED)
        _stored(zf, "archive/example.warc.gz", warc)
        _stored(zf, "archive/records.warc.zst", zstandard.compress(b"WARC/1.0\r\n\r\n"))
        _stored(zf, "archive/inner.zip", (packs / "waczs" / "b.wacz").read_bytes())
        _stored(zf, "datapackage.json", b"{}")
    done = subprocess.run([str(BIN / "webarchive-index"), "cdx", "--on-error", "skip", str(bad)],
                          capture_output=True, text=True)
    assert done.returncode == EXIT_PARTIAL and "Traceback" not in done.stderr
    for entry, why in (("archive/deflated.warc.gz", "compressed in the ZIP (method 8)"),
                       ("archive/records.warc.zst", "a .warc.zst"),
                       ("archive/inner.zip", "a ZIP file inside the WACZ")):
        said = [line for line in done.stderr.splitlines() if entry in line]
        assert len(said) == 1 and str(bad) in said[0] and why in said[0], done.stderr
    # the stored entry's records, all of them
    assert our_lines(done.stdout) == expected_lines(bad, SAMPLES, ["archive/example.warc.gz"])


def test_an_uncompressed_warc_entry_and_a_damaged_one(tmp_path):
    """A stored .warc entry is read in place too; an entry cut short ends its own walk
    (said at its offset in the WACZ, naming it), as the WARC file alone would, not the
    next entry's."""
    shutil.copy(Path(REAL, "webrecorder+warcio__example-digest.warc"), tmp_path / "plain.warc")
    (tmp_path / "cut.warc.gz").write_bytes((SAMPLES / "IAH-urls-wget.warc.gz").read_bytes()[:20000])
    wacz = tmp_path / "mixed.wacz"
    with zipfile.ZipFile(wacz, "w") as zf:
        for name in ("cut.warc.gz", "plain.warc"):
            _stored(zf, f"archive/{name}", (tmp_path / name).read_bytes())
    result = index_file(str(wacz))
    data = wacz.read_bytes()
    cut = index_file(str(tmp_path / "cut.warc.gz"))
    start = data.find((tmp_path / "cut.warc.gz").read_bytes())
    assert cut.lines and len(cut.errors) == 1
    assert our_lines("".join(result.lines)) == sorted(
        expected_lines(wacz, tmp_path, ["archive/plain.warc"])
        + [(k, s, {**f, "offset": str(int(f["offset"]) + start), "filename": "mixed.wacz",
                   "entry": "archive/cut.warc.gz"}) for k, s, f in map(_json_line, cut.lines)],
        key=repr)
    [error] = result.errors
    assert not result.fatal and error.offset == start + cut.errors[0].offset
    assert error.reason == (f"in entry archive/cut.warc.gz (its offset {cut.errors[0].offset}): "
                            f"{cut.errors[0].reason}")
    for _, _, fields in our_lines("".join(result.lines)):
        if fields["entry"] == "archive/plain.warc":
            assert data[int(fields["offset"]):].startswith(b"WARC/1.0")


def test_an_encrypted_entry_is_refused(tmp_path):
    wacz = tmp_path / "locked.wacz"
    with zipfile.ZipFile(wacz, "w") as zf:
        _stored(zf, "archive/example.warc.gz", (SAMPLES / "example.warc.gz").read_bytes())
    # zipfile writes no encrypted entry: its flag set in the local and the central header
    data = bytearray(wacz.read_bytes())
    for header, at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        data[data.index(header) + at] |= 0x1
    wacz.write_bytes(data)
    result = index_file(str(wacz))
    assert not result.lines
    assert [str(e) for e in result.errors] == [
        f"{wacz}: offset 0: entry archive/example.warc.gz not read: it is encrypted (records "
        "cannot be read in place); store the WARC files uncompressed in the ZIP, as the WACZ "
        "format asks (py-wacz does; zip -0), or index the WARC files themselves"]


@pytest.mark.parametrize("damage,said", [
    ("cut", "starts like a ZIP file (a WACZ) but its central directory cannot be read"),
    ("no archive", "a ZIP file without archive/ entries: not a WACZ"),
])
def test_a_zip_that_is_no_wacz_says_so(packs, tmp_path, damage, said):
    wacz = tmp_path / "x.wacz"
    if damage == "cut":
        wacz.write_bytes((packs / "waczs" / "a.wacz").read_bytes()[:30000])
    else:
        with zipfile.ZipFile(wacz, "w") as zf:
            _stored(zf, "pages/pages.jsonl", b"{}\n")
    result = index_file(str(wacz))
    assert result.fatal and not result.lines and said in str(result.errors[0])
    done = subprocess.run([str(BIN / "webarchive-index"), "cdx", str(wacz)], capture_output=True,
                          text=True)
    assert done.returncode != 0 and said in done.stderr and "Traceback" not in done.stderr


def test_a_zip64_wacz_is_read(packs, tmp_path, monkeypatch):
    """A WACZ with ZIP64 records (end of central directory, central and local extra fields),
    as a writer makes one past 4 GiB: made so at a small size by lowering zipfile's limit."""
    monkeypatch.setattr(zipfile, "ZIP64_LIMIT", 1 << 10)
    wacz = tmp_path / "big.wacz"
    with zipfile.ZipFile(wacz, "w", allowZip64=True) as zf:
        _stored(zf, "datapackage.json", b"{}")
        for warc in PACKS["a.wacz"]:
            with zf.open(zipfile.ZipInfo(f"archive/{warc}"), "w", force_zip64=True) as entry:
                entry.write((SAMPLES / warc).read_bytes())
    monkeypatch.undo()
    data = wacz.read_bytes()
    assert b"PK\x06\x06" in data and b"PK\x06\x07" in data  # the ZIP64 end records
    result = index_file(str(wacz))
    assert not result.errors
    assert our_lines("".join(result.lines)) == expected_lines(wacz, SAMPLES)


def test_the_commands_of_docs_wacz_md_run_as_written(tmp_path):
    """docs/wacz.md's command lines, in order, in a directory holding the samples as warcs/."""
    text = (REPO / "docs" / "wacz.md").read_text()
    blocks = re.findall(r"```\n(.*?)```", text, re.S)
    commands = [line for block in blocks for line in block.splitlines()
                if line.startswith(("mkdir ", "wacz ", "webarchive-index "))]
    assert len(commands) == 10
    shutil.copytree(SAMPLES, tmp_path / "warcs")
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    for command in commands:
        done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env,
                              capture_output=True, text=True)
        assert done.returncode == 0 and "Traceback" not in done.stderr, (command, done.stderr)
        if command.startswith("webarchive-index query"):
            assert done.stdout.count('"entry": "archive/IAH-urls-wget.warc.gz"') > 3
    assert list((tmp_path / "copied").glob("*.warc.gz"))
    assert (tmp_path / "crawl.dict").stat().st_size
    assert "c.wacz" in (tmp_path / "out" / "archives.txt").read_text()


def test_a_wacz_written_as_a_stream_is_read(tmp_path):
    """A WACZ zipped as a stream (as browser-side and streaming writers make them): sizes
    in a data descriptor after each entry, none in its local header."""
    class Unseekable(io.RawIOBase):
        def __init__(self, fh):
            self.fh = fh

        def writable(self):
            return True

        def write(self, data):
            return self.fh.write(data)

    wacz = tmp_path / "streamed.wacz"
    with open(wacz, "wb") as raw, zipfile.ZipFile(Unseekable(raw), "w") as zf:
        for warc in PACKS["a.wacz"]:
            with zf.open(f"archive/{warc}", "w") as entry:
                entry.write((SAMPLES / warc).read_bytes())
    infos = zipfile.ZipFile(wacz).infolist()
    assert all(i.flag_bits & 0x8 and i.compress_type == zipfile.ZIP_STORED for i in infos)
    result = index_file(str(wacz))
    assert not result.errors
    assert our_lines("".join(result.lines)) == expected_lines(wacz, SAMPLES)
