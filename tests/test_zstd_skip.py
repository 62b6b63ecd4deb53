""".warc.zst payloads passed over undecompressed: `recompress` ends a record's first zstd
block with its header blocks (one frame still, that the `zstd` tool reads); the walk
decompresses that block and passes over the rest of the frame by its block headers, so a
damaged payload block goes unnoticed unless --zstd-verify, which reports it; hostile block
headers (sizes past the file's end, no last block, reserved types, oversized blocks) are one
error naming the file and the frame's offset, in bounded memory, and the walk goes on."""
import subprocess
import tracemalloc

import pytest
import zstandard

from helpers import fields_but_place, warcs
from webarchive_indexing import cli
from webarchive_indexing.cdx.indexer import index_file
from webarchive_indexing.warc import members, zstdwarc
from webarchive_indexing.warc.raw import OWN_BLOCKS_MIN, headers_end, open_records, record_writer
from webarchive_indexing.warc.walk import ArchiveError, iter_records

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


@pytest.fixture(scope="module")
def crawl(tmp_path_factory):
    """A generated crawl file (.warc.gz), its records (bytes), a dictionary trained on them,
    and the .warc.zst recompress writes of them with it."""
    directory = tmp_path_factory.mktemp("skip")
    gz = warcs(directory, files=1, captures=60, seed=11)[0]
    with open_records(gz) as found:
        records = [b"".join(record.pieces) for record in found]
    zdict = zstdwarc.train_dictionary(records, 16 << 10)
    zst = str(directory / "crawl.warc.zst")
    write(zst, records, zdict)
    return {"gz": gz, "records": records, "dict": zdict, "zst": zst}


def write(path, records, zdict):
    with open(path, "wb") as fh:
        put = record_writer(fh, "zst", 3, zdict)
        for record in records:
            put([record])
    return str(path)


def frames(data):
    """(offset, header size, [(block offset, type, compressed size, last)], end) of each zstd
    frame of ``data`` (skippable frames left out), by RFC 8878, independently of the code
    under test."""
    found, at = [], 0
    while at < len(data):
        if data[at:at + 4] != ZSTD_MAGIC:  # a skippable frame
            at += 8 + int.from_bytes(data[at + 4:at + 8], "little")
            continue
        size = zstandard.frame_header_size(data[at:at + 18])
        checksum = zstandard.get_frame_parameters(data[at:at + 18]).has_checksum
        i, blocks = at + size, []
        while True:
            header = int.from_bytes(data[i:i + 3], "little")
            kind, length = header >> 1 & 3, (1 if header >> 1 & 3 == 1 else header >> 3)
            blocks.append((i, kind, length, header & 1))
            i += 3 + length
            if header & 1:
                break
        end = i + 4 * checksum
        found.append((at, size, blocks, end))
        at = end
    return found


def response_frames(data, records):
    """The frames of responses (with their records) whose payload is in blocks of its own."""
    return [(frame, record) for frame, record in zip(frames(data), records)
            if b"WARC-Type: response" in record[:headers_end(record)] and len(frame[2]) > 1]


# -- the writer ------------------------------------------------------------------------------

def test_the_first_block_of_a_record_ends_with_its_header_blocks(crawl):
    data = open(crawl["zst"], "rb").read()
    records, decompressor = crawl["records"], zstandard.ZstdDecompressor(dict_data=crawl["dict"])
    found = frames(data)
    assert len(found) == len(records)
    split = 0
    for (at, size, blocks, end), record in zip(found, records):
        frame = data[at:end]
        assert zstandard.get_frame_parameters(frame).content_size == len(record)
        assert decompressor.decompress(frame) == record  # (its checksum checked)
        first = decompressor.decompressobj().decompress(data[at:blocks[0][0] + 3 + blocks[0][2]])
        if len(record) - headers_end(record) >= OWN_BLOCKS_MIN:
            split += 1
            assert len(blocks) > 1 and first == record[:headers_end(record)]
            if b"WARC-Type: response" in first:
                warc, http = first.split(b"\r\n\r\n", 1)[0], first.split(b"\r\n\r\n", 1)[1]
                assert http.startswith(b"HTTP/1.") and http.endswith(b"\r\n\r\n")
        else:
            assert len(blocks) == 1 and first == record
    assert split >= 50  # most responses
    # the zstd tool reads it, one frame a record: the records' bytes unchanged
    with open(crawl["zst"] + ".dict", "wb") as fh:
        fh.write(crawl["dict"].as_bytes())
    assert subprocess.run(["zstd", "-qdc", "-D", crawl["zst"] + ".dict", crawl["zst"]],
                          capture_output=True, check=True).stdout == b"".join(records)


