"""options.py: every option declared once, registered alike on argparse parsers and MRJob jobs."""
import argparse

import pytest

from webarchive_indexing import cdxapi, export, options, query, zipnum
from webarchive_indexing.jobs.remote_copy import RemoteCopyJob


def test_choices_are_those_of_the_modules_that_take_them():
    # declared in options so that the command line starts without importing query or cdxapi
    assert options.MATCH_TYPES == query.MATCH_TYPES
    assert options.QUERY_OUTPUTS == cdxapi.OUTPUTS
    assert options.LINES_PER_BLOCK_DEFAULT == zipnum.LINES_PER_BLOCK
    assert options.EXPORT_FORMATS == tuple(export.FORMATS)


def test_a_flag_has_its_no_twin_and_an_option_can_be_reworded():
    parser = argparse.ArgumentParser()
    options.add(parser, options.SHARDS, options.VERBOSE.but(help="something else"),
                options.PROGRESS)
    assert vars(parser.parse_args([])) == {"shards": 1, "verbose": False, "progress": None}
    args = parser.parse_args(["--shards", "3", "-v", "--no-progress"])
    assert (args.shards, args.verbose, args.progress) == (3, True, False)
    assert parser.parse_args(["--verbose", "--no-verbose"]).verbose is False
    assert "something else" in parser.format_help()
    with pytest.raises(SystemExit):
        parser.parse_args(["--shards", "0"])


def test_jobs_take_the_same_options():
    job = RemoteCopyJob(args=["--copy-dir", "out", "--warc-prefix", "s3://b/", "--threads", "3"])
    assert (job.options.threads, job.options.retries) == (3, options.DEFAULT_RETRIES)
    with pytest.raises(ValueError, match="expected a whole number of at least 0"):
        RemoteCopyJob(args=["--copy-dir", "out", "--warc-prefix", "s3://b/", "--retries", "x"])
