#!/usr/bin/env python3
"""Build the guest's initramfs for make vmtest (newc cpio, uncompressed).

Usage: initramfs.py OUT KERNEL_ROOT BUSYBOX INIT ITEM...

KERNEL_ROOT is an extracted Debian linux-image package (lib/modules/<ver>).
An ITEM ending in "/" is a directory under its kernel/ whose modules all
go in (the kernel loads them on demand through busybox's modprobe, after
the init's depmod); any other ITEM is a module loaded at boot, packed with
the modules it depends on (read from its own modinfo "depends="), listed
in /modules in load order.  Modules are xz-decompressed: busybox's insmod
takes plain .ko files.
"""
import lzma
import os
import stat
import sys


def modinfo_depends(data):
    i = data.find(b"\0depends=")
    if i < 0:
        return []
    end = data.find(b"\0", i + 1)
    val = data[i + 9:end].decode()
    return [d for d in val.split(",") if d]


def index_modules(kroot):
    ver = os.listdir(os.path.join(kroot, "lib/modules"))[0]
    base = os.path.join(kroot, "lib/modules", ver, "kernel")
    mods = {}
    for dp, _, fns in os.walk(base):
        for fn in fns:
            if ".ko" in fn:
                name = fn.split(".ko")[0].replace("-", "_")
                mods[name] = os.path.join(dp, fn)
    return ver, mods


def load(path):
    raw = open(path, "rb").read()
    return lzma.decompress(raw) if path.endswith(".xz") else raw


def closure(names, mods):
    order, data = [], {}

    def add(n):
        n = n.replace("-", "_")
        if n in data or n not in mods:
            return  # built in (or already there)
        data[n] = load(mods[n])
        for d in modinfo_depends(data[n]):
            add(d)
        order.append(n)

    for n in names:
        add(n)
    return order, data


class Cpio:
    def __init__(self, f):
        self.f, self.ino = f, 1

    def add(self, name, mode, data=b""):
        hdr = "070701" + "".join("%08X" % v for v in (
            self.ino, mode, 0, 0, 2 if stat.S_ISDIR(mode) else 1, 0, len(data), 0, 0, 0, 0, len(name) + 1, 0))
        self.ino += 1
        self.f.write(hdr.encode() + name.encode() + b"\0")
        self.f.write(b"\0" * ((4 - (110 + len(name) + 1) % 4) % 4))
        self.f.write(data + b"\0" * ((4 - len(data) % 4) % 4))


def main():
    out, kroot, busybox, init, *items = sys.argv[1:]
    ver, mods = index_modules(kroot)
    kdir = os.path.join(kroot, "lib/modules", ver, "kernel")
    names = [i for i in items if not i.endswith("/")]
    dirs = [os.path.join(kdir, i) for i in items if i.endswith("/")]
    order, data = closure(names, mods)
    extra = sorted(n for n, p in mods.items() if n not in data and any(p.startswith(d) for d in dirs))
    for n in extra:
        data[n] = load(mods[n])
    with open(out, "wb") as f:
        c = Cpio(f)
        made = set()

        def mkdirs(path):
            parts = path.split("/")
            for i in range(1, len(parts) + 1):
                d = "/".join(parts[:i])
                if d not in made:
                    made.add(d)
                    c.add(d, stat.S_IFDIR | 0o755)

        for d in ("bin", "sbin", "usr/bin", "usr/sbin", "dev", "proc", "sys", "tmp", "host"):
            mkdirs(d)
        c.add("bin/busybox", stat.S_IFREG | 0o755, open(busybox, "rb").read())
        c.add("init", stat.S_IFREG | 0o755, open(init, "rb").read())
        for n in order + extra:
            rel = os.path.relpath(mods[n], kroot)
            rel = rel[:-3] if rel.endswith(".xz") else rel
            mkdirs(os.path.dirname(rel))
            c.add(rel, stat.S_IFREG | 0o644, data[n])
        c.add("modules", stat.S_IFREG | 0o644, "".join("%s\n" % n for n in order).encode())
        c.add("TRAILER!!!", 0)
    print("initramfs: kernel %s, at boot: %s; %d more on demand" % (ver, " ".join(order) or "none", len(extra)))


main()
