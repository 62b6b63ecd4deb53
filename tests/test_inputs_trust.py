"""What a run reads, and what it never reads or overwrites: its own output (rerun into a
directory below the input, or equal to it), FIFOs and devices, files of NUL bytes (in
bounded memory), names that are not UTF-8; a CDX file named .txt; outputs that are inputs
or inside a published cluster. Run through the command, as a user runs it."""
import gzip
import json
import os
import resource
import shutil
import subprocess
import sys

import pytest

from webarchive_indexing import cli
from webarchive_indexing.inputs.discovery import InputError, expand
from webarchive_indexing.inputs.manifests import MANIFEST_LINE_MAX

SAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "samples")
EXAMPLE = os.path.join(SAMPLES, "example.warc.gz")  # 2 captures of example.com
IAH = os.path.join(SAMPLES, "IAH-urls-wget.warc.gz")
ARC = os.path.join(SAMPLES, "example-arc.arc.gz")
COMMAND = [sys.executable, "-m", "webarchive_indexing.cli"]


def count(location, capsys, url=None):
    """The captures ``query --count`` finds in the cluster at ``location`` for ``url``; all
    its lines (``export``) without one."""
    capsys.readouterr()
    if url is None:
        assert cli.main(["export", str(location)]) == cli.EXIT_OK
        return sum(not line.startswith(" CDX") for line in capsys.readouterr().out.splitlines())
    assert cli.main(["query", str(location), url, "--count"]) == cli.EXIT_OK
    return json.loads(capsys.readouterr().out)["captures"]


def lines_of(location, capsys, url="example.com/"):
    capsys.readouterr()
    assert cli.main(["query", str(location), url]) == cli.EXIT_OK
    return capsys.readouterr().out.splitlines()


def limited():
    """A child's address space bounded (2 GiB): a read without bound fails, not the machine."""
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def run(*args, timeout=60):
    """The command in a process of its own, in bounded memory (a test of the old code ends,
    not hangs)."""
    return subprocess.run([*COMMAND, *map(str, args)], capture_output=True, timeout=timeout,
                          text=True, errors="backslashreplace", preexec_fn=limited)


# -- 20.3: the tool's own output is never an input ----------------------------------------------

@pytest.mark.parametrize("below", ["index", "."])
def test_reruns_into_outdir_below_or_equal_to_the_input_give_the_same_lines(
        tmp_path, capsys, below):
    nest = tmp_path / "nest"
    nest.mkdir()
    shutil.copy(EXAMPLE, nest)
    out = nest / below
    for _ in range(3):
        assert cli.main(["build", str(nest), "-o", str(out), "--no-progress"]) == cli.EXIT_OK
        assert count(out, capsys, "example.com/") == 2
    # new archives beside the output are read (not the old cluster alone)
    shutil.copy(IAH, nest)
    assert cli.main(["build", str(nest), "-o", str(out), "--no-progress"]) == cli.EXIT_OK
    err = capsys.readouterr().err
    assert "left out: this run's own output (never read back): " in err
    assert "archives: 2 (1 already indexed)" in err
    total = count(out, capsys)
    assert total > 2 and count(out, capsys, "example.com/") == 2
    assert cli.main(["build", str(nest), "-o", str(out), "--no-progress"]) == cli.EXIT_OK
    assert count(out, capsys) == total
    # a pattern does not match it either
    assert cli.main(["build", f"{nest}/**/*.gz", "-o", str(out), "--no-progress"]) == cli.EXIT_OK
    assert count(out, capsys) == total


def test_cdx_and_recompress_rerun_into_a_directory_below_the_input(tmp_path, capsys):
    for command, output in (["cdx"], "cdx"), (["recompress", "--no-progress"], "zst"):
        nest = tmp_path / output / "nest"
        nest.mkdir(parents=True)
        shutil.copy(EXAMPLE, nest)
        for _ in range(3):
            assert cli.main([*command, str(nest), "-o", str(nest / output)]) == cli.EXIT_OK
            err = capsys.readouterr().err
            assert "archives: 1 (" in err
        assert sorted(p.name for p in (nest / output).iterdir()) == (
            ["example.cdx.gz", "example.cdx.gz.meta.json"] if output == "cdx" else
            ["example.cdxj", "example.warc.zst"])


