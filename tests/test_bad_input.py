"""The bad-input corpus (tests/badinput.py): every case against the oracle and pywb (which
reads no .warc.zst), the whole corpus through ``cdx``, and a representative part of it
through ``build`` on every runner (inline, mrjob, local, spark), which must all give the
same CDX and the same problems."""
import collections
import glob
import gzip
import json
import os
import shutil

import pytest

import badinput
from helpers import REAL, fields_but_place, line_offset, pywb_cdx
from webarchive_indexing import cli
from webarchive_indexing.cdx.indexer import index_file

# The part built on every runner, per base file: the damage of issue 16's items 3-5, a
# flip, a cut (every archive is a task of the local runner, a process of its own: few)
BUILT = {"warc.gz": ("length-minus-10-response", "insert-78-response-", "flip-"),
         "warc": ("cut-response-", "length-plus-1000-response", "length-missing-response",
                  "length-pow63-response"),
         "arc.gz": ("flip-", "cut-file-"),
         "arc": ("length-plus-10-response", "cut-response-"),
         "warc.zst": ("length-minus-10-response", "flip-", "cut-response-", "cut-file-")}
# and real archives that pywb reads, with a wrong Content-Length (ARC length)
REAL_BAD = ("webrecorder+warcio__example-trunc.warc", "iipc+webarchive-commons__link-extraction-test.warc",
            "webrecorder+warcio__example-space-in-url.arc")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("badinput")
    bases = badinput.make_bases(str(root / "bases"))
    cases = badinput.cases(bases)
    files = root / "files"
    files.mkdir()
    return bases, cases, [badinput.write(case, str(files)) for case in cases], files


def ours(path, name=badinput.FILENAME):
    """Our index of a file: its lines, and its problems as ``cdx`` and ``build`` report them."""
    result = index_file(path, name)
    return result.lines, [error.as_dict() for error in result.errors], result.errors


def pywb_lines(case, path, twins):
    """pywb's index of a case's file; of a .warc.zst (which pywb does not read), that of the
    .warc.gz case changed alike (``badinput.twin_lines``), if there is one."""
    if case.base.compression != "zst":
        return pywb_cdx(path, filename=badinput.FILENAME).splitlines(True)
    if case.twin is None:
        return []
    twin, twin_path = twins[case.twin]
    return badinput.twin_lines(case, twin, pywb_lines(twin, twin_path, twins))


def test_the_undamaged_files_are_indexed_like_pywb(corpus):
    bases = corpus[0]
    for base in bases:
        if base.compression == "zst":  # as the .warc.gz its records come from
            assert fields_but_place(base.lines.values()) == fields_but_place(bases[0].lines.values())
            continue
        assert "".join(sorted(base.lines.values())) == pywb_cdx(base.path, filename=badinput.FILENAME)
    assert [len(base.lines) for base in bases] == [15, 15, 14, 14, 15]


def test_every_case_keeps_what_pywb_reads_and_reports_the_damage(corpus):
    _, cases, paths, _ = corpus
    failures, seen = [], collections.Counter()
    twins = {case.name: (case, path) for case, path in zip(cases, paths)}
    for case, path in zip(cases, paths):
        lines, _, errors = ours(path)
        pywb = pywb_lines(case, path, twins)
        reported = [dict(error.as_dict(), kind=type(error).__name__) for error in errors]
        failures += [f"{case.name}: {finding}" for finding in badinput.check(case, path, lines, reported, pywb)]
        kind = case.name.split("-")[1]
        ours_at, pywb_at = {line_offset(line) for line in lines}, {line_offset(line) for line in pywb}
        seen[kind, "reported"] += bool(errors)
        seen[kind, "more than pywb"] += bool(ours_at - pywb_at)
        seen[kind, "pywb indexes a damaged record we report"] += bool((pywb_at - ours_at) & case.damaged)
    assert not failures, "\n".join(failures[:30])
    # the corpus reaches what it is for: damage of every kind, reported; records that pywb
    # loses after it, kept; damaged records that pywb indexes, reported
    assert len(cases) >= 500
    for kind in ("cut", "flip", "length", "insert"):
        assert seen[kind, "reported"] >= 20, (kind, seen)
        assert kind == "cut" or seen[kind, "more than pywb"] >= 15, (kind, seen)
    assert sum(seen[kind, "pywb indexes a damaged record we report"] for kind in ("cut", "length")) >= 40, seen


