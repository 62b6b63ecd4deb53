"""INPUT arguments: files, directories, globs and manifests, and the names archives get."""
import gzip

import pytest

from webarchive_indexing.inputs import InputError, cdx_name, expand, relative_name


def touch(path, content=b"WARC/1.0\r\n"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return str(path)


def test_relative_name_prefers_the_longest_root():
    assert relative_name("/d/crawl/seg/a.warc.gz", ["/d", "/d/crawl"]) == "seg/a.warc.gz"
    assert relative_name("/elsewhere/a.warc.gz", ["/d"]) == "a.warc.gz"
    assert relative_name("s3://bucket/crawl-data/x/a.warc.gz", ["s3://bucket/"]) == "crawl-data/x/a.warc.gz"


def test_cdx_name_mirrors_the_archive_name():
    assert cdx_name("a/b/x.warc.gz") == "a/b/x.cdx.gz"
    assert cdx_name("x.arc") == "x.cdx.gz"
    assert cdx_name("x.warc.wat.gz") == "x.warc.wat.gz.cdx.gz"


def test_directory_files_globs_and_manifests(tmp_path):
    a = touch(tmp_path / "crawl" / "seg1" / "a.warc.gz", b"\x1f\x8b")
    b = touch(tmp_path / "crawl" / "seg2" / "b.arc")
    touch(tmp_path / "crawl" / "notes.txt", b"not an archive")
    c = touch(tmp_path / "loose" / "c.warc")
    d = touch(tmp_path / "listed" / "sub" / "d.warc.gz", b"\x1f\x8b")
    manifest = tmp_path / "listed" / "warcs.paths.gz"
    manifest.write_bytes(gzip.compress(b"# a comment\nsub/d.warc.gz\n\nmissing.warc.gz\n"))
    e = touch(tmp_path / "glob" / "e.warc.gz", b"\x1f\x8b")

    archives, missing, roots = expand([str(tmp_path / "crawl"), c, str(manifest),
                                       str(tmp_path / "glob" / "*.warc.gz"), str(tmp_path / "nothing*")])
    assert [(x.path, x.name) for x in archives] == [
        (a, "seg1/a.warc.gz"), (b, "seg2/b.arc"), (c, "c.warc"), (d, "sub/d.warc.gz"), (e, "e.warc.gz")]
    assert missing == [str(tmp_path / "listed" / "missing.warc.gz"), str(tmp_path / "nothing*")]


def test_input_root_option(tmp_path):
    a = touch(tmp_path / "crawl" / "seg1" / "a.warc.gz")
    archives, _, _ = expand([a], [str(tmp_path / "crawl")])
    assert archives[0].name == "seg1/a.warc.gz"


def test_same_name_twice_is_refused(tmp_path):
    a = touch(tmp_path / "x" / "a.warc.gz")
    b = touch(tmp_path / "y" / "a.warc.gz")
    with pytest.raises(InputError, match="would both be indexed into 'a.cdx.gz'"):
        expand([a, b])
    touch(tmp_path / "x" / "a.arc")
    with pytest.raises(InputError, match="would both be indexed into 'a.cdx.gz'"):
        expand([str(tmp_path / "x")])


def test_a_file_given_twice_is_indexed_once(tmp_path):
    a = touch(tmp_path / "a.warc.gz")
    archives, _, _ = expand([a, a, str(tmp_path)])
    assert [x.path for x in archives] == [a]
