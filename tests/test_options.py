"""options.py: every option declared once, registered alike on argparse parsers and MRJob jobs."""
import argparse

import pytest

from webarchive_indexing.api import request
from webarchive_indexing.commands import export
from webarchive_indexing import options
from webarchive_indexing.zipnum import reader, layout
from webarchive_indexing.jobs.remote_copy import RemoteCopyJob


def test_choices_are_those_of_the_modules_that_take_them():
    # declared in options so that the command line starts without importing query or cdxapi
    assert options.MATCH_TYPES == reader.MATCH_TYPES
    assert options.QUERY_OUTPUTS == request.OUTPUTS
    assert options.LINES_PER_BLOCK_DEFAULT == layout.LINES_PER_BLOCK
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


def test_each_option_is_declared_once():
    """A name of the options package bound twice (in one of its modules or in two) leaves
    every user of the first with the second (serve's --workers once gave build and copy
    its help)."""
    import ast
    from pathlib import Path
    names = []
    for path in sorted(Path(options.__file__).parent.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names += [target.id for node in tree.body if isinstance(node, ast.Assign)
                  for target in node.targets if isinstance(target, ast.Name)]
    assert "SERVE_WORKERS" in names and "PARSERS" in names  # every module is read
    assert sorted({name for name in names if names.count(name) > 1}) == []


def _parsers(parser):
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _parsers(sub)


def test_every_boolean_flag_of_every_command_has_its_no_twin():
    from webarchive_indexing import cli
    for command in cli.COMMANDS:
        for parser in _parsers(cli._parser(command)):
            flags = {flag for action in parser._actions for flag in action.option_strings}
            for action in parser._actions:
                if isinstance(action, argparse._StoreTrueAction):
                    long = next(flag for flag in action.option_strings if flag.startswith("--"))
                    assert "--no-" + long[2:] in flags, (parser.prog, long)


def test_build_and_copy_say_what_their_workers_are():
    from webarchive_indexing import cli
    for command, path in (("build", ["build"]), ("copy", ["copy", "copy"])):
        parser = cli._parser(command)
        for name in path:
            parser = next(action for action in parser._actions
                          if isinstance(action, argparse._SubParsersAction)).choices[name]
        workers = next(action for action in parser._actions if "--workers" in action.option_strings)
        assert workers.help.startswith("with --runner local: worker processes"), command
