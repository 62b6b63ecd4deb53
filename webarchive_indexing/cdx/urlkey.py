"""URL keys: ``url_key``, the SURT of a URL as pywb's indexer and every reader of our
clusters make it (``surt.surt``), quicker for the usual URL."""
import contextlib
import functools
import importlib
import re
import sys
import types


class _Deferred(types.ModuleType):
    """Stands in for a module in the globals of the modules that imported it in
    ``_importing_without``: the module is imported when one of its attributes is first
    used, and then takes the stand-in's place in those globals."""

    def __init__(self, name):
        super().__init__(name)
        self.holders = []  # the globals (dicts) that hold the stand-in

    def __getattr__(self, attr):
        if sys.modules.get(self.__name__) is self:  # used within the block
            del sys.modules[self.__name__]
        module = importlib.import_module(_IN_PLACE_OF.get(self.__name__, self.__name__))
        for namespace in self.holders:
            for name, value in list(namespace.items()):
                if value is self:
                    namespace[name] = module
        return getattr(module, attr)


@contextlib.contextmanager
def _importing_without(*names):
    """Modules imported in the block that import one of ``names`` (not imported yet) get
    a ``_Deferred`` stand-in for it; sys.modules holds the stand-ins only in the block."""
    stand_ins = {name: _Deferred(name) for name in names if name not in sys.modules}
    before = set(sys.modules)
    sys.modules.update(stand_ins)
    try:
        yield
    finally:
        for name, stand_in in stand_ins.items():
            if sys.modules.get(name) is stand_in:
                del sys.modules[name]
        for name in set(sys.modules) - before:
            namespace = vars(sys.modules[name])
            for stand_in in stand_ins.values():
                if any(value is stand_in for value in namespace.values()):
                    stand_in.holders.append(namespace)


# surt imports modules that indexing never or seldom needs: tldextract, and requests with
# it, for public-suffix helpers (~0.2 s), and socket, for hosts written as numbers (~8 ms).
# Deferring them shortens the start of every indexing process, and changes nothing for the
# rest of the process: a later ``import socket`` gets socket itself. What surt uses of
# socket (inet_ntoa, gethostbyname_ex, gaierror, herror) is the C module's own, which
# socket.py re-exports: surt gets that module, without socket.py's enums.
_IN_PLACE_OF = {"socket": "_socket"}
with _importing_without("tldextract", "socket"):
    from surt import surt
    from surt.GoogleURLCanonicalizer import (escapeOnce, minimalEscape, normalizePath,
                                             unescapeRepeatedly)
    from surt.URLRegexTransformer import stripPathSessionID, stripQuerySessionID

# A URL whose SURT ``urlkey`` is put together here, from surt's own result for its origin
# and its own functions for the rest: http(s), a plain host name and port, and a path and
# query of printable ASCII (no '#', no space).
PLAIN_URL = re.compile(r"(https?://[A-Za-z0-9.-]+(?::[0-9]+)?)(/[!\"$-~]*)?\Z")
# What each of surt's query session-id patterns needs (in any case): without them all,
# stripQuerySessionID changes nothing.
QUERY_SESSION_MARKERS = re.compile("jsessionid=|phpsessid=|sid=|aspsessionid|cfid=")


@functools.lru_cache(maxsize=1 << 14)
def origin_key(origin):
    """The SURT of ``origin`` (scheme://host[:port]) up to its path, e.g. 'com,example)';
    None when its host leaves no host in the SURT (the path is then treated differently)."""
    key = surt(origin + "/")
    return key[:-1] if key.endswith(")/") else None


def url_key(url):
    """``surt.surt(url)``, the same string, quicker: for a ``PLAIN_URL`` the origin's part
    is cached, and the path and query go through the steps of surt's canonicalizers (its own
    functions, but for the query's sort, done alike on str) without its parsing, and without
    the steps that change nothing in them. (The checks are on str: ``in`` on bytes costs a
    caught TypeError each time.)"""
    plain = PLAIN_URL.match(url)
    origin = plain and origin_key(plain.group(1))
    if not origin:
        return surt(url)
    path, _, query = (plain.group(2) or "").partition("?")
    # GoogleURLCanonicalizer: unescape, normalize, escape the path; unescape, escape the query
    if "%" in path:
        path = escapeOnce(normalizePath(unescapeRepeatedly(path.encode()))).decode()
    elif "//" in path or "/." in path or not path:
        path = normalizePath(path.encode()).decode()
    if "%" in query:
        query = minimalEscape(query.encode()).decode()
    # IAURLCanonicalizer: lower-case, strip session ids, sort the query's arguments
    path = path.lower()
    if "(" in path:
        path = stripPathSessionID(path.encode()).decode()
    if len(path) > 1 and path.endswith("/"):
        path = path[:-1]
    if query:
        lower = query.lower()
        if QUERY_SESSION_MARKERS.search(lower):
            lower = stripQuerySessionID(query.encode()).lower().decode()
        # alphaReorderQuery, on str: the (name, value) pairs sorted
        query = "&".join(["=".join(arg) for arg in sorted(
            [tuple(arg.split("=", 1)) for arg in lower.split("&")])]) if "&" in lower else lower
    return origin + (path + "?" + query if query else path)
