"""A POST or PUT capture's request body as a query in its URL key, as pywb 2.10 writes it.

pywb's indexer (``cdx-indexer -p``, and ``wb-manager``'s collection indexing) and its
replay give a capture made by a request other than GET the key of its URL with
``__wb_method=METHOD`` and the request body appended as a query, so that two POSTs to
one URL with different bodies are two captures (``__wb_method=post&foo=bar``); the
CDXJ line carries ``method`` and ``requestBody``. The body becomes a query by its
Content-Type (``body_query``):

* ``application/x-www-form-urlencoded``: the form, its %-escapes and ``+`` decoded;
* ``multipart/...``: the form's fields, URL-encoded (a file's bytes too);
* ``application/json`` (and ``text/plain`` that is JSON): the JSON's values by their
  names, flattened (``{"a": {"b": 1}, "c": [true, 2.0]}`` -> ``b=1&c=true&c.2_=2``), or
  nothing when it is no JSON;
* anything else: ``__wb_post_data=`` and the body in base64.

The query is cut at 4,096 characters. A body is read up to the request's Content-Length
(none without one) as the request record holds it (a chunked body as its chunks are), and
at most ``MAX_BODY`` bytes of it.

``lookup_url`` is the other side, the URL whose key a CDX API request with ``method`` and
``requestBody`` asks for (OutbackCDX's parameters, and what pywb's replay appends).
"""
import base64
import json
import math
from urllib.parse import unquote_plus, urlencode

# What of a query goes into a key, as pywb keeps it
MAX_QUERY_LENGTH = 4096
# The methods whose body goes into the key (any other method but GET gives its name only)
BODY_METHODS = ("POST", "PUT")
# Bytes of a body read at most: pywb holds a body whole in memory, however large an upload
# is; a binary body's key needs its first 3 KB, a form or JSON longer than this may be
# keyed otherwise than pywb keys it (no such request was met)
MAX_BODY = 1 << 24


def body_query(content_type, body):
    """The query a request body of this Content-Type makes ('' for none)."""
    mime = content_type or ""
    if mime.startswith("application/x-www-form-urlencoded"):
        try:
            query = unquote_plus(body.decode("utf-8"))
        except UnicodeDecodeError:
            query = _binary(body)
    elif mime.startswith("multipart/"):
        query = _multipart(mime, body)
    elif mime.startswith("application/json"):
        query = _json_or(body, "")
    elif mime.startswith("text/plain"):
        query = _json_or(body, None)
        if query is None:
            query = _binary(body)
    else:
        # (an AMF body, application/x-amf, which pywb decodes with PyAMF, too)
        query = _binary(body)
    return query[:MAX_QUERY_LENGTH]


def _binary(body):
    return "__wb_post_data=" + base64.b64encode(body).decode("ascii")


def _json_or(body, otherwise):
    """The flattened query of a JSON body; ``otherwise`` when it is no JSON (or holds a
    number too large to write, as pywb's fails then)."""
    try:
        return urlencode(_flatten(json.loads(body)))
    except (ValueError, OverflowError, RecursionError):
        return otherwise


def _flatten(document):
    """The scalars of a JSON document by the name of the member holding them (items of a
    list by the list's); a name met again gets ``.N_`` (N from 2), as pywb's replay names
    them too. Values as JavaScript writes them: true, false, null, 2 for 2.0."""
    data, repeats = {}, {}

    def put(name, value):
        if name in data:
            repeats[name] = repeats.get(name, 1) + 1
            name = f"{name}.{repeats[name]}_"
        data[name] = value

    def walk(value, name):
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item, key)
        elif isinstance(value, list):
            for item in value:
                walk(item, name)
        elif name:
            if value is True or value is False:
                put(name, "true" if value else "false")
            elif value is None:
                put(name, "null")
            elif isinstance(value, float) and math.modf(value)[0] == 0.0:
                put(name, str(int(value)))
            else:
                put(name, str(value))

    walk(document, "")
    return data


def _multipart(mime, body):
    """A multipart form's fields URL-encoded in their order: a field's text (UTF-8, bad
    bytes replaced), a file's bytes; the body in base64 when the Content-Type has no usable
    boundary."""
    boundary = _boundary(mime)
    if boundary is None:
        return _binary(body)
    from email.parser import BytesParser  # seldom needed
    from email.policy import HTTP  # (names in UTF-8, as pywb's parser reads them)
    # (the boundary quoted: pywb's parser takes one with characters that need it unquoted)
    quoted = boundary.replace("\\", "\\\\").replace('"', '\\"')
    head = f'{mime.split(";", 1)[0].strip()}; boundary="{quoted}"'
    message = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + head.encode("latin-1", "replace")
                                                  + b"\r\n\r\n" + body)
    values = []
    for part in message.get_payload() if message.is_multipart() else ():
        if part.is_multipart():
            continue
        # (a part without a name is "None", as pywb's parser names it)
        name = str(part.get_param("name", header="content-disposition"))
        data = part.get_payload(decode=True) or b""
        if part.get_param("filename", header="content-disposition") is None:
            data = data.decode("utf-8", "replace")
        values.append((name, data))
    return urlencode(values, True)


def _boundary(mime):
    """The boundary of a multipart Content-Type, if pywb's parser takes it (up to 201
    printable ASCII characters, the last no space)."""
    for param in mime.split(";")[1:]:
        key, _, value = param.strip().partition("=")
        if key.strip().lower() == "boundary":
            value = value.strip().strip('"')
            if 0 < len(value) <= 201 and value.isascii() and value.isprintable() \
                    and not value.endswith(" "):
                return value
    return None


def method_query(method, content_type, length, stream):
    """(METHOD, query) of a request: the body read from ``stream`` up to ``length`` (the
    Content-Length header's value; no body without a number above 0) for POST and PUT."""
    method = method.upper()
    try:
        length = int(length)
    except (TypeError, ValueError):
        length = 0
    if method not in BODY_METHODS or length <= 0:
        return method, ""
    chunks = []
    length = min(length, MAX_BODY)
    while length > 0:
        chunk = stream.read(length)
        if not chunk:
            break
        chunks.append(chunk)
        length -= len(chunk)
    return method, body_query(content_type, b"".join(chunks))


def append_query(url, method, query):
    """``url`` with ``__wb_method=METHOD`` and the query appended (``url`` for GET)."""
    if method == "GET":
        return url
    return f"{url}{'&' if '?' in url else '?'}__wb_method={method}{'&' + query if query else ''}"


def lookup_url(url, method, request_body):
    """The URL whose key a lookup of ``url`` by ``method`` with ``request_body`` (a query,
    as ``requestBody`` holds it) asks for: ``url`` itself for GET or no method."""
    if not method or method.upper() == "GET":
        return url
    return append_query(url, method.upper(), request_body or "")
