/* The compiled twin of records.GzipMembers: the same walk over a file of gzip members,
 * inflated with ISA-L, linked to it where setup.py found its headers (WALKER_ISAL), else
 * through python-isal's decompressobj (zlib, which every machine building C extensions has,
 * inflates at half ISA-L's speed: slower than the pure Python twin with python-isal), with
 * the same methods, results and errors, so records.py runs unchanged on either.  What it adds
 * is speed: no Python objects per inflated chunk (when linked to ISA-L), and ``skim``, which
 * passes over the records an indexer never lists (requests, metadata) without returning to
 * Python at all.  Beside it, ``header_values``: the values of a tuple of header names read
 * from a header block in one pass, for any walker (headers.pure_header_values' twin, checked
 * against it and warcio by tests/test_header_values.py).  And for ``cdx``, ``skim`` makes the
 * whole CDXJ line of a common record (``make_line``, its SURT key by ``plain_key`` where the
 * URL is plain), whose specification is cdx/indexer.py's Python path (checked against it and
 * surt by tests/test_cdx_fastpath.py); ``zstd_skim`` makes it too for a .warc.zst's record
 * whose header blocks are in its frame's output (``line_head``, ``line_tail``: make_line's
 * core, on any buffer; a payload without a digest hashed by ``zstd_sha1``;
 * tests/test_zstd_fast.py).
 *
 * records.py is the specification: every method here says which Python method it follows,
 * and tests/test_members.py runs both over the same files, good and broken.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#ifdef WALKER_ISAL
#include <isa-l/igzip_lib.h>
#define INFLATER "ISA-L"
#else
/* ISA-L through python-isal's isal_zlib.decompressobj (a dependency, with ISA-L inside its
 * wheel): no headers or library to build against, a Python call per chunk inflated */
#define INFLATER "ISA-L via python-isal"
/* from the module's init */
static PyObject *pyisal_decompressobj, *pyisal_error, *str_decompress, *str_eof, *str_unused_data;
#endif

#define READ_SIZE (1 << 20)
#define FIRST_STEP (1 << 11)
#define CHUNK (1 << 14)
#define TRAILER_MAX 256
#define HEADERS_MAX (1 << 20)
#define HEADER_LINE_MAX (1 << 22)
/* gzipmembers.RESERVED_FLAGS, RESERVED_FLAGS_SET */
#define RESERVED_FLAGS 0xE0
#define RESERVED_FLAGS_SET "gzip member header has reserved flag bits set: not a gzip member " \
    "zlib or pywb read"
/* recordtypes.TOO_LONG_LINE */
#define TOO_LONG_LINE "not a WARC or ARC record: no end of line in 4194304 bytes (NUL bytes " \
    "or other data where a record should start)"

typedef struct {
    PyObject_HEAD
    PyObject *fh, *path, *archive_error, *record_error, *readinto;
    unsigned char *raw;             /* compressed bytes read; raw[rpos] is the next to inflate */
    Py_ssize_t raw_len, raw_cap, rpos;
    long long raw_offset;           /* file offset of raw[0] */
    long long start, end;           /* the current member; end < 0 until inflated to its end */
    unsigned char *out;             /* inflated bytes of the member kept; out[pos] is next */
    Py_ssize_t out_len, out_cap, pos;
    long long dropped;              /* inflated and dropped before out[0] */
    unsigned char *line, *key;      /* the CDXJ line make_line makes, its key */
    Py_ssize_t line_cap, key_cap;
#ifdef WALKER_ISAL
    struct inflate_state inflater;
#else
    PyObject *inflater, *decompress;  /* the member's decompressobj, its bound decompress */
#endif
} Members;

/* -- errors ------------------------------------------------------------------------------- */

static PyObject *
make_error(Members *self, PyObject *cls, long long offset, PyObject *reason)
{
    if (reason == NULL)
        return NULL;
    PyObject *error = PyObject_CallFunction(cls, "OLO", self->path, offset, reason);
    Py_DECREF(reason);
    return error;
}

/* Raise ArchiveError(path, offset, reason); returns NULL. */
static PyObject *
archive_error(Members *self, long long offset, PyObject *reason)
{
    PyObject *error = make_error(self, self->archive_error, offset, reason);
    if (error != NULL) {
        PyErr_SetObject(self->archive_error, error);
        Py_DECREF(error);
    }
    return NULL;
}

#ifdef WALKER_ISAL
/* The words python-isal's IsalError gives for each ISA-L inflate error. */
static const char *
inflate_error_text(int code)
{
    switch (code) {
    case ISAL_INVALID_BLOCK: return "Invalid deflate block found";
    case ISAL_INVALID_SYMBOL: return "Invalid deflate symbol found";
    case ISAL_INVALID_LOOKBACK: return "Invalid lookback distance found";
    case ISAL_INVALID_WRAPPER: return "Invalid gzip/zlib wrapper found";
    case ISAL_UNSUPPORTED_METHOD: return "Gzip/zlib wrapper specifies unsupported compress method";
    case ISAL_INCORRECT_CHECKSUM: return "Incorrect checksum found";
    case ISAL_NEED_DICT: return "Dictionary needed";
    default: return "Unknown error";
    }
}
#endif

/* -- buffers ------------------------------------------------------------------------------ */

static int
reserve(unsigned char **buf, Py_ssize_t *cap, Py_ssize_t need)
{
    if (need <= *cap)
        return 0;
    Py_ssize_t cap2 = *cap ? *cap : 1 << 16;
    while (cap2 < need)
        cap2 *= 2;
    unsigned char *buf2 = PyMem_Realloc(*buf, cap2);
    if (buf2 == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *buf = buf2;
    *cap = cap2;
    return 0;
}

/* func(memoryview of buf[0:len]); the view is released after the call, so that it cannot
 * outlive the buffer, which the next read or inflate may move. */
static PyObject *
call_with_view(PyObject *func, unsigned char *buf, Py_ssize_t len, int flags)
{
    PyObject *view = PyMemoryView_FromMemory((char *)buf, len, flags);
    if (view == NULL)
        return NULL;
    PyObject *result = PyObject_CallOneArg(func, view);
    /* (an exception func raised waits while the view is released) */
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyObject *released = PyObject_CallMethod(view, "release", NULL);
    Py_DECREF(view);
    if (released == NULL) {
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(traceback);
        Py_XDECREF(result);
        return NULL;
    }
    Py_DECREF(released);
    PyErr_Restore(type, value, traceback);
    return result;
}

/* GzipMembers._read_raw: drop the bytes inflated, append the next block of the file.
 * 1 if read, 0 at the end of the file (or a None read: no data), -1 on error. */
static int
read_raw(Members *self)
{
    Py_ssize_t rest = self->raw_len - self->rpos;
    if (rest)
        memmove(self->raw, self->raw + self->rpos, rest);
    self->raw_offset += self->rpos;
    self->raw_len = rest;
    self->rpos = 0;
    if (reserve(&self->raw, &self->raw_cap, rest + READ_SIZE) < 0)
        return -1;
    Py_ssize_t got;
    if (self->readinto != NULL) {
        PyObject *n = call_with_view(self->readinto, self->raw + rest, READ_SIZE, PyBUF_WRITE);
        if (n == NULL)
            return -1;
        got = n == Py_None ? 0 : PyLong_AsSsize_t(n);
        Py_DECREF(n);
        if (got < 0 || got > READ_SIZE) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_OSError, "readinto() returned an impossible size");
            return -1;
        }
    } else {
        PyObject *data = PyObject_CallMethod(self->fh, "read", "n", (Py_ssize_t)READ_SIZE);
        if (data == NULL)
            return -1;
        if (data != Py_None && (!PyBytes_Check(data) || PyBytes_GET_SIZE(data) > READ_SIZE)) {
            Py_DECREF(data);
            PyErr_SetString(PyExc_TypeError, "read() must return at most the bytes asked for");
            return -1;
        }
        got = data == Py_None ? 0 : PyBytes_GET_SIZE(data);
        if (got)
            memcpy(self->raw + rest, PyBytes_AS_STRING(data), got);
        Py_DECREF(data);
    }
    self->raw_len += got;
    return got > 0;
}

/* GzipMembers._inflate: inflate up to ``step`` compressed bytes, appending the output to out
 * (from out_len). 0, or -1 with ArchiveError raised. */
static int
inflate_step(Members *self, Py_ssize_t step)
{
    if (self->rpos == self->raw_len) {
        int more = read_raw(self);
        if (more < 0)
            return -1;
        if (more == 0) {
            archive_error(self, self->start, PyUnicode_FromString(
                "gzip member is truncated: the file ends inside it"));
            return -1;
        }
    }
    Py_ssize_t avail = self->raw_len - self->rpos;
    Py_ssize_t chunk = avail < step ? avail : step;
#ifdef WALKER_ISAL
    struct inflate_state *st = &self->inflater;
    st->next_in = self->raw + self->rpos;
    st->avail_in = (uint32_t)chunk;
    do {
        if (reserve(&self->out, &self->out_cap, self->out_len + 4 * CHUNK) < 0)
            return -1;
        st->next_out = self->out + self->out_len;
        /* ISA-L counts in 32 bits; read() of a huge member may hold more than that */
        Py_ssize_t free_space = self->out_cap - self->out_len;
        uint32_t room = free_space > (1 << 30) ? 1 << 30 : (uint32_t)free_space;
        st->avail_out = room;
        int err = isal_inflate(st);
        self->out_len += room - st->avail_out;
        if (err != ISAL_DECOMP_OK) {
            archive_error(self, self->start, PyUnicode_FromFormat(
                "corrupt gzip data: Error %d %s", err, inflate_error_text(err)));
            return -1;
        }
    } while (st->block_state != ISAL_BLOCK_FINISH && (st->avail_in > 0 || st->avail_out == 0));
    if (st->block_state == ISAL_BLOCK_FINISH) {
        /* input ISA-L read ahead into its bit buffer belongs to the next member */
        self->rpos = (st->next_in - self->raw) - st->read_in_length / 8;
        self->end = self->raw_offset + self->rpos;
    } else {
        self->rpos += chunk;
    }
    return 0;
#else
    PyObject *data = call_with_view(self->decompress, self->raw + self->rpos, chunk, PyBUF_READ);
    if (data == NULL) {
        if (!PyErr_ExceptionMatches(pyisal_error))
            return -1;
        PyObject *type, *value, *traceback;
        PyErr_Fetch(&type, &value, &traceback);
        PyErr_NormalizeException(&type, &value, &traceback);
        PyObject *reason = PyUnicode_FromFormat("corrupt gzip data: %S", value);
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(traceback);
        archive_error(self, self->start, reason);
        return -1;
    }
    Py_ssize_t n = PyBytes_GET_SIZE(data);
    if (reserve(&self->out, &self->out_cap, self->out_len + n) < 0) {
        Py_DECREF(data);
        return -1;
    }
    memcpy(self->out + self->out_len, PyBytes_AS_STRING(data), n);
    self->out_len += n;
    Py_DECREF(data);
    PyObject *eof = PyObject_GetAttr(self->inflater, str_eof);
    if (eof == NULL)
        return -1;
    int finished = eof == Py_True;
    Py_DECREF(eof);
    if (finished) {
        PyObject *unused = PyObject_GetAttr(self->inflater, str_unused_data);
        if (unused == NULL)
            return -1;
        self->rpos += chunk - PyBytes_GET_SIZE(unused);
        Py_DECREF(unused);
        self->end = self->raw_offset + self->rpos;
    } else {
        self->rpos += chunk;
    }
    return 0;
#endif
}

/* GzipMembers._fill: drop what was read, inflate the next chunk.  (A read position past the
 * bytes inflated, after a skip too far, counts as dropped but skips nothing more, as there.) */
static int
fill(Members *self)
{
    if (self->pos) {
        Py_ssize_t kept = self->out_len > self->pos ? self->out_len - self->pos : 0;
        memmove(self->out, self->out + self->pos, kept);
        self->out_len = kept;
        self->dropped += self->pos;
        self->pos = 0;
    }
    return inflate_step(self, CHUNK);
}