def test_recompress_into_one_file_below_the_input_reruns(tmp_path, capsys):
    shutil.copy(EXAMPLE, tmp_path)
    output = tmp_path / "x.warc.zst"
    for _ in range(2):
        assert cli.main(["recompress", str(tmp_path), "-o", str(output), "--no-progress"]) \
            == cli.EXIT_OK
        assert "archives: 1 (0 there already), 6 records" in capsys.readouterr().err


def test_a_copy_is_built_from_its_archives_not_its_plan(tmp_path, capsys):
    assert cli.main(["build", EXAMPLE, "-o", str(tmp_path / "out"), "--no-progress"]) \
        == cli.EXIT_OK
    assert cli.main(["copy", "copy", str(tmp_path / "out"), "--domains", "example.com",
                     "--warc-prefix", SAMPLES, "-o", str(tmp_path / "subset"),
                     "--no-progress"]) == cli.EXIT_OK
    assert list((tmp_path / "subset" / "plan").glob("*.cdx"))
    capsys.readouterr()
    assert cli.main(["build", str(tmp_path / "subset"), "-o", str(tmp_path / "again"),
                     "--no-progress"]) == cli.EXIT_OK
    assert "left out: files of a copy's plan/" in capsys.readouterr().err
    found = lines_of(tmp_path / "again", capsys)
    assert len(found) == 2 and all("example.com" in line for line in found)
    assert {json.loads(line.split(" ", 2)[2])["filename"] for line in found} == {
        "extract-00000.warc.gz"}


def test_a_cluster_found_below_an_input_is_read_once_and_said(tmp_path, capsys):
    top = tmp_path / "top"
    (top / "warcs").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    shutil.copy(EXAMPLE, top / "warcs")
    shutil.copy(EXAMPLE, tmp_path / "elsewhere")
    # a build of top's own archives, below top: its lines are the archives' lines
    assert cli.main(["build", str(top / "warcs"), "-o", str(top / "old"), "--no-progress"]) \
        == cli.EXIT_OK
    assert cli.main(["build", str(top), "-o", str(tmp_path / "out"), "--no-progress"]) \
        == cli.EXIT_OK
    err = capsys.readouterr().err
    assert (f"warning: {top}: offset 0: left out: builds of archives this walk finds too "
            "(their lines would be there twice") in err, err
    assert count(tmp_path / "out", capsys, "example.com/") == 2
    # a build of other archives, below top: read once, as a cluster, and said
    assert cli.main(["build", str(tmp_path / "elsewhere"), "-o", str(top / "other"),
                     "--no-progress"]) == cli.EXIT_OK
    assert cli.main(["build", str(top), "-o", str(tmp_path / "out2"), "--no-progress"]) \
        == cli.EXIT_OK
    err = capsys.readouterr().err
    assert f"warning: {top / 'other'}: offset 0: read as a build's output directory" in err
    # the archive's 2 lines and the other cluster's 2, once each
    assert count(tmp_path / "out2", capsys, "example.com/") == 4


# -- 20.10: a CDX file named .txt is an index -----------------------------------------------------