def by_file(cdx_files, error_lists):
    """Lines per CDX ``filename`` and problems per archive path, from a run's outputs."""
    lines, errors = collections.defaultdict(list), collections.defaultdict(list)
    for path in cdx_files:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            for line in fh:
                lines[json.loads(line.split(" ", 2)[2])["filename"]].append(line)
    for error in (e for listed in error_lists for e in listed):
        errors[error["file"]].append({k: error[k] for k in ("file", "offset", "reason")})
    return lines, errors


def expected_outputs(paths, root):
    lines, errors = {}, {}
    for path in paths:
        name = os.path.relpath(path, root)
        lines[name], errors[path], _ = ours(path, name)
    return lines, errors


def test_cdx_command_on_the_whole_corpus(corpus, tmp_path, capsys):
    _, _, paths, files = corpus
    out = tmp_path / "cdx"
    assert cli.main(["cdx", str(files), "-o", str(out), "--on-error", "skip"]) == cli.EXIT_PARTIAL
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.startswith(f"indexing {len(paths)} archives\nerror: ")
    lines, errors = by_file(glob.glob(f"{out}/**/*.cdx.gz", recursive=True),
                            [json.load(open(p)) for p in glob.glob(f"{out}/**/*.errors.json", recursive=True)])
    want_lines, want_errors = expected_outputs(paths, str(files))
    assert {name: sorted(found) for name, found in lines.items()} == \
        {name: found for name, found in want_lines.items() if found}
    assert dict(errors) == {path: found for path, found in want_errors.items() if found}
    assert sum(map(len, errors.values())) > 300


@pytest.fixture(params=["inline", "mrjob", "local", "spark"])
def runner(request):
    if request.param == "spark":
        request.getfixturevalue("spark")
    return request.param


def test_build_on_every_runner(corpus, tmp_path, runner, capsys):
    bases, cases, paths, _ = corpus
    built = tmp_path / "archives"
    built.mkdir()
    os.link(bases[0].path, built / f"undamaged.{bases[0].name}")
    for base in bases:
        for kind in BUILT[base.name]:
            path = next(path for case, path in zip(cases, paths)
                        if case.base is base and case.name.startswith(f"{base.name}-{kind}"))
            os.link(path, built / os.path.basename(path))
    for name in REAL_BAD:
        shutil.copy(os.path.join(REAL, name), built / name)
    out = tmp_path / "out"
    code = cli.main(["build", str(built), "-o", str(out), "--runner", runner, "--on-error", "skip",
                     "--shards", "2", "--no-progress"])
    err = capsys.readouterr().err
    assert code == cli.EXIT_PARTIAL, err
    assert "Traceback" not in err
    report = json.loads((out / "errors.json").read_text())
    lines, errors = by_file(glob.glob(f"{out}/cdx/**/*.cdx.gz", recursive=True), [report["errors"]])
    want_lines, want_errors = expected_outputs(sorted(glob.glob(f"{built}/*")), str(built))
    assert {name: sorted(found) for name, found in lines.items()} == \
        {name: found for name, found in want_lines.items() if found}
    assert {path: sorted(found, key=lambda e: e["offset"]) for path, found in errors.items()} == \
        {path: found for path, found in want_errors.items() if found}
    assert len(errors) >= 12
    cluster = []
    for shard in sorted(glob.glob(f"{out}/cluster/build-00001/cdx-*.gz")):
        with gzip.open(shard, "rt", encoding="utf-8") as fh:
            cluster += fh.readlines()
    assert sorted(cluster) == sorted(line for found in want_lines.values() for line in found)
