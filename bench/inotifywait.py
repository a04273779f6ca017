#!/usr/bin/env python3
"""A stand-in for `inotifywait -m` (inotify-tools) where that package is not installed, for the
scripted floors of bench/latency.sh: python3 standard library only (inotify through ctypes).

Only what the benches use:

  inotifywait.py -m [-q] -e EVENT[,EVENT...] [-e ...] --format '%f' DIR

watches DIR (not recursively) and, for every event of the named kinds, prints the file's name on
a line of its own, flushed at once, until killed or stdout closes. EVENT is one of inotifywait's
names: access, modify, attrib, close_write, close_nowrite, close, open, moved_to, moved_from,
move, create, delete. Like inotifywait, it prints nothing for an event on DIR itself (the format
is only `%f`) and reports an inotify queue overflow on stderr and exits 1 (the caller's floor
would otherwise silently miss a reaction).

Anything else it is given (another format, no -m, a recursive watch) is refused with exit code 2:
a floor that quietly did something else than inotifywait would measure something else.
"""

import ctypes
import os
import struct
import sys

EVENTS = {
    "access": 0x001,
    "modify": 0x002,
    "attrib": 0x004,
    "close_write": 0x008,
    "close_nowrite": 0x010,
    "close": 0x018,
    "open": 0x020,
    "moved_from": 0x040,
    "moved_to": 0x080,
    "move": 0x0C0,
    "create": 0x100,
    "delete": 0x200,
}
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000


def usage(msg):
    print(f"inotifywait.py: {msg}", file=sys.stderr)
    print("usage: inotifywait.py -m [-q] -e EVENT[,EVENT...] --format '%f' DIR", file=sys.stderr)
    sys.exit(2)


def parse(argv):
    mask, monitor, fmt, dirs = 0, False, None, []
    it = iter(argv)
    for arg in it:
        if arg in ("-m", "--monitor"):
            monitor = True
        elif arg in ("-q", "--quiet"):
            pass
        elif arg in ("-e", "--event"):
            for name in next(it, "").split(","):
                if name not in EVENTS:
                    usage(f"unknown event `{name}`")
                mask |= EVENTS[name]
        elif arg == "--format":
            fmt = next(it, None)
        elif arg.startswith("-"):
            usage(f"unsupported option `{arg}`")
        else:
            dirs.append(arg)
    if not monitor:
        usage("only -m (monitor) is supported")
    if fmt != "%f":
        usage("only --format '%f' is supported")
    if len(dirs) != 1 or not mask:
        usage("one directory and at least one -e EVENT")
    return mask, dirs[0]


def main():
    mask, directory = parse(sys.argv[1:])
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    fd = libc.inotify_init1(os.O_CLOEXEC)
    if fd < 0:
        print(f"inotify_init1: {os.strerror(ctypes.get_errno())}", file=sys.stderr)
        return 1
    if libc.inotify_add_watch(fd, os.fsencode(directory), mask) < 0:
        print(f"{directory}: {os.strerror(ctypes.get_errno())}", file=sys.stderr)
        return 1
    out = sys.stdout.buffer
    while True:
        buf = os.read(fd, 1 << 16)
        off, lines = 0, []
        while off + 16 <= len(buf):
            _wd, emask, _cookie, nlen = struct.unpack_from("iIII", buf, off)
            name = buf[off + 16 : off + 16 + nlen].rstrip(b"\0")
            off += 16 + nlen
            if emask & IN_Q_OVERFLOW:
                print("inotifywait.py: the inotify queue overflowed", file=sys.stderr)
                return 1
            if emask & IN_IGNORED:
                # The directory itself is gone: nothing more can come.
                return 0
            if name and emask & mask:
                lines.append(name + b"\n")
        if lines:
            try:
                out.write(b"".join(lines))
                out.flush()
            except BrokenPipeError:
                return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