def test_a_cdx_file_named_txt_is_read_as_an_index(tmp_path, capsys):
    # as OpenWayback's test-cdx.txt: a CDX file with its header, named .txt
    cdx = tmp_path / "test-cdx.txt"
    cdx.write_text(" CDX N b a m s k r M S V g\n"
                   "com,example)/ 20170306040206 http://example.com/ text/html 200 "
                   "G7HRM7BGOKSKMSXZAHMUQTTV53QOFSMK - - 1228 784 example.warc.gz\n"
                   "com,example)/ 20170306040348 http://example.com/ warc/revisit - "
                   "G7HRM7BGOKSKMSXZAHMUQTTV53QOFSMK - - 586 2621 example.warc.gz\n")
    assert expand([str(cdx)]).indexes[0].kind == "cdx"
    assert cli.main(["build", str(cdx), "-o", str(tmp_path / "out"), "--no-progress"]) \
        == cli.EXIT_OK
    assert count(tmp_path / "out", capsys) == 2
    # a manifest named .txt is still a manifest
    manifest = tmp_path / "list.txt"
    manifest.write_text(f"# archives\n{EXAMPLE}\n")
    assert [a.path for a in expand([str(manifest)]).archives] == [EXAMPLE]


# -- 20.12, 20.13: what a walk leaves out is said -------------------------------------------------

def test_a_walk_says_what_it_left_out_and_why(tmp_path, capsys):
    shutil.copy(EXAMPLE, tmp_path)
    for name in ("x.warc.wat.gz", "x.warc.wet.gz", "y.wat.gz", "z.warc.gz.open",
                 ".tmp-1234-w.warc.gz", "v.warc.bz2", "README.md", "a.cdx.gz.meta.json"):
        (tmp_path / name).write_bytes(b"")
    os.mkfifo(tmp_path / "f.warc.gz")
    found = expand([str(tmp_path)])
    assert [a.name for a in found.archives] == ["example.warc.gz"]
    [note] = found.warnings
    assert note["file"] == str(tmp_path)
    assert note["message"] == (
        "left out: files being written (.open, .tmp-): 2, e.g. .tmp-1234-w.warc.gz; "
        "not regular files (a FIFO or device may never end): 1, e.g. f.warc.gz; "
        "archives compressed in a way not read (read are .warc.gz .warc.zst .warc .arc.gz "
        ".arc .wacz): 1, e.g. v.warc.bz2; "
        "WAT/WET files (made from WARC files: index those): 3, e.g. x.warc.wat.gz")
    # cdx prints it, one line, and indexes the archive
    assert cli.main(["cdx", str(tmp_path)]) == cli.EXIT_OK
    err = capsys.readouterr().err
    assert [line for line in err.splitlines() if line.startswith("warning:")] == [
        f"warning: {tmp_path}: offset 0: {note['message']}"]
    # and so do the commands that read archives alone (zstd-dict prints as recompress)
    assert cli.main(["recompress", str(tmp_path), "-o", str(tmp_path / "zst"),
                     "--no-progress"]) == cli.EXIT_OK
    assert f"warning: {tmp_path}: offset 0: {note['message']}\n" in capsys.readouterr().err


def test_the_index_beside_an_archive_is_named_by_the_archive(tmp_path):
    shutil.copy(EXAMPLE, tmp_path / "test1.warc.gz")
    (tmp_path / "test1.cdx.gz").write_bytes(gzip.compress(b""))
    found = expand([str(tmp_path)])
    assert found.indexes == []
    assert [w["message"] for w in found.warnings] == [
        "not read: the index of test1.warc.gz beside it, whose lines that archive gives "
        "(name the file itself as an INPUT to read it)"]


def test_zstd_dict_takes_same_named_archives_and_leaves_arc_files_out(tmp_path, capsys):
    for root in ("r1", "r2"):
        (tmp_path / root).mkdir()
        shutil.copy(EXAMPLE, tmp_path / root / "a.warc.gz")
    shutil.copy(ARC, tmp_path / "r2")
    assert cli.main(["zstd-dict", str(tmp_path / "r1"), str(tmp_path / "r2"), "-o",
                     str(tmp_path / "d.dict"), "--size", "1024", "--no-progress"]) == cli.EXIT_OK
    err = capsys.readouterr().err
    assert "archives: 2 (1 ARC files left out: they hold no WARC records)" in err
    assert "errors:   0" in err
    assert cli.main(["zstd-dict", ARC, "-o", str(tmp_path / "e.dict")]) == cli.EXIT_USAGE
    assert "only ARC files" in capsys.readouterr().err