/* GzipMembers.next_member: 1 when a member was started, 0 at the end of the file. */
static int
start_member(Members *self)
{
    if (self->raw_len - self->rpos < 4) {
        int more = read_raw(self);
        if (more < 0)
            return -1;
        if (more == 0 && self->rpos == self->raw_len)
            return 0;
    }
    self->start = self->raw_offset + self->rpos;
    if (self->raw_len - self->rpos < 2 || self->raw[self->rpos] != 0x1f
            || self->raw[self->rpos + 1] != 0x8b) {
        archive_error(self, self->start, PyUnicode_FromString(
            "expected a gzip member here, found other data "
            "(garbage between records, or a file that is not gzip)"));
        return -1;
    }
    if (self->raw_len - self->rpos > 3 && self->raw[self->rpos + 3] & RESERVED_FLAGS) {
        archive_error(self, self->start, PyUnicode_FromString(RESERVED_FLAGS_SET));
        return -1;
    }
    self->end = -1;
    self->pos = 0;
    self->out_len = 0;
    self->dropped = 0;
#ifdef WALKER_ISAL
    isal_inflate_reset(&self->inflater);
    self->inflater.crc_flag = ISAL_GZIP;
#else
    Py_XSETREF(self->inflater, PyObject_CallFunction(pyisal_decompressobj, "i", 31));
    if (self->inflater == NULL)
        return -1;
    Py_XSETREF(self->decompress, PyObject_GetAttr(self->inflater, str_decompress));
    if (self->decompress == NULL)
        return -1;
#endif
    return inflate_step(self, FIRST_STEP) < 0 ? -1 : 1;
}

/* -- the header block --------------------------------------------------------------------- */

/* What warcio's parser takes as blank within a line (records.BLANK_LINE). */
static inline int
is_blank_char(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == 0x0b || c == 0x0c || (c >= 0x1c && c <= 0x1f);
}

/* Where blank characters from j, then a newline, end; -1 if something else comes first. */
static Py_ssize_t
blank_to_newline(const unsigned char *buf, Py_ssize_t j, Py_ssize_t len)
{
    while (j < len && is_blank_char(buf[j]))
        j++;
    return j < len && buf[j] == '\n' ? j + 1 : -1;
}

/* Where FIRST_LINE_BLANK.match(out, at) or BLANK_LINE.search(out, at) ends, or -1. */
static Py_ssize_t
blank_line_end(const unsigned char *buf, Py_ssize_t at, Py_ssize_t len)
{
    Py_ssize_t end = blank_to_newline(buf, at, len);
    for (const unsigned char *nl = memchr(buf + at, '\n', len - at); end < 0 && nl != NULL;
            nl = memchr(nl + 1, '\n', buf + len - nl - 1))
        end = blank_to_newline(buf, nl - buf + 1, len);
    return end;
}

/* GzipMembers.peek_headers: (at, length) of the header block ``start`` bytes past pos. */
static int
peek(Members *self, Py_ssize_t start, Py_ssize_t *at_out, Py_ssize_t *len_out)
{
    for (;;) {
        Py_ssize_t at = self->pos + start;
        Py_ssize_t stop = at <= self->out_len ? blank_line_end(self->out, at, self->out_len) : -1;
        if (stop >= 0 || self->end >= 0 || self->out_len - at > HEADERS_MAX) {
            if (stop < 0)
                stop = self->out_len;
            *at_out = at;
            *len_out = at < stop ? stop - at : 0;
            return 0;
        }
        if (fill(self) < 0)
            return -1;
    }
}

/* records._plain: ASCII, and no continuation line (a line starting with a space or tab). */
static int
plain(const unsigned char *block, Py_ssize_t len)
{
    /* (a word at a time, then line by line: every record's header block passes here) */
    uint64_t bytes = 0, word;
    Py_ssize_t i = 0;
    for (; i + 8 <= len; i += 8) {
        memcpy(&word, block + i, 8);
        bytes |= word;
    }
    for (; i < len; i++)
        bytes |= block[i];
    if (bytes & 0x8080808080808080ULL)
        return 0;
    const unsigned char *end = block + len;
    for (const unsigned char *nl = memchr(block, '\n', len); nl != NULL && nl + 1 < end;
            nl = memchr(nl + 1, '\n', end - nl - 1))
        if (nl[1] == ' ' || nl[1] == '\t')
            return 0;
    return 1;
}

/* str.strip()'s whitespace, for ASCII. */
static inline int
is_space(unsigned char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

/* ASCII's lower case, as str.lower() makes it of an ASCII string. */
static inline unsigned char
lower(unsigned char c)
{
    return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

/* headers.pure_header_values, the lines after the first: of each of the ``n`` header names
 * (ASCII), the value of the first line whose name (up to its first colon, less the spaces and
 * tabs before it; case aside) is it, stripped, as warcio's parser reads it, which stops at the
 * first blank line; values[i] NULL where there is none.  (The block is plain, so no line
 * continues another.) */
static void
find_values(const unsigned char *block, Py_ssize_t len, Py_ssize_t n, const char *const *names,
            const Py_ssize_t *name_lens, const unsigned char **values, Py_ssize_t *value_lens)
{
    const unsigned char *end = block + len;
    Py_ssize_t missing = n;
    for (Py_ssize_t i = 0; i < n; i++)
        values[i] = NULL;
    for (const unsigned char *nl = memchr(block, '\n', len); nl != NULL && missing; ) {
        const unsigned char *line = nl + 1;
        nl = memchr(line, '\n', end - line);
        const unsigned char *stop = nl != NULL ? nl : end;
        while (stop > line && is_space(stop[-1]))
            stop--;
        if (stop == line)
            return;
        const unsigned char *colon = memchr(line, ':', stop - line);
        if (colon == NULL)
            continue;
        const unsigned char *name_end = colon;
        while (name_end > line && (name_end[-1] == ' ' || name_end[-1] == '\t'))
            name_end--;
        Py_ssize_t name_len = name_end - line;
        for (Py_ssize_t i = 0; i < n; i++) {
            if (values[i] != NULL || name_lens[i] != name_len)
                continue;
            Py_ssize_t k = 0;
            while (k < name_len && lower(line[k]) == lower((unsigned char)names[i][k]))
                k++;
            if (k < name_len)
                continue;
            const unsigned char *value = colon + 1;
            while (value < stop && is_space(*value))
                value++;
            values[i] = value;
            value_lens[i] = stop - value;
            missing--;
        }
    }
}

/* Whether value is one of names (a tuple of str, checked by skim). */
static int
equals_any(const unsigned char *value, Py_ssize_t len, PyObject *names)
{
    Py_ssize_t n = PyTuple_GET_SIZE(names);
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t name_len;
        const char *name = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(names, i), &name_len);
        if (name_len == len && memcmp(name, value, len) == 0)
            return 1;
    }
    return 0;
}

/* headers.SKIM_HEADERS */
static const char *const skim_names[3] = {"WARC-Type", "Content-Type", "Content-Length"};
static const Py_ssize_t skim_name_lens[3] = {9, 12, 14};

/* Whether args[first] and args[first + 1] are tuples of str (their UTF-8 made, for
 * equals_any); TypeError(usage) if not. */
static int
name_tuples(PyObject *const *args, Py_ssize_t first, const char *usage)
{
    for (Py_ssize_t i = first; i < first + 2; i++) {
        if (!PyTuple_Check(args[i]))
            goto wrong;
        for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(args[i]); j++)
            if (!PyUnicode_Check(PyTuple_GET_ITEM(args[i], j))
                    || PyUnicode_AsUTF8(PyTuple_GET_ITEM(args[i], j)) == NULL)
                goto wrong;
    }
    return 0;
wrong:
    if (!PyErr_Occurred())
        PyErr_SetString(PyExc_TypeError, usage);
    return -1;
}

/* How skim judges a plain WARC header block (members.skim_values): 1, with *unread its
 * Content-Length, for a record the caller skips (a WARC-Type of skip_types or a Content-Type
 * of skip_content_types) whose Content-Length is a number of at most 17 digits (longer ones
 * are left to Python's big integers); else 0, with *values (unless values is NULL) its
 * (WARC-Type, Content-Type, Content-Length), each str or None; -1 on error. */
static int
judge_block(const unsigned char *block, Py_ssize_t len, PyObject *skip_types,
            PyObject *skip_content_types, long long *unread, PyObject **values)
{
    const unsigned char *found[3];
    Py_ssize_t found_lens[3];
    find_values(block, len, 3, skim_names, skim_name_lens, found, found_lens);
    const unsigned char *type = found[0], *content_type = found[1], *length = found[2];
    int skip = (type != NULL ? equals_any(type, found_lens[0], skip_types)
                             : equals_any((const unsigned char *)"", 0, skip_types))
        || (content_type != NULL && equals_any(content_type, found_lens[1], skip_content_types));
    if (length == NULL || found_lens[2] == 0 || found_lens[2] > 17)
        skip = 0;
    *unread = 0;
    for (Py_ssize_t i = 0; skip && i < found_lens[2]; i++) {
        if (length[i] < '0' || length[i] > '9')
            skip = 0;
        *unread = *unread * 10 + (length[i] - '0');
    }
    if (skip || values == NULL)
        return skip;
    *values = Py_BuildValue(
        "(NNN)",
        type != NULL ? PyUnicode_DecodeASCII((const char *)type, found_lens[0], NULL) : Py_NewRef(Py_None),
        content_type != NULL ? PyUnicode_DecodeASCII((const char *)content_type, found_lens[1], NULL)
                             : Py_NewRef(Py_None),
        length != NULL ? PyUnicode_DecodeASCII((const char *)length, found_lens[2], NULL) : Py_NewRef(Py_None));
    return *values == NULL ? -1 : 0;
}

/* -- methods ------------------------------------------------------------------------------ */

static PyObject *
Members_next_member(Members *self, PyObject *unused)
{
    int started = start_member(self);
    if (started < 0)
        return NULL;
    if (started == 0)
        Py_RETURN_NONE;
    return PyLong_FromLongLong(self->start);
}

static PyObject *
Members_tell(Members *self, PyObject *unused)
{
    return PyLong_FromLongLong(self->dropped + self->pos);
}

/* A size of any magnitude, as Python's ints are: too large for a Py_ssize_t is as good as
 * no limit (no member is that long), too small as any negative size. */
static int
as_size(PyObject *obj, Py_ssize_t *size)
{
    int overflow;
    long long n = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (n == -1 && PyErr_Occurred())
        return -1;
    *size = overflow > 0 || n > PY_SSIZE_T_MAX ? PY_SSIZE_T_MAX : overflow < 0 || n < 0 ? -1 : n;
    return 0;
}

/* The size argument of read and readline: PY_SSIZE_T_MAX for none, None or a negative one. */
static int
size_arg(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t *size)
{
    *size = PY_SSIZE_T_MAX;
    if (nargs > 1) {
        PyErr_SetString(PyExc_TypeError, "expected at most one argument, the size");
        return -1;
    }
    if (nargs == 1 && args[0] != Py_None) {
        if (as_size(args[0], size) < 0)
            return -1;
        if (*size < 0)
            *size = PY_SSIZE_T_MAX;
    }
    return 0;
}

static PyObject *
Members_read(Members *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t size;
    if (size_arg(args, nargs, &size) < 0)
        return NULL;
    while (self->out_len - self->pos < size && self->end < 0)
        if (fill(self) < 0)
            return NULL;
    Py_ssize_t n = self->out_len - self->pos;
    if (n > size)
        n = size;
    if (n < 0)
        n = 0;
    PyObject *data = PyBytes_FromStringAndSize((char *)self->out + self->pos, n);
    if (data != NULL)
        self->pos += n;
    return data;
}

static PyObject *
Members_readline(Members *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t size, stop;
    if (size_arg(args, nargs, &size) < 0)
        return NULL;
    for (;;) {
        const unsigned char *nl = self->pos < self->out_len
            ? memchr(self->out + self->pos, '\n', self->out_len - self->pos) : NULL;
        if (nl != NULL || self->end >= 0) {
            stop = nl != NULL ? nl - self->out + 1 : self->out_len;
            break;
        }
        Py_ssize_t held = self->out_len - self->pos;
        if (held >= size) {
            stop = self->out_len;
            break;
        }
        if (held > HEADER_LINE_MAX)
            return archive_error(self, self->start, PyUnicode_FromString(TOO_LONG_LINE));
        if (fill(self) < 0)
            return NULL;
    }
    if (stop - self->pos > size)  /* (not stop > pos + size: that overflows for huge sizes) */
        stop = self->pos + size;
    PyObject *line = PyBytes_FromStringAndSize((char *)self->out + self->pos,
                                               stop > self->pos ? stop - self->pos : 0);
    if (line != NULL)
        self->pos = stop;
    return line;
}

