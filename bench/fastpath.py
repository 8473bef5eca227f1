#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""make bench, part 2: the veth fast path (lism xdp), pod to pod.

Two "pods" (network namespaces) routed through a "node" namespace that
does what a Kubernetes node does to pod traffic: IP forwarding, conntrack,
kube-proxy's FORWARD rules (drop INVALID, accept) and a NAT table in use.
Each workload runs with the node's stack forwarding every packet ("stack")
and with lism's XDP fast path on the node-side veths ("xdp"), interleaved
over several rounds; medians and xdp/stack ratios.  Only the fast path is
measured here (no sockops shortcut): it is for the packets the shortcut
does not carry -- handshakes, UDP, connections that fell back.

Environment: BENCH_QUICK=1, BENCH_ROUNDS, BENCH_SECONDS (as bench.py).
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import BUILD, LISM, OUT, ROUNDS, SECONDS, Server, fmt, log, number, run  # noqa: E402

ID = os.getpid()
NODE, POD_A, POD_B = "lbf%d-node" % ID, "lbf%d-a" % ID, "lbf%d-b" % ID
PIN = "/sys/fs/bpf/lism-bench-fp-%d" % ID
LIBXDP = PIN + "-libxdp"
SERVER = "10.79.2.2"


def ns(name, *cmd):
    return ["ip", "netns", "exec", name] + list(cmd)


def node_lism(*args):
    env = dict(os.environ, LIBXDP_BPFFS=LIBXDP)
    return run(["nsenter", "--net=/run/netns/" + NODE, LISM] + list(args) + ["--pin-path", PIN], env=env)


def setup():
    run(["ip", "netns", "add", NODE])
    for cmd in (["sysctl", "-qw", "net.ipv4.ip_forward=1"],
                ["sysctl", "-qw", "net.netfilter.nf_conntrack_tcp_be_liberal=1"],
                ["iptables", "-A", "FORWARD", "-m", "conntrack", "--ctstate", "INVALID", "-j", "DROP"],
                ["iptables", "-A", "FORWARD", "-j", "ACCEPT"],
                ["iptables", "-t", "nat", "-A", "PREROUTING", "-p", "tcp", "-d", "10.96.0.1", "--dport", "443",
                 "-j", "DNAT", "--to-destination", "10.79.1.2:443"]):
        run(ns(NODE, *cmd))
    run(["ip", "-n", NODE, "link", "set", "lo", "up"])
    for i, pod in ((1, POD_A), (2, POD_B)):
        run(["ip", "netns", "add", pod])
        run(["ip", "-n", pod, "link", "set", "lo", "up"])
        run(["ip", "link", "add", "eth0", "netns", pod, "type", "veth", "peer", "name", "p%d" % i, "netns", NODE])
        run(["ip", "-n", NODE, "addr", "add", "10.79.%d.1/24" % i, "dev", "p%d" % i])
        run(["ip", "-n", NODE, "link", "set", "p%d" % i, "up"])
        run(["ip", "-n", pod, "addr", "add", "10.79.%d.2/24" % i, "dev", "eth0"])
        run(["ip", "-n", pod, "link", "set", "eth0", "up"])
        run(["ip", "-n", pod, "route", "add", "default", "via", "10.79.%d.1" % i])
    os.makedirs(LIBXDP, exist_ok=True)


def teardown():
    node_lism("xdp", "detach") if os.path.exists(PIN) else None
    for name in (POD_A, POD_B, NODE):
        run(["ip", "netns", "del", name], check=False)
    shutil.rmtree(LIBXDP, ignore_errors=True)
    shutil.rmtree(PIN, ignore_errors=True)


def switch(mode):
    if mode == "xdp":
        node_lism("xdp", "attach", "--iface", "p*")
    elif os.path.exists(PIN):
        node_lism("xdp", "detach")


def counters():
    if not os.path.exists(PIN):
        return None
    return json.loads(node_lism("xdp", "status", "-j").stdout)["counters"]


def wrk_close(tmp):
    def go():
        conf = os.path.join(tmp, "nginx.conf")
        with open(conf, "w") as f:
            f.write("daemon off; worker_processes 1; pid %s/nginx.pid; error_log /dev/null crit;\n"
                    "events { worker_connections 4096; }\n"
                    "http { access_log off; server { listen %s:8080 backlog=4096; "
                    "location / { return 200 'hello'; } } }\n" % (tmp, SERVER))
        with Server(ns(POD_B, "nginx", "-c", conf)):
            time.sleep(0.3)
            out = run(ns(POD_A, "wrk", "-t1", "-c8", "-d%ds" % int(max(1, SECONDS)), "-H", "Connection: close",
                         "http://%s:8080/" % SERVER)).stdout
        return number(r"Requests/sec:\s+([0-9.]+)", out, "wrk")
    return go


