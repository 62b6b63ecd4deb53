"""``serve``'s search page: a form over the collections, and a table of the captures a
search finds (a link to all of them in JSON, as the CDX API gives them)."""
import html
import json
import time
import urllib.parse

from ..options import MATCH_TYPES
from .request import BadParameter, CdxRequest

# rows the search page shows (its JSON link has them all)
PAGE_ROWS = 500
PAGE_HEAD = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>webarchive-index: captures</title>
<style>body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse;margin-top:1em}
td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left;font-size:90%}
th{background:#eee}.error{color:#a00}input,select,button{font-size:100%}</style></head>
<body><h1>Captures</h1>
"""


def page(collections, params, limits, failure):
    """The search page (``/``) as ``params`` (the query string's) ask it: a form, and the
    first ``PAGE_ROWS`` captures found with a link to all of them in JSON. ``failure``
    says an exception of a collection as ``serve`` says it."""
    def one(name, default=""):
        return (params.get(name) or [default])[-1]
    names = list(collections)
    coll, url, match_type = one("coll", names[0] if names else ""), one("url"), one("matchType", "exact")
    body = [PAGE_HEAD, '<form method="get" action="/"><label>Collection <select name="coll">']
    body += [f'<option{" selected" if n == coll else ""}>{html.escape(n)}</option>' for n in names]
    body.append('</select></label> <label>URL <input name="url" size="50" required value="'
                f'{html.escape(url)}" placeholder="example.com/path, example.com/*, *.example.com">'
                '</label> <label>Match <select name="matchType">')
    body += [f'<option{" selected" if m == match_type else ""}>{m}</option>' for m in MATCH_TYPES]
    body.append('</select></label> <button type="submit">Search</button></form>')
    if url:
        body.append(_results(collections, coll, url, match_type, limits, failure))
    body.append("</body></html>\n")
    return "".join(body).encode("utf-8")

def _results(collections, coll, url, match_type, limits, failure):
    query = urllib.parse.urlencode({"url": url, "matchType": match_type, "output": "json"})
    link = f"/{urllib.parse.quote(coll)}/cdx?{query}"
    if coll not in collections:
        return f'<p class="error">No collection {html.escape(coll)}.</p>'
    collection = collections[coll].current()
    try:
        request = CdxRequest(url, match_type=match_type, limit=PAGE_ROWS + 1, output="json", limits=limits)
        _, body = collection.answer(request, time.monotonic() + (limits.seconds or 60))
        rows = [json.loads(line) for line in body]
    except BadParameter as exc:
        return f'<p class="error">{html.escape(exc.message)}</p>'
    except Exception as exc:
        return f'<p class="error">{html.escape(failure(exc, collection)[1])}</p>'
    more = len(rows) > PAGE_ROWS
    out = [f'<p id="summary">{min(len(rows), PAGE_ROWS)}{"+" if more else ""} captures of '
           f'<b>{html.escape(url)}</b> ({html.escape(match_type)}) in {html.escape(coll)}: '
           f'<a id="json" href="{html.escape(link)}">JSON</a></p>']
    if rows:
        out.append('<table id="captures"><thead><tr><th>timestamp</th><th>url</th><th>status</th>'
                   "<th>mime</th><th>length</th><th>archive</th></tr></thead><tbody>")
        for row in rows[:PAGE_ROWS]:
            out.append("<tr>" + "".join(f"<td>{html.escape(str(row.get(f, '')))}</td>" for f in
                                        ("timestamp", "url", "status", "mime", "length", "filename")) + "</tr>")
        out.append("</tbody></table>")
    return "".join(out)