static PyObject *
Members_feed(Members *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "feed(consume, size)");
        return NULL;
    }
    PyObject *consume = args[0];
    Py_ssize_t size;
    if (as_size(args[1], &size) < 0)
        return NULL;
    Py_ssize_t passed = 0;
    for (;;) {
        Py_ssize_t n = self->out_len - self->pos;
        if (n > size - passed)
            n = size - passed;
        if (n < 0)
            n = 0;
        PyObject *result = call_with_view(consume, self->out + self->pos, n, PyBUF_READ);
        if (result == NULL)
            return NULL;
        Py_DECREF(result);
        passed += n;
        self->pos += n;
        if (passed == size || self->end >= 0)
            return PyLong_FromSsize_t(passed);
        self->dropped += self->out_len;
        self->out_len = 0;
        self->pos = 0;
        if (inflate_step(self, CHUNK) < 0)
            return NULL;
    }
}

/* The one optional int argument of peek_headers and drain, into *value (left as it is when
 * not given). */
static int
optional_int(PyObject *const *args, Py_ssize_t nargs, const char *usage, Py_ssize_t *value)
{
    if (nargs > 1) {
        PyErr_SetString(PyExc_TypeError, usage);
        return -1;
    }
    if (nargs == 1 && (*value = PyLong_AsSsize_t(args[0])) == -1 && PyErr_Occurred())
        return -1;
    return 0;
}

static PyObject *
Members_peek_headers(Members *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t start = 0, at, len;
    if (optional_int(args, nargs, "peek_headers(start=0)", &start) < 0
            || peek(self, start, &at, &len) < 0)
        return NULL;
    return PyBytes_FromStringAndSize((char *)self->out + at, len);
}

static PyObject *
Members_skip(Members *self, PyObject *arg)
{
    Py_ssize_t size = PyLong_AsSsize_t(arg);
    if (size == -1 && PyErr_Occurred())
        return NULL;
    if (size < 0)
        return PyErr_Format(PyExc_ValueError, "skip(size) takes a size of 0 or more");
    self->pos += size;
    Py_RETURN_NONE;
}

/* GzipMembers.drain: inflate the rest of the member; in *size the bytes from the read position
 * to its end, in head at most TRAILER_MAX of them from ``skip`` (0 or more) on. */
static int
drain(Members *self, long long skip, unsigned char *head, Py_ssize_t *head_len, long long *size)
{
    /* (a read position past the bytes inflated, after a skip too far, makes *size negative
     * at first: the bytes skipped are yet to come) */
    *size = (long long)self->out_len - self->pos;
    *head_len = skip < *size ? (*size - skip < TRAILER_MAX ? *size - skip : TRAILER_MAX) : 0;
    if (*head_len)
        memcpy(head, self->out + self->pos + skip, *head_len);
    self->out_len = self->pos = 0;
    while (self->end < 0) {
        if (inflate_step(self, CHUNK) < 0)
            return -1;
        long long n = self->out_len;
        if (*head_len < TRAILER_MAX && *size + n > skip) {
            long long at = skip > *size ? skip - *size : 0;
            Py_ssize_t take = n - at < TRAILER_MAX - *head_len ? n - at : TRAILER_MAX - *head_len;
            memcpy(head + *head_len, self->out + at, take);
            *head_len += take;
        }
        *size += n;
        self->out_len = 0;
    }
    return 0;
}

static PyObject *
Members_drain(Members *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t skip = 0, head_len;
    unsigned char head[TRAILER_MAX];
    long long size;
    if (optional_int(args, nargs, "drain(skip=0)", &skip) < 0)
        return NULL;
    if (skip < 0)
        return PyErr_Format(PyExc_ValueError, "skip must be 0 or more");
    if (drain(self, skip, head, &head_len, &size) < 0)
        return NULL;
    return Py_BuildValue("y#L", (char *)head, head_len, size);
}

/* str.strip()'s whitespace in bytes (and \S's complement in a bytes pattern). */
static inline int
is_byte_space(unsigned char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}

/* Where a run of non-whitespace from i ends, if it has at least ``min_digits`` characters and,
 * when min_digits > 0, only digits; else -1. */
static Py_ssize_t
field_end(const unsigned char *buf, Py_ssize_t i, Py_ssize_t len, Py_ssize_t min_digits)
{
    Py_ssize_t j = i;
    for (; j < len && !is_byte_space(buf[j]); j++)
        if (min_digits && (buf[j] < '0' || buf[j] > '9'))
            return -1;
    return j - i >= (min_digits ? min_digits : 1) ? j : -1;
}

/* records.ANOTHER_RECORD.match: after whitespace, a WARC header or an ARC header line. */
static int
another_record(const unsigned char *buf, Py_ssize_t len)
{
    static const Py_ssize_t min_digits[5] = {0, 0, 12, 0, 1};
    Py_ssize_t i = 0;
    while (i < len && is_byte_space(buf[i]))
        i++;
    if (len - i >= 5 && memcmp(buf + i, "WARC/", 5) == 0)
        return 1;
    for (int f = 0; f < 5; f++) {
        if (f > 0) {
            if (i >= len || buf[i] != ' ')
                return 0;
            i++;
        }
        if ((i = field_end(buf, i, len, min_digits[f])) < 0)
            return 0;
    }
    if (i < len && buf[i] == '\r')
        i++;
    return i < len && buf[i] == '\n';
}

/* GzipMembers.finish: None, or a RecordError in *problem (new reference). -1 with an
 * ArchiveError raised. ``unread`` is a Python int of any size. */
static int
finish(Members *self, PyObject *unread, PyObject **problem)
{
    unsigned char head[TRAILER_MAX];
    Py_ssize_t head_len;
    long long rest;
    int overflow;
    *problem = NULL;
    long long skip = PyLong_AsLongLongAndOverflow(unread, &overflow);
    if (skip == -1 && PyErr_Occurred())
        return -1;
    if (overflow > 0)
        skip = LLONG_MAX;
    if (skip < 0)
        skip = 0;
    if (drain(self, skip, head, &head_len, &rest) < 0)
        return -1;
    PyObject *rest_obj = PyLong_FromLongLong(rest);
    PyObject *short_by = rest_obj == NULL ? NULL : PyNumber_Subtract(unread, rest_obj);
    Py_XDECREF(rest_obj);
    if (short_by == NULL)
        return -1;
    long long trailer = -PyLong_AsLongLongAndOverflow(short_by, &overflow);
    if (overflow > 0 || trailer < 0) {
        *problem = make_error(self, self->record_error, self->start, PyUnicode_FromFormat(
            "record is cut short: its gzip member ends %S bytes before the Content-Length says",
            short_by));
        Py_DECREF(short_by);
        return *problem == NULL ? -1 : 0;
    }
    Py_DECREF(short_by);
    int blank = trailer <= head_len;
    for (Py_ssize_t i = 0; blank && i < head_len; i++)
        blank = is_byte_space(head[i]);
    if (blank)
        return 0;
    *problem = make_error(self, self->record_error, self->start, another_record(head, head_len)
        ? PyUnicode_FromFormat("gzip member holds more than one record (%lld bytes follow the "
                               "first): the file is not compressed record by record, so its "
                               "records cannot be addressed by byte range", trailer)
        : PyUnicode_FromFormat("record is longer than its Content-Length says: %lld more bytes "
                               "follow it in its gzip member", trailer));
    return *problem == NULL ? -1 : 0;
}

static PyObject *
Members_finish(Members *self, PyObject *arg)
{
    PyObject *problem;
    if (!PyLong_Check(arg))
        return PyErr_Format(PyExc_TypeError, "finish(unread) takes an int");
    if (finish(self, arg, &problem) < 0)
        return NULL;
    if (problem == NULL)
        Py_RETURN_NONE;
    return problem;
}

/* Where records.MEMBER_START first matches raw from ``from``, or -1. */
static Py_ssize_t
find_member_start(const unsigned char *raw, Py_ssize_t from, Py_ssize_t len)
{
    for (Py_ssize_t i = from; i + 4 <= len; i++) {
        const unsigned char *p = memchr(raw + i, 0x1f, len - 3 - i);
        if (p == NULL)
            return -1;
        i = p - raw;
        if (p[1] == 0x8b && p[2] == 0x08 && p[3] < 0x20)
            return i;
    }
    return -1;
}

/* GzipMembers.recover: the offset of the next member after ``start`` whose first bytes
 * inflate (where start_member goes on), or None. */
static PyObject *
Members_recover(Members *self, PyObject *unused)
{
    long long scan = self->start + 1 > self->raw_offset ? self->start + 1 : self->raw_offset;
    for (;;) {
        self->rpos = (Py_ssize_t)(scan - self->raw_offset);
        Py_ssize_t at = find_member_start(self->raw, self->rpos, self->raw_len);
        int found = at >= 0;
        if (!found)
            at = self->raw_len - 3 > self->rpos ? self->raw_len - 3 : self->rpos;
        if (self->raw_len - at < FIRST_STEP || !found) {
            /* too little of it to try (or of a start cut by the block's end): read on */
            self->rpos = at;
            int more = read_raw(self);
            if (more < 0)
                return NULL;
            if (more) {
                scan = self->raw_offset;
                continue;
            }
            if (!found) {
                self->rpos = self->raw_len;
                Py_RETURN_NONE;
            }
            at = self->rpos;  /* (the bytes kept, now first) */
        }
        self->rpos = at;
        if (start_member(self) < 0) {
            if (!PyErr_ExceptionMatches(self->archive_error))
                return NULL;
            PyErr_Clear();
            scan = self->raw_offset + at + 1;
            continue;
        }
        self->rpos = at;
        return PyLong_FromLongLong(self->raw_offset + at);
    }
}

/* -- CDXJ lines made here ----------------------------------------------------------------- */

/* What skim(..., cdxj) does for the common record of a gzipped WARC: its whole CDXJ line, with
 * pywb's fields (cdx/indexer.py's record_fields and cdxline.format_line are the
 * specification: tests/test_cdx_fastpath.py checks this against them), made here from its
 * two header blocks; its key given by the caller's url_key.  Any record this does not
 * provably make the same line of is left to Python, nothing of it consumed. */

/* headers.WARC_NAMES, the order of find_values' answers below */
static const char *const line_names[8] = {"WARC-Type", "Content-Type", "Content-Length",
    "WARC-Target-URI", "WARC-Date", "WARC-Payload-Digest", "WARC-Identified-Payload-Type",
    "WARC-Json-Metadata"};
static const Py_ssize_t line_name_lens[8] = {9, 12, 14, 15, 9, 19, 28, 18};
enum {L_TYPE, L_CTYPE, L_LENGTH, L_URI, L_DATE, L_DIGEST, L_DETECTED, L_METADATA};
static const char *const http_content_type[1] = {"Content-Type"};
static const Py_ssize_t http_content_type_len[1] = {12};

static int
is_digits(const unsigned char *s, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return 0;
    return 1;
}

static int
same(const unsigned char *s, Py_ssize_t n, const char *text)
{
    return (size_t)n == strlen(text) && memcmp(s, text, n) == 0;
}

/* Whether text is in s[0:n] (memmem is not everywhere). */
static int
contains(const unsigned char *s, Py_ssize_t n, const char *text)
{
    Py_ssize_t m = strlen(text);
    for (const unsigned char *at = s, *end = s + n - m + 1;
            at < end && (at = memchr(at, text[0], end - at)) != NULL; at++)
        if (memcmp(at, text, m) == 0)
            return 1;
    return 0;
}

/* indexer.warc_timestamp where it takes the fast way (WARC_DATE, a real day and time of
 * day): its 13 or 14 digits into ts, their count; 0 for any other date (Python says why). */
