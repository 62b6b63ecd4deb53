"""Lets mrjob 0.7.4 (its last release, 2020) run on Python 3.12 and 3.13.

mrjob imports ``pipes``, removed from the standard library in 3.13, only for
``pipes.quote``, which is ``shlex.quote``; and ``distutils``, removed in 3.12,
which setuptools (a dependency of this package) provides again. Import this
module before mrjob.
"""
import shlex
import sys
import types

try:
    import pipes  # noqa: F401  (3.11, 3.12: the real module, deprecated)
except ImportError:
    pipes = types.ModuleType("pipes", "shlex.quote under its pre-3.13 name, for mrjob")
    pipes.quote = shlex.quote
    sys.modules["pipes"] = pipes
