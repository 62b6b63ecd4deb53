"""Dataclasses that cross a process or job boundary: settings handed to tasks, and the
status a task hands back.

    @dataclass(frozen=True)
    class Indexing(Wire):
        cdx_format: str = option_field(options.CDX_FORMAT)

    settings = Indexing.of(build_options)          # the fields an options object has
    options.add(job, *Indexing.options())           # a job declares them...
    Indexing.parsed(job.options) == settings        # ...and reads them back
    Indexing.from_dict(json.loads(line))           # what as_dict() wrote, in a job's output

A field declared with ``option_field`` names the option (``options``) it is given by on
a job's command line: its default is that option's, and ``command_line`` turns the
settings back into the arguments that option parses, so that an engine that runs a job
hands it every setting without naming one.
"""
import dataclasses


def option_field(option, **kwargs):
    """A dataclass field given by ``option``, with its default."""
    default = option.default
    if isinstance(default, list):  # (a fresh list for each object)
        kwargs["default_factory"] = lambda: list(option.default)
    else:
        kwargs["default"] = default
    return dataclasses.field(metadata={"option": option}, **kwargs)


class Wire:
    """What the dataclasses of settings and statuses share (mixed into a dataclass)."""

    @classmethod
    def of(cls, values, **more):
        """From the attributes of ``values`` (an options object, a job's parsed options)
        named as this class's fields (those it lacks keep their defaults), and ``more``."""
        given = {f.name: getattr(values, f.name) for f in dataclasses.fields(cls)
                 if f.init and hasattr(values, f.name)}
        return cls(**{**given, **more})

    @classmethod
    def parsed(cls, values):
        """From a job's parsed options: each field declared with ``option_field`` from its
        option's destination (``command_line`` undone)."""
        return cls(**{f.name: getattr(values, f.metadata["option"].dest)
                      for f in dataclasses.fields(cls) if "option" in f.metadata})

    @classmethod
    def options(cls, **helps):
        """The options that give the fields declared with ``option_field``, for a job to
        declare (``options.add``); ``helps``: another help for some, by field name."""
        return [f.metadata["option"].but(help=helps[f.name]) if f.name in helps
                else f.metadata["option"]
                for f in dataclasses.fields(cls) if "option" in f.metadata]

    def as_dict(self):
        """For the wire (JSON): the fields, by name."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls, values):
        """What ``as_dict`` gave, read back; a field it lacks keeps its default, a key no
        field has is a mistake (``TypeError``): the two sides are not of one version."""
        return cls(**values)

    def command_line(self):
        """The arguments that give each field declared with ``option_field`` its value,
        parsed by the options that declare them: a flag and its ``--no-`` twin, repeated
        for a list, left out for None."""
        args = []
        for f in dataclasses.fields(self):
            option, value = f.metadata.get("option"), getattr(self, f.name)
            if option is None or value is None:
                continue
            if hasattr(option, "flag_name"):
                args.append(f"--{'' if value else 'no-'}{option.flag_name}")
            elif isinstance(value, (list, tuple)):
                for item in value:
                    args += [option.name, str(item)]
            else:
                args += [option.name, str(value)]
        return args