static int
warc_timestamp(const unsigned char *d, Py_ssize_t n, char *ts)
{
    static const char shape[] = "dddd-dd-ddTdd:dd:dd";
    if (n < 19)
        return 0;
    for (int i = 0; i < 19; i++)
        if (shape[i] == 'd' ? d[i] < '0' || d[i] > '9' : d[i] != (unsigned char)shape[i])
            return 0;
    Py_ssize_t i = 19;
    if (i < n && d[i] == '.') {
        Py_ssize_t digits = 0;
        for (i++; i < n && d[i] >= '0' && d[i] <= '9'; i++)
            digits++;
        if (digits < 1 || digits > 9)
            return 0;
    }
    if (i < n && d[i] == 'Z')
        i++;
    if (i != n)
        return 0;
    int year = (d[0] - '0') * 1000 + (d[1] - '0') * 100 + (d[2] - '0') * 10 + (d[3] - '0');
    int month = (d[5] - '0') * 10 + (d[6] - '0'), day = (d[8] - '0') * 10 + (d[9] - '0');
    static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    if (year < 1 || month < 1 || month > 12 || day < 1
            || day > days[month - 1] + (month == 2 && leap))
        return 0;
    if (memcmp(d + 11, "23", 2) > 0 || memcmp(d + 14, "59", 2) > 0 || memcmp(d + 17, "59", 2) > 0)
        return 0;
    int len = 0, from = 0;
    while (from < 4 && d[from] == '0')  /* (the year without leading zeros, as strftime) */
        from++;
    for (int k = from; k < 4; k++)
        ts[len++] = d[k];
    static const int rest[10] = {5, 6, 8, 9, 11, 12, 14, 15, 17, 18};
    for (int k = 0; k < 10; k++)
        ts[len++] = d[rest[k]];
    return len;
}

/* str() of a number of 0 or more, at o; where it ends. */
static unsigned char *
decimal(unsigned char *o, long long number)
{
    unsigned char digits[24];
    int n = 0;
    do {
        digits[n++] = (unsigned char)('0' + number % 10);
        number /= 10;
    } while (number > 0);
    while (n > 0)
        *o++ = digits[--n];
    return o;
}

/* json.encoder.encode_basestring_ascii of ASCII bytes, at o; where it ends. */
static unsigned char *
json_string(unsigned char *o, const unsigned char *s, Py_ssize_t n)
{
    static const char hex[] = "0123456789abcdef";
    *o++ = '"';
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        if (c >= ' ' && c <= '~' && c != '\\' && c != '"') {
            *o++ = c;
            continue;
        }
        *o++ = '\\';
        switch (c) {
        case '\\': case '"': *o++ = c; break;
        case '\n': *o++ = 'n'; break;
        case '\r': *o++ = 'r'; break;
        case '\t': *o++ = 't'; break;
        case '\b': *o++ = 'b'; break;
        case '\f': *o++ = 'f'; break;
        default:
            memcpy(o, "u00", 3);
            o[3] = hex[c >> 4];
            o[4] = hex[c & 15];
            o += 5;
        }
    }
    *o++ = '"';
    return o;
}

/* One "key": value of the line's JSON, after ", " unless it is the first; format_line leaves
 * out a value that is missing, empty or "-". */
static unsigned char *
json_field(unsigned char *o, int *first, const char *key, const unsigned char *value,
           Py_ssize_t n)
{
    if (value == NULL || n == 0 || (n == 1 && value[0] == '-'))
        return o;
    if (!*first) {
        memcpy(o, ", ", 2);
        o += 2;
    }
    *first = 0;
    size_t key_len = strlen(key);
    *o++ = '"';
    memcpy(o, key, key_len);
    o += key_len;
    memcpy(o, "\": ", 3);
    return json_string(o + 3, value, n);
}

/* One argument of a URL's query, as urlkey.url_key sorts them: (name, value), a tuple of
 * one where there is no '='. */
typedef struct {
    const unsigned char *name, *value;
    Py_ssize_t name_len, value_len;
    int has_value;
} QueryArg;

static int
compare_bytes(const unsigned char *a, Py_ssize_t a_len, const unsigned char *b, Py_ssize_t b_len)
{
    int c = memcmp(a, b, a_len < b_len ? a_len : b_len);
    return c ? c : (a_len > b_len) - (a_len < b_len);
}

/* Python's order of those tuples of ASCII str: by name, a tuple of one before one of two. */
static int
compare_args(const void *x, const void *y)
{
    const QueryArg *a = x, *b = y;
    int c = compare_bytes(a->name, a->name_len, b->name, b->name_len);
    if (c || a->has_value != b->has_value)
        return c ? c : a->has_value - b->has_value;
    return a->has_value ? compare_bytes(a->value, a->value_len, b->value, b->value_len) : 0;
}

/* The most query arguments plain_key sorts, and the longest URL it takes (more are left
 * to Python). */
#define QUERY_ARGS_MAX 64
#define PLAIN_URL_MAX 2048

static int
hex_value(unsigned char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
        : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* surt's unescapeRepeatedly (urllib's unquote_to_bytes until nothing changes) of s[0:n], in
 * place; the new length. */
static Py_ssize_t
unescape_repeatedly(unsigned char *s, Py_ssize_t n)
{
    for (int changed = 1; changed; ) {
        Py_ssize_t o = 0;
        changed = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            if (s[i] == '%' && i + 2 < n && hex_value(s[i + 1]) >= 0 && hex_value(s[i + 2]) >= 0) {
                s[o++] = (unsigned char)(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
                i += 2;
                changed = 1;
            } else {
                s[o++] = s[i];
            }
        }
        n = o;
    }
    return n;
}

/* surt's escapeOnce (quote_from_bytes with its safe characters: all of 0x21-0x7e but '#'
 * and '%') of s[0:n] at o; where it ends. */
static unsigned char *
escape_once(unsigned char *o, const unsigned char *s, Py_ssize_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        if (c <= ' ' || c >= 0x7f || c == '#' || c == '%') {
            *o++ = '%';
            *o++ = hex[c >> 4];
            *o++ = hex[c & 15];
        } else {
            *o++ = c;
        }
    }
    return o;
}

/* What url_key makes of a path or query with a '%': unescaped repeatedly, then escaped once,
 * in buf (3 * n bytes); its length, or -1 for a path that normalizePath would change. */
static Py_ssize_t
minimal_escape(unsigned char *buf, const unsigned char *s, Py_ssize_t n, int path)
{
    unsigned char plain[PLAIN_URL_MAX];
    memcpy(plain, s, n);
    n = unescape_repeatedly(plain, n);
    /* (a path starting with '/', without "//" or "/.", is as normalizePath leaves it) */
    if (path && (contains(plain, n, "//") || contains(plain, n, "/.")))
        return -1;
    return escape_once(buf, plain, n) - buf;
}

/* Whether s[at:at+count] are all of a class: alphanumeric (letters_only 0) or letters. */
static int
all_of(const unsigned char *s, Py_ssize_t n, Py_ssize_t at, Py_ssize_t count, int letters_only)
{
    if (at + count > n)
        return 0;
    for (Py_ssize_t i = at; i < at + count; i++) {
        unsigned char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
              || (!letters_only && c >= '0' && c <= '9')))
            return 0;
    }
    return 1;
}

/* Whether one of surt's stripQuerySessionID patterns may match a (lower-cased) query: a
 * session id of its shape (jsessionid=, phpsessid= or sid= and 32 alphanumerics;
 * aspsessionid, 8 letters, '=' and 24 letters) that ends the query or an argument, or a
 * cfid= with a &cftoken=; where none can, that step changes nothing. */
static int
session_id(const unsigned char *query, Py_ssize_t n)
{
    static const char *const markers[3] = {"jsessionid=", "phpsessid=", "sid="};
    for (int m = 0; m < 4; m++) {
        const char *marker = m < 3 ? markers[m] : "aspsessionid";
        Py_ssize_t len = strlen(marker);
        for (const unsigned char *at = query; at + len <= query + n; at++) {
            if ((at = memchr(at, marker[0], query + n - at)) == NULL)
                break;
            if (at + len > query + n || memcmp(at, marker, len) != 0)
                continue;
            Py_ssize_t i = at + len - query;
            Py_ssize_t end = m < 3 ? i + 32 : i + 33;
            int shaped = m < 3 ? all_of(query, n, i, 32, 0)
                : all_of(query, n, i, 8, 1) && i + 8 < n && query[i + 8] == '='
                  && all_of(query, n, i + 9, 24, 1);
            if (shaped && (end == n || query[end] == '&'))
                return 1;
        }
    }
    return contains(query, n, "cfid=") && contains(query, n, "&cftoken=");
}

/* urlkey.url_key of a URL of urlkey.PLAIN_URL's class whose path and query need none of
 * surt's steps but its escaping, case and sorting (no "//" nor "/." in the path, unescaped,
 * no session id surt strips from the path or the query): the origin's key from ``origin_key``
 * (urlkey.origin_key, surt's own), then the path ('/' where there is none) unescaped and
 * escaped once where it has a '%', lower-cased, less a final '/', then the query, likewise
 * escaped and lower-cased, its arguments sorted.  1 with the key in *buf (*len bytes), 0 for
 * a URL left to url_key, -1 with an exception raised. */
static int
plain_key(const unsigned char *url, Py_ssize_t n, PyObject *origin_key, unsigned char **buf,
          Py_ssize_t *cap, Py_ssize_t *len)
{
    Py_ssize_t i = n >= 7 && memcmp(url, "http://", 7) == 0 ? 7
        : n >= 8 && memcmp(url, "https://", 8) == 0 ? 8 : 0, host = i;
    if (i == 0 || n > PLAIN_URL_MAX)
        return 0;
    while (i < n && ((url[i] >= 'a' && url[i] <= 'z') || (url[i] >= 'A' && url[i] <= 'Z')
                     || (url[i] >= '0' && url[i] <= '9') || url[i] == '.' || url[i] == '-'))
        i++;
    if (i == host)
        return 0;
    if (i < n && url[i] == ':') {
        Py_ssize_t digits = ++i;
        while (i < n && url[i] >= '0' && url[i] <= '9')
            i++;
        if (i == digits)
            return 0;
    }
    Py_ssize_t origin_end = i;
    if (i < n && url[i] != '/')
        return 0;
    for (Py_ssize_t j = i; j < n; j++)
        if (url[j] < '!' || url[j] > '~' || url[j] == '#')
            return 0;
    unsigned char path[3 * PLAIN_URL_MAX], query[3 * PLAIN_URL_MAX];
    const unsigned char *mark = memchr(url + i, '?', n - i);
    const unsigned char *path_end = mark != NULL ? mark : url + n, *query_start = mark != NULL ? mark + 1 : url + n;
    Py_ssize_t path_len = path_end - (url + i), query_len = url + n - query_start;
    if (path_len == 0) {  /* (normalizePath's '/') */
        path[0] = '/';
        path_len = 1;
    } else if (memchr(url + i, '%', path_len) != NULL) {
        if ((path_len = minimal_escape(path, url + i, path_len, 1)) < 0)
            return 0;
    } else if (contains(url + i, path_len, "//") || contains(url + i, path_len, "/.")) {
        return 0;
    } else {
        memcpy(path, url + i, path_len);
    }
    for (Py_ssize_t j = 0; j < path_len; j++)
        path[j] = lower(path[j]);
    /* (stripPathSessionID's patterns need a '(' and then ".aspx": without, it changes nothing) */
    if (memchr(path, '(', path_len) != NULL && contains(path, path_len, ".aspx"))
        return 0;
    if (path_len > 1 && path[path_len - 1] == '/')
        path_len--;
    if (memchr(query_start, '%', query_len) != NULL)
        query_len = minimal_escape(query, query_start, query_len, 0);
    else
        memcpy(query, query_start, query_len);
    for (Py_ssize_t j = 0; j < query_len; j++)
        query[j] = lower(query[j]);
    if (session_id(query, query_len))
        return 0;
    QueryArg args[QUERY_ARGS_MAX];
    Py_ssize_t count = 0;
    for (const unsigned char *arg = query, *end = query + query_len; query_len; count++) {
        if (count == QUERY_ARGS_MAX)
            return 0;
        const unsigned char *stop = memchr(arg, '&', end - arg);
        if (stop == NULL)
            stop = end;
        const unsigned char *equals = memchr(arg, '=', stop - arg);
        args[count].name = arg;
        args[count].name_len = (equals != NULL ? equals : stop) - arg;
        args[count].has_value = equals != NULL;
        args[count].value = equals != NULL ? equals + 1 : stop;
        args[count].value_len = stop - args[count].value;
        if (stop == end) {
            count++;
            break;
        }
        arg = stop + 1;
    }
    PyObject *origin = PyUnicode_DecodeASCII((const char *)url, origin_end, NULL);
    if (origin == NULL)
        return -1;
    PyObject *key = PyObject_CallOneArg(origin_key, origin);
    Py_DECREF(origin);
    if (key == NULL)
        return -1;
    Py_ssize_t key_len;
    const char *key_text = key != Py_None && PyUnicode_Check(key)
        ? PyUnicode_AsUTF8AndSize(key, &key_len) : NULL;
    if (key_text == NULL) {
        Py_DECREF(key);
        if (key == Py_None)
            return 0;  /* no host in its SURT: surt's own way */
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "origin_key must return a str or None");
        return -1;
    }
    if (reserve(buf, cap, key_len + path_len + query_len + 2) < 0) {
        Py_DECREF(key);
        return -1;
    }
    unsigned char *o = *buf;
    memcpy(o, key_text, key_len);
    o += key_len;
    Py_DECREF(key);
    memcpy(o, path, path_len);
    o += path_len;
    if (count > 1)
        qsort(args, count, sizeof args[0], compare_args);
    for (Py_ssize_t a = 0; a < count; a++) {
        *o++ = a ? '&' : '?';
        memcpy(o, args[a].name, args[a].name_len);
        o += args[a].name_len;
        if (args[a].has_value) {
            *o++ = '=';
            memcpy(o, args[a].value, args[a].value_len);
            o += args[a].value_len;
        }
    }
    *len = o - *buf;
    return 1;
}

