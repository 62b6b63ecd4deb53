"""A stand-in ``hadoop fs`` for ``storage``'s Hadoop backend (tests/test_hdfs_storage.py).

Streaming jobs, ``-files``, partitioners and ``hadoop fs`` against HDFS run on real Hadoop
(tests/test_real_hadoop.py, scripts/hadoop-local); this stays for what those do not cover
yet: the storage backend's many small operations (a JVM each on real Hadoop) and
``s3a://``, whose connector is not among the fetched jars.

``install(bin_dir, root)`` writes ``bin_dir/hadoop``, a script that

* records every call (its argv, one JSON list a line) in ``root/calls.jsonl``;
* answers what ``storage``'s Hadoop backend asks of it (``fs`` with ``-test -e``,
  ``-stat FORMAT``, ``-put [-f]``, ``-mv``, ``-rm [-f] [-R]``, ``-ls [-R]``, ``-cat``,
  ``-mkdir -p``, ``-get``, ``-du``, ``-touchz``), keeping "HDFS" in ``root/hdfs``
  (``hdfs:///a/b``, ``hdfs://namenode/a/b`` and ``/a/b`` are ``root/hdfs/a/b``, relative
  paths are under ``/user/$USER``) and Hadoop's S3 connector in ``root/s3a``
  (``s3a://bucket/key`` is ``root/s3a/bucket/key``). As FsShell does: ``-put`` and
  ``-mv`` need the target's parent directory and do not replace a file (``-put -f``
  does), ``-rm`` takes a directory only with ``-r``/``-R``, ``-test`` exits 1 silently for
  an absent path, and errors are printed as ``cmd: `path': message`` with exit status 1.
"""
import getpass
import glob
import json
import os
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
VERSION = "3.3.6"


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
