"""Every option of the command line, the jobs and the Spark entry script, declared once.

An option is its flags and what argparse's ``add_argument`` takes for it; ``add``
registers options on an argparse parser, or on an MRJob job in ``configure_args``
(``add_passthru_arg`` takes argparse's signature). A boolean option comes with its
``--no-`` twin. Where one command words the help of a shared option its own way,
``option.but(help=...)`` is that option with another help.

    add(parser, SHARDS, LINES_PER_BLOCK, PROGRESS)      # a command's parser
    add(self, SHARDS.but(required=True, help=...))      # in an MRJob's configure_args
    options = BuildOptions.from_args(parser.parse_args())
    build(inputs, out_dir, BuildOptions(shards=4, runner="inline"))

The option objects (``BuildOptions``, ``ExportOptions``, ``CopyOptions``) are what the library's entry
points take instead of long parameter lists: an attribute per option, named as its
destination, its default unless given.

An option of ``query`` that mirrors a parameter of the CDX API names it (``param``):
``request.CdxRequest`` is the option object of both, made from ``query``'s arguments or
from the query string of a request to ``serve``.

The package: ``base`` (``Option``, ``Flag``, ``add``, the validators), ``table`` (the
declarations and the defaults: indexing, building, engines, query, serve, access control)
and ``outputs`` (the rest: export, copy, zstd-dict, recompress, wacz, the jobs', corpus),
``objects`` (the option objects and the checks of options that cannot go together),
``commands`` (each command's parser); ``options.X`` is any of the first four's names.
"""
from .base import *  # noqa: F401,F403
from .table import *  # noqa: F401,F403
from .outputs import *  # noqa: F401,F403
from .objects import *  # noqa: F401,F403
