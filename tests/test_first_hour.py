"""What a new user meets in the first hour (issue 16, items 13 and 16): a WARC or a .cdx.gz
given to query, ``query | head``, ``cdx -o``'s progress and summary, the summary of a
rebuild with nothing new, a number of shards that is a mistake, the README and ``--help``
saying the same."""
import re
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard

from helpers import REAL
from webarchive_indexing import cli, options

README = (Path(__file__).parents[1] / "README.md").read_text()
ARCHIVES = [f"{REAL}/webrecorder+warcio__example.warc.gz",
            f"{REAL}/iipc+webarchive-commons__IAH-urls-wget.warc.gz"]


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    out = tmp_path_factory.mktemp("first-hour") / "out"
    assert cli.main(["build", *ARCHIVES, "-o", str(out), "--runner", "inline", "--no-progress"]) == 0
    return out


def test_query_given_an_archive_or_a_cdx_file_says_what_it_is(out, tmp_path, capsys):
    assert cli.main(["cdx", ARCHIVES[0], "-o", str(tmp_path / "cdx")]) == 0
    given = {ARCHIVES[0]: "gzip data (a WARC or ARC file, a .cdx.gz?)",
             str(tmp_path / "cdx" / "webrecorder+warcio__example.cdx.gz"): "gzip data",
             f"{REAL}/webrecorder+warcio__example.warc": "a WARC or ARC file",
             f"{REAL}/webrecorder+warcio__example.arc": "a WARC or ARC file",
             str(tmp_path / "example.warc.zst"): "zstd data (a .warc.zst file?)"}
    (tmp_path / "example.warc.zst").write_bytes(
        zstandard.ZstdCompressor().compress(Path(f"{REAL}/webrecorder+warcio__example.warc").read_bytes()))
    capsys.readouterr()
    for path, kind in given.items():
        assert cli.main(["query", path, "example.com"]) == cli.EXIT_FAILED
        captured = capsys.readouterr()
        assert captured.out == "" and captured.err.startswith(
            f"webarchive-index query: {path} is {kind}") and captured.err.count("\n") == 1


@pytest.mark.parametrize("command", [["query", "{out}", "*.org"],
                                     ["query", "{out}", "*.org", "--output", "json"],
                                     ["cdx", ARCHIVES[1]],
                                     ["copy", "check", "{out}", "--domains", "org,com"]])
def test_a_reader_that_goes_away_is_no_failure(out, command):
    """`query ... | head` printed "Broken pipe" and exited 1."""
    argv = [arg.format(out=out) for arg in command]
    script = ("import sys; from webarchive_indexing.cli import main; sys.exit(main(sys.argv[1:]))")
    pipeline = subprocess.run(
        ["bash", "-c", 'set -o pipefail; "$@" | head -c 1 >/dev/null', "bash",
         sys.executable, "-c", script, *argv], capture_output=True, text=True, timeout=120)
    assert pipeline.returncode == 0 and pipeline.stderr == "", pipeline.stderr


def test_cdx_to_files_shows_progress_and_a_summary(tmp_path, capsys):
    args = ["cdx", *ARCHIVES, "-o", str(tmp_path / "cdx")]
    assert cli.main(args) == cli.EXIT_OK
    err = capsys.readouterr().err
    assert err.startswith("indexing 2 archives\n")
    assert "archives: 2 (0 already indexed)" in err and "records:  42 read, 21 CDX lines\n" in err
    assert re.search(r"errors:   0\ntime:     [\d.]+ s\n$", err)
    assert cli.main(args) == cli.EXIT_OK
    assert "archives: 2 (2 already indexed), 0 B read" in capsys.readouterr().err


def test_a_rebuild_with_nothing_new_says_what_the_cluster_holds(out, capsys):
    """It reported "0 CDX lines"."""
    assert cli.main(["build", *ARCHIVES, "-o", str(out), "--runner", "inline", "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "archives: 2 (2 already indexed), 0 B read\n" in err
    assert "records:  0 read, 0 CDX lines (of the 0 archives indexed now)\n" in err
    assert re.search(r"cluster:  1 shards, 21 lines, 1 blocks, ", err), err


@pytest.mark.parametrize("shards", ["100000", "10001", "0", "-3", "x"])
def test_a_number_of_shards_that_is_a_mistake_is_refused(shards, tmp_path, capsys):
    for command in (["build", ARCHIVES[0], "-o", str(tmp_path / "o")],
                    ["finalize", str(tmp_path)]):
        with pytest.raises(SystemExit) as exit_:
            cli.main([*command, "--shards", shards])
        assert exit_.value.code == cli.EXIT_USAGE
        err = capsys.readouterr().err
        assert ("expected at most 10000 shards" if shards.startswith("1") else
                "expected a whole number of at least 1") in err
    assert not (tmp_path / "o").exists()


# -- the README and --help say the same ---------------------------------------------------

def help_of(*command):
    with pytest.raises(SystemExit) as exit_:
        cli.main([*command, "--help"])
    assert exit_.value.code == 0


def test_build_help_lists_the_output_the_readme_lists(capsys):
    """The README and --help disagreed (the output file lists; cdx9: test_docs.py checks
    every synopsis against --help)."""
    help_of("build")
    assert capsys.readouterr().out.endswith("output:\n" + options.BUILD_OUTPUT)
    assert "```\n" + options.BUILD_OUTPUT + "```" in README


@pytest.mark.parametrize("command", [["build"], ["cdx"], ["query"], ["finalize"], ["corpus"],
                                     ["copy"], ["copy", "check"], ["copy", "plan"],
                                     ["copy", "copy"], ["copy", "status"]])
def test_every_option_has_help(command, capsys):
    """`corpus --help` failed, then listed options without a word about them."""
    help_of(*command)
    said = capsys.readouterr().out
    options_part = said.split("\noptions:\n", 1)[1].split("\n\n", 1)[0]
    entries = re.split(r"\n  (?=-)", "\n" + options_part)[1:]
    assert entries
    for entry in entries:
        flags, _, text = entry.partition("  ")
        assert text.strip() or "\n" in entry, (command, entry)
