"""A stand-in ``hadoop`` executable for mrjob's hadoop runner (``-r hadoop``).

``install(bin_dir, root)`` writes ``bin_dir/hadoop``, a script that

* records every call (its argv, one JSON list a line) in ``root/calls.jsonl``;
* answers what mrjob 0.7.4's hadoop runner and ``HadoopFilesystem`` ask of it
  (``version``, ``fs -ls [-R]``, ``-mkdir -p``, ``-put``, ``-cat``, ``-du``,
  ``-rm -R -f -skipTrash``, ``-touchz``, ``-get``/``-copyToLocal``), and what
  ``storage``'s Hadoop backend does (``-test -e``, ``-stat FORMAT``, ``-put -f``,
  ``-mv``, ``-rm -f``), keeping "HDFS" in ``root/hdfs`` (``hdfs:///a/b``,
  ``hdfs://namenode/a/b`` and ``/a/b`` are ``root/hdfs/a/b``, relative paths are
  under ``/user/$USER``) and Hadoop's S3 connector in ``root/s3a``
  (``s3a://bucket/key`` is ``root/s3a/bucket/key``). As FsShell does: ``-put``
  and ``-mv`` need the target's parent directory and do not replace a file
  (``-put -f`` does), ``-rm`` takes a directory only with ``-r``/``-R``,
  ``-test`` exits 1 silently for an absent path, and errors are printed as
  ``cmd: `path': message`` with exit status 1;
* runs ``hadoop jar STREAMING_JAR ...`` as Hadoop streaming would, locally and
  one task after the other. What it models, read from Hadoop 2.x/3.x streaming
  and mapred sources, because the jobs depend on it:

  - generic options (``-D``, ``-files``, ``-archives``, ``-libjars``) only before
    the streaming options; ``-files uri#name`` appears as ``name`` in every
    task's working directory;
  - input listing: directories are listed, names starting with ``_`` or ``.``
    skipped, subdirectories an error ("Not a file") unless
    ``mapreduce.input.fileinputformat.input.dir.recursive`` is true; ``.gz``
    input is decompressed;
  - splits: ``NLineInputFormat`` (``mapreduce.input.lineinputformat.linespermap``
    lines a task), ``CombineTextInputFormat`` (whole files packed up to
    ``mapreduce.input.fileinputformat.split.maxsize`` bytes), else a file a task;
  - the mapper gets ``offset<TAB>line`` unless the input format is
    ``TextInputFormat`` or ``stream.map.input.ignoreKey`` is true (PipeMapper);
  - task output is cut into key and value after ``stream.num.map.output.key.fields``
    tabs (TextOutputReader: no tab left means the whole line is the key and the
    value is empty);
  - partitioners: ``TotalOrderPartitioner`` (reads ``_partition.lst`` from the
    task's working directory unless ``mapreduce.totalorderpartitioner.path`` says
    otherwise; needs exactly reducers-1 increasing keys; partition =
    number of split points <= key), ``KeyFieldBasedPartitioner`` (``-k1,1``) and
    the default hash partitioner; ``mapreduce.job.reduces`` reducers, each run
    even when it gets no records, with ``mapreduce_task_partition`` set;
  - keys sorted bytewise; the reducer gets ``key<TAB>value`` for every value
    (PipeReducer + TextInputWriter, so an empty value leaves a trailing tab);
  - every jobconf property reaches tasks as an environment variable with
    non-alphanumerics replaced by ``_``; ``-cmdenv`` too;
  - output ``part-NNNNN`` files as TextOutputFormat writes them, and ``_SUCCESS``;
    counters reported by tasks (``reporter:counter:``) printed as Hadoop does.

Nothing here is Hadoop: it proves what mrjob sends and how the jobs behave under
these semantics, not that a cluster accepts them.
"""
import bisect
import getpass
import glob
import gzip
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
VERSION = "3.3.6"
JOB_ID = "1700000000000_0001"
TEXT_INPUT_FORMATS = ("org.apache.hadoop.mapred.TextInputFormat",)
TOTAL_ORDER = ("org.apache.hadoop.mapred.lib.TotalOrderPartitioner",
               "org.apache.hadoop.mapreduce.lib.partition.TotalOrderPartitioner")
KEY_FIELD = "org.apache.hadoop.mapred.lib.KeyFieldBasedPartitioner"
HASH = ("org.apache.hadoop.mapred.lib.HashPartitioner",
        "org.apache.hadoop.mapreduce.lib.partition.HashPartitioner")
