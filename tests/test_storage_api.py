"""The storage API's answers that callers ask instead of testing schemes, and the local
staging and publishing of files and directories."""
import os

import pytest

from webarchive_indexing import cli, storage


def test_what_a_place_is(tmp_path):
    local = str(tmp_path / "a")
    assert storage.backend_name(local) == "local" and storage.is_local(local)
    assert storage.reads_ranges(local) and storage.is_writable(local)
    assert storage.local_path(local) == local
    for uri, name, ranges, writable in (("s3://b/k", "s3", True, True),
                                        ("https://h/k", "web", True, False),
                                        ("http://h/k", "web", True, False),
                                        ("hdfs:///k", "hadoop", False, True),
                                        ("s3a://b/k", "hadoop", False, True),
                                        ("gs://b/k", None, False, False)):
        assert storage.backend_name(uri) == name and not storage.is_local(uri), uri
        assert storage.is_supported(uri) == (name is not None), uri
        assert (storage.reads_ranges(uri), storage.is_writable(uri)) == (ranges, writable), uri
        assert storage.local_path(uri) is None, uri
    assert storage.local_path("file:///x/y.loc") == "/x/y.loc"


def test_paths(tmp_path):
    assert storage.abspath("rel/a") == os.path.abspath("rel/a")
    assert storage.abspath("s3://b/rel") == "s3://b/rel"
    assert storage.dirname("s3://b/a/k") == "s3://b/a" and storage.dirname("/x/y") == "/x"
    assert storage.basename("s3://b/a/k.gz") == storage.basename("/x/k.gz") == "k.gz"
    assert storage.resolve("s3://b/a/", "/k") == "s3://b/a/k"  # under the base, always
    assert storage.resolve("/x", "k") == "/x/k" and storage.resolve("/x", "/abs") == "/abs"


def test_a_staged_file_is_published_whole_with_the_usual_permissions(tmp_path):
    target = str(tmp_path / "out" / "a.warc.gz")
    staged = storage.staging_path(target)
    # beside its target, so that publishing it is a rename
    assert os.path.dirname(staged) == os.path.dirname(target) and not os.path.exists(target)
    with open(staged, "wb") as fh:
        fh.write(b"data")
    storage.publish(staged, target)
    umask = os.umask(0)
    os.umask(umask)
    assert open(target, "rb").read() == b"data" and not os.path.exists(staged)
    assert os.stat(target).st_mode & 0o777 == 0o666 & ~umask
    # what a killed write left beside its target goes; the published file stays
    leftovers = [storage.staging_path(target), storage.staging_path(str(tmp_path / "out" / "b"))]
    with storage.open_atomic(str(tmp_path / "out" / "c")) as fh:
        fh.write(b"c")
    storage.remove_leftovers([target, str(tmp_path / "out" / "c")])
    assert not os.path.exists(leftovers[0]) and os.path.exists(leftovers[1])
    assert sorted(os.listdir(tmp_path / "out")) == sorted(["a.warc.gz", "c",
                                                           os.path.basename(leftovers[1])])


def test_temporary_files_of_killed_writes_are_removed(tmp_path):
    top, below = tmp_path / "out", tmp_path / "out" / "a" / "b"
    below.mkdir(parents=True)
    leftovers = [storage.staging_path(str(top / "x")), storage.staging_path(str(below / "y"))]
    (top / "keep.tmp").write_text("")
    storage.remove_temp_files(str(top))
    assert not os.path.exists(leftovers[0]) and os.path.exists(leftovers[1])
    storage.remove_temp_files(str(top), recursive=True)
    assert not os.path.exists(leftovers[1]) and os.listdir(below) == []
    assert os.listdir(top) == ["a", "keep.tmp"] or sorted(os.listdir(top)) == ["a", "keep.tmp"]
    storage.remove_temp_files(str(tmp_path / "missing"), recursive=True)
    storage.remove_temp_files("s3://bucket/out")  # nothing to do: uploads leave nothing


@pytest.mark.parametrize("uri", ["file://{out}", "gs://bucket/out"])
def test_no_write_to_a_uri_no_store_owns_lands_below_the_working_directory(tmp_path,
                                                                           monkeypatch, capsys,
                                                                           uri):
    """A URI of a scheme no backend owns (file://, gs://) was written as a relative path
    ('file:/tmp/...' below the working directory): every write and removal refuses it."""
    monkeypatch.chdir(tmp_path)
    target = uri.format(out=tmp_path / "out") + "/x.cdx.gz"
    for write in (lambda: storage.write_atomic(target, b"x"),
                  lambda: storage.makedirs(target), lambda: storage.remove(target),
                  lambda: storage.remove_tree(target)):
        with pytest.raises(OSError, match="no store here writes URIs of this scheme") as raised:
            write()
        assert raised.value.filename == target
    sample = os.path.join(os.path.dirname(os.path.dirname(__file__)), "samples",
                          "example.warc.gz")
    assert cli.main(["cdx", sample, "-o", uri.format(out=tmp_path / "out")]) == cli.EXIT_FAILED
    err = capsys.readouterr().err.strip().splitlines()
    assert "no store here writes URIs of this scheme" in err[-1], err
    assert os.listdir(tmp_path) == []
