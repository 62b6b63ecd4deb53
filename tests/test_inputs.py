"""INPUT arguments: files, directories, globs and manifests, what each file is (archive or
index), the names archives get, and the CDX paths made from them (never outside OUTDIR)."""
import gzip

import pytest

from webarchive_indexing.inputs.discovery import InputError, cdx_name, expand, relative_name


def touch(path, content=b"WARC/1.0\r\n"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return str(path)


def test_relative_name_prefers_the_longest_root():
    assert relative_name("/d/crawl/seg/a.warc.gz", ["/d", "/d/crawl"]) == "seg/a.warc.gz"
    assert relative_name("/elsewhere/a.warc.gz", ["/d"]) == "a.warc.gz"
    assert relative_name("s3://bucket/crawl-data/x/a.warc.gz", ["s3://bucket/"]) == "crawl-data/x/a.warc.gz"


def test_cdx_name_mirrors_the_archive_name():
    # the usual case keeps Common Crawl's name; every other name gets .cdx.gz added
    assert cdx_name("a/b/x.warc.gz") == "a/b/x.cdx.gz"
    assert cdx_name("x.arc") == "x.arc.cdx.gz"
    assert cdx_name("x.arc.gz") == "x.arc.gz.cdx.gz"
    assert cdx_name("x.warc") == "x.warc.cdx.gz"
    # beside x.warc.gz (recompress's output, say): a CDX of its own
    assert cdx_name("x.warc.zst") == "x.warc.zst.cdx.gz"
    assert cdx_name("x.warc.wat.gz") == "x.warc.wat.gz.cdx.gz"
    assert cdx_name("crawl-data/CC-MAIN-2024-22/segments/1/warc/a-00000.warc.gz") == \
        "crawl-data/CC-MAIN-2024-22/segments/1/warc/a-00000.cdx.gz"


def test_directory_files_globs_and_manifests(tmp_path):
    a = touch(tmp_path / "crawl" / "seg1" / "a.warc.gz", b"\x1f\x8b")
    b = touch(tmp_path / "crawl" / "seg2" / "b.arc")
    touch(tmp_path / "crawl" / "notes.txt", b"not an archive")
    c = touch(tmp_path / "loose" / "c.warc")
    d = touch(tmp_path / "listed" / "sub" / "d.warc.gz", b"\x1f\x8b")
    manifest = tmp_path / "listed" / "warcs.paths.gz"
    manifest.write_bytes(gzip.compress(b"# a comment\nsub/d.warc.gz\n\nmissing.warc.gz\n"))
    e = touch(tmp_path / "glob" / "e.warc.gz", b"\x1f\x8b")

    archives, indexes, missing, roots, _ = expand(
        [str(tmp_path / "crawl"), c, str(manifest), str(tmp_path / "glob" / "*.warc.gz"),
         str(tmp_path / "nothing*")])
    assert indexes == []
    assert [(x.path, x.name) for x in archives] == [
        (a, "seg1/a.warc.gz"), (b, "seg2/b.arc"), (c, "c.warc"), (d, "sub/d.warc.gz"), (e, "e.warc.gz")]
    assert missing == [str(tmp_path / "listed" / "missing.warc.gz"), str(tmp_path / "nothing*")]


def test_input_root_option(tmp_path):
    a = touch(tmp_path / "crawl" / "seg1" / "a.warc.gz")
    archives = expand([a], [str(tmp_path / "crawl")]).archives
    assert archives[0].name == "seg1/a.warc.gz"


def test_same_name_twice_is_refused(tmp_path):
    a = touch(tmp_path / "x" / "a.warc.gz")
    b = touch(tmp_path / "y" / "a.warc.gz")
    with pytest.raises(InputError, match="would both be indexed into 'a.cdx.gz'"):
        expand([a, b])
    # only an archive named exactly like another's CDX stem can still meet it
    plain = touch(tmp_path / "x" / "a", b"WARC/1.0\r\n")
    with pytest.raises(InputError, match="would both be indexed into 'a.cdx.gz'"):
        expand([a, plain])


def test_colliding_names_of_one_directory_get_a_cdx_each(tmp_path):
    """pywb's sample directory holds example.warc.gz, example.warc and example.arc.gz: one
    CDX each, named from the archive's name alone (stable whatever else is there)."""
    names = ["example.warc.gz", "example.warc", "example.arc.gz", "example.arc"]
    for name in names:
        touch(tmp_path / name)
    found = expand([str(tmp_path)])
    assert sorted(cdx_name(a.name) for a in found.archives) == [
        "example.arc.cdx.gz", "example.arc.gz.cdx.gz", "example.cdx.gz", "example.warc.cdx.gz"]
    alone = expand([str(tmp_path / "example.warc.gz")])
    assert [cdx_name(a.name) for a in alone.archives] == ["example.cdx.gz"]


def test_an_archives_own_index_beside_it_is_not_read_twice(tmp_path):
    """copy and recompress write x.cdxj beside x.warc.gz / x.warc.zst; a CDX directory may
    hold x.cdx.gz beside x.warc.gz: found by a directory walk, those are the archive's lines
    again (a warning says so); any other index, or one named as an INPUT, is read."""
    names = ["a.warc.gz", "a.warc.zst", "a.cdxj", "b.warc.gz", "b.cdx.gz", "c.warc.zst",
             "c.warc.zst.cdx.gz", "other.cdxj", "sub/a.cdx"]
    for name in names:
        touch(tmp_path / name)
    found = expand([str(tmp_path)])
    assert [a.name for a in found.archives] == ["a.warc.gz", "a.warc.zst", "b.warc.gz", "c.warc.zst"]
    assert [i.name for i in found.indexes] == ["other.cdxj", "sub/a.cdx"]
    assert sorted(w["file"].rsplit("/", 1)[-1] for w in found.warnings) == [
        "a.cdxj", "b.cdx.gz", "c.warc.zst.cdx.gz"]
    assert all(w["message"].startswith("not read: the index of ") for w in found.warnings)
    named = expand([str(tmp_path / "a.warc.gz"), str(tmp_path / "a.cdxj")])
    assert [i.name for i in named.indexes] == ["a.cdxj"] and named.warnings == []


def test_a_file_given_twice_is_indexed_once(tmp_path):
    a = touch(tmp_path / "a.warc.gz")
    archives = expand([a, a, str(tmp_path)]).archives
    assert [x.path for x in archives] == [a]
