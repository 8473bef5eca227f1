#!/usr/bin/env python3
"""README.md's requirements table against what `lism probe` finds.

The table (between the "requirements:" markers) has one row per lism
feature and one column per kernel family ("6.1 (Debian 12)" is family
6.1), each cell "yes" or "no".  A feature runs on a kernel when the probe
finds what it needs there and the verifier does not refuse its program.
make vmtest checks each kernel it boots, and the host's, with check().

Usage: requirements.py README.md RELEASE < `lism probe -j`   (exit 1 on a mismatch)
"""
import json
import re
import sys


def family_of(release):
    """ "6.12.117+deb12-cloud-amd64" -> "6.12" """
    m = re.match(r"(\d+\.\d+)", release)
    return m.group(1) if m else release


def table(readme_path):
    """(families, {feature: {family: bool}}) from the README."""
    text = open(readme_path).read()
    m = re.search(r"<!-- requirements:.*?-->\n(.*?)<!-- requirements: end -->", text, re.S)
    if not m:
        raise ValueError("%s: no requirements table between the markers" % readme_path)
    rows = [[c.strip() for c in line.strip().strip("|").split("|")]
            for line in m.group(1).splitlines() if line.startswith("|")]
    header, body = rows[0], [r for r in rows[1:] if not set("".join(r)) <= set("-: ")]
    cols = {i: h.split()[0] for i, h in enumerate(header) if re.match(r"\d+\.\d+", h)}
    feats = {}
    for r in body:
        cells = {}
        for i, fam in cols.items():
            if r[i] not in ("yes", "no"):
                raise ValueError("requirements table: %s on %s is %r, not yes or no" % (r[0], fam, r[i]))
            cells[fam] = r[i] == "yes"
        feats[r[0]] = cells
    return list(cols.values()), feats


def check(readme_path, release, runs):
    """Mismatches (strings) between the table's column for @release and @runs {feature: bool}."""
    fams, feats = table(readme_path)
    fam = family_of(release)
    if fam not in fams:
        return ["the requirements table has no column for %s (kernel %s): add one" % (fam, release)]
    bad = []
    for name in sorted(set(feats) | set(runs)):
        if name not in runs:
            bad.append("the table lists %s, which lism probe does not know" % name)
        elif name not in feats:
            bad.append("the table has no row for %s" % name)
        elif feats[name][fam] != runs[name]:
            bad.append("%s on %s: the table says %s, the probe finds %s" % (
                name, release, "yes" if feats[name][fam] else "no", "yes" if runs[name] else "no"))
    return bad


def runs_of_probe(j):
    """{feature: bool} from `lism probe -j`."""
    return {name: bool(f.get("kernel", True)) and f.get("verifier") is not False
            for name, f in j["features"].items()}


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[-1])
    j = json.load(sys.stdin)
    bad = check(sys.argv[1], sys.argv[2], runs_of_probe(j))
    for b in bad:
        print("requirements: " + b)
    sys.exit(1 if bad else 0)