/* plain_key(url, origin_key): plain_key's key of an ASCII str, or None where it leaves the
 * URL to url_key (for tests/test_cdx_fastpath.py, which checks it against surt). */
static PyObject *
plain_key_function(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyUnicode_Check(args[0]) || !PyUnicode_IS_ASCII(args[0])
            || !PyCallable_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "plain_key(url, origin_key): an ASCII str, a function");
        return NULL;
    }
    unsigned char *buf = NULL;
    Py_ssize_t cap = 0, len;
    int plain = plain_key((const unsigned char *)PyUnicode_DATA(args[0]),
                          PyUnicode_GET_LENGTH(args[0]), args[1], &buf, &cap, &len);
    PyObject *key = plain < 0 ? NULL : plain ? PyUnicode_DecodeASCII((const char *)buf, len, NULL)
                                             : Py_NewRef(Py_None);
    PyMem_Free(buf);
    return key;
}

/* The base32 of a sha1 digest (20 bytes), as record_fields writes it, into b32 (32 bytes). */
static void
base32_sha1(const unsigned char *digest, unsigned char *b32)
{
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    for (int i = 0, o = 0; i < 20; i += 5) {
        unsigned long long bits = 0;
        for (int k = 0; k < 5; k++)
            bits = bits << 8 | digest[i + k];
        for (int k = 7; k >= 0; k--)
            b32[o++] = alphabet[(bits >> (5 * k)) & 31];
    }
}

/* The base32 of the sha1 of the next *unread bytes of the member (its payload, as
 * walk._member_record hashes it: headers.hash_next), into b32; *unread less what was hashed;
 * 0, or -1 with an exception raised. */
static int
hash_sha1(Members *self, PyObject *hash_next, long long *unread, unsigned char *b32)
{
    PyObject *size = PyLong_FromLongLong(*unread);
    PyObject *got = size == NULL ? NULL
        : PyObject_CallFunctionObjArgs(hash_next, (PyObject *)self, size, NULL);
    Py_XDECREF(size);
    if (got == NULL)
        return -1;
    if (!PyTuple_Check(got) || PyTuple_GET_SIZE(got) != 2 || !PyBytes_Check(PyTuple_GET_ITEM(got, 0))
            || PyBytes_GET_SIZE(PyTuple_GET_ITEM(got, 0)) != 20
            || !PyLong_Check(PyTuple_GET_ITEM(got, 1))) {
        Py_DECREF(got);
        PyErr_SetString(PyExc_TypeError, "hash_next must return (a sha1 digest, an int)");
        return -1;
    }
    base32_sha1((const unsigned char *)PyBytes_AS_STRING(PyTuple_GET_ITEM(got, 0)), b32);
    *unread = PyLong_AsLongLong(PyTuple_GET_ITEM(got, 1));
    Py_DECREF(got);
    return *unread == -1 && PyErr_Occurred() ? -1 : 0;
}

/* A record whose line may be made here, as line_record finds it in its WARC header block:
 * the values of line_names (found[i] NULL where missing), its Content-Length, its kind, whether
 * its HTTP block is read (with_http) and whether its digest is its payload's sha1 (hashed). */
typedef struct {
    const unsigned char *found[8];
    Py_ssize_t n[8];
    long long length;
    int response, revisit, metadata, with_http, hashed, ts_len;
    char ts[14];
} LineRecord;

/* Whether the record of the plain WARC header block[0:len] is one whose line may be made here
 * (headers.lite_record's record, that record_fields indexes without reading its payload), r
 * filled: 1, else 0 (left to Python). */
static int
line_record(const unsigned char *block, Py_ssize_t len, PyObject *skip_content_types,
            LineRecord *r)
{
    const unsigned char **found = r->found;
    Py_ssize_t *n = r->n;
    find_values(block, len, 8, line_names, line_name_lens, found, n);
    const unsigned char *type = found[L_TYPE];
    if (type == NULL)
        return 0;
    r->response = same(type, n[L_TYPE], "response");
    r->revisit = same(type, n[L_TYPE], "revisit");
    r->metadata = same(type, n[L_TYPE], "metadata");
    if (!r->response && !r->revisit && !r->metadata && !same(type, n[L_TYPE], "resource"))
        return 0;
    const unsigned char *uri = found[L_URI], *length_text = found[L_LENGTH];
    if (length_text == NULL || n[L_LENGTH] < 1 || n[L_LENGTH] > 17
            || !is_digits(length_text, n[L_LENGTH]) || uri == NULL || n[L_URI] == 0
            || uri[0] == '<' || memchr(uri, ' ', n[L_URI]) != NULL)
        return 0;
    if (found[L_CTYPE] != NULL && equals_any(found[L_CTYPE], n[L_CTYPE], skip_content_types))
        return 0;
    r->length = 0;
    for (Py_ssize_t i = 0; i < n[L_LENGTH]; i++)
        r->length = r->length * 10 + (length_text[i] - '0');
    r->with_http = r->length && (r->response || r->revisit)
        && ((n[L_URI] >= 5 && memcmp(uri, "http:", 5) == 0)
            || (n[L_URI] >= 6 && memcmp(uri, "https:", 6) == 0));
    const unsigned char *digest = found[L_DIGEST];
    /* (without one, its payload's sha1 is its digest: indexer.wants_payload) */
    r->hashed = !r->revisit && (digest == NULL || n[L_DIGEST] == 0
                                || same(digest, n[L_DIGEST], "-"));
    r->ts_len = found[L_DATE] != NULL ? warc_timestamp(found[L_DATE], n[L_DATE], r->ts) : 0;
    return r->ts_len != 0;
}

/* The line of the record r, up to its digest where that is its payload's sha1 (hashed), else
 * through it, into *line (*prefix bytes; *first: no field written yet); its key made in *key;
 * http[0:http_len] its HTTP block where with_http.  1, 0 for a record left to Python, -1 with
 * an exception raised. */
static int
line_head(LineRecord *r, const unsigned char *http, Py_ssize_t http_len, PyObject *url_key,
          PyObject *origin_key, unsigned char **key_buf, Py_ssize_t *key_cap,
          unsigned char **line, Py_ssize_t *line_cap, Py_ssize_t *prefix, int *first)
{
    const unsigned char **found = r->found, *uri = found[L_URI];
    Py_ssize_t *n = r->n;
    const unsigned char *digest = found[L_DIGEST];
    Py_ssize_t digest_len = n[L_DIGEST];
    if (digest != NULL && digest_len >= 5 && memcmp(digest, "sha1:", 5) == 0) {
        digest += 5;
        digest_len -= 5;
    }
    const unsigned char *status = NULL, *mime = NULL;
    Py_ssize_t status_len = 0, mime_len = 0;
    if (r->with_http) {
        /* the HTTP block: plain, its first line not blank, ended by a blank line, within
         * the record (lite_record), and a status code that is not "-" (record_fields) */
        if (http_len < 2 || (long long)http_len > r->length || http[http_len - 1] != '\n'
                || !plain(http, http_len))
            return 0;
        Py_ssize_t j = http_len - 2;
        while (j >= 0 && is_blank_char(http[j]))
            j--;
        if (j < 0 || http[j] != '\n')
            return 0;
        const unsigned char *first_end = memchr(http, '\n', http_len);
        while (first_end > http && is_space(first_end[-1]))
            first_end--;
        if (first_end == http)
            return 0;
        const unsigned char *space = memchr(http, ' ', first_end - http);
        status = space != NULL ? space + 1 : first_end;
        while (status < first_end && is_space(*status))
            status++;
        const unsigned char *code_end = memchr(status, ' ', first_end - status);
        status_len = (code_end != NULL ? code_end : first_end) - status;
        if (same(status, status_len, "-"))
            return 0;
        if (status_len == 0 || (same(status, status_len, "204")
                                && contains(status, first_end - status, "Error")))
            status_len = 0;  /* _status: "-", left out */
        find_values(http, http_len, 1, http_content_type, http_content_type_len, &mime, &mime_len);
    } else {
        mime = found[L_CTYPE] != NULL ? found[L_CTYPE] : NULL;
        mime_len = n[L_CTYPE];
        status = (const unsigned char *)"200";
        status_len = 3;
    }
    if (!r->response)
        status_len = 0;
    if (r->revisit) {
        mime = (const unsigned char *)"warc/revisit";
        mime_len = 12;
    } else if (mime == NULL || mime_len == 0) {
        mime = (const unsigned char *)"unk";
        mime_len = 3;
    } else {  /* _mime: what precedes the first ';', then the first space */
        const unsigned char *cut = memchr(mime, ';', mime_len);
        if (cut != NULL)
            mime_len = cut - mime;
        cut = memchr(mime, ' ', mime_len);
        if (cut != NULL)
            mime_len = cut - mime;
    }
    if (r->metadata && same(mime, mime_len, "text/anvl"))
        return 0;
    /* its key: made here where plain_key can, else by url_key */
    PyObject *key = NULL;
    Py_ssize_t key_len;
    const char *key_text = NULL;
    int plain = plain_key(uri, n[L_URI], origin_key, key_buf, key_cap, &key_len);
    if (plain == 1) {
        key_text = (const char *)*key_buf;
    } else if (plain == 0) {
        PyObject *url = PyUnicode_DecodeASCII((const char *)uri, n[L_URI], NULL);
        if (url == NULL)
            return -1;
        key = PyObject_CallOneArg(url_key, url);
        Py_DECREF(url);
        key_text = key == NULL ? NULL : PyUnicode_Check(key) ? PyUnicode_AsUTF8AndSize(key, &key_len)
                                                              : NULL;
        if (key != NULL && key_text == NULL && !PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "url_key must return a str");
    }
    if (plain < 0 || key_text == NULL) {
        Py_XDECREF(key);
        /* (surt raises assorted errors on malformed URLs: Python says which) */
        if (!PyErr_ExceptionMatches(PyExc_Exception))
            return -1;
        PyErr_Clear();
        return 0;
    }
    /* (each value escaped takes at most 6 bytes a byte; 64 for a digest made later) */
    Py_ssize_t most = key_len + 256 + 64 + 6 * (mime_len + status_len);
    for (int i = 0; i < 8; i++)
        most += 6 * (found[i] != NULL ? n[i] : 0);
    if (reserve(line, line_cap, most) < 0) {
        Py_XDECREF(key);
        return -1;
    }
    unsigned char *o = *line;
    memcpy(o, key_text, key_len);
    o += key_len;
    Py_XDECREF(key);
    *o++ = ' ';
    memcpy(o, r->ts, r->ts_len);
    o += r->ts_len;
    memcpy(o, " {", 2);
    o += 2;
    *first = 1;
    /* cdxline.CDXJ_KEYS' order */
    o = json_field(o, first, "metadata", found[L_METADATA], n[L_METADATA]);
    o = json_field(o, first, "url", uri, n[L_URI]);
    o = json_field(o, first, "mime", mime, mime_len);
    if (!r->revisit)
        o = json_field(o, first, "mime-detected", found[L_DETECTED], n[L_DETECTED]);
    o = json_field(o, first, "status", status, status_len);
    if (!r->hashed)
        o = json_field(o, first, "digest", digest, digest_len);
    *prefix = o - *line;
    return 1;
}

