"""``storage.below``: the one decision of what a name from data may reach."""
import os

import pytest

from webarchive_indexing import storage


@pytest.mark.parametrize("name", ["", "/etc/passwd", "../x", "a/../../x", "a/./b", "a//b", "a/",
                                  "s3://other/x", "file:///etc/passwd", "a\\..\\x", "a\x00b",
                                  "a\nb", "a\x7fb", ".", ".."])
@pytest.mark.parametrize("directory", ["/data/cluster", "s3://bucket/cluster",
                                       "http://127.0.0.1:1/cluster"])
def test_a_name_that_could_lead_elsewhere_is_refused(directory, name):
    with pytest.raises(storage.Outside, match="not a name below"):
        storage.below(directory, name)


@pytest.mark.parametrize("directory", ["/data/cluster", "s3://bucket/cluster",
                                       "http://127.0.0.1:1/cluster"])
def test_a_name_below_is_where_it_says(directory):
    assert storage.below(directory, "cdx-00000.gz") == directory + "/cdx-00000.gz"
    assert storage.below(directory, "build-00001/cdx-00000.gz") == (
        directory + "/build-00001/cdx-00000.gz")
    # a name with dots that are no segment of their own is a name
    assert storage.below(directory, "a..b/x.warc.gz") == directory + "/a..b/x.warc.gz"


def test_a_symbolic_link_out_of_the_place_is_refused(tmp_path):
    place = tmp_path / "cluster"
    place.mkdir()
    (tmp_path / "secret").write_text("x")
    os.symlink(tmp_path / "secret", place / "cdx-00000.gz")
    os.symlink(tmp_path, place / "up")
    (place / "cdx-00001.gz").write_text("y")
    with pytest.raises(storage.Outside, match="symbolic link"):
        storage.below(str(place), "cdx-00000.gz")
    with pytest.raises(storage.Outside, match="symbolic link"):
        storage.below(str(place), "up/secret")
    assert storage.below(str(place), "cdx-00001.gz") == str(place / "cdx-00001.gz")
