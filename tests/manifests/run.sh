#!/usr/bin/env bash
# make check-manifests: the real manifests must pass every check, and each
# mutation below (one mistake a person could make) must be caught.
# Usage: tests/manifests/run.sh BUILD_DIR; prints "N passed, N failed".
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$(mkdir -p "$1/manifests" && cd "$1/manifests" && pwd)
passed=0 failed=0

cp "$here/package.json" "$here/package-lock.json" "$here/check.mjs" "$work/"
if ! command -v npm >/dev/null; then
	echo "check-manifests: npm missing (make deps installs nodejs and npm)"
	echo "0 passed, 1 failed"
	exit 1
fi
if [ ! -x "$work/node_modules/.bin/tsc" ] || ! cmp -s "$here/package-lock.json" "$work/.installed-lock"; then
	(cd "$work" && npm ci --no-audit --no-fund --loglevel=error >/dev/null) || {
		echo "check-manifests: npm ci failed"
		echo "0 passed, 1 failed"
		exit 1
	}
	cp "$here/package-lock.json" "$work/.installed-lock"
fi

if node "$work/check.mjs" "$root/deploy/kubernetes"; then
	passed=$((passed + 1))
else
	failed=$((failed + 1))
fi

# name | file | sed expression: each must make the check fail
mutations=(
	"misspelled field (types)|daemonset.yaml|s/hostNetwork: true/hostNetwrok: true/"
	"wrong value type (schema)|daemonset.yaml|s/terminationGracePeriodSeconds: 90/terminationGracePeriodSeconds: ninety/"
	"selector does not match the pod labels|daemonset.yaml|/^    matchLabels:/,/^  [a-z]/ s/app.kubernetes.io\/name: lism/app.kubernetes.io\/name: lism-typo/"
	"undefined \$(VAR) in args|daemonset.yaml|s/\$(LISM_MAX_DMBS)/\$(LISM_MAX_DMB)/"
	"privileged container|daemonset.yaml|0,/privileged: false/ s/privileged: false/privileged: true/"
	"capabilities not dropped|daemonset.yaml|0,/drop: \[\"ALL\"\]/ s/drop: \[\"ALL\"\]/drop: [\"NET_RAW\"]/"
	"missing ServiceAccount|serviceaccount.yaml|s/^  name: lism$/  name: lism-other/"
	"resource file missing|kustomization.yaml|s/  - configmap.yaml/  - configmaps.yaml/"
)
for m in "${mutations[@]}"; do
	IFS='|' read -r name file expr <<<"$m"
	tmp=$(mktemp -d)
	cp "$root"/deploy/kubernetes/*.yaml "$tmp/"
	sed -i "$expr" "$tmp/$file"
	if cmp -s "$root/deploy/kubernetes/$file" "$tmp/$file"; then
		echo "check-manifests: mutation '$name' changed nothing (fix the test)"
		failed=$((failed + 1))
	elif node "$work/check.mjs" "$tmp" >/dev/null; then
		echo "check-manifests: mutation '$name' was NOT caught"
		failed=$((failed + 1))
	else
		echo "check-manifests: mutation '$name' caught"
		passed=$((passed + 1))
	fi
	rm -rf "$tmp"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