# -- 21.2: manifests are read in bounded lines ----------------------------------------------------

def peak_rss_kib(*args, timeout=120):
    """(the completed command, the most memory it held, in KiB): measured by a process
    whose only child it is."""
    probe = ("import resource, subprocess, sys; "
             "limit = lambda: resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30)); "
             "done = subprocess.run(sys.argv[1:], capture_output=True, timeout=%d, "
             "preexec_fn=limit); "
             "sys.stderr.buffer.write(done.stderr); "
             "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
             % timeout)
    done = subprocess.run([sys.executable, "-c", probe, *COMMAND, *map(str, args)],
                          capture_output=True, text=True, timeout=timeout + 10,
                          errors="backslashreplace")
    status, peak = done.stdout.split()
    return int(status), int(peak), done.stderr


@pytest.mark.parametrize("command", [["cdx"], ["zstd-dict", "-o", "d.dict"],
                                     ["recompress", "-o", "out.warc.zst"]])
def test_a_large_nul_file_is_no_manifest_and_is_read_in_bounded_memory(tmp_path, command):
    zeros = tmp_path / "zeros"
    with open(zeros, "wb") as fh:  # sparse: 256 MiB of NUL bytes on no disk
        fh.truncate(256 << 20)
    name, *rest = command
    status, peak, err = peak_rss_kib(name, zeros, *[str(tmp_path / a) if "." in a else a
                                                    for a in rest])
    assert status == cli.EXIT_USAGE
    assert peak < 200 << 10, f"{peak} KiB"
    [line] = err.splitlines()
    assert len(line) < 600
    assert f"{zeros}: offset 0: a line longer than {MANIFEST_LINE_MAX} bytes: " \
           f"b'{chr(92)}x00{chr(92)}x00" in line


def test_dev_zero_is_refused_at_once(tmp_path):
    for command in (["cdx"], ["zstd-dict", "-o", tmp_path / "d"],
                    ["recompress", "-o", tmp_path / "o.warc.zst"]):
        done = run(command[0], "/dev/zero", *command[1:], timeout=30)
        assert done.returncode == cli.EXIT_USAGE
        assert done.stderr.endswith("/dev/zero is a device: only regular files are read (copy "
                                    "what it gives into a file first)\n")


def test_manifest_lines_that_are_no_paths_are_named_with_their_offset(tmp_path):
    manifest = tmp_path / "list.paths"
    manifest.write_bytes(f"{EXAMPLE}\n".encode() + b"bad\x00path\n")
    with pytest.raises(InputError, match=rf"list.paths: offset {len(EXAMPLE) + 1}: a NUL byte "
                                         r"\(byte 3 of the line\): b'bad\\x00path\\n'"):
        expand([str(manifest)])
    manifest.write_bytes(b"x" * (MANIFEST_LINE_MAX + 1) + b"\n")
    with pytest.raises(InputError,
                       match=r"offset 0: a line longer than 8192 bytes: b'x{40}'\.\.\."):
        expand([str(manifest)])
    manifest.write_bytes(gzip.compress(b"caf\xe9.warc.gz\n"))
    manifest = manifest.rename(tmp_path / "list.paths.gz")
    with pytest.raises(InputError, match=r"offset 0 of its text: not UTF-8 text \(byte 3"):
        expand([str(manifest)])


# -- 21.5: FIFOs ----------------------------------------------------------------------------------

