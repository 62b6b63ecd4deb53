/* The compiled twin of linecheck.ALL_WELL_FORMED["cdxj"].fullmatch: whether a chunk of
 * CDXJ lines, each ending in \n, are all well-formed. The regular expression spends about
 * 2 us a line in the repeats of its JSON grammar, more than the rest of a build from CDX
 * files does with a line; this reads each byte once. It takes exactly the lines the
 * expression takes (tests/test_build_fast.py compares them on crafted and random lines):
 *
 *   line   := KEY ' ' [0-9]+ ' ' '{' WS member (',' WS member)* '}' '\n'
 *   KEY    := any bytes but ASCII white space (\t \n \v \f \r and space) and \x1c-\x1f
 *   member := STRING WS ':' WS VALUE WS         WS := [ \t]*
 *   STRING := '"' ([^"\\\x00-\x1f] | '\' (["\\/bfnrt] | 'u' hex{4}))* '"'
 *   VALUE  := STRING | '-'? ('0' | [1-9][0-9]*) ('.' [0-9]+)? ([eE] [+-]? [0-9]+)?
 *             | 'true' | 'false' | 'null'
 *
 * and, among the members, one whose key is spelled "offset" and one spelled "length",
 * each valued '"' [0-9]+ '"' or '0' or [1-9][0-9]*.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

typedef const unsigned char *cursor;

static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

static int is_hex(unsigned char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static cursor spaces(cursor p, cursor end)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    return p;
}

/* Bytes a string holds as they are (not '"', '\\' or a control character): PLAIN, and
 * bytes of a URL key: KEY (set by init_tables). */
enum { PLAIN = 1, KEY = 2 };
static unsigned char kinds[256];

static void init_tables(void)
{
    for (int c = 0; c < 256; c++) {
        kinds[c] = (c >= 0x20 && c != '"' && c != '\\' ? PLAIN : 0)
                   | (c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f) ? 0 : KEY);
    }
}

/* Past the string at p (which is at its opening quote), or NULL. */
static cursor string(cursor p, cursor end)
{
    p++;
    while (p < end) {
        unsigned char c = *p;
        if (kinds[c] & PLAIN) {
            p++;
            continue;
        }
        if (c == '"')
            return p + 1;
        if (c != '\\')
            return NULL;
        if (++p >= end)
            return NULL;
        c = *p;
        if (c == 'u') {
            if (end - p < 5 || !is_hex(p[1]) || !is_hex(p[2]) || !is_hex(p[3]) || !is_hex(p[4]))
                return NULL;
            p += 5;
        } else if (c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n'
                   || c == 'r' || c == 't') {
            p++;
        } else {
            return NULL;
        }
    }
    return NULL;
}

static cursor digits(cursor p, cursor end)
{
    while (p < end && is_digit(*p))
        p++;
    return p;
}

/* Past the value at p, or NULL; *whole says whether it is an offset's or a length's:
 * '"' [0-9]+ '"', '0' or [1-9][0-9]*. */
static cursor value(cursor p, cursor end, int *whole)
{
    cursor start = p, q;
    *whole = 0;
    if (p >= end)
        return NULL;
    if (*p == '"') {
        q = string(p, end);
        *whole = q != NULL && q - p > 2 && digits(p + 1, end) == q - 1;
        return q;
    }
    if (*p == 't')
        return end - p >= 4 && memcmp(p, "true", 4) == 0 ? p + 4 : NULL;
    if (*p == 'f')
        return end - p >= 5 && memcmp(p, "false", 5) == 0 ? p + 5 : NULL;
    if (*p == 'n')
        return end - p >= 4 && memcmp(p, "null", 4) == 0 ? p + 4 : NULL;
    if (*p == '-')
        p++;
    if (p >= end || !is_digit(*p))
        return NULL;
    p = *p == '0' ? p + 1 : digits(p, end);
    *whole = start[0] != '-';
    if (p < end && *p == '.' && p + 1 < end && is_digit(p[1])) {
        p = digits(p + 1, end);
        *whole = 0;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        q = p + 1;
        if (q < end && (*q == '+' || *q == '-'))
            q++;
        if (q < end && is_digit(*q)) {
            p = digits(q, end);
            *whole = 0;
        }
    }
    return p;
}

/* Past the JSON block at p (at its '{') and its line's '\n', or NULL. */
static cursor json_block(cursor p, cursor end)
{
    int offset = 0, length = 0, whole;
    p = spaces(p + 1, end);
    for (;;) {
        cursor key = p, value_end;
        Py_ssize_t key_length;
        if (p >= end || *p != '"' || (p = string(p, end)) == NULL)
            return NULL;
        key_length = p - key;
        p = spaces(p, end);
        if (p >= end || *p != ':')
            return NULL;
        p = spaces(p + 1, end);
        if ((value_end = value(p, end, &whole)) == NULL)
            return NULL;
        p = spaces(value_end, end);
        if (whole && key_length == 8) {
            if (memcmp(key, "\"offset\"", 8) == 0)
                offset = 1;
            else if (memcmp(key, "\"length\"", 8) == 0)
                length = 1;
        }
        if (p >= end)
            return NULL;
        if (*p == '}')
            break;
        if (*p != ',')
            return NULL;
        p = spaces(p + 1, end);
    }
    p++;
    return offset && length && p < end && *p == '\n' ? p + 1 : NULL;
}

static int all_cdxj(cursor p, cursor end)
{
    while (p < end) {
        cursor start = p;
        while (p < end && (kinds[*p] & KEY))
            p++;
        if (p == start || p >= end || *p != ' ')
            return 0;
        start = ++p;
        p = digits(p, end);
        if (p == start || p + 1 >= end || p[0] != ' ' || p[1] != '{')
            return 0;
        if ((p = json_block(p + 1, end)) == NULL)
            return 0;
    }
    return 1;
}

static PyObject *cdxj_well_formed(PyObject *self, PyObject *arg)
{
    Py_buffer view;
    int result;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    result = all_cdxj(view.buf, (cursor)view.buf + view.len);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return PyBool_FromLong(result);
}

static PyMethodDef methods[] = {
    {"cdxj_well_formed", cdxj_well_formed, METH_O,
     "Whether the bytes are well-formed CDXJ lines, each ending in \\n (as "
     "linecheck.ALL_WELL_FORMED['cdxj'].fullmatch)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_linecheck", NULL, -1, methods,
};

PyMODINIT_FUNC PyInit__linecheck(void)
{
    init_tables();
    return PyModule_Create(&module);
}
