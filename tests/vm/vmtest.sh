#!/usr/bin/env bash
# make vmtest: lism on the kernels users have, in VMs.  For each kernel
# family (Debian 12's 6.1 and 6.12 cloud kernels, the newest of each from
# apt), boot it under qemu (TCG: these machines' KVM runs no guest) with
# this machine's root shared read-only over virtiofs, and run there, with
# this build: `lism probe`, `lism load` and what it enables, and the
# integration suites of VMTEST_SUITES; the kernels boot side by side.
# Prints one matrix: kernel x lism feature (probe, loaded), then kernel x
# suite (passed/failed, each failing and skipped test); the host's kernel is
# the first row, from the same probe.  Then the checks (README's
# requirements table against each probe, each load, each suite) as
# "N passed, N failed"; exits 1 if one failed.
# Usage: tests/vm/vmtest.sh BUILD [6.1|6.12 ...]   (root; needs network for apt once)
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:?usage: vmtest.sh BUILD [FAMILY...]}" && pwd)
shift
families=("$@")
[ ${#families[@]} -gt 0 ] || families=(6.1 6.12)
suites=${VMTEST_SUITES:-"fallback/* scope/* degraded/*"}
timeout_s=${VMTEST_TIMEOUT:-3600}         # the whole guest
suite_timeout=${VMTEST_SUITE_TIMEOUT:-1800} # one suite in it
time_scale=${VMTEST_TIME_SCALE:-10}         # waits in the tests last this many times as long
verbose=${VMTEST_VERBOSE:-0}                # 1: each suite's whole output, each test's time, on the console
work=$build/vm
virtiofsd=/usr/lib/qemu/virtiofsd
mkdir -p "$work/debs"

die() { echo "vmtest: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (virtiofsd shares / as root; the guest's tests load BPF)"
# the guest has fresh tmpfs on /tmp, /run and /var/tmp: only the checkout stays visible there
case $build in
"$root"/*) ;;
/tmp/* | /run/* | /var/tmp/*) die "BUILD $build: outside the checkout, under a directory the guest replaces" ;;
esac
for f in "$build/lism" "$build/tests/integration"; do
	[ -x "$f" ] || die "$f is missing: run 'make all $build/tests/integration' first"
done
command -v qemu-system-x86_64 >/dev/null && [ -x "$virtiofsd" ] ||
	die "qemu-system-x86_64 or $virtiofsd missing (make vm-deps installs qemu-system-x86)"

# The newest package of a family, downloaded and extracted once.
kernel_of() { # family -> extracted directory on stdout
	local pat pkg deb dir
	case $1 in
	6.1) pat='^linux-image-6\.1\.0-[0-9]+-cloud-amd64$' ;;
	6.12) pat='^linux-image-6\.12\.[0-9]+\+deb12-cloud-amd64$' ;;
	*) die "unknown kernel family $1 (6.1, 6.12)" ;;
	esac
	pkg=$(apt-cache search --names-only "$pat" | awk '{ print $1 }' | sort -V | tail -1)
	[ -n "$pkg" ] || die "no package matches $pat (apt-get update?)"
	dir=$work/$pkg
	if [ ! -d "$dir/boot" ]; then
		deb=$(ls "$work/debs/${pkg}"_*.deb 2>/dev/null | head -1)
		if [ -z "$deb" ]; then
			(cd "$work/debs" && apt-get download -q "$pkg" >/dev/null 2>&1) || die "apt-get download $pkg failed"
			deb=$(ls "$work/debs/${pkg}"_*.deb | head -1)
		fi
		rm -rf "$dir.tmp" && dpkg-deb -x "$deb" "$dir.tmp" && mv "$dir.tmp" "$dir" || die "extracting $deb failed"
	fi
	echo "$dir"
}

busybox=$work/busybox/bin/busybox
if [ ! -x "$busybox" ]; then
	(cd "$work/debs" && apt-get download -q busybox-static >/dev/null 2>&1) || die "apt-get download busybox-static failed"
	rm -rf "$work/busybox" && dpkg-deb -x "$(ls "$work"/debs/busybox-static_*.deb | head -1)" "$work/busybox" ||
		die "extracting busybox-static failed"
fi

# What the guest runs (in this machine's root, chrooted): lines "vmtest-*" for the matrix.
cat >"$work/guest.sh" <<EOF
set -f # the suites are Criterion filters, not globs
# the matrix: a test of a feature this kernel lacks is skipped (harness.h, needs()); all else as CI
# (and waits for something to happen last $time_scale times as long: TCG is that much slower, slow.h)
export PATH=/usr/sbin:/usr/bin:/sbin:/bin LISM_BIN=$build/lism CI=true LISM_KERNEL_MATRIX=1 LISM_TEST_TIME_SCALE=$time_scale
cd $root
echo "vmtest-kernel: \$(uname -r)"
probe() {
	python3 -c '
import json, sys
j = json.load(sys.stdin)
for name, f in j["features"].items():
    k = "yes" if f.get("kernel", True) else "no"
    v = f.get("verifier", "-")
    print("vmtest-probe: %s kernel=%s verifier=%s" % (name, k, {True: "yes", False: "REFUSED"}.get(v, "-")))
'
}
$build/lism probe -j 2>/dev/null | probe
$build/lism load >/tmp/load.out 2>&1
echo "vmtest-load: \$? \$(grep -m1 '^lism: ' /tmp/load.out | cut -c1-160)"
$build/lism status -j 2>/dev/null | python3 -c '
import json, sys
for name, f in json.load(sys.stdin)["features"].items():
    print("vmtest-feature: %s %s" % (name, "on" if f["enabled"] else "off"))
' 2>/dev/null
$build/lism unload --timeout 5 >/dev/null 2>&1
for s in $suites; do
	# through a file: a lism a failed test left running would hold a pipe open
	timeout -k 10 $suite_timeout $build/tests/integration --jobs 1 $([ "$verbose" = 1 ] && echo --verbose) \
		--filter "\$s" >/tmp/suite.out 2>&1
	pkill -9 -f "^$build/lism " 2>/dev/null
	out=\$(cat /tmp/suite.out)
	[ "$verbose" = 1 ] && echo "\$out" | grep -v ': Test is disabled\$' | sed 's/^/vmtest-log: /'
	echo "\$out" | grep -E '^\[FAIL\]' | sed 's/^\[FAIL\] /vmtest-fail: /; s/: ([0-9.]*s)\$//'
	echo "\$out" | grep -E '^lism-matrix-skip: ' | sed 's/^lism-matrix-skip: /vmtest-skip: /'
	# where each assertion failed first: its message (a test's whole output, often) may run past the cut
	echo "\$out" | grep -E '^\[----\] .*: Assertion Failed' | head -5 | sed 's/^\[----\] */vmtest-why: at /; s/: Assertion Failed.*\$//'
	echo "\$out" | grep -E '^\[----\] +[^ ]' | grep -vE 'Assertion Failed|Criterion v[0-9]' | head -40 | sed 's/^\[----\] */vmtest-why: /'
	syn=\$(echo "\$out" | grep 'Synthesis:' | tail -1)
	echo "vmtest-suite: \$s \${syn:-no synthesis}"
done
EOF

# One kernel, start to end: its own virtiofsd and console log.  The kernels
# boot side by side: single-threaded TCG keeps one CPU busy per guest.
boot() { # kernel directory
	local kdir=$1 ver sock vpid start
	ver=$(ls "$kdir/lib/modules")
	rm -f "$work/console-$ver.log" # never an earlier run's
	python3 "$here/initramfs.py" "$work/initrd-$ver" "$kdir" "$busybox" "$here/init" \
		virtio_pci fuse virtiofs veth tun nf_conntrack net/ drivers/net/ fs/overlayfs/ lib/ crypto/ \
		>/dev/null || { echo "vmtest: initramfs for $ver failed" >&2; return 1; }
	sock=$work/virtiofs-$$-$ver.sock
	rm -f "$sock"
	"$virtiofsd" --socket-path="$sock" -o source=/ -o cache=none -o sandbox=chroot >"$work/virtiofsd-$ver.log" 2>&1 &
	vpid=$!
	for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
	echo "vmtest: booting $ver (TCG) for: probe, load, $suites"
	start=$(date +%s)
	timeout "$timeout_s" qemu-system-x86_64 -machine q35 -accel tcg,thread=single -cpu max -smp 2 -m 2048 \
		-object memory-backend-memfd,id=mem,size=2048M,share=on -numa node,memdev=mem \
		-chardev socket,id=vfs,path="$sock" -device vhost-user-fs-pci,chardev=vfs,tag=hostroot \
		-kernel "$kdir/boot/vmlinuz-$ver" -initrd "$work/initrd-$ver" \
		-append "console=ttyS0 quiet panic=-1 vmtest.script=$work/guest.sh vmtest.keep=$root" \
		-display none -serial stdio -no-reboot </dev/null 2>&1 | stdbuf -oL tr -d '\r' >"$work/console-$ver.log" # line by line: progress shows while it runs
	kill "$vpid" 2>/dev/null
	wait "$vpid" 2>/dev/null
	rm -f "$sock"
	echo "vmtest: $ver done in $(($(date +%s) - start)) s (console: $work/console-$ver.log)"
}

results=() kdirs=()
for fam in "${families[@]}"; do # downloads one after the other (apt's lock)
	kdir=$(kernel_of "$fam") || exit 1
	kdirs+=("$kdir")
	results+=("$work/console-$(ls "$kdir/lib/modules").log")
done
pids=()
for kdir in "${kdirs[@]}"; do
	boot "$kdir" &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done

# The host's own row, from the same probe and a load in a cgroup and pin directory of its own.
host=$work/host.log
{
	echo "vmtest-kernel: $(uname -r) (host)"
	"$build/lism" probe -j 2>/dev/null | python3 -c '
import json, sys
for name, f in json.load(sys.stdin)["features"].items():
    print("vmtest-probe: %s kernel=%s verifier=%s" % (name, "yes" if f.get("kernel", True) else "no",
          {True: "yes", False: "REFUSED"}.get(f.get("verifier", "-"), "-")))'
} >"$host"

python3 - "$here" "$root/README.md" "$host" "${results[@]}" <<'EOF'
import re, sys
sys.path.insert(0, sys.argv.pop(1))
import requirements
readme = sys.argv.pop(1)
rows = []
for path in sys.argv[1:]:
    r = {"kernel": "?", "probe": {}, "feature": {}, "suites": [], "fails": [], "skips": [], "load": "-",
         "exit": None}
    for line in open(path, errors="replace"):
        line = line.strip()
        m = re.match(r"vmtest-(\w+): (.*)", line)
        if line.startswith("vmtest: exit "):
            r["exit"] = line.split()[2]
        if not m:
            continue
        k, v = m.groups()
        if k == "kernel":
            r["kernel"] = v
        elif k == "probe":
            name, *kv = v.split()
            r["probe"][name] = dict(x.split("=") for x in kv)
        elif k == "feature":
            name, st = v.split()
            r["feature"][name] = st
        elif k == "load":
            r["load"] = v
        elif k == "suite":
            r["suites"].append(v)
        elif k == "fail":
            r["fails"].append(v)
        elif k == "skip":
            r["skips"].append(v)
        elif k == "why":
            r["fails"].append("    " + v)
    rows.append(r)
names = []
for r in rows:
    for n in r["probe"]:
        if n not in names:
            names.append(n)
print("\nvmtest: lism feature x kernel (probe: kernel has it / verifier takes it; load: on or off)")
w = max(len(r["kernel"]) for r in rows)
print("%-12s " % "feature" + " ".join("%-*s" % (w, r["kernel"]) for r in rows))
for n in names:
    cells = []
    for r in rows:
        p = r["probe"].get(n)
        c = "-" if not p else ("ok" if p["kernel"] == "yes" and p["verifier"] != "REFUSED" else
                               "no kernel" if p["kernel"] != "yes" else "refused")
        if n in r["feature"]:
            c += ", " + r["feature"][n]
        cells.append("%-*s" % (w, c))
    print("%-12s " % n + " ".join(cells))
for r in rows[1:]:
    print("\n%s: load: %s" % (r["kernel"], r["load"]))
    for s in r["suites"]:
        print("  suite %s" % s)
    for f in r["fails"]:
        print("  failed: %s" % f)
    needed = {}
    for sk in r["skips"]:
        needed.setdefault(sk.split()[-1], []).append(sk.split()[0])
    for feat, tests in sorted(needed.items()):
        print("  skipped: %d tests of %s, off on this kernel (%s)" % (len(tests), feat, ", ".join(tests)))
    if r["exit"] is None:
        print("  the guest did not finish (timeout or crash): see its console log")

# The checks, added up: each kernel loads lism (exit 0) with every part on
# that its probe finds runnable; the README's requirements table says what
# each probe finds (the host's included); every suite's tests pass.
passed = failed = 0
def verdict(ok, what):
    global passed, failed
    passed, failed = passed + ok, failed + (not ok)
    if not ok:
        print("vmtest: FAILED: " + what)
print()
for i, r in enumerate(rows):
    runs = {n: p["kernel"] == "yes" and p["verifier"] != "REFUSED" for n, p in r["probe"].items()}
    bad = requirements.check(readme, r["kernel"].split()[0], runs) if runs else ["no probe result"]
    for b in bad:
        verdict(False, "%s: requirements table: %s" % (r["kernel"], b))
    if not bad:
        verdict(True, "")
        print("vmtest: %s: the README's requirements table agrees with the probe" % r["kernel"])
    if i == 0:
        continue  # the host: probed only
    verdict(r["exit"] is not None, "%s: the guest did not finish" % r["kernel"])
    verdict(r["load"].startswith("0 "), "%s: lism load: %s" % (r["kernel"], r["load"]))
    off = [n for n in runs if runs[n] != (r["feature"].get(n) == "on")]
    verdict(not off, "%s: what load runs differs from what the probe finds runnable: %s" % (
        r["kernel"], ", ".join(off)))
    for syn in r["suites"]:
        m = re.search(r"Passing: (\d+) \| Failing: (\d+) \| Crashing: (\d+)", syn)
        if not m:
            verdict(False, "%s: suite %s" % (r["kernel"], syn))
            continue
        passed += int(m.group(1))
        failed += int(m.group(2)) + int(m.group(3))
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
EOF