KNOWN_INPUT_FORMATS = TEXT_INPUT_FORMATS + ("org.apache.hadoop.mapred.lib.NLineInputFormat",
                                            "org.apache.hadoop.mapred.lib.CombineTextInputFormat")
GENERIC_OPTIONS = ("-D", "-files", "-archives", "-libjars", "-conf", "-fs", "-jt")


def install(bin_dir, root, python=sys.executable):
    """Write ``bin_dir/hadoop`` keeping its state under ``root``; return its path."""
    os.makedirs(bin_dir, exist_ok=True)
    os.makedirs(os.path.join(root, "hdfs"), exist_ok=True)
    path = os.path.join(bin_dir, "hadoop")
    with open(path, "w") as fh:
        fh.write(f"#!{python}\n"
                 "import sys\n"
                 f"sys.path.insert(0, {HERE!r})\n"
                 "import fake_hadoop\n"
                 f"sys.exit(fake_hadoop.main(sys.argv[1:], {os.path.abspath(root)!r}))\n")
    os.chmod(path, 0o755)
    return path


def calls(root):
    """Every recorded call, as argv lists (without the executable)."""
    path = os.path.join(root, "calls.jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as fh:
        return [json.loads(line) for line in fh]


def streaming_calls(root):
    """The argv of every ``hadoop jar`` call."""
    return [argv for argv in calls(root) if argv[:1] == ["jar"]]


# -- the executable ------------------------------------------------------------------------

class Failed(Exception):
    pass


def main(argv, root):
    with open(os.path.join(root, "calls.jsonl"), "a") as fh:
        fh.write(json.dumps(argv) + "\n")
    hdfs = Hdfs(os.path.join(root, "hdfs"))
    try:
        if argv[:1] == ["version"]:
            print(f"Hadoop {VERSION}\nSource code repository fake -r 0\nCompiled by fake_hadoop")
            return 0
        if argv[:1] == ["fs"] and len(argv) > 1:
            return fs_command(hdfs, argv[1], argv[2:])
        if argv[:1] == ["jar"] and len(argv) > 1:
            if not os.path.isfile(argv[1]):
                raise Failed(f"JAR does not exist or is not a normal file: {argv[1]}")
            return StreamJob(hdfs, root, argv[2:]).run()
    except Failed as exc:
        sys.stderr.write(f"{exc}\n")
        return 1
    sys.stderr.write(f"fake hadoop: unsupported command: {' '.join(argv)}\n")
    return 1


class Hdfs:
    def __init__(self, base):
        self.base = base
        self.s3a = os.path.join(os.path.dirname(base), "s3a")

    def local(self, uri):
        if uri.startswith("file://"):
            return uri[len("file://"):]
        if uri.startswith("s3a://"):
            return os.path.join(self.s3a, uri[len("s3a://"):])
        if uri.startswith("hdfs://"):
            rest = uri[len("hdfs://"):]
            path = "/" + rest.split("/", 1)[1] if "/" in rest else "/"
        elif "://" in uri:
            raise Failed(f"No FileSystem for scheme \"{uri.split('://')[0]}\"")
        elif uri.startswith("/"):
            path = uri
        else:
            path = f"/user/{getpass.getuser()}/{uri}"
        return os.path.join(self.base, path.lstrip("/"))

    def uri(self, local):
        relative = os.path.relpath(local, self.s3a)
        if not relative.startswith(".."):
            return "s3a://" + relative.replace(os.sep, "/")
        return "hdfs:///" + os.path.relpath(local, self.base).replace(os.sep, "/")


def _ls_line(hdfs, path):
    st = os.stat(path)
    stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime(st.st_mtime))
    if os.path.isdir(path):
        return f"drwxr-xr-x   - hadoop supergroup          0 {stamp} {hdfs.uri(path)}"
    return f"-rw-r--r--   1 hadoop supergroup {st.st_size:>10} {stamp} {hdfs.uri(path)}"


