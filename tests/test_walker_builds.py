"""The compiled member walker as setup.py builds it either way (linked to ISA-L where its
headers are found, else inflating through python-isal, which needs no more than Python's
headers): both give byte-identical CDX, record counts, errors and warnings to each other and
to the pure Python walker, on the real samples, a crawl-like corpus and the bad-input corpus;
and ``--version`` says which walker runs and why.

Both variants are compiled here from ``_members.c`` into a temporary directory (a few
seconds). Where ISA-L's headers are missing its variant is skipped, unless
WEBARCHIVE_INDEXING_REQUIRE_COMPILED=1 (as CI sets it, having installed them).
"""
import gzip
import importlib.util
import io
import os
import random
import subprocess
import sys

import pytest
from setuptools import Distribution, Extension
from setuptools.command.build_ext import build_ext

from webarchive_indexing import cli
from webarchive_indexing.cdx.indexer import index_file
from webarchive_indexing.commands.corpus import make_corpus
from webarchive_indexing.warc import members as gzipmembers, walk as records
import badinput
from helpers import REAL

SOURCE = os.path.join(os.path.dirname(gzipmembers.__file__), "_members.c")
NAME = "webarchive_indexing.warc._members"
VARIANTS = {"ISA-L via python-isal": ([], []), "ISA-L": ([("WALKER_ISAL", "1")], ["isal"])}


