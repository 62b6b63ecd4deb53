"""``webarchive-index copy`` and .warc.zst (issue 13, item 4): records copied from .warc.zst
sources are the records of the .warc.gz they came from, compressed into gzip members of
their own (pywb reads them); ``--output-format zst`` writes .warc.zst files, each with a
dictionary trained on its records (or the one given), that the `zstd` tool (with that
dictionary) and FastWARC read, whose index points at each record's frames.

The collection: a generated crawl as .warc.gz, the same records as .warc.zst with a
dictionary frame, and as .warc.zst whose dictionary is kept apart; a cluster of each.
"""
import hashlib
import json
import os
import shlex
import subprocess
import sys

import pytest
from fastwarc.stream_io import ZstdReader
from fastwarc.warc import ArchiveIterator as FastArchiveIterator

import rangeserver
from helpers import fields_but_place, pywb_cdx, warcs
from webarchive_indexing import cli
from webarchive_indexing.commands.copy import copy as run_copy
from webarchive_indexing.warc import zstdwarc
from webarchive_indexing.commands.build import build
from webarchive_indexing.cdx.indexer import index_file
from webarchive_indexing.warc.magic import DICT_FRAME_MAGIC
from webarchive_indexing.options import BuildOptions, CopyOptions, ZstdDictOptions
from webarchive_indexing.warc.raw import open_records, read_record
from webarchive_indexing.commands.recompress import recompress_file
from webarchive_indexing.commands.zstd_dict import train


def write_apart(source, target, zdict):
    """``source``'s records as a .warc.zst compressed with ``zdict``, which it does not hold."""
    compress = zstdwarc.compressor(3, zdict).compress
    with open(target, "wb") as fh, open_records(source) as records:
        for record in records:
            fh.write(compress(b"".join(record.pieces)))


@pytest.fixture(scope="module")
def crawl(tmp_path_factory):
    root = tmp_path_factory.mktemp("copyzst")
    paths = warcs(root / "gz" / "seg", files=2, captures=150, seed=61)
    dictionary = str(root / "crawl.dict")
    train([str(root / "gz")], dictionary, ZstdDictOptions(size=32 << 10, processes=1,
                                                          progress=False))
    for kind in ("zst", "apart"):
        (root / kind / "seg").mkdir(parents=True)
    for path in paths:
        name = os.path.basename(path).replace(".warc.gz", ".warc.zst")
        target = str(root / "zst" / "seg" / name)
        assert recompress_file(path, target, target + ".cdxj", name, "zst", 3,
                               dictionary)["errors"] == []
        os.remove(target + ".cdxj")
        write_apart(path, root / "apart" / "seg" / name, zstdwarc.load_dictionary(dictionary))
    for kind in ("gz", "zst", "apart"):
        summary = build([str(root / kind)], str(root / f"index-{kind}"), BuildOptions(
            runner="inline", progress=False,
            zstd_dictionary=dictionary if kind == "apart" else None))
        assert summary.published and not summary.errors
    # every capture of a web page (not the dns: records): the top-level domains of the keys
    keys = [line.split(" ", 1)[0] for path in paths for line in index_file(path).lines]
    keys = [key for key in keys if "," in key.split(")")[0]]
    return {"root": root, "dict": dictionary, "domains": sorted({k.split(",")[0] for k in keys}),
            "records": len(keys)}


def copy(crawl, kind, out, *more):
    """``copy copy`` of everything from the cluster of ``kind``'s sources into ``out``."""
    root = crawl["root"]
    return cli.main(["copy", "copy", str(root / f"index-{kind}"), "--domains",
                     ",".join(crawl["domains"]), "-o", str(out), "--warc-prefix", str(root / kind),
                     "--no-progress", "--runner", "inline", "--records-per-file", "150", *more])


def outputs(out):
    """{name: path} of a copy's WARC files."""
    return {n: str(out / n) for n in sorted(os.listdir(out)) if n.endswith((".warc.gz", ".warc.zst"))}


def records(path):
    """The records of a WARC file as their bytes (the warcinfo first)."""
    with open_records(path) as found:
        return [b"".join(record.pieces) for record in found]