/* The rest of the line line_head began (prefix bytes of *line): the digest sha1 (base32, NULL
 * where none is made), the record's place in the file and the file's name, given as it goes
 * in the line; the line appended to ``lines``: 0, or -1 with an exception raised. */
static int
line_tail(unsigned char **line, Py_ssize_t *line_cap, Py_ssize_t prefix, int first,
          const unsigned char *sha1, long long length, long long offset, PyObject *filename,
          PyObject *lines)
{
    Py_ssize_t filename_len;
    const char *filename_text = PyUnicode_AsUTF8AndSize(filename, &filename_len);
    if (filename_text == NULL || reserve(line, line_cap, prefix + filename_len + 160) < 0)
        return -1;
    unsigned char *o = *line + prefix;
    if (sha1 != NULL)
        o = json_field(o, &first, "digest", sha1, 32);
    if (!first) {
        memcpy(o, ", ", 2);
        o += 2;
    }
    memcpy(o, "\"length\": \"", 11);
    o = decimal(o + 11, length);
    memcpy(o, "\", \"offset\": \"", 14);
    o = decimal(o + 14, offset);
    memcpy(o, "\", ", 3);
    o += 3;
    memcpy(o, filename_text, filename_len);
    o += filename_len;
    memcpy(o, "}\n", 2);
    o += 2;
    PyObject *text = PyUnicode_DecodeUTF8((const char *)*line, o - *line, NULL);
    if (text == NULL)
        return -1;
    int failed = PyList_Append(lines, text);
    Py_DECREF(text);
    return failed;
}

/* The line of the record whose plain WARC header block (len bytes, ended by a blank line) is
 * at the read position, appended to ``lines``, its member finished: 1, with *problem the
 * RecordError of a record that does not end where its Content-Length says (then no line);
 * 0 for a record left to Python (nothing consumed); -1 on error. */
static int
make_line(Members *self, Py_ssize_t len, PyObject *url_key, PyObject *origin_key,
          PyObject *hash_next, PyObject *filename, PyObject *skip_content_types, PyObject *lines,
          PyObject **problem)
{
    const unsigned char *block = self->out + self->pos;
    LineRecord r;
    *problem = NULL;
    if (!line_record(block, len, skip_content_types, &r))
        return 0;
    Py_ssize_t http_at = 0, http_len = 0;
    if (r.with_http) {
        Py_ssize_t at[8];
        for (int i = 0; i < 8; i++)
            at[i] = r.found[i] != NULL ? r.found[i] - block : 0;
        if (peek(self, len, &http_at, &http_len) < 0)
            return -1;
        /* (the bytes may have moved: the WARC block is again at the read position) */
        block = self->out + self->pos;
        http_at -= self->pos;
        for (int i = 0; i < 8; i++)
            if (r.found[i] != NULL)
                r.found[i] = block + at[i];
    }
    Py_ssize_t prefix;
    int first;
    int made = line_head(&r, block + http_at, http_len, url_key, origin_key, &self->key,
                         &self->key_cap, &self->line, &self->line_cap, &prefix, &first);
    if (made <= 0)
        return made;
    /* the record read: its HTTP headers, its payload hashed where need be, the rest of its
     * member */
    self->pos += len + http_len;
    long long unread = r.length - http_len;
    unsigned char sha1[32];
    if (r.hashed && hash_sha1(self, hash_next, &unread, sha1) < 0)
        return -1;
    PyObject *unread_obj = PyLong_FromLongLong(unread);
    int failed = unread_obj == NULL ? -1 : finish(self, unread_obj, problem);
    Py_XDECREF(unread_obj);
    if (failed < 0 || *problem != NULL)
        return failed < 0 ? -1 : 1;
    return line_tail(&self->line, &self->line_cap, prefix, first, r.hashed ? sha1 : NULL,
                     self->end - self->start, self->start, filename, lines) < 0 ? -1 : 1;
}

/* skim's cdxj argument, (url_key, origin_key, hash_next, '"filename": ...', a list), into
 * cdxj[0:5] (borrowed); None leaves them NULL; 0, or -1 with TypeError(usage). */
static int
cdxj_arg(PyObject *arg, const char *usage, PyObject **cdxj)
{
    for (int i = 0; i < 5; i++)
        cdxj[i] = NULL;
    if (arg == Py_None)
        return 0;
    if (!PyTuple_Check(arg) || PyTuple_GET_SIZE(arg) != 5
            || !PyCallable_Check(PyTuple_GET_ITEM(arg, 0))
            || !PyCallable_Check(PyTuple_GET_ITEM(arg, 1))
            || !PyCallable_Check(PyTuple_GET_ITEM(arg, 2))
            || !PyUnicode_Check(PyTuple_GET_ITEM(arg, 3))
            || !PyList_Check(PyTuple_GET_ITEM(arg, 4))) {
        PyErr_SetString(PyExc_TypeError, usage);
        return -1;
    }
    for (int i = 0; i < 5; i++)
        cdxj[i] = PyTuple_GET_ITEM(arg, i);
    return 0;
}
/* Like records.GzipMembers.skim: pass over the members whose records the caller skips;
 * an ArchiveError that stops the walk of a member is returned last among the problems, not
 * raised.  With ``cdxj``, (url_key, origin_key, hash_next, '"filename": ...', a list), the
 * common records' CDXJ
 * lines are made too (make_line), appended to the list, and counted with those skipped. */
static PyObject *
Members_skim(Members *self, PyObject *const *args, Py_ssize_t nargs)
{
    const char *usage = "skim(warc_types, content_types, cdxj=None): two tuples of str, and "
                        "None or (url_key, origin_key, hash_next, the line's filename field as str, "
                        "a list)";
    if ((nargs != 2 && nargs != 3) || name_tuples(args, 0, usage) < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, usage);
        return NULL;
    }
    PyObject *skip_types = args[0], *skip_content_types = args[1];
    PyObject *cdxj[5];
    if (cdxj_arg(nargs == 3 ? args[2] : Py_None, usage, cdxj) < 0)
        return NULL;
    PyObject *url_key = cdxj[0], *origin_key = cdxj[1], *hash_next = cdxj[2], *filename = cdxj[3],
        *lines = cdxj[4];
    long long skipped = 0;
    PyObject *problems = PyList_New(0);
    if (problems == NULL)
        return NULL;
    for (;;) {
        int started = start_member(self);
        if (started < 0)
            goto error;
        if (started == 0)
            return Py_BuildValue("LNOO", skipped, problems, Py_None, Py_None);
        Py_ssize_t at, len;
        if (peek(self, 0, &at, &len) < 0)
            goto error;
        const unsigned char *block = self->out + at;
        /* (a block longer than HEADERS_MAX is cut short: warcio's loader reads it) */
        if (len > HEADERS_MAX || len < 5 || memcmp(block, "WARC/", 5) != 0 || !plain(block, len))
            return Py_BuildValue("LNLO", skipped, problems, self->start, Py_None);
        long long unread;
        PyObject *values = NULL;
        /* (the values go back to Python only for a record no line is made of) */
        int skip = judge_block(block, len, skip_types, skip_content_types, &unread,
                               lines != NULL ? NULL : &values);
        if (skip < 0)
            goto error;
        PyObject *problem;
        if (!skip) {
            int made = lines != NULL ? make_line(self, len, url_key, origin_key, hash_next,
                                                 filename, skip_content_types, lines, &problem)
                                     : 0;
            if (made == 0 && values == NULL && judge_block(self->out + self->pos, len, skip_types,
                                                           skip_content_types, &unread, &values) < 0)
                goto error;
            if (made == 0)
                return Py_BuildValue("LNLN", skipped, problems, self->start, values);
            if (made < 0)
                goto error;
            if (problem == NULL) {
                skipped++;
                continue;
            }
            int appended = PyList_Append(problems, problem);
            Py_DECREF(problem);
            if (appended < 0)
                goto error;
            continue;
        }
        self->pos += len;
        PyObject *unread_obj = PyLong_FromLongLong(unread);
        if (unread_obj == NULL)
            goto error;
        int failed = finish(self, unread_obj, &problem);
        Py_DECREF(unread_obj);
        if (failed < 0)
            goto error;
        if (problem != NULL) {
            failed = PyList_Append(problems, problem);
            Py_DECREF(problem);
            if (failed < 0)
                goto error;
        } else {
            skipped++;
        }
    }
error:
    /* a problem that stops the walk goes last among the problems, not lost with them */
    if (PyErr_ExceptionMatches(self->archive_error)) {
        PyObject *type, *value, *traceback;
        PyErr_Fetch(&type, &value, &traceback);
        PyErr_NormalizeException(&type, &value, &traceback);
        Py_XDECREF(type);
        Py_XDECREF(traceback);
        if (value != NULL) {
            int failed = PyList_Append(problems, value);
            Py_DECREF(value);
            if (failed == 0)
                return Py_BuildValue("LNOO", skipped, problems, Py_None, Py_None);
        }
    }
    Py_DECREF(problems);
    return NULL;
}

static PyObject *
Members_get_start(Members *self, void *closure)
{
    return PyLong_FromLongLong(self->start);
}

static PyObject *
Members_get_end(Members *self, void *closure)
{
    if (self->end < 0)
        Py_RETURN_NONE;
    return PyLong_FromLongLong(self->end);
}

static PyObject *
Members_get_path(Members *self, void *closure)
{
    return Py_NewRef(self->path);
}

/* -- header values ------------------------------------------------------------------------ */

/* The most names header_values looks up at once. */
#define NAMES_MAX 64

static PyObject *
ascii_str(const unsigned char *start, Py_ssize_t len)
{
    return PyUnicode_DecodeASCII((const char *)start, len, NULL);
}

/* headers.pure_header_values: None for a block that is not plain (``plain``) or whose first
 * line is blank; else (protocol, status line, the value of each name or None). */
static PyObject *
header_values(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    const char *usage = "header_values(block, names): bytes and a tuple of at most 64 ASCII str";
    if (nargs != 2 || !PyBytes_Check(args[0]) || !PyTuple_Check(args[1])
            || PyTuple_GET_SIZE(args[1]) > NAMES_MAX) {
        PyErr_SetString(PyExc_TypeError, usage);
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(args[1]);
    const char *names[NAMES_MAX];
    Py_ssize_t name_lens[NAMES_MAX];
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *name = PyTuple_GET_ITEM(args[1], i);
        if (!PyUnicode_Check(name) || !PyUnicode_IS_ASCII(name)) {
            PyErr_SetString(PyExc_TypeError, usage);
            return NULL;
        }
        names[i] = (const char *)PyUnicode_DATA(name);
        name_lens[i] = PyUnicode_GET_LENGTH(name);
    }
    const unsigned char *block = (const unsigned char *)PyBytes_AS_STRING(args[0]);
    Py_ssize_t len = PyBytes_GET_SIZE(args[0]);
    if (!plain(block, len))
        Py_RETURN_NONE;
    /* the first line, as str.rstrip() leaves it, then split at its first space */
    const unsigned char *first_end = memchr(block, '\n', len);
    if (first_end == NULL)
        first_end = block + len;
    while (first_end > block && is_space(first_end[-1]))
        first_end--;
    if (first_end == block)
        Py_RETURN_NONE;
    const unsigned char *space = memchr(block, ' ', first_end - block);
    const unsigned char *status = space != NULL ? space + 1 : first_end;
    while (status < first_end && is_space(*status))
        status++;
    const unsigned char *values[NAMES_MAX];
    Py_ssize_t value_lens[NAMES_MAX];
    find_values(block, len, n, names, name_lens, values, value_lens);
    PyObject *result = PyTuple_New(n + 2);
    if (result == NULL)
        return NULL;
    for (Py_ssize_t i = -2; i < n; i++) {
        PyObject *item = i == -2 ? ascii_str(block, (space != NULL ? space : first_end) - block)
            : i == -1 ? ascii_str(status, first_end - status)
            : values[i] != NULL ? ascii_str(values[i], value_lens[i]) : Py_NewRef(Py_None);
        if (item == NULL) {
            Py_DECREF(result);
            return NULL;
        }
        PyTuple_SET_ITEM(result, i + 2, item);
    }
    return result;
}

/* skim_block(out, at, warc_types, content_types): of the header block at ``at`` in the bytes
 * ``out``, ended by a blank line there (as peek_headers finds it), (its size, then what
 * members.skim_values gives of it); None where no blank line ends it within ``out``. */
