#!/usr/bin/env bash
# Run every suite of `make test` and add up Criterion's synthesis lines.
# Usage: tests/run-all.sh BUILD_DIR
set -u
build=${1:-build}
export LISM_BIN
LISM_BIN=$(cd "$build" && pwd)/lism
passed=0 failed=0 status=0
# What failed, repeated at the end: CI keeps only the output's tail.
recap=()
# make vmtest's smoke set in CI, each a Criterion filter run on its own: the degraded paths,
# pairing and fallback, the table and its reapers, the scope, the views and the daemon, the
# command line, and streams through loopback and a DNAT'ed Service (through the shortcut where
# the kernel has a data path)
VMTEST_SMOKE='degraded/* fallback/* security/* dmb_alloc/* scope/* views/* cli/* shortcut/ipv4_loopback'
VMTEST_SMOKE+=' shortcut/through_dnat_service_vip shortcut/closes_the_handshake_missed_are_reaped_at_destroy exec/*'

# A suite's output goes through a file, not a pipe: a process a failed test
# left behind may hold the suite's output open, and a pipe would wait for it.
outf=$(mktemp /tmp/lism-run-all.XXXXXX)
trap 'rm -f "$outf"' EXIT

# A suite's failed tests and the first failed assertion of each, for the recap.
remember() { # name, output
	local l
	while IFS= read -r l; do
		recap+=("$1: ${l:0:300}")
	done < <(printf '%s\n' "$2" | awk '/Synthesis:/ { next }
		/Assertion Failed/ { print; more = 2; next }
		more > 0 && /^\[----\]  / { print; more--; next }
		{ more = 0 }
		/^\[FAIL\]|CRASH|: FAILED|^vmtest-fail:/' | head -30)
}

run() { # name, command...
	local name=$1 out
	shift
	echo "== $name"
	"$@" >"$outf" 2>&1
	local rc=$?
	out=$(cat "$outf")
	printf '%s\n' "$out" | grep -vE '^\[----\] *$'
	remember "$name" "$out"
	local syn
	syn=$(printf '%s\n' "$out" | grep 'Synthesis:' | tail -1)
	if [ -z "$syn" ]; then
		echo "$name: no Criterion synthesis (exit $rc)"
		recap+=("$name: no Criterion synthesis (exit $rc)")
		failed=$((failed + 1))
		status=1
		return
	fi
	local p f c
	p=$(sed -E 's/.*Passing: ([0-9]+).*/\1/' <<<"$syn")
	f=$(sed -E 's/.*Failing: ([0-9]+).*/\1/' <<<"$syn")
	c=$(sed -E 's/.*Crashing: ([0-9]+).*/\1/' <<<"$syn")
	passed=$((passed + p))
	failed=$((failed + f + c))
	[ "$rc" -eq 0 ] && [ "$f" -eq 0 ] && [ "$c" -eq 0 ] || status=1
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && [ "$c" -eq 0 ]; then
		# the summary line must not say 0 failed for a suite that failed
		echo "$name: exit $rc with no failing test: counted as a failure"
		recap+=("$name: exit $rc with no failing test: counted as a failure")
		failed=$((failed + 1))
	fi
	# LeakSanitizer reports at worker exit, after Criterion took the test's result
	if printf '%s\n' "$out" | grep -qE 'ERROR: (Leak|Address)Sanitizer|runtime error:'; then
		echo "$name: sanitizer report above: counted as a failure"
		recap+=("$name: sanitizer report above: counted as a failure")
		failed=$((failed + 1))
		status=1
	fi
}

# A suite that prints its own "N passed, N failed" line.
run_counted() { # name, command...
	local name=$1 out rc line
	shift
	echo "== $name"
	"$@" >"$outf" 2>&1
	rc=$?
	out=$(cat "$outf")
	printf '%s\n' "$out"
	remember "$name" "$out"
	line=$(printf '%s\n' "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed$' | tail -1)
	if [ -z "$line" ]; then
		echo "$name: no result line (exit $rc)"
		recap+=("$name: no result line (exit $rc)")
		failed=$((failed + 1))
		status=1
		return
	fi
	passed=$((passed + $(cut -d' ' -f1 <<<"$line")))
	failed=$((failed + $(cut -d' ' -f3 <<<"$line")))
	[ "$rc" -eq 0 ] || status=1
	if [ "$rc" -ne 0 ] && [ "$(cut -d' ' -f3 <<<"$line")" -eq 0 ]; then
		echo "$name: exit $rc with no failing test: counted as a failure"
		recap+=("$name: exit $rc with no failing test: counted as a failure")
		failed=$((failed + 1))
	fi
}

run unit "$build/tests/unit" --jobs 2
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 run unit-asan "$build/tests/unit-asan" --jobs 2
# Fuzz smoke: each libFuzzer target for a bounded time from the shipped seeds.
for t in option cli ring; do
	echo "== fuzz $t (10 s)"
	mkdir -p "$build/fuzz/corpus-$t"
	out=$("$build/fuzz/fuzz_$t" -max_total_time=10 "$build/fuzz/corpus-$t" "tests/fuzz/corpus/$t" 2>&1)
	rc=$?
	runs=$(printf '%s\n' "$out" | sed -nE 's/^Done ([0-9]+) runs.*/\1/p')
	if [ "$rc" -eq 0 ] && [ -n "$runs" ]; then
		echo "fuzz $t: $runs runs, no finding"
		passed=$((passed + 1))
	else
		printf '%s\n' "$out" | tail -30
		echo "fuzz $t: FAILED (exit $rc)"
		recap+=("fuzz $t: FAILED (exit $rc)")
		failed=$((failed + 1))
		status=1
	fi
done

run_counted check-manifests tests/manifests/run.sh "$build"

if [ "$(id -u)" -ne 0 ] && [ "${CI:-}" != true ]; then
	echo "== integration, node-sim: skipped (need root for netns, cgroup2, bpffs and podman; run 'sudo make test')"
else
	run integration "$build/tests/integration" --jobs 1
	run_counted node-sim tests/node/node-sim.sh "$build"
	# The kernel matrix (docs/kernels.md): Debian 12's 6.1 and 6.12 under qemu
	# TCG run the whole suite several times slower than this host, so CI runs
	# a smoke set of each there (the whole suite ran above, on this kernel).
	VMTEST_SUITES=${VMTEST_SUITES:-$VMTEST_SMOKE} run_counted vmtest tests/vm/vmtest.sh "$build"
fi
if [ ${#recap[@]} -gt 0 ]; then
	echo "== what failed"
	printf '%s\n' "${recap[@]}"
fi
echo "$passed passed, $failed failed"
exit $status
