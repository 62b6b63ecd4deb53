"""The option machinery: an ``Option`` (a ``Flag`` with its ``--no-`` twin, a
``FileOption`` an MRJob ships) and how ``add`` registers it on an argparse parser or an
MRJob job; the validators argparse's ``type`` takes; ``UsageError``."""
import argparse
import re


class UsageError(ValueError):
    """Options that cannot work, found before anything runs."""


# -- validators ----------------------------------------------------------------------------

# int() also takes other scripts' digits ('٣' is 3), '+3', ' 3 ' and '1_000'
WHOLE_NUMBER = re.compile(r"-?[0-9]+")


def whole_number(text):
    """``text`` as an int if it is ASCII digits after an optional '-', else None."""
    return int(text) if WHOLE_NUMBER.fullmatch(text) else None


def dash_is_stdout(text):
    """An output path for argparse's ``type``: None (print) for ``-``, as it means to a
    shell user, not a file named so."""
    return None if text == "-" else text


def positive(text):
    """A whole number of at least 1, for argparse's ``type``."""
    value = whole_number(text) or 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value
# More shards than this are a mistake: a shard file and a reducer each, a sample of 100
# lines each in one reducer's memory; Common Crawl's 3 billion captures use 300
MAX_SHARDS = 10000


def shard_count(text):
    """A number of shards, from 1 to ``MAX_SHARDS``, for argparse's ``type``."""
    value = positive(text)
    if value > MAX_SHARDS:
        raise argparse.ArgumentTypeError(
            f"expected at most {MAX_SHARDS} shards, got {text!r} (Common Crawl's 3 billion "
            "captures a month use 300)")
    return value


def nonzero(text):
    """A whole number other than 0, for argparse's ``type``."""
    value = whole_number(text) or 0
    if value == 0:
        raise argparse.ArgumentTypeError(f"expected a whole number other than 0, got {text!r}")
    return value


def seconds(text):
    """A number of seconds above 0 (``0.5`` too), for argparse's ``type``."""
    try:
        value = float(text)
    except ValueError:
        value = 0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number of seconds above 0, got {text!r}")
    return value


def non_negative(text):
    """A whole number of at least 0, for argparse's ``type``."""
    if whole_number(text) is None or text.startswith("-"):
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 0, got {text!r}")
    return int(text)


# A name for files that stays a name: no "/", "..", or hidden file
FILE_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")
FILE_NAME_HELP = "a file name of letters, digits, '.', '_' and '-' (not starting with '.')"


def file_name(text):
    """A name for files (``FILE_NAME``), for argparse's ``type``."""
    if not FILE_NAME.fullmatch(text):
        raise argparse.ArgumentTypeError(f"expected {FILE_NAME_HELP}, got {text!r}")
    return text


# -- options, and how they are registered -------------------------------------------------

class Option:
    """One option: its flags (or a positional argument's name) and ``add_argument``'s
    keywords; ``param``: the name (or names, the first the main one) of the CDX API
    parameter it mirrors, if any."""

    def __init__(self, *flags, param=None, **kwargs):
        self.flags, self.kwargs = flags, kwargs
        self.params = (param,) if isinstance(param, str) else tuple(param or ())
        # (read for every option of every request ``serve`` answers)
        self.dest = kwargs.get("dest") or next(
            (flag for flag in flags if flag.startswith("--")), flags[0]).lstrip("-").replace("-", "_")

    @property
    def default(self):
        default = self.kwargs.get("default")
        return list(default) if isinstance(default, list) else default

    @property
    def name(self):
        """How a message names it: its first long flag, or a positional argument's metavar."""
        flag = next((flag for flag in self.flags if flag.startswith("--")), None)
        return flag or self.kwargs.get("metavar") or self.flags[0]

    def but(self, **changes):
        """This option with some of its keywords changed."""
        return Option(*self.flags, param=self.params, **{**self.kwargs, **changes})

    def add_to(self, target):
        _register(target)(*self.flags, **self.kwargs)


class Flag(Option):
    """A boolean option ``--NAME`` and its twin ``--no-NAME``."""

    def __init__(self, name, default, help, off_help, short=None, dest=None, param=None):
        flags = (short, f"--{name}") if short else (f"--{name}",)
        super().__init__(*flags, param=param, dest=dest or name.replace("-", "_"),
                         default=default, help=help)
        self.flag_name, self.off_help, self.short = name, off_help, short

    def but(self, **changes):
        values = {"default": self.kwargs["default"], "help": self.kwargs["help"],
                  "off_help": self.off_help, "short": self.short, "dest": self.dest,
                  "param": self.params, **changes}
        return Flag(self.flag_name, **values)

    def add_to(self, target):
        register = _register(target)
        register(*self.flags, dest=self.dest, action="store_true",
                 default=self.kwargs["default"], help=self.kwargs["help"])
        register(f"--no-{self.flag_name}", dest=self.dest, action="store_false",
                 help=self.off_help)


class FileOption(Option):
    """An MRJob option naming a file that the job ships to its tasks (``add_file_arg``)."""

    def but(self, **changes):
        return FileOption(*self.flags, param=self.params, **{**self.kwargs, **changes})

    def add_to(self, target):
        target.add_file_arg(*self.flags, **self.kwargs)


def _register(target):
    """How ``target`` takes an option: an MRJob's ``add_passthru_arg`` (handed on to its
    tasks), else argparse's ``add_argument``."""
    return getattr(target, "add_passthru_arg", None) or target.add_argument


def add(target, *options):
    """Register ``options`` on ``target``: an argparse parser, or an MRJob job."""
    for option in options:
        option.add_to(target)