static PyObject *
skim_block(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    const char *usage = "skim_block(out, at, warc_types, content_types): bytes, an offset in "
                        "them, two tuples of str";
    if (nargs != 4 || !PyBytes_Check(args[0]) || !PyLong_Check(args[1])
            || name_tuples(args, 2, usage) < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, usage);
        return NULL;
    }
    const unsigned char *out = (const unsigned char *)PyBytes_AS_STRING(args[0]);
    Py_ssize_t out_len = PyBytes_GET_SIZE(args[0]), at = PyLong_AsSsize_t(args[1]);
    if (at == -1 && PyErr_Occurred())
        return NULL;
    if (at < 0 || at > out_len) {
        PyErr_SetString(PyExc_ValueError, usage);
        return NULL;
    }
    Py_ssize_t stop = blank_line_end(out, at, out_len);
    if (stop < 0)
        Py_RETURN_NONE;
    const unsigned char *block = out + at;
    Py_ssize_t len = stop - at;
    if (len > HEADERS_MAX || len < 5 || memcmp(block, "WARC/", 5) != 0 || !plain(block, len))
        return Py_BuildValue("nOO", len, Py_None, Py_None);
    long long unread;
    PyObject *values;
    int skip = judge_block(block, len, args[2], args[3], &unread, &values);
    if (skip < 0)
        return NULL;
    if (skip)
        return Py_BuildValue("nOL", len, Py_None, unread);
    return Py_BuildValue("nNO", len, values, Py_None);
}

static PyObject *zstd_skim(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
static PyObject *header_end(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

static PyMethodDef module_functions[] = {
    {"header_values", (PyCFunction)(void (*)(void))header_values, METH_FASTCALL,
     "header_values(block, names): headers.pure_header_values, compiled."},
    {"plain_key", (PyCFunction)(void (*)(void))plain_key_function, METH_FASTCALL,
     "plain_key(url, origin_key): urlkey.url_key of a plain URL, compiled; None for others."},
    {"skim_block", (PyCFunction)(void (*)(void))skim_block, METH_FASTCALL,
     "skim_block(out, at, warc_types, content_types): (size, values, unread) of the header "
     "block at out[at:], as members.skim_values judges it; None if no blank line ends it."},
    {"zstd_skim", (PyCFunction)(void (*)(void))zstd_skim, METH_FASTCALL,
     "zstd_skim(raw, rpos, decompressor, warc_types, content_types, verify): ZstdFrames.skim "
     "over the common frames in raw[rpos:]: (passed, rpos, the frame stopped at or None)."},
    {"header_end", (PyCFunction)(void (*)(void))header_end, METH_FASTCALL,
     "header_end(out, at): where the blank line that ends the header block at out[at:] ends "
     "(members.FIRST_LINE_BLANK.match or BLANK_LINE.search), or -1."},
    {NULL}
};

/* -- the type ----------------------------------------------------------------------------- */

static int
Members_init(Members *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"fh", "path", "archive_error", "record_error", NULL};
    PyObject *fh, *path, *archive_error_cls, *record_error_cls;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOO", kwlist, &fh, &path,
                                     &archive_error_cls, &record_error_cls))
        return -1;
    Py_XSETREF(self->fh, Py_NewRef(fh));
    Py_XSETREF(self->path, Py_NewRef(path));
    Py_XSETREF(self->archive_error, Py_NewRef(archive_error_cls));
    Py_XSETREF(self->record_error, Py_NewRef(record_error_cls));
    Py_CLEAR(self->readinto);
    self->readinto = PyObject_GetAttrString(fh, "readinto");
    if (self->readinto == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError))
            return -1;
        PyErr_Clear();
    }
    self->raw_len = self->rpos = self->out_len = self->pos = 0;
    self->raw_offset = self->start = self->dropped = 0;
    self->end = -1;
#ifdef WALKER_ISAL
    isal_inflate_init(&self->inflater);
#endif
    return 0;
}

static void
Members_dealloc(Members *self)
{
    Py_XDECREF(self->fh);
    Py_XDECREF(self->path);
    Py_XDECREF(self->archive_error);
    Py_XDECREF(self->record_error);
    Py_XDECREF(self->readinto);
    PyMem_Free(self->raw);
    PyMem_Free(self->out);
    PyMem_Free(self->line);
    PyMem_Free(self->key);
#ifndef WALKER_ISAL
    Py_XDECREF(self->inflater);
    Py_XDECREF(self->decompress);
#endif
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef Members_methods[] = {
    {"next_member", (PyCFunction)Members_next_member, METH_NOARGS,
     "Start the next member; its offset, or None at the end of the file."},
    {"tell", (PyCFunction)Members_tell, METH_NOARGS, "Bytes of the member read so far."},
    {"read", (PyCFunction)(void (*)(void))Members_read, METH_FASTCALL,
     "read(size=-1): at most size bytes of the member."},
    {"readline", (PyCFunction)(void (*)(void))Members_readline, METH_FASTCALL,
     "readline(size=-1): the next line of the member."},
    {"feed", (PyCFunction)(void (*)(void))Members_feed, METH_FASTCALL,
     "feed(consume, size): pass the next size bytes to consume, as views; how many were passed."},
    {"peek_headers", (PyCFunction)(void (*)(void))Members_peek_headers, METH_FASTCALL,
     "peek_headers(start=0): the header block start bytes past the read position."},
    {"skip", (PyCFunction)Members_skip, METH_O, "skip(size): move the read position on."},
    {"drain", (PyCFunction)(void (*)(void))Members_drain, METH_FASTCALL,
     "drain(skip=0): inflate the rest of the member; (at most 256 bytes from skip on, the size left)."},
    {"finish", (PyCFunction)Members_finish, METH_O,
     "finish(unread): inflate the rest; None, or a RecordError if the record does not end there."},
    {"recover", (PyCFunction)Members_recover, METH_NOARGS,
     "recover(): the offset of the next readable member after a bad one, or None."},
    {"skim", (PyCFunction)(void (*)(void))Members_skim, METH_FASTCALL,
     "skim(warc_types, content_types): (skipped, problems, offset, values) as GzipMembers.skim."},
    {NULL}
};

static PyGetSetDef Members_getset[] = {
    {"start", (getter)Members_get_start, NULL, "Offset of the current member.", NULL},
    {"end", (getter)Members_get_end, NULL, "End offset of the current member, once known.", NULL},
    {"path", (getter)Members_get_path, NULL, "The file's name, in errors.", NULL},
    {NULL}
};

static PyTypeObject MembersType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "webarchive_indexing.warc._members.Members",
    .tp_doc = "Members(fh, path, ArchiveError, RecordError): records.GzipMembers, compiled.",
    .tp_basicsize = sizeof(Members),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Members_init,
    .tp_dealloc = (destructor)Members_dealloc,
    .tp_methods = Members_methods,
    .tp_getset = Members_getset,
};

static struct PyModuleDef members_module = {
    PyModuleDef_HEAD_INIT, "_members",
    "records.GzipMembers compiled, inflating with ISA-L (optional: records.py works "
    "without it).", -1, module_functions,
};