def copied(out):
    """{output name without its extension: its records but the warcinfo (which names the
    source), and its index}."""
    result = {}
    for name, path in outputs(out).items():
        stem = name.split(".warc")[0]
        result[stem] = records(path)[1:], (out / (stem + ".cdxj")).read_text()
    return result


def same_copy(out, other):
    """Whether two copies hold the same records in the same outputs, indexed alike but for
    where each record is (its offset and length)."""
    ours, theirs = copied(out), copied(other)
    return list(ours) == list(theirs) and all(
        recs == theirs[name][0]
        and fields_but_place(cdxj.splitlines()) == fields_but_place(theirs[name][1].splitlines())
        for name, (recs, cdxj) in ours.items())


def test_copy_from_warc_zst_equals_copy_from_warc_gz(crawl, tmp_path):
    """The same records in the same outputs; the records of .warc.zst sources in gzip
    members of their own, indexed as pywb indexes them."""
    assert copy(crawl, "gz", tmp_path / "from-gz") == cli.EXIT_OK
    assert copy(crawl, "zst", tmp_path / "from-zst") == cli.EXIT_OK
    assert same_copy(tmp_path / "from-zst", tmp_path / "from-gz")
    from_zst = copied(tmp_path / "from-zst")
    assert len(from_zst) == -(-crawl["records"] // 150) > 1
    assert sum(len(recs) for recs, _ in from_zst.values()) == crawl["records"]
    for name, (_, cdxj) in from_zst.items():
        path = str(tmp_path / "from-zst" / f"{name}.warc.gz")
        assert cdxj == pywb_cdx(path, "cdxj", f"{name}.warc.gz")


def dictionary_file_of(path, tmp_path):
    """The dictionary embedded in a .warc.zst, as a file for the zstd tool's -D."""
    dict_path = tmp_path / (os.path.basename(path) + ".dict")
    dict_path.write_bytes(zstdwarc.load_dictionary(path).as_bytes())
    return str(dict_path)


def check_warc_zst(path, cdxj, tmp_path):
    """What every .warc.zst a copy writes must be: the zstd tool, given its dictionary (if it
    has one, in a dictionary frame first), decodes it to its records; FastWARC reads every
    record; each index line decodes alone to the record it names."""
    with_dictionary = open(path, "rb").read(4) == DICT_FRAME_MAGIC
    found = records(path)
    given = ["-D", dictionary_file_of(path, tmp_path)] if with_dictionary else []
    decoded = subprocess.run(["zstd", "-dc", *given, path], capture_output=True,
                             check=True).stdout
    assert decoded == b"".join(found)
    fast = [hashlib.sha1(r.reader.read()).hexdigest()
            for r in FastArchiveIterator(ZstdReader(path), parse_http=False)]
    assert len(fast) == len(found)
    assert cdxj == "".join(index_file(path, os.path.basename(path)).lines)
    for line in cdxj.splitlines():
        fields = json.loads(line.split(" ", 2)[2])
        record = read_record(path, int(fields["offset"]), int(fields["length"]))
        assert record in found and f"WARC-Target-URI: {fields['url']}\r\n".encode() in record
        assert fields["filename"] == os.path.basename(path)


def test_copy_into_warc_zst_from_either_source(crawl, tmp_path):
    assert copy(crawl, "gz", tmp_path / "gz") == cli.EXIT_OK
    for kind in ("gz", "zst"):
        out = tmp_path / f"zst-from-{kind}"
        assert copy(crawl, kind, out, "--output-format", "zst") == cli.EXIT_OK
        assert same_copy(out, tmp_path / "gz")
        found = copied(out)
        assert list(outputs(out)) == [name + ".warc.zst" for name in found]
        for name, (_, cdxj) in found.items():
            check_warc_zst(str(out / f"{name}.warc.zst"), cdxj, tmp_path)
        # each file's own dictionary, trained on its records (none on the 5 of the last)
        dictionaries = [zstdwarc.file_dictionary(path) for path in outputs(out).values()]
        assert [len(recs) for recs, _ in found.values()] == [150, 150, 5]
        assert dictionaries[-1] is None
        ids = {zdict.dict_id() for zdict in dictionaries[:-1]}
        assert len(ids) == 2 and zstdwarc.load_dictionary(crawl["dict"]).dict_id() not in ids


def test_a_given_dictionary_and_the_plan(crawl, tmp_path, capsys):
    out = tmp_path / "given"
    assert copy(crawl, "zst", out, "--output-format", "zst", "--dictionary", crawl["dict"],
                "--level", "8") == cli.EXIT_OK
    given = zstdwarc.load_dictionary(crawl["dict"]).dict_id()
    for path in outputs(out).values():
        assert zstdwarc.file_dictionary(path).dict_id() == given
        check_warc_zst(path, (out / (os.path.basename(path)[:-9] + ".cdxj")).read_text(), tmp_path)
    plan = json.loads((out / "plan" / "plan.json").read_text())
    assert plan["warc"] == {"format": "zst", "level": 8, "dictionary": crawl["dict"]}
    # a rerun is the same copy; another output format or dictionary is another copy
    assert copy(crawl, "zst", out, "--output-format", "zst", "--dictionary", crawl["dict"],
                "--level", "8") == cli.EXIT_OK
    assert "3 files were complete already" in capsys.readouterr().err
    assert copy(crawl, "zst", out) == cli.EXIT_USAGE
    assert "differs in: --output-format, --level, --dictionary" in capsys.readouterr().err
    for more, says in ((["--dictionary", crawl["dict"]], "--dictionary goes with --output-format zst"),
                       (["--output-format", "zst", "--level", "23"], "zst levels are 1 to 22"),
                       (["--level", "0"], "gz levels are 1 to 9"),
                       (["--output-format", "zst", "--dictionary", str(tmp_path / "none")],
                        "--dictionary: cannot read the zstd dictionary"),
                       (["--zstd-dictionary", str(tmp_path / "none")],
                        "--zstd-dictionary: cannot read the zstd dictionary")):
        assert copy(crawl, "zst", tmp_path / "bad", *more) == cli.EXIT_USAGE, more
        assert says in capsys.readouterr().err, more
    # the plan alone (for the job on Hadoop/EMR) says how the files are written
    plan_out = tmp_path / "planned"
    assert cli.main(["copy", "plan", str(crawl["root"] / "index-zst"), "--domains", "com",
                     "-o", str(plan_out), "--output-format", "zst"]) == cli.EXIT_OK
    plan = json.loads((plan_out / "plan" / "plan.json").read_text())
    assert plan["warc"] == {"format": "zst", "level": 3, "dictionary": None}


def test_sources_whose_dictionary_is_kept_apart(crawl, tmp_path):
    """Over HTTP, in tasks of their own (the local runner): without the dictionary every
    record fails at once, with a reason that says what to give (no record read twice);
    with --zstd-dictionary the copy is the copy from the .warc.gz."""
    assert copy(crawl, "gz", tmp_path / "gz") == cli.EXIT_OK
    with rangeserver.serving(crawl["root"] / "apart") as server:
        out = tmp_path / "apart"
        args = ["copy", "copy", str(crawl["root"] / "index-apart"), "--domains",
                ",".join(crawl["domains"]), "-o", str(out), "--warc-prefix", server.url + "/",
                "--no-progress", "--runner", "local", "--records-per-file", "150"]
        assert cli.main(args) == cli.EXIT_FAILED
        reads = [r for r in server.requests if r[0] == "GET"]
        headers = [r for r in reads if r[2] == "bytes=0-7"]  # is there a dictionary frame?
        assert len(headers) <= 3 * 2  # once per file in each task's process (3 tasks)
        assert len(reads) - len(headers) == len(set(reads) - set(headers)) == crawl["records"]
        failures = [f for name in sorted(os.listdir(out)) if name.endswith(".failures.json")
                    for f in json.loads((out / name).read_text())["records"]]
        assert len(failures) == crawl["records"]
        assert all("give the dictionary with --zstd-dictionary FILE" in f["reason"]
                   and not f["reason"].startswith("after ") for f in failures)
        assert cli.main(args + ["--zstd-dictionary", crawl["dict"]]) == cli.EXIT_OK
    assert same_copy(out, tmp_path / "gz")


def test_copy_on_spark_into_warc_zst(crawl, tmp_path, spark):
    inline = tmp_path / "inline"
    assert copy(crawl, "gz", inline, "--output-format", "zst") == cli.EXIT_OK
    out = tmp_path / "spark"
    result = run_copy(CopyOptions(
        location=str(crawl["root"] / "index-apart"), domains=[",".join(crawl["domains"])],
        output=str(out), warc_prefix=str(crawl["root"] / "apart"), records_per_file=150,
        output_format="zst", zstd_dictionary=crawl["dict"], runner="spark", spark_context=spark,
        progress=False))
    assert result.done and result.after.copied == crawl["records"]
    assert same_copy(out, inline)


def test_readme_copy_commands_as_written(tmp_path, monkeypatch, capsys):
    """The command lines of the README's copy section, on a crawl with example.com in it and
    the same records recompressed as .warc.zst."""
    from test_copy import write_lookalikes
    readme = open(os.path.join(os.path.dirname(os.path.dirname(__file__)), "README.md")).read()
    section = readme.split("## Copying captures out")[1].split("\n## ")[0]
    commands = [shlex.split(line) for line in section.split("```\n")[1].splitlines() if line]
    assert [c[:2] for c in commands] == [["webarchive-index", "build"],
                                         ["webarchive-index", "copy"]] * 2
    monkeypatch.chdir(tmp_path)
    os.mkdir("crawl")
    write_lookalikes(tmp_path / "crawl" / "LOOKALIKE-00000.warc.gz")
    os.remove("crawl/LOOKALIKE-00000.warc.gz.manifest.jsonl")
    warcs(tmp_path / "crawl", files=1, captures=50, seed=5)
    assert cli.main(["recompress", "crawl/", "-o", "crawl-zst/", "--no-progress"]) == cli.EXIT_OK
    for command in commands:
        assert cli.main(command[1:] + ["--no-progress"]) == cli.EXIT_OK, command
    capsys.readouterr()
    assert same_copy(tmp_path / "extract-zst", tmp_path / "extract")
    found = copied(tmp_path / "extract")
    urls = [line.split('"url": "', 1)[1].split('"')[0] for _, cdxj in found.values()
            for line in cdxj.splitlines()]
    assert len(urls) > 10 and all("example.com" in url.lower() for url in urls)
    assert list(outputs(tmp_path / "extract-zst")) == ["extract-00000.warc.zst"]


def test_launcher_with_warc_zst_sources_and_outputs(crawl, tmp_path):
    """scripts/runremotecopy.sh (inline): the plan's output settings, the job's dictionary
    of the sources (relative, as a user gives it)."""
    from test_copy import REPO, launcher_env, run_launcher
    assert copy(crawl, "gz", tmp_path / "gz") == cli.EXIT_OK
    (tmp_path / "work").mkdir()
    os.link(crawl["dict"], tmp_path / "work" / "crawl.dict")
    settings = dict(RUNNER="inline", MRJOB_CONF=REPO / "mrjob.conf.sample",
                    COPY_CLUSTER=crawl["root"] / "index-apart",
                    COPY_DOMAINS=",".join(crawl["domains"]), COPY_OUTPUT="out",
                    WARC_PREFIX=crawl["root"] / "apart", RECORDS_PER_FILE=150,
                    COPY_OUTPUT_FORMAT="zst", COPY_LEVEL=5, ZSTD_DICTIONARY="crawl.dict",
                    PYTHON=sys.executable)
    result = run_launcher(launcher_env(tmp_path / "work", **settings), cwd=tmp_path / "work")
    assert result.returncode == 0, result.stderr[-3000:]
    out = tmp_path / "work" / "out"
    assert json.loads((out / "plan" / "plan.json").read_text())["warc"] == \
        {"format": "zst", "level": 5, "dictionary": None}
    assert same_copy(out, tmp_path / "gz")
    for path in outputs(out).values():
        check_warc_zst(path, open(path.replace(".warc.zst", ".cdxj")).read(), tmp_path)
    result = run_launcher(launcher_env(tmp_path / "work", **dict(settings, COPY_LEVEL=30)),
                          cwd=tmp_path / "work")
    assert result.returncode == 2 and "zst levels are 1 to 22" in result.stderr