def fs_command(hdfs, cmd, args):
    flags = [a for a in args if a.startswith("-")]
    paths = [a for a in args if not a.startswith("-")]
    if cmd in ("-ls", "-lsr"):
        recursive = cmd == "-lsr" or "-R" in flags
        matched = sorted(glob.glob(hdfs.local(paths[0])))
        if not matched:
            sys.stderr.write(f"ls: `{paths[0]}': No such file or directory\n")
            return 1
        for path in matched:
            if os.path.isdir(path):
                walk = (sorted(os.path.join(d, n) for n in dirs + files)
                        for d, dirs, files in os.walk(path)) if recursive else [
                    sorted(os.path.join(path, n) for n in os.listdir(path))]
                for entries in walk:
                    for entry in entries:
                        print(_ls_line(hdfs, entry))
            else:
                print(_ls_line(hdfs, path))
        return 0
    if cmd == "-mkdir":
        for path in paths:
            local = hdfs.local(path)
            if os.path.exists(local) and "-p" not in flags:
                raise Failed(f"mkdir: `{path}': File exists")
            os.makedirs(local, exist_ok=True)
        return 0
    if cmd in ("-put", "-copyFromLocal"):
        *sources, dest = paths
        target = hdfs.local(dest)
        if os.path.exists(target) and not os.path.isdir(target) and "-f" not in flags:
            raise Failed(f"put: `{dest}': File exists")
        if not os.path.isdir(os.path.dirname(target)):
            raise Failed(f"put: `{dest}': No such file or directory")
        for source in sources:
            to = os.path.join(target, os.path.basename(source)) if os.path.isdir(target) else target
            if os.path.isdir(source):
                shutil.copytree(source, to)
            else:
                shutil.copyfile(source, to)
        return 0
    if cmd == "-cat":
        for path in paths:
            matched = sorted(glob.glob(hdfs.local(path)))
            if not matched or any(os.path.isdir(m) for m in matched):
                raise Failed(f"cat: `{path}': No such file or directory")
            for m in matched:
                with open(m, "rb") as fh:
                    sys.stdout.buffer.write(fh.read())
        return 0
    if cmd in ("-get", "-copyToLocal"):
        source, dest = paths
        shutil.copyfile(hdfs.local(source), dest)
        return 0
    if cmd == "-du":
        for path in sorted(glob.glob(hdfs.local(paths[0]))):
            size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs) \
                if os.path.isdir(path) else os.path.getsize(path)
            print(f"{size}  {size}  {hdfs.uri(path)}")
        return 0
    if cmd in ("-rm", "-rmr"):
        recursive = cmd == "-rmr" or "-r" in flags or "-R" in flags
        for path in paths:
            matched = glob.glob(hdfs.local(path))
            if not matched and "-f" not in flags:
                raise Failed(f"rm: `{path}': No such file or directory")
            for m in matched:
                if os.path.isdir(m) and not recursive:
                    raise Failed(f"rm: `{path}': Is a directory")
                shutil.rmtree(m) if os.path.isdir(m) else os.unlink(m)
        return 0
    if cmd == "-test":
        [flag], [path] = flags, paths
        if flag != "-e":
            raise Failed(f"fake hadoop: -test {flag} not modelled")
        try:
            local = hdfs.local(path)
        except Failed as exc:
            raise Failed(f"test: {exc}")
        return 0 if os.path.exists(local) else 1
    if cmd == "-stat":
        *formats, path = paths
        local = hdfs.local(path)
        if not os.path.exists(local):
            raise Failed(f"stat: `{path}': No such file or directory")
        st = os.stat(local)
        fields = {"%b": str(0 if os.path.isdir(local) else st.st_size),
                  "%n": os.path.basename(local),
                  "%F": "directory" if os.path.isdir(local) else "regular file",
                  "%y": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(st.st_mtime)),
                  "%Y": str(st.st_mtime_ns // 10 ** 6)}
        out = formats[0] if formats else "%y"
        for key, value in fields.items():
            out = out.replace(key, value)
        print(out)
        return 0
    if cmd == "-mv":
        source, dest = paths
        local_source, target = hdfs.local(source), hdfs.local(dest)
        if not os.path.exists(local_source):
            raise Failed(f"mv: `{source}': No such file or directory")
        if os.path.isdir(target):
            target = os.path.join(target, os.path.basename(local_source))
        if os.path.exists(target):
            raise Failed(f"mv: `{dest}': File exists")
        if not os.path.isdir(os.path.dirname(target)):
            raise Failed(f"mv: `{dest}': No such file or directory")
        os.rename(local_source, target)
        return 0
    if cmd == "-touchz":
        local = hdfs.local(paths[0])
        os.makedirs(os.path.dirname(local), exist_ok=True)
        open(local, "ab").close()
        return 0
    raise Failed(f"fake hadoop: unsupported fs command {cmd}")


# -- streaming -----------------------------------------------------------------------------

def env_name(key):
    """Hadoop streaming's safeEnvVarName."""
    return "".join(c if c.isalnum() else "_" for c in key)


class StreamJob:
    def __init__(self, hdfs, root, args):
        self.hdfs, self.root = hdfs, root
        self.conf, self.files, self.archives, self.cmdenv = {}, [], [], {}
        self.inputs, self.output = [], None
        self.mapper = self.reducer = self.combiner = None
        self.partitioner = self.input_format = None
        streaming_started = False
        i = 0
        while i < len(args):
            opt = args[i]
            value = args[i + 1] if i + 1 < len(args) else None
            if opt.startswith("-D") and opt != "-D":
                opt, value, i = "-D", opt[2:], i - 1
            if opt in GENERIC_OPTIONS and streaming_started:
                raise Failed(f"{opt} is a generic option: it must come before the streaming "
                             f"options (it came after {streaming_started})")
            if value is None:
                raise Failed(f"missing argument for {opt}")
            if opt == "-D":
                key, _, val = value.partition("=")
                self.conf[key] = val
            elif opt == "-files":
                self.files += value.split(",")
            elif opt == "-archives":
                self.archives += value.split(",")
            elif opt == "-libjars":
                pass
            else:
                streaming_started = streaming_started or opt
                if opt == "-input":
                    self.inputs.append(value)
                elif opt == "-output":
                    self.output = value
                elif opt == "-mapper":
                    self.mapper = value
                elif opt == "-reducer":
                    self.reducer = value
                elif opt == "-combiner":
                    self.combiner = value
                elif opt == "-partitioner":
                    self.partitioner = value
                elif opt == "-inputformat":
                    self.input_format = value
                elif opt == "-cmdenv":
                    key, _, val = value.partition("=")
                    self.cmdenv[key] = val
                elif opt == "-numReduceTasks":
                    self.conf["mapreduce.job.reduces"] = value
                else:
                    raise Failed(f"Unrecognized option: {opt}")
            i += 2
        if not (self.inputs and self.output and self.mapper):
            raise Failed("Required arguments: -input, -output, -mapper")
        if self.input_format and self.input_format not in KNOWN_INPUT_FORMATS:
            raise Failed(f"-inputformat : class not found : {self.input_format}")
        if self.combiner:
            raise Failed("fake hadoop: combiners are not modelled")
        self.counters = {}
        self.task_logs = os.path.join(root, "task-logs")
        os.makedirs(self.task_logs, exist_ok=True)

    # .. helpers ..

    def flag(self, key, default=False):
        value = self.conf.get(key)
        return default if value is None else value.lower() == "true"

    def log(self, message):
        sys.stderr.write(time.strftime("%y/%m/%d %H:%M:%S") + " " + message + "\n")

    def localize(self, workdir):
        for spec in self.files:
            uri, _, name = spec.partition("#")
            source = self.hdfs.local(uri)
            if not os.path.isfile(source):
                raise Failed(f"java.io.FileNotFoundException: File {uri} does not exist")
            os.symlink(source, os.path.join(workdir, name or os.path.basename(uri)))
        for spec in self.archives:
            uri, _, name = spec.partition("#")
            shutil.unpack_archive(self.hdfs.local(uri), os.path.join(workdir, name or os.path.basename(uri)))

    def list_inputs(self):
        recursive = self.flag("mapreduce.input.fileinputformat.input.dir.recursive")
        found = []

        def hidden(path):
            return os.path.basename(path).startswith(("_", "."))

        def add_dir(path):
            for name in sorted(os.listdir(path)):
                child = os.path.join(path, name)
                if hidden(child):
                    continue
                if os.path.isdir(child):
                    if not recursive:
                        raise Failed(f"java.io.IOException: Not a file: {self.hdfs.uri(child)}")
                    add_dir(child)
                else:
                    found.append(child)

        for spec in self.inputs:
            matched = sorted(glob.glob(self.hdfs.local(spec)))
            if not matched:
                raise Failed(f"Input path does not exist: {spec}")
            for path in matched:
                if os.path.isdir(path):
                    add_dir(path)
                elif not hidden(path):
                    found.append(path)
        return found

    @staticmethod
    def read_lines(path):
        """(offset, line) pairs as LineRecordReader gives them (offsets in the decompressed data)."""
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rb") as fh:
            data = fh.read()
        offset, out = 0, []
        for line in data.splitlines(True):
            out.append((offset, line.rstrip(b"\r\n")))
            offset += len(line)
        return out

    def splits(self, files):
        fmt = self.input_format or TEXT_INPUT_FORMATS[0]
        if fmt.endswith("NLineInputFormat"):
            n = int(self.conf.get("mapreduce.input.lineinputformat.linespermap", "1"))
            out = []
            for path in files:
                records = self.read_lines(path)
                out += [(records[i:i + n], path) for i in range(0, len(records), n)]
            return out
        if fmt.endswith("CombineTextInputFormat"):
            maxsize = int(self.conf.get("mapreduce.input.fileinputformat.split.maxsize", "0"))
            groups, size = [[]], 0
            for path in files:
                if groups[-1] and maxsize and size + os.path.getsize(path) > maxsize:
                    groups.append([])
                    size = 0
                groups[-1].append(path)
                size += os.path.getsize(path)
            return [([r for p in group for r in self.read_lines(p)], None) for group in groups if group]
        return [(self.read_lines(path), path) for path in files]

    def run_task(self, kind, number, command, stdin):
        workdir = tempfile.mkdtemp(prefix=f"{kind}-{number:05d}-", dir=self.task_logs)
        self.localize(workdir)
        env = dict(os.environ)
        env.update({env_name(k): v for k, v in self.conf.items()})
        env.update(self.cmdenv)
        env.update({"mapreduce_task_partition": str(number),
                    "mapreduce_task_ismap": "true" if kind == "m" else "false",
                    "mapreduce_task_id": f"task_{JOB_ID}_{kind}_{number:06d}",
                    "mapreduce_task_attempt_id": f"attempt_{JOB_ID}_{kind}_{number:06d}_0"})
        proc = subprocess.run(shlex.split(command), cwd=workdir, input=stdin, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        with open(workdir + ".stderr", "wb") as fh:
            fh.write(proc.stderr)
        for line in proc.stderr.decode("utf-8", "replace").splitlines():
            if line.startswith("reporter:counter:"):
                group, name, amount = line[len("reporter:counter:"):].rsplit(",", 2)
                self.counters.setdefault(group, {}).setdefault(name, 0)
                self.counters[group][name] += int(amount)
        if proc.returncode:
            tail = proc.stderr.decode("utf-8", "replace")[-3000:]
            raise Failed(f"Error: java.lang.RuntimeException: PipeMapRed.waitOutputThreads(): "
                         f"subprocess failed with code {proc.returncode} (task {kind} {number})\n"
                         f"{tail}\nStreaming Command Failed!")
        return proc.stdout

    def split_key(self, line, fields_key, separator_key):
        fields = int(self.conf.get(fields_key, "1"))
        sep = self.conf.get(separator_key, "\t").encode()
        # TextOutputReader.splitKeyVal: the key ends at the fields-th separator
        pos = line.find(sep)
        for _ in range(1, fields):
            if pos == -1:
                break
            pos = line.find(sep, pos + len(sep))
        if pos == -1:
            return line, b""
        return line[:pos], line[pos + len(sep):]

    def partition_function(self, reduces, workdir_files):
        name = self.partitioner
        if name in TOTAL_ORDER:
            from webarchive_indexing.seqfile import read_text_keys
            path = self.conf.get("mapreduce.totalorderpartitioner.path",
                                 self.conf.get("total.order.partitioner.path", "_partition.lst"))
            local = workdir_files.get(path) if path == "_partition.lst" else self.hdfs.local(path)
            if not local or not os.path.exists(local):
                raise Failed(f"java.lang.IllegalArgumentException: Can't read partitions file: "
                             f"java.io.FileNotFoundException: File {path} does not exist")
            with open(local, "rb") as fh:
                keys = [k.encode("utf-8") for k in read_text_keys(fh)]
            if len(keys) != reduces - 1:
                raise Failed(f"java.io.IOException: Wrong number of partitions in keyset: "
                             f"{len(keys)} keys for {reduces} reducers")
            if any(a >= b for a, b in zip(keys, keys[1:])):
                raise Failed("java.io.IOException: Split points are out of order")
            return lambda key: bisect.bisect_right(keys, key)
        if name == KEY_FIELD:
            options = self.conf.get("mapreduce.partition.keypartitioner.options", "")
            if options != "-k1,1":
                raise Failed(f"fake hadoop: KeyFieldBasedPartitioner options {options!r} not modelled")
            sep = self.conf.get("mapreduce.map.output.key.field.separator", "\t").encode()
            return lambda key: zlib.crc32(key.split(sep, 1)[0]) % reduces
        if name is None or name in HASH:
            return lambda key: zlib.crc32(key) % reduces
        raise Failed(f"java.lang.ClassNotFoundException: {name}")

    def write_part(self, number, pairs):
        with open(os.path.join(self.out_dir, f"part-{number:05d}"), "wb") as fh:
            for key, value in pairs:
                fh.write(key + b"\t" + value + b"\n")

    def output_pairs(self, stdout, fields_key, separator_key):
        return [self.split_key(line, fields_key, separator_key) for line in stdout.splitlines()]

    # .. the job ..

    def run(self):
        self.out_dir = self.hdfs.local(self.output)
        if os.path.exists(self.out_dir):
            raise Failed(f"org.apache.hadoop.mapred.FileAlreadyExistsException: Output directory "
                         f"{self.output} already exists")
        files = self.list_inputs()
        splits = self.splits(files)
        self.log(f"INFO mapred.FileInputFormat: Total input files to process : {len(files)}")
        self.log(f"INFO mapreduce.JobSubmitter: number of splits:{len(splits)}")
        self.log(f"INFO impl.YarnClientImpl: Submitted application application_{JOB_ID}")
        self.log(f"INFO mapreduce.Job: Running job: job_{JOB_ID}")
        fmt = self.input_format or TEXT_INPUT_FORMATS[0]
        ignore_key = self.flag("stream.map.input.ignoreKey", fmt in TEXT_INPUT_FORMATS)
        reduces = int(self.conf.get("mapreduce.job.reduces", "1"))
        if not self.reducer:
            reduces = 0
        os.makedirs(self.out_dir)
        map_outputs = []
        for number, (records, path) in enumerate(splits):
            stdin = b"".join(line + b"\n" if ignore_key else b"%d\t%s\n" % (offset, line)
                             for offset, line in records)
            if path:
                self.conf["mapreduce.map.input.file"] = self.hdfs.uri(path)
            stdout = self.run_task("m", number, self.mapper, stdin)
            self.conf.pop("mapreduce.map.input.file", None)
            pairs = self.output_pairs(stdout, "stream.num.map.output.key.fields",
                                      "stream.map.output.field.separator")
            if reduces == 0:
                self.write_part(number, pairs)
            else:
                map_outputs.append(pairs)
        if reduces:
            # the partitioner runs in the map tasks: it sees the map tasks' working directory
            probe = tempfile.mkdtemp(prefix="partitioner-", dir=self.task_logs)
            self.localize(probe)
            files_in_wd = {n: os.path.join(probe, n) for n in os.listdir(probe)}
            partition = self.partition_function(reduces, files_in_wd)
            buckets = [[] for _ in range(reduces)]
            for pairs in map_outputs:
                for key, value in pairs:
                    buckets[partition(key)].append((key, value))
            sep = self.conf.get("stream.reduce.input.field.separator", "\t").encode()
            for number, bucket in enumerate(buckets):
                bucket.sort(key=lambda kv: kv[0])
                stdin = b"".join(key + sep + value + b"\n" for key, value in bucket)
                stdout = self.run_task("r", number, self.reducer, stdin)
                self.write_part(number, self.output_pairs(stdout, "stream.num.reduce.output.key.fields",
                                                          "stream.reduce.output.field.separator"))
        open(os.path.join(self.out_dir, "_SUCCESS"), "wb").close()
        self.log(f"INFO mapreduce.Job: Job job_{JOB_ID} completed successfully")
        total = sum(len(c) for c in self.counters.values())
        lines = [f"INFO mapreduce.Job: Counters: {total}"]
        for group, counters in sorted(self.counters.items()):
            lines.append(f"\t{group}")
            lines += [f"\t\t{name}={amount}" for name, amount in sorted(counters.items())]
        self.log("\n".join(lines))
        self.log(f"INFO streaming.StreamJob: Output directory: {self.output}")
        return 0