def test_the_index_is_that_of_the_gzip_records_whatever_is_read(crawl):
    for settings in ({}, {"zstd_verify": True}, {"cdx_fields": "cc"}, {"post_append": True}):
        ours, theirs = index_file(crawl["zst"], **settings), index_file(crawl["gz"], **{
            k: v for k, v in settings.items() if k != "zstd_verify"})
        assert ours.errors == [] and ours.records == theirs.records
        assert fields_but_place(ours.lines) == fields_but_place(theirs.lines), settings


# -- what is passed over, and --zstd-verify -----------------------------------------------------

def damaged(crawl, tmp_path):
    """The crawl's .warc.zst with the checksum of one response's frame wrong and a byte of
    another's payload block changed; the offsets of the two."""
    data = bytearray(open(crawl["zst"], "rb").read())
    chosen = response_frames(bytes(data), crawl["records"])
    (first, _), (second, _) = chosen[3], chosen[10]
    data[first[3] - 1] ^= 0xFF
    block_at, _, length, _ = second[2][1]
    data[block_at + 3 + length // 2] ^= 0x55
    path = tmp_path / "damaged.warc.zst"
    path.write_bytes(bytes(data))
    return str(path), [first[0], second[0]]


def test_a_damaged_payload_is_passed_over_unless_verified(crawl, tmp_path):
    path, offsets = damaged(crawl, tmp_path)
    good = index_file(crawl["zst"], "damaged.warc.zst")
    passed = index_file(path)
    assert passed.errors == [] and passed.lines == good.lines
    verified = index_file(path, zstd_verify=True)
    assert [e.offset for e in verified.errors] == offsets
    assert all(str(e).startswith(f"{path}: offset {e.offset}: corrupt zstd frame")
               for e in verified.errors), verified.errors
    assert len(verified.lines) == len(good.lines) - 2


def test_zstd_verify_on_the_command_line(crawl, tmp_path, capsys):
    path, offsets = damaged(crawl, tmp_path)
    for flags, status in (([], 0), (["--no-zstd-verify"], 0), (["--zstd-verify"], 1)):
        assert cli.main(["cdx", path, *flags]) == status, flags
        out, err = capsys.readouterr()
        if status:
            problems = [line for line in err.splitlines() if "corrupt zstd frame" in line]
            assert [int(line.split("offset ")[1].split(":")[0]) for line in problems] == offsets
            assert "Traceback" not in err
        else:
            assert "corrupt" not in err
    assert cli.main(["build", path, "-o", str(tmp_path / "cluster"), "--zstd-verify",
                     "--no-progress"]) != 0
    assert "corrupt zstd frame" in capsys.readouterr().err


@pytest.mark.parametrize("extra,reason", [
    (b"x" * 300, "record is longer than its Content-Length says: 304 more bytes"),
    (None, "record is cut short: its zstd frames end 100 bytes before"),
], ids=["longer", "cut short"])
def test_a_frame_that_does_not_end_with_its_record_is_decompressed(crawl, tmp_path, extra,
                                                                    reason):
    """Passed over only where the content size says the record and its newlines end with the
    frame: else it is decompressed, and what is wrong reported as before."""
    records = list(crawl["records"])
    hit = next(i for i, record in enumerate(records) if i > 5 and b"WARC-Type: response"
               in record[:400] and len(record) - headers_end(record) > OWN_BLOCKS_MIN + 200)
    records[hit] = records[hit] + extra if extra else records[hit][:-104]
    path = write(tmp_path / "odd.warc.zst", records, crawl["dict"])
    result = index_file(path)
    offset = frames(open(path, "rb").read())[hit][0]
    assert [(e.offset, reason in e.reason) for e in result.errors] == [(offset, True)], result.errors
    assert len(result.lines) == len(index_file(crawl["zst"]).lines) - 1


# -- hostile block headers -----------------------------------------------------------------------

def block_header(kind, size, last):
    return (size << 3 | kind << 1 | last).to_bytes(3, "little")


def hostile(crawl, tmp_path, rest, at_end):
    """The crawl's .warc.zst with the blocks after the first of a response's frame replaced by
    ``rest``: that frame the file's last (``at_end``: cut there), or in the middle."""
    data = open(crawl["zst"], "rb").read()
    (at, _, blocks, end), _ = response_frames(data, crawl["records"])[12]
    second = blocks[1][0]
    path = tmp_path / "hostile.warc.zst"
    path.write_bytes(data[:second] + rest + (b"" if at_end else data[end:]))
    return str(path), at


def walk(path):
    items = []
    with open(path, "rb") as fh:
        try:
            items.extend(iter_records(fh, path, skip=(("request", "warcinfo"), ())))
        except ArchiveError as exc:
            items.append(exc)
    return items


@pytest.mark.parametrize("rest", [
    block_header(0, 100_000, 1) + b"a" * 10,
    b"".join(block_header(0, 1000, 0) + b"b" * 1000 for _ in range(12_000)),  # 12 MB, no end
], ids=["a block past the end", "no last block"])
def test_a_frame_the_file_ends_in(crawl, tmp_path, rest):
    path, at = hostile(crawl, tmp_path, rest, at_end=True)
    tracemalloc.start()
    try:
        items = walk(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20  # what is passed over is not kept
    last = items[-1]
    assert type(last) is ArchiveError and last.offset == at
    assert str(last) == f"{path}: offset {at}: zstd frame is truncated: the file ends inside it"
    result = index_file(path)
    good = index_file(crawl["zst"])
    assert [(type(e), e.offset) for e in result.errors] == [(ArchiveError, at)]
    assert len(result.lines) == sum(1 for line in good.lines
                                    if int(line.split('"offset": "')[1].split('"')[0]) < at)


@pytest.mark.parametrize("rest,reason", [
    (block_header(3, 10, 1) + b"c" * 10, "of the reserved type"),
    (block_header(0, (128 << 10) + 1, 1), f"of {(128 << 10) + 1} bytes, more than {128 << 10}"),
], ids=["reserved type", "oversized"])
def test_an_impossible_block_and_the_walk_goes_on(crawl, tmp_path, rest, reason):
    path, at = hostile(crawl, tmp_path, rest, at_end=False)
    result = index_file(path)
    assert [e.offset for e in result.errors] == [at]
    error = result.errors[0]
    assert str(error).startswith(f"{path}: offset {at}: corrupt zstd frame: a block at offset ")
    assert reason in error.reason and "reading goes on at the next record's zstd frame" in error.reason
    assert len(result.lines) == len(index_file(crawl["zst"]).lines) - 1
    verified = index_file(path, zstd_verify=True)  # zstd says it, as before
    assert [e.offset for e in verified.errors] == [at]


# -- the compiled skim_block and its Python twin ---------------------------------------------------

BLOCKS = [
    b"WARC/1.0\r\nWARC-Type: request\r\nContent-Length: 12\r\n\r\nGET / HTTP/1.1\r\n",
    b"WARC/1.0\r\nWARC-Type: response\r\nContent-Type: application/http\r\nContent-Length: 7\r\n\r\n",
    b"WARC/1.0\r\nwarc-type :  metadata \r\ncontent-type:application/warc-fields\r\n"
    b"Content-Length: 3\r\n\r\nabc",
    b"WARC/1.0\r\nContent-Length: 3\r\n\r\n",                                   # no WARC-Type
    b"WARC/1.0\r\nWARC-Type: request\r\nContent-Length: 123456789012345678\r\n\r\n",  # 18 digits
    b"WARC/1.0\r\nWARC-Type: request\r\nContent-Length: 1x\r\n\r\n",
    b"WARC/1.0\r\nWARC-Type: request\r\nContent-Length:\r\n\r\n",
    b"WARC/1.0\r\nWARC-Type: request\r\n folded\r\nContent-Length: 1\r\n\r\n",     # continuation
    b"WARC/1.0\r\nWARC-Type: r\xe9quest\r\nContent-Length: 1\r\n\r\n",             # not ASCII
    b"HTTP/1.1 200 OK\r\n\r\n",
    b"WARC/1.0\r\nWARC-Type: request\r\nWARC-Type: response\r\nContent-Length: 1\r\n \t\r\n",
    b"\r\n\r\n",
    b"WARC/1.0\r\nWARC-Type: request\r\nContent-Length: 1\r\n",                   # no blank line
]


@pytest.mark.parametrize("skip", [(("request", "warcinfo"), ("application/warc-fields",)),
                                  (("",), ())])
def test_skim_block_is_skim_values_compiled(skip):
    compiled = pytest.importorskip("webarchive_indexing.warc._members").skim_block
    for block in BLOCKS:
        for at in (0, 3):
            out = b"xyz"[:at] + block
            judged = compiled(out, at, *skip)
            found = members.FIRST_LINE_BLANK.match(out, at) or members.BLANK_LINE.search(out, at)
            if found is None:
                assert judged is None, block
            else:
                size = found.end() - at
                assert judged == (size, *members.skim_values(out[at:at + size], *skip)), block
    with pytest.raises(TypeError):
        compiled(bytearray(b"WARC/1.0\r\n\r\n"), 0, *skip)
    with pytest.raises(TypeError):
        compiled(b"WARC/1.0\r\n\r\n", 0, (1,), ())
    with pytest.raises(ValueError):
        compiled(b"WARC/1.0\r\n\r\n", 20, *skip)


def test_the_walk_is_the_same_without_the_compiled_skim_block(crawl, monkeypatch):
    compiled = index_file(crawl["zst"])
    monkeypatch.setattr(zstdwarc, "skim_block", None)
    assert index_file(crawl["zst"]).lines == compiled.lines and compiled.errors == []


def test_recompress_reads_its_output_back_whole(crawl, tmp_path, monkeypatch):
    """What recompress wrote is checked to its payloads' last byte: an output whose frame does
    not decompress is reported and removed, though indexing alone passes over it."""
    from webarchive_indexing.commands import recompress

    def damaging(fh, fmt, level, zdict=None):
        write = record_writer(fh, fmt, level, zdict)
        count = []

        def damaged(pieces):
            count.append(1)
            if len(count) != 12:
                return write(pieces)
            record = b"".join(pieces)
            frame = zstdwarc.split_frame(zstdwarc.compressor(level, zdict), record,
                                         headers_end(record))
            fh.write(frame[:-1] + bytes([frame[-1] ^ 0xFF]))  # its checksum wrong
        return damaged

    monkeypatch.setattr(recompress, "record_writer", damaging)
    target = str(tmp_path / "out.warc.zst")
    status = recompress.recompress_file(crawl["gz"], target, target + ".cdxj", "out", "zst", 3)
    assert [e["reason"].split(":")[0] for e in status["errors"]] == [
        "the output does not read back right (removed)"]
    assert "corrupt zstd frame" in status["errors"][0]["reason"]
    assert not (tmp_path / "out.warc.zst").exists()


@pytest.mark.parametrize("lie,passed_over", [(1, True), (-1, True), (252, True), (253, False),
                                             (-4, False), (1 << 40, False)])
def test_a_split_frame_whose_content_size_lies(crawl, tmp_path, lie, passed_over):
    """A content size that says the record and at most 256 bytes of newlines end with the frame
    is believed unless --zstd-verify (nothing after the headers is decompressed to tell);
    any other lie is found as before, the frame decompressed."""
    from test_zstd_damaged import with_content_size
    data = open(crawl["zst"], "rb").read()
    (at, _, _, end), record = response_frames(data, crawl["records"])[5]
    lying = with_content_size(data[at:end], len(record) + lie)
    path = tmp_path / "lying.warc.zst"
    path.write_bytes(data[:at] + lying + data[end:])
    good = index_file(crawl["zst"], "lying.warc.zst")
    for verify in (False, True):
        result = index_file(str(path), zstd_verify=verify)
        if passed_over and not verify:
            assert result.errors == [] and len(result.lines) == len(good.lines)
        else:
            assert [e.offset for e in result.errors] == [at], (verify, result.errors)
            assert result.errors[0].reason.startswith("corrupt zstd frame")
            assert len(result.lines) == len(good.lines) - 1