def test_a_fifo_input_is_refused_not_waited_for(tmp_path):
    fifo = tmp_path / "f.warc.gz"
    os.mkfifo(fifo)
    manifest = tmp_path / "list.txt"
    manifest.write_text(f"{fifo}\n")
    for args in (["cdx", fifo], ["build", fifo, "-o", tmp_path / "out"],
                 ["cdx", manifest], ["build", tmp_path / "nofile", fifo, "-o", tmp_path / "o"]):
        done = run(*args, timeout=30)
        assert done.returncode == cli.EXIT_USAGE, done.stderr
        assert f"{fifo} is a FIFO: only regular files are read" in done.stderr \
            or "no such file" in done.stderr
    # in a directory, it is left out, and said so
    shutil.copy(EXAMPLE, tmp_path)
    done = run("build", tmp_path, "-o", tmp_path / "out", "--no-progress", timeout=60)
    assert done.returncode == cli.EXIT_OK, done.stderr
    assert "not regular files (a FIFO or device may never end): 1, e.g. f.warc.gz" in done.stderr


# -- 21.15: names that are not UTF-8 --------------------------------------------------------------

def test_an_archive_name_that_is_not_utf8_is_refused_clearly_then_built(tmp_path, capsys):
    crawl = tmp_path / "crawl"
    crawl.mkdir()
    latin1 = os.path.join(os.fsencode(crawl), b"caf\xe9.warc.gz")
    shutil.copy(EXAMPLE, latin1)
    assert cli.main(["build", str(crawl), "-o", str(tmp_path / "out"), "--no-progress"]) \
        == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert err == (f"webarchive-index: {crawl}/caf\\xe9.warc.gz: its name is not UTF-8 "
                   "(the \\x bytes shown): CDX lines are UTF-8 text, and pywb finds an archive "
                   "by the name they hold; rename it to UTF-8 (e.g. convmv -f latin1 -t utf-8 "
                   "--notest FILE)\n")
    assert not (tmp_path / "out").exists()
    os.rename(latin1, crawl / "café.warc.gz")
    assert cli.main(["build", str(crawl), "-o", str(tmp_path / "out"), "--no-progress"]) \
        == cli.EXIT_OK
    found = lines_of(tmp_path / "out", capsys)
    assert len(found) == 2
    assert {json.loads(line.split(" ", 2)[2])["filename"] for line in found} == {"café.warc.gz"}


# -- 21.8: an output that is an input, or inside a published cluster ------------------------------

def test_outputs_that_are_inputs_or_in_a_published_cluster_are_refused(tmp_path, capsys):
    archive = tmp_path / "a.warc.gz"
    shutil.copy(EXAMPLE, archive)
    before = archive.read_bytes()
    out = tmp_path / "out"
    assert cli.main(["build", str(archive), "-o", str(out), "--no-progress"]) == cli.EXIT_OK
    idx = out / "cluster" / "cluster.idx"
    published = idx.read_bytes()
    capsys.readouterr()
    refused = [
        (["zstd-dict", str(archive), "-o", str(archive)], "is also an input"),
        (["recompress", str(archive), "-o", str(out / "cluster" / "a.warc.zst")],
         "inside the published cluster"),
        (["export", str(out), "-o", str(idx)], "is also an input"),
        (["export", str(out), "-o", str(out / "cluster" / "all.cdxj")],
         "inside the published cluster"),
        (["cdx", str(archive), "-o", str(out / "cluster")], "inside the published cluster"),
        (["copy", "copy", str(out), "--domains", "example.com", "--warc-prefix", str(tmp_path),
          "-o", str(out / "cluster" / "x")],
         "inside the published cluster"),
    ]
    for args, message in refused:
        assert cli.main(args) == cli.EXIT_USAGE, args
        assert message in capsys.readouterr().err, args
    assert archive.read_bytes() == before and idx.read_bytes() == published
    assert sorted(p.name for p in (out / "cluster").iterdir() if p.is_file()) == [
        "cluster.idx", "cluster.loc", "cluster.root"]
    assert count(out, capsys) == 2
    # beside a cluster (a build's output directory) is no place in it
    assert cli.main(["export", str(out), "-o", str(out / "all.cdxj")]) == cli.EXIT_OK
