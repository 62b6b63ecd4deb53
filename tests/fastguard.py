"""The fast tier's guard (tests/tiers.py): in a process where ``install`` ran, and in every
Python process started from it with ``environment``'s variables (a ``sitecustomize`` on
PYTHONPATH runs ``install``), listening on a network socket or starting Java, Spark,
Hadoop or a browser is refused: ``Refused`` is raised and the refusal noted in a file that
the fast tier reads after each test (``refused``), so that the test fails even where what
it ran caught the error, or ran in another process.

The guard imports nothing: a guarded process loads the modules it did (tests/test_cdx.py
checks which a command loads). An audit hook (``sys.addaudithook``) sees every process
started; ``socket.socket.listen`` is wrapped once something imports socket.
"""
import os
import sys

# Where refusals are noted
LOG_VARIABLE = "WEBARCHIVE_FAST_TIER_LOG"
# Programs not to start, by name -> the marker of a test that does
PROGRAMS = {
    "java": "spark", "spark-submit": "spark", "spark-class": "spark", "pyspark": "spark",
    "hadoop": "hadoop", "hdfs": "hadoop", "yarn": "hadoop", "mapred": "hadoop",
    "chromium": "browser", "chromium-browser": "browser", "chrome": "browser",
    "google-chrome": "browser", "chromedriver": "browser", "firefox": "browser",
    "geckodriver": "browser",
}
# socket.AF_INET and AF_INET6 on Linux (importing socket here would change what a guarded
# process loads)
NETWORK = (2, 10)
SHELLS = ("sh", "bash", "dash")
SITECUSTOMIZE = f"""\
import sys
sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
import fastguard
del sys.path[0]
fastguard.install()
"""
_installed = []


class Refused(BaseException):
    """What the fast tier must not do (not an Exception: code under test that catches those
    must not hide it)."""


def _refuse(what, marker):
    message = (f"the fast tier runs no {marker}: {what}; mark the test {marker!r} "
               "(tests/tiers.py)")
    log = os.environ.get(LOG_VARIABLE)
    if log:
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(message + "\n")
    raise Refused(message)


def _program(executable, args):
    """The name of the program a process runs (the command of ``sh -c COMMAND`` too)."""
    if isinstance(args, (str, bytes)):
        args = [args]
    args = [os.fsdecode(a) for a in args or ()]
    if args and os.path.basename(args[0]) in SHELLS and len(args) > 2 and args[1] == "-c":
        args = args[2].split()
    first = args[0] if args else os.fsdecode(executable or "")
    return os.path.basename(first)


def _audit(event, args):
    if event == "subprocess.Popen":
        program = _program(args[0], args[1])
        if program in PROGRAMS:
            _refuse(f"starting {program}", PROGRAMS[program])


def _guard_listen(socket):
    listen = socket.socket.listen

    def guarded(self, *args):
        if self.family in NETWORK:
            _refuse(f"listening on {self.getsockname()!r}", "server")
        return listen(self, *args)

    socket.socket.listen = guarded


class _WhenImported:
    """A finder that wraps ``socket.socket.listen`` as socket is imported."""

    def find_spec(self, name, path=None, target=None):
        if name != "socket":
            return None
        sys.meta_path.remove(self)
        spec = next((spec for finder in sys.meta_path if hasattr(finder, "find_spec")
                     for spec in [finder.find_spec(name, path, target)] if spec), None)
        if spec is not None:
            run = spec.loader.exec_module

            def exec_module(module):
                run(module)
                _guard_listen(module)

            spec.loader.exec_module = exec_module
        return spec


def install():
    """Guard this process (once)."""
    if _installed:
        return
    _installed.append(True)
    sys.addaudithook(_audit)
    if "socket" in sys.modules:
        _guard_listen(sys.modules["socket"])
    else:
        sys.meta_path.insert(0, _WhenImported())


def environment(directory, log, environ):
    """The variables that guard the Python processes started with ``environ`` and them (a
    ``sitecustomize`` written into ``directory``), their refusals noted in ``log``."""
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "sitecustomize.py"), "w", encoding="utf-8") as fh:
        fh.write(SITECUSTOMIZE)
    paths = [p for p in environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return {"PYTHONPATH": os.pathsep.join([str(directory), *paths]), LOG_VARIABLE: str(log)}


def unguarded(environ):
    """``environ`` without the guard's variables (for the tests of the guard itself)."""
    paths = [p for p in environ.get("PYTHONPATH", "").split(os.pathsep)
             if p and not _holds_guard(p)]
    env = {k: v for k, v in environ.items() if k not in (LOG_VARIABLE, "PYTHONPATH")}
    return {**env, "PYTHONPATH": os.pathsep.join(paths)} if paths else env


def _holds_guard(directory):
    try:
        with open(os.path.join(directory, "sitecustomize.py"), encoding="utf-8") as fh:
            return fh.read() == SITECUSTOMIZE
    except OSError:
        return False


def refused(log):
    """What was refused since ``log`` was last read (and emptied)."""
    try:
        with open(log, "r+", encoding="utf-8") as fh:
            lines = fh.read().splitlines()
            fh.seek(0)
            fh.truncate()
    except FileNotFoundError:
        return []
    return lines