PyMODINIT_FUNC
PyInit__members(void)
{
    if (PyType_Ready(&MembersType) < 0)
        return NULL;
#ifndef WALKER_ISAL
    if (pyisal_decompressobj == NULL) {
        PyObject *isal_zlib = PyImport_ImportModule("isal.isal_zlib");
        if (isal_zlib == NULL)
            return NULL;
        pyisal_decompressobj = PyObject_GetAttrString(isal_zlib, "decompressobj");
        pyisal_error = PyObject_GetAttrString(isal_zlib, "error");
        Py_DECREF(isal_zlib);
        str_decompress = PyUnicode_InternFromString("decompress");
        str_eof = PyUnicode_InternFromString("eof");
        str_unused_data = PyUnicode_InternFromString("unused_data");
        if (pyisal_decompressobj == NULL || pyisal_error == NULL || str_decompress == NULL
                || str_eof == NULL || str_unused_data == NULL)
            return NULL;
    }
#endif
    PyObject *module = PyModule_Create(&members_module);
    if (module == NULL)
        return NULL;
    if (PyModule_AddObjectRef(module, "Members", (PyObject *)&MembersType) < 0
            || PyModule_AddStringConstant(module, "INFLATER", INFLATER) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}

/* -- .warc.zst: the frames a walk passes over ----------------------------------------------- */

/* zstdwarc.ZSTD_MAGIC, OUTPUT_MAX, BLOCK_MAX; RFC 8878's frame header fields */
static const unsigned char zstd_magic[4] = {0x28, 0xb5, 0x2f, 0xfd};
#define ZSTD_OUTPUT_MAX (16 << 20)
#define ZSTD_BLOCK_MAX (128 << 10)

/* A zstd frame wholly in buf[0:len], as ZstdFrames' Python reads it: its header's size, content
 * size and checksum flag, where its first block and the frame end; 0 if it is one, else -1
 * (anything else: no magic, a content size not given or over ZSTD_OUTPUT_MAX, a reserved bit, a
 * block of the reserved type or over ZSTD_BLOCK_MAX, a frame that goes on past ``len``).  */
typedef struct {
    Py_ssize_t header, first_end, end;
    long long content;
    int checksum, blocks;
} ZstdFrame;

static int
zstd_frame(const unsigned char *buf, Py_ssize_t len, ZstdFrame *frame)
{
    if (len < 6 || memcmp(buf, zstd_magic, 4) != 0)
        return -1;
    unsigned char descriptor = buf[4];
    int fcs_flag = descriptor >> 6, single = descriptor >> 5 & 1;
    static const int dict_id_sizes[4] = {0, 1, 2, 4}, fcs_sizes[4] = {0, 2, 4, 8};
    int fcs_size = fcs_flag == 0 && single ? 1 : fcs_sizes[fcs_flag];
    if (descriptor & 0x08 || fcs_size == 0)
        return -1;
    Py_ssize_t i = 5 + !single + dict_id_sizes[descriptor & 3];
    if (i + fcs_size > len)
        return -1;
    unsigned long long content = 0;
    for (int k = fcs_size - 1; k >= 0; k--)
        content = content << 8 | buf[i + k];
    if (fcs_size == 2)
        content += 256;
    if (content > ZSTD_OUTPUT_MAX)
        return -1;
    frame->header = i += fcs_size;
    frame->content = (long long)content;
    frame->checksum = descriptor >> 2 & 1;
    frame->blocks = 0;
    for (;;) {
        if (i + 3 > len)
            return -1;
        unsigned int header = buf[i] | buf[i + 1] << 8 | buf[i + 2] << 16;
        unsigned int kind = header >> 1 & 3, size = header >> 3;
        if (kind == 3 || size > ZSTD_BLOCK_MAX)
            return -1;
        i += 3 + (kind == 1 ? 1 : size);  /* RLE: 1 byte */
        if (frame->blocks++ == 0)
            frame->first_end = i;
        if (header & 1)
            break;
    }
    frame->end = i + (frame->checksum ? 4 : 0);
    return frame->end <= len ? 0 : -1;
}

/* Whether a record of ``used`` bytes (its header blocks and content) ends in its frame as
 * ZstdFrames.finish passes it over: at most TRAILER_MAX bytes after it in the frame's ``size``,
 * whitespace where the frame was decompressed whole (block[0:size]). */
static int
ends_in_frame(const unsigned char *block, long long size, long long used, int whole)
{
    long long rest = size - used;
    if (rest <= 0 || rest > TRAILER_MAX)
        return 0;
    for (long long k = size - rest; whole && k < size; k++)
        if (!is_byte_space(block[k]))
            return 0;
    return 1;
}

/* The output of ``decompress`` of buf[0:len] (given a copy: cheaper than a view's making and
 * release, for the few KB of most calls); NULL, with no error set, where zstd fails
 * (ZstdFrames' Python reports it), or with an error set. */
static PyObject *
zstd_output(PyObject *decompress, const unsigned char *buf, Py_ssize_t len)
{
    PyObject *in = PyBytes_FromStringAndSize((const char *)buf, len);
    if (in == NULL)
        return NULL;
    PyObject *out = PyObject_CallOneArg(decompress, in);
    Py_DECREF(in);
    if (out == NULL) {
        if (PyErr_ExceptionMatches(PyExc_Exception) && !PyErr_ExceptionMatches(PyExc_MemoryError))
            PyErr_Clear();
        return NULL;
    }
    if (!PyBytes_Check(out)) {
        Py_DECREF(out);
        PyErr_SetString(PyExc_TypeError, "zstd_skim: decompress gave no bytes");
        return NULL;
    }
    return out;
}

/* The base32 of the sha1 of data[0:len] (a payload, as headers.hash_rest hashes it) into b32,
 * by hashlib (imported at the first payload hashed: a walk of records that carry their digest
 * does without it); 0, or -1 with an exception raised. */
static int
zstd_sha1(const unsigned char *data, Py_ssize_t len, unsigned char *b32)
{
    static PyObject *sha1, *str_digest;
    if (sha1 == NULL) {
        PyObject *hashlib = PyImport_ImportModule("hashlib");
        if (hashlib == NULL)
            return -1;
        sha1 = PyObject_GetAttrString(hashlib, "sha1");
        Py_DECREF(hashlib);
        if (sha1 == NULL)
            return -1;
    }
    if (str_digest == NULL && (str_digest = PyUnicode_InternFromString("digest")) == NULL)
        return -1;
    /* (a view of the bytes, not a copy: hashlib keeps no reference to what it hashes) */
    PyObject *view = PyMemoryView_FromMemory((char *)data, len, PyBUF_READ);
    PyObject *hash = view == NULL ? NULL : PyObject_CallOneArg(sha1, view);
    Py_XDECREF(view);
    PyObject *digest = hash == NULL ? NULL : PyObject_CallMethodNoArgs(hash, str_digest);
    Py_XDECREF(hash);
    if (digest == NULL)
        return -1;
    if (!PyBytes_Check(digest) || PyBytes_GET_SIZE(digest) != 20) {
        Py_DECREF(digest);
        PyErr_SetString(PyExc_TypeError, "zstd_skim: hashlib.sha1 gave no 20-byte digest");
        return -1;
    }
    base32_sha1((const unsigned char *)PyBytes_AS_STRING(digest), b32);
    Py_DECREF(digest);
    return 0;
}

/* "decompress" (made by zstd_skim) */
static PyObject *str_decompress_name;

/* The output of ``inflater.decompress`` of buf[0:len], as zstd_output gives it (a frame's
 * blocks fed to the decompressobj that started it). */
static PyObject *
inflater_output(PyObject *inflater, const unsigned char *buf, Py_ssize_t len)
{
    PyObject *decompress = PyObject_GetAttr(inflater, str_decompress_name);
    if (decompress == NULL)
        return NULL;
    PyObject *out = zstd_output(decompress, buf, len);
    Py_DECREF(decompress);
    return out;
}

/* The output of the rest of a frame whose first block ``inflater`` decompressed into
 * ``first``, raw[0:len] its blocks after the first (and checksum), through the same
 * ``inflater``: first's bytes and theirs, ``content`` bytes in all; NULL, with no error set
 * where zstd fails or gives another size (the inflater is then of no more use), or with an
 * error set. */
static PyObject *
zstd_rest(PyObject *inflater, PyObject *first, const unsigned char *raw, Py_ssize_t len,
          long long content)
{
    PyObject *rest = inflater_output(inflater, raw, len);
    if (rest == NULL)
        return NULL;
    PyObject *whole = Py_NewRef(first);
    PyBytes_ConcatAndDel(&whole, rest);
    if (whole != NULL && PyBytes_GET_SIZE(whole) != content)
        Py_CLEAR(whole);
    return whole;
}

/* zstd_skim(raw, rpos, decompressor, skip_types, content_types, verify, raw_offset=0,
 * cdxj=None): ZstdFrames.skim over the frames wholly in raw[rpos:] (raw[0] at raw_offset in the
 * file), as far as they are common ones (see zstd_frame) and their records are passed over as
 * GzipMembers.skim, skim_block and ZstdFrames.finish pass them: a plain WARC header block
 * judged skipped, then the record ending in its frame with at most TRAILER_MAX bytes after it
 * (whitespace, where the frame is decompressed whole).  With ``cdxj`` (as Members.skim's), a
 * record whose line make_line would make and whose header blocks are in the frame's output
 * is passed over so too, its line made (line_head, line_tail: the offset and length its
 * frame's), its payload hashed where it has no digest (zstd_sha1: then all of its frame is
 * decompressed, and a record left to Python whose frame's blocks after the first were is
 * started by Python again).  A frame is decompressed whole by decompressor.decompress, or
 * (unless verify) its first block alone by a decompressor.decompressobj() where it has more,
 * and its other blocks by that decompressobj where its payload is hashed.  Returns (records
 * passed over, rpos after them, the frame stopped at if its record is not passed over: (its
 * output, its end in raw, the end of its first block in raw or None where decompressed whole,
 * its content size, its checksum flag, its decompressobj or None, its WARC header block's
 * values or None), else None: anything uncommon, which the Python walker reads and reports). */
static PyObject *
zstd_skim(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    const char *usage = "zstd_skim(raw, rpos, decompressor, warc_types, content_types, verify, "
                        "raw_offset=0, cdxj=None)";
    Py_ssize_t rpos;
    if ((nargs != 6 && nargs != 8) || name_tuples(args, 3, usage) < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, usage);
        return NULL;
    }
    rpos = PyLong_AsSsize_t(args[1]);
    int verify = PyObject_IsTrue(args[5]);
    if ((rpos == -1 && PyErr_Occurred()) || verify < 0)
        return NULL;
    long long raw_offset = nargs == 8 ? PyLong_AsLongLong(args[6]) : 0;
    PyObject *cdxj[5];
    if ((raw_offset == -1 && PyErr_Occurred())
            || cdxj_arg(nargs == 8 ? args[7] : Py_None, usage, cdxj) < 0)
        return NULL;
    PyObject *lines = cdxj[4];
    unsigned char *line = NULL, *key = NULL;  /* (line_head's, made as needed) */
    Py_ssize_t line_cap = 0, key_cap = 0;
    if (str_decompress_name == NULL
            && (str_decompress_name = PyUnicode_InternFromString("decompress")) == NULL)
        return NULL;
    PyObject *decompress = PyObject_GetAttr(args[2], str_decompress_name);
    if (decompress == NULL)
        return NULL;
    PyObject *decompressobj = PyObject_GetAttrString(args[2], "decompressobj");
    Py_buffer raw;
    if (decompressobj == NULL || PyObject_GetBuffer(args[0], &raw, PyBUF_SIMPLE) < 0) {
        Py_DECREF(decompress);
        Py_XDECREF(decompressobj);
        return NULL;
    }
    const unsigned char *buf = raw.buf;
    long long passed = 0;
    PyObject *started = NULL, *out = NULL, *inflater = NULL, *result;
    ZstdFrame frame = {0};  /* (zstd_frame fills it; gcc cannot tell) */
    while (rpos >= 0 && rpos < raw.len
           && zstd_frame(buf + rpos, raw.len - rpos, &frame) == 0
           && (!(verify || frame.blocks == 1) || frame.end <= READ_SIZE)) {
        const unsigned char *at = buf + rpos;
        if (verify || frame.blocks == 1) {
            out = zstd_output(decompress, at, frame.end);
        } else {
            inflater = PyObject_CallNoArgs(decompressobj);
            if (inflater == NULL)
                goto error;
            out = inflater_output(inflater, at, frame.first_end);
        }
        if (out == NULL) {
            if (PyErr_Occurred())
                goto error;
            break;
        }
        const unsigned char *block = (const unsigned char *)PyBytes_AS_STRING(out);
        Py_ssize_t out_len = PyBytes_GET_SIZE(out), len = blank_line_end(block, 0, out_len);
        if (len < 0)
            break;
        PyObject *values = NULL;
        long long unread = 0;
        int skip = 0, common = len <= HEADERS_MAX && len >= 5 && memcmp(block, "WARC/", 5) == 0
                               && plain(block, len);
        if (common) {
            /* (the values go back to Python only for a record no line is made of) */
            skip = judge_block(block, len, args[3], args[4], &unread,
                               lines != NULL ? NULL : &values);
            if (skip < 0)
                goto error;
        }
        LineRecord r;
        if (common && !skip && lines != NULL && line_record(block, len, args[4], &r)) {
            /* a payload hashed is read whole: the frame's blocks after the first, where only
             * it is decompressed, decompressed too (whole: all of the frame's output) */
            PyObject *whole = NULL;
            if (r.hashed && inflater != NULL) {
                whole = zstd_rest(inflater, out, at + frame.first_end,
                                  frame.end - frame.first_end, frame.content);
                if (whole == NULL) {
                    if (PyErr_Occurred())
                        goto error;
                    break;  /* (the inflater spent: Python starts the frame again) */
                }
            }
            const unsigned char *content = whole != NULL
                ? (const unsigned char *)PyBytes_AS_STRING(whole) : block;
            Py_ssize_t content_len = whole != NULL ? PyBytes_GET_SIZE(whole) : out_len;
            int known = inflater == NULL || whole != NULL;
            /* as ZstdFrames.finish passes it over: its header blocks read, the rest of the
             * record and at most TRAILER_MAX bytes after it in the frame (whitespace, where
             * all of the frame's output is known) */
            Py_ssize_t http_end = r.with_http ? blank_line_end(content, len, content_len) : len;
            int ends = http_end >= 0 && ends_in_frame(content, known ? content_len : frame.content,
                                                      len + r.length, known);
            Py_ssize_t prefix;
            int first, made = ends ? line_head(&r, content + len, http_end - len, cdxj[0],
                                               cdxj[1], &key, &key_cap, &line, &line_cap,
                                               &prefix, &first)
                                   : 0;
            /* (its payload as lite_record's _Limit reads it: after the HTTP block, to the
             * record's end) */
            unsigned char sha1[32];
            if (made > 0 && r.hashed
                    && zstd_sha1(content + http_end, len + r.length - http_end, sha1) < 0)
                made = -1;
            if (made > 0 && line_tail(&line, &line_cap, prefix, first, r.hashed ? sha1 : NULL,
                                      frame.end, raw_offset + rpos, cdxj[3], lines) < 0)
                made = -1;
            Py_XDECREF(whole);
            if (made < 0)
                goto error;
            if (!made && r.hashed && inflater != NULL)
                break;  /* (as above) */
            if (made) {
                Py_CLEAR(out);
                Py_CLEAR(inflater);
                passed++;
                rpos += frame.end;
                continue;
            }
        }
        if (!skip && values == NULL) {
            if (!common)
                values = Py_NewRef(Py_None);
            else if (judge_block(block, len, args[3], args[4], &unread, &values) < 0)
                goto error;
        }
        if (!skip) {
            started = Py_BuildValue(
                "OnNLOON", out, rpos + frame.end,
                inflater != NULL ? PyLong_FromSsize_t(rpos + frame.first_end) : Py_NewRef(Py_None),
                frame.content, frame.checksum ? Py_True : Py_False,
                inflater != NULL ? inflater : Py_None, values);
            if (started == NULL)
                goto error;
            break;
        }
        if (!ends_in_frame(block, inflater != NULL ? frame.content : out_len, len + unread,
                           inflater == NULL))
            break;
        Py_CLEAR(out);
        Py_CLEAR(inflater);
        passed++;
        rpos += frame.end;
    }
    result = Py_BuildValue("LnN", passed, rpos, started != NULL ? started : Py_NewRef(Py_None));
    goto done;
error:
    result = NULL;
done:
    Py_XDECREF(out);
    Py_XDECREF(inflater);
    PyMem_Free(line);
    PyMem_Free(key);
    Py_DECREF(decompress);
    Py_DECREF(decompressobj);
    PyBuffer_Release(&raw);
    return result;
}

/* header_end(out, at): for ZstdFrames.peek_headers, where GzipMembers.peek_headers' search of
 * the bytes ``out`` from ``at`` on for the blank line that ends a header block ends, or -1. */
static PyObject *
header_end(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    const char *usage = "header_end(out, at): bytes and an offset in them";
    if (nargs != 2 || !PyBytes_Check(args[0]) || !PyLong_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, usage);
        return NULL;
    }
    Py_ssize_t len = PyBytes_GET_SIZE(args[0]), at = PyLong_AsSsize_t(args[1]);
    if (at == -1 && PyErr_Occurred())
        return NULL;
    if (at < 0 || at > len) {
        PyErr_SetString(PyExc_ValueError, usage);
        return NULL;
    }
    return PyLong_FromSsize_t(
        blank_line_end((const unsigned char *)PyBytes_AS_STRING(args[0]), at, len));
}