def iperf3(*args, key="sum_received", scale=1e9, field="bits_per_second"):
    def go():
        with Server(ns(POD_B, "iperf3", "-s", "-B", SERVER, "-p", "5301")):
            time.sleep(0.3)
            out = run(ns(POD_A, "iperf3", "-c", SERVER, "-p", "5301", "-t", str(int(max(1, SECONDS))), "-J",
                         *args)).stdout
        end = json.loads(out)["end"]
        s = end.get(key) or end["sum"]
        return s[field] / scale
    return go


def sockperf_udp_pp():
    def go():
        with Server(ns(POD_B, "sockperf", "sr", "-i", SERVER, "-p", "11113")):
            time.sleep(0.3)
            out = run(ns(POD_A, "sockperf", "pp", "-i", SERVER, "-p", "11113", "-m", "64",
                         "-t", str(int(max(1, SECONDS))))).stdout
        return number(r"avg-latency=([0-9.]+)", out, "sockperf pp")
    return go


def main():
    if os.geteuid() != 0:
        sys.exit("bench fastpath: needs root")
    for tool in ("nginx", "wrk", "iperf3", "sockperf", "nsenter", "iptables"):
        if not shutil.which(tool):
            sys.exit("bench fastpath: %s is missing" % tool)
    tmp = tempfile.mkdtemp(prefix="lism-bench-fp.")
    # name, unit, higher is better, function
    workloads = [
        ("nginx_conn_close_pod", "req/s", True, wrk_close(tmp)),
        ("udp_1400B_pod", "Gbit/s", True, iperf3("-u", "-b", "0", "-l", "1400")),
        ("udp_64B_pod", "kpkt/s", True, iperf3("-u", "-b", "0", "-l", "64", field="packets", scale=1e3 * max(1, int(SECONDS)))),
        ("udp_pingpong_64B_pod", "us", False, sockperf_udp_pp()),
        ("tcp_bulk_pod", "Gbit/s", True, iperf3()),
    ]
    modes = ["stack", "xdp"]
    res = {w[0]: {m: [] for m in modes} for w in workloads}
    os.makedirs(OUT, exist_ok=True)
    t0 = time.time()
    seen = {}
    try:
        setup()
        steps, step = ROUNDS * len(modes) * len(workloads), 0
        for r in range(ROUNDS):
            for m in (modes if r % 2 == 0 else modes[::-1]):
                switch(m)
                for name, unit, _, fn in workloads:
                    step += 1
                    v = fn()
                    res[name][m].append(v)
                    log("[%3d/%d] round %d  %-6s %-24s %10s %-7s" % (step, steps, r + 1, m, name, fmt(v), unit))
                if m == "xdp":
                    seen = counters() or seen
    finally:
        teardown()
        shutil.rmtree(tmp, ignore_errors=True)
    rows, lines = [], ["| workload (pod to pod via the node) | unit | stack | xdp fast path | xdp/stack |",
                       "|---|---|---|---|---|"]
    for name, unit, higher, _ in workloads:
        md = {m: statistics.median(v) for m, v in res[name].items()}
        r = md["xdp"] / md["stack"] if md["stack"] else None
        rows.append({"workload": name, "unit": unit, "higher_is_better": higher, "median": md,
                     "xdp_over_stack": r, "samples": res[name]})
        lines.append("| %s | %s | %s | %s | %s |" % (name, unit, fmt(md["stack"]), fmt(md["xdp"]), fmt(r)))
    text = "\n".join(lines)
    info = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "kernel": os.uname().release,
            "rounds": ROUNDS, "seconds": SECONDS, "elapsed_s": round(time.time() - t0), "xdp_counters": seen}
    with open(os.path.join(OUT, "fastpath.json"), "w") as f:
        json.dump({"info": info, "rows": rows}, f, indent=1)
    with open(os.path.join(OUT, "fastpath.md"), "w") as f:
        f.write("Kernel %s, %s; %d rounds x %.0f s, interleaved; medians.\n\n%s\n\nxdp counters (last round): %s\n" %
                (info["kernel"], info["date"], ROUNDS, SECONDS, text, json.dumps(seen)))
    log("")
    log(text)
    log("xdp counters (last round): %s" % json.dumps(seen))
    log("bench fastpath: results in %s/fastpath.{md,json}" % OUT)


if __name__ == "__main__":
    main()