def build(variant, directory):
    """The walker compiled for ``variant``'s inflater, as setup.py's BuildExt compiles it."""
    macros, libraries = VARIANTS[variant]
    dist = Distribution({"ext_modules": [Extension(NAME, [SOURCE], define_macros=macros,
                                                   libraries=libraries)]})
    command = build_ext(dist)
    command.build_lib = command.build_temp = str(directory)
    command.ensure_finalized()
    command.run()
    (path,) = command.get_outputs()
    spec = importlib.util.spec_from_file_location(NAME, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module", params=sorted(VARIANTS))
def compiled(request, tmp_path_factory):
    """One variant's module; the one linked to ISA-L skipped where it does not build (its
    headers missing), unless CI requires it."""
    try:
        module = build(request.param, tmp_path_factory.mktemp("walker"))
    except Exception as exc:  # (CompileError, LinkError)
        if request.param != "ISA-L" or os.environ.get("WEBARCHIVE_INDEXING_REQUIRE_COMPILED") == "1":
            raise
        pytest.skip(f"the {request.param} walker does not build here: {exc}")
    assert module.INFLATER == request.param
    return module


@pytest.fixture(scope="module")
def crawl(tmp_path_factory):
    (path,) = make_corpus(str(tmp_path_factory.mktemp("corpus")), files=1, captures=40, seed=5)
    return path


def outcome(path, walker, monkeypatch):
    """index_file's lines, records, errors and warnings with ``walker`` (None: pure Python)."""
    with monkeypatch.context() as patch:
        patch.setattr(records, "CompiledMembers", walker)
        result = index_file(str(path), "x.warc.gz")
    return result.lines, result.records, [str(e) for e in result.errors], result.warnings


def test_real_samples_and_a_crawl_index_alike(compiled, crawl, monkeypatch):
    paths = [os.path.join(REAL, name) for name in sorted(os.listdir(REAL)) if name.endswith(".gz")]
    assert len(paths) > 3
    lines = 0
    for path in paths + [crawl]:
        ours = outcome(path, compiled.Members, monkeypatch)
        assert ours == outcome(path, None, monkeypatch), path
        lines += len(ours[0])
    assert lines > 50


def test_damaged_crawl_indexes_alike(compiled, crawl, monkeypatch, tmp_path):
    """Bytes flipped, dropped or added all over a crawl: the same lines and the same words
    for every corrupt member."""
    data = open(crawl, "rb").read()
    rng = random.Random(3)
    errors = set()
    for k in range(30):
        at = rng.randrange(len(data))
        bad = (data[:at] + bytes([data[at] ^ (1 << rng.randrange(8))]) + data[at + 1:],
               data[:at] + data[at + 1:], data[:at] + b"\x00" + data[at:])[k % 3]
        path = tmp_path / f"bad{k}.warc.gz"
        path.write_bytes(bad)
        ours = outcome(path, compiled.Members, monkeypatch)
        assert ours == outcome(path, None, monkeypatch), (k, at)
        errors.update(e.split(": ", 2)[-1].split(";")[0] for e in ours[2])
    assert "corrupt gzip data: Error -6 Incorrect checksum found" in errors
    assert len(errors) > 1, errors


def test_bad_input_corpus_indexes_alike(compiled, tmp_path, monkeypatch):
    cases = [case for case in badinput.cases(badinput.make_bases(str(tmp_path)))
             if case.base.compression == "gz"]
    assert len(cases) > 200
    for case in cases:
        path = badinput.write(case, str(tmp_path))
        assert outcome(path, compiled.Members, monkeypatch) == outcome(path, None, monkeypatch), path


def test_methods_answer_alike(compiled, crawl):
    """Random reads, lines, peeks, skips, drains and finishes, as tests/test_members.py."""
    from test_members import walk
    data = open(crawl, "rb").read()
    for seed in range(2):
        cut = data[:len(data) - 7 * seed]
        ours = walk(compiled.Members(io.BytesIO(cut), "f", records.ArchiveError, records.RecordError),
                    random.Random(seed))
        assert ours == walk(gzipmembers.GzipMembers(io.BytesIO(cut), "f"), random.Random(seed))


def version(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--version"])
    return capsys.readouterr().out.strip()


def test_version_names_the_inflater(compiled, monkeypatch, capsys):
    monkeypatch.setattr(records, "CompiledMembers", compiled.Members)
    monkeypatch.setattr(gzipmembers, "INFLATER", compiled.INFLATER)
    assert version(capsys).endswith(f"member walker: compiled, {compiled.INFLATER}")


@pytest.mark.parametrize("why", ["WEBARCHIVE_INDEXING_PURE=1 at install",
                                 "no C compiler or no Python headers at install: ..."])
def test_version_says_why_the_walker_is_pure(why, monkeypatch, capsys):
    """The reason setup.py wrote at install, not a guess: a deliberate pure install is not
    blamed on missing headers."""
    monkeypatch.setattr(records, "CompiledMembers", None)
    monkeypatch.setattr(gzipmembers, "MISSING", ModuleNotFoundError(name=NAME))
    install = type(sys)("webarchive_indexing.warc._install")
    install.WHY_PURE = why
    monkeypatch.setitem(sys.modules, install.__name__, install)
    assert version(capsys).endswith(f"member walker: pure Python ({why})")


def test_version_says_when_the_compiled_walker_does_not_load(monkeypatch, capsys):
    monkeypatch.setattr(records, "CompiledMembers", None)
    monkeypatch.setattr(gzipmembers, "MISSING", ImportError("libisal.so.2: cannot open"))
    assert "pure Python (the compiled one does not load: libisal.so.2: cannot open" in version(capsys)


def test_an_error_in_feeds_consumer_is_raised_as_it_is(compiled, crawl):
    """(It used to turn into a SystemError: the view was released with it pending.)"""
    members = compiled.Members(open(crawl, "rb"), "f", records.ArchiveError, records.RecordError)
    members.next_member()

    def consume(view):
        raise ValueError("consumer failed")
    with pytest.raises(ValueError, match="consumer failed"):
        members.feed(consume, 10)


def test_cdx_o_deflates_each_cdx_gz_with_isal_and_zcat_reads_it(crawl, tmp_path, capsys):
    """The per-archive .cdx.gz at ISA-L's CDX_GZIP_LEVEL (not zlib's level 6, 11x slower):
    zcat and Python's gzip read the same lines cdx writes to stdout."""
    from isal import igzip
    from webarchive_indexing.build.tasks import CDX_GZIP_LEVEL
    assert cli.main(["cdx", crawl]) == cli.EXIT_OK
    text = capsys.readouterr().out.encode()
    assert cli.main(["cdx", crawl, "-o", str(tmp_path / "out")]) == cli.EXIT_OK
    (written,) = (tmp_path / "out").rglob("*.cdx.gz")
    data = written.read_bytes()
    assert data == igzip.compress(text, CDX_GZIP_LEVEL, mtime=0)
    assert gzip.decompress(data) == text
    assert subprocess.run(["zcat"], input=data, capture_output=True, check=True).stdout == \
        gzip.decompress(data)


def test_cdx_of_a_gzipped_archive_leaves_the_uncompressed_walker_unimported(crawl):
    """Its record-start patterns cost ~4 ms to compile: only an uncompressed archive needs them."""
    script = ("import io, sys\n"
              "from webarchive_indexing.cli import main\n"
              "sys.stdout = io.StringIO()\n"
              f"assert main(['cdx', {crawl!r}]) == 0\n"
              "assert 'webarchive_indexing.warc.plain' not in sys.modules\n")
    subprocess.run([sys.executable, "-c", script], check=True)


def test_cdx_o_leaves_the_engines_unimported(crawl, tmp_path):
    """A .cdx.gz per archive is made in this process: none of build's engines (~30 ms of
    start-up) are loaded for it."""
    script = ("import sys\n"
              "from webarchive_indexing.cli import main\n"
              f"assert main(['cdx', {crawl!r}, '-o', {str(tmp_path / 'out')!r}]) == 0\n"
              "loaded = {'webarchive_indexing.commands.build', 'webarchive_indexing.engines'} & set(sys.modules)\n"
              "assert not loaded, loaded\n")
    subprocess.run([sys.executable, "-c", script], check=True)
