#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""make bench: every workload with plain TCP, the plain-sockmap baseline and
lism, interleaved over several rounds in one run; medians and ratios.

Everything runs on 127.0.0.1 inside a private cgroup2 directory that lism
(and the baseline) are attached to, with a private pin directory, so the
host's own lism (if any) is neither used nor disturbed.

Modes:
  tcp       nothing loaded
  sockmap   bench/sockmap.bpf.c: a plain 4-tuple sockhash redirect, the way
            Cilium's bpf_redir and Merbridge did it (no handshake, no bounds)
  lism      lism with its default policy, its daemon running as the DaemonSet
            runs it (`lism run`: /metrics, a summary line a minute)
  lism-ab   lism --allow-blocking --eager-senders, only for the workloads
            whose client or server uses blocking sockets (sockperf, iperf3),
            which lism's default policy keeps on TCP (docs/semantics.md):
            everything engaged, also the one-way transfers whose writer the
            default never makes a sender (include/lism/sender.h)
  lism-exec lism with its daemon (and so its device), every workload
            program started under `lism exec` (liblism.so): ring DMBs
            (docs/exec.md); its own targets (EXEC_TARGETS, issue 27;
            BUSY_POLL_TARGETS, issue 28), LISM_BUSY_POLL_US unset: the
            library's own spin
  ablations, only when BENCH_MODES names them, each lism with one
  heuristic off, reported as lism / ablation per workload (> 1: the
  heuristic wins there, for a higher-is-better unit):
  lism-eager      --eager-senders: every paired socket a sender from the
                  handshake (no sender rules, include/lism/sender.h)
  lism-ab-adaptive  lism-ab with the sender rules (--senders=adaptive), on the
                  blocking workloads: the rules where sockperf's reader is
  lism-no-churn   --no-churn-detect (include/lism/churn.h)
  lism-old        BENCH_LISM_OLD=path/to/lism: another build's lism (an A/B
                  of two builds, interleaved like every other mode)
  lism-ab-old     the same against lism-ab, on its (blocking) workloads
  lism-no-bulk-sndbuf
                  LISM_ABLATE=bulk-sndbuf (include/lism/ablate.h): a bulk
                  joiner's SO_SNDBUF (sender.h)
  lism-no-one-way-stop, lism-no-bulk-join, lism-no-send-limits
                  LISM_ABLATE=one-way-stop, bulk-join, send-limits: the
                  sender rules' parts, each off alone (sender.h)
  lism-ab-adaptive-no-bulk-join
                  lism-ab-adaptive without bulk joins, on the blocking bulk
                  streams they were made for
  lism-exec-nospin
                  lism-exec with LISM_BUSY_POLL_US=0 for the workload
                  programs: no spin before a ring reader sleeps (issue 28)
  lism-exec-spin50
                  lism-exec with LISM_BUSY_POLL_US=50: the spin bound
                  before 2026-12-04 (exec/spin.h)
  lism-exec-yield2us
                  lism-exec with LISM_BUSY_POLL_YIELD_NS=2000: a spin
                  yields every 2 us, not between every two looks
                  (exec/spin.h)
  lism-exec-nolook
                  lism-exec with LISM_READER_LOOKS=0: a reader that
                  empties its ring does not keep the writer's doorbells
                  silent until its next wait (exec/bell.h)
  lism-exec-eager
                  lism-exec with LISM_EPOLL_LAZY=0: every epoll_ctl on a
                  ring socket goes to the kernel when it is made, not
                  at the set's next wait (exec/poll.c)
  lism-exec-nocarry
                  lism-exec with LISM_CARRY=0: a writer adds every send
                  to the doorbell word's count, also while its reader
                  spins (exec/bell.h, carried counts)
  lism-exec-nomirror
                  lism-exec with LISM_MIRROR=0: readers keep no spin
                  mirror, so a writer looks at the doorbell word on
                  every send it carries (exec/bell.h, the spin mirror)
  lism-exec-dmb4m
                  lism-exec with LISM_ABLATE=ring-dmb-cache: the device's
                  ring DMBs of the whole --dmb-size (4 MiB), not at most
                  1 MiB (include/lism/ring.h)
  lism-exec-locked
                  lism-exec with LISM_ONE_THREAD=0: every send takes the
                  tx lock and every call its reference by a locked
                  operation, one thread or many (exec/conn.h)
  A mode named lism-ab-* is measured against lism-ab, on its workloads;
  one named lism-exec-* against lism-exec.

Beside every figure: the CPU seconds (user + sys) the workload's own
processes (servers and clients, reaped when it ends) used per second of
its wall time, from getrusage(RUSAGE_CHILDREN) around it ("CPU s/s").

Environment: BENCH_QUICK=1 (one short round), BENCH_ROUNDS, BENCH_SECONDS,
BENCH_ONLY=regex (workload names), BENCH_MODES=tcp,lism,..., BENCH_SEED
(the modes' order; the report says the one it used)
"""
import json
import os
import random
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
LISM = os.path.join(BUILD, "lism")
OUT = os.path.join(BUILD, "bench")
QUICK = os.environ.get("BENCH_QUICK") == "1"
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "1" if QUICK else "3"))
SECONDS = float(os.environ.get("BENCH_SECONDS", "1" if QUICK else "3"))
BASELINE = os.path.join(OUT, "sockmap.bpf.o")


def log(msg):
    print(msg, flush=True)


def cgroup2_mount():
    with open("/proc/mounts") as f:
        for line in f:
            dev, path, fstype = line.split()[:3]
            if fstype == "cgroup2":
                return path
    sys.exit("bench: no cgroup2 mount in /proc/mounts")


# In the lism-exec mode, the workload's programs (not lism, bpftool or ip) start under `lism exec`.
EXEC_PREFIX = []
WORKLOAD_TOOLS = ("sockperf", "redis-server", "redis-benchmark", "nginx", "wrk", "curl", "iperf3", "taskset")


def under_exec(cmd):
    # inside `ip netns exec NAME`: the program it runs (before 2026-12-04, the nginx and connsetup
    # rows' programs ran without lism exec in the lism-exec mode, as "ip" is no workload tool)
    pre = 4 if cmd[:3] == ["ip", "netns", "exec"] else 0
    prog = cmd[pre:]
    if not EXEC_PREFIX or not prog:
        return cmd
    tool = os.path.basename(prog[0])
    # connsetup -x follows lism exec's contract itself, with liblism's code: not preloaded as well
    if tool == "connsetup" and "-x" in prog:
        return cmd
    return cmd[:pre] + EXEC_PREFIX + prog if tool in WORKLOAD_TOOLS or prog[0].startswith(OUT) else cmd


def run(cmd, check=True, **kw):
    cmd = under_exec(cmd)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    if check and r.returncode:
        raise RuntimeError("%s failed (exit %d): %s" % (" ".join(cmd), r.returncode, r.stderr.strip()[-400:]))
    return r


class Server:
    """A background server process, stopped (and waited for) on exit."""

    def __init__(self, cmd, ready_port=None, cwd=None):
        self.p = subprocess.Popen(under_exec(cmd), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cwd,
                                  start_new_session=True)
        if ready_port:
            wait_port(ready_port, self.p.pid)
        else:
            time.sleep(0.3)

    def __enter__(self):
        return self

    def __exit__(self, *a):
        try:
            os.killpg(self.p.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            self.p.wait(5)
        except subprocess.TimeoutExpired:
            os.killpg(self.p.pid, signal.SIGKILL)
            self.p.wait()


def wait_port(port, pid, timeout=5.0):
    # /proc/PID/net/tcp (the server's network namespace): a LISTEN (0A) socket on port
    want = ":%04X" % port
    end = time.time() + timeout
    while time.time() < end:
        for name in ("/proc/%d/net/tcp" % pid, "/proc/%d/net/tcp6" % pid):
            with open(name) as f:
                for line in f.readlines()[1:]:
                    p = line.split()
                    if p[1].endswith(want) and p[3] == "0A":
                        return
        time.sleep(0.05)
    raise RuntimeError("server on port %d did not start" % port)


def number(pattern, text, what):
    m = re.search(pattern, text)
    if not m:
        raise RuntimeError("%s: no result in output: %s" % (what, text.strip()[-300:]))
    return float(m.group(1))


def taskset(cpus):
    return ["taskset", "-c", cpus] if cpus else []


class Netns:
    """A network namespace of its own (loopback up, no TIME_WAIT) for a
    workload that opens connections by the ten thousand.  In the host's
    namespace their TIME_WAIT sockets (~45 k per 3 s run) piled up for 60 s
    and slowed whatever ran next, so the connection rows depended on their
    order; and a namespace deleted with them in it is torn down in the
    background while the next workload runs.  Here closed connections just
    go (tcp_max_tw_buckets 0), for every mode alike; cgroup membership is
    unchanged, so TCP, the plain sockmap and lism see the same thing."""
    n = 0

    def __enter__(self):
        Netns.n += 1
        self.name = "lism-bench-%d-%d" % (os.getpid(), Netns.n)
        run(["ip", "netns", "add", self.name])
        self.prefix = ["ip", "netns", "exec", self.name]
        run(self.prefix + ["ip", "link", "set", "lo", "up"])
        run(self.prefix + ["sysctl", "-qw", "net.ipv4.tcp_max_tw_buckets=0"])
        return self

    def __exit__(self, *a):
        run(["ip", "netns", "del", self.name], check=False)


# ---------------------------------------------------------------- workloads

def sockperf_tp(size):
    def go(ctx):
        with Server(["sockperf", "sr", "--tcp", "-i", "127.0.0.1", "-p", "11111"], 11111):
            out = run(["sockperf", "tp", "--tcp", "-i", "127.0.0.1", "-p", "11111", "-m", str(size),
                       "-t", str(int(max(1, SECONDS)))]).stdout
        return number(r"BandWidth is ([0-9.]+) MBps", out, "sockperf tp")
    return go


def sockperf_pp(server_cpu, client_cpu):
    def go(ctx):
        with Server(taskset(server_cpu) + ["sockperf", "sr", "--tcp", "-i", "127.0.0.1", "-p", "11112"], 11112):
            out = run(taskset(client_cpu) + ["sockperf", "pp", "--tcp", "-i", "127.0.0.1", "-p", "11112",
                                             "-m", "14", "-t", str(int(max(1, SECONDS))),
                                             # sockperf sizes its sample table by the rate: with --mps=max
                                             # (its ping-pong default) a ring's 2.5 M round trips a second
                                             # overflow it ("_seqN > m_maxSequenceNo"); a cap it never reaches
                                             "--mps", "10000000"]).stdout
        return number(r"avg-latency=([0-9.]+)", out, "sockperf pp")
    return go


def redis(test, pipeline, clients=50):
    """@clients 1: each request waits for its answer, the latency a spin before sleeping cuts."""
    def go(ctx):
        n = int((400000 if pipeline > 1 else 60000) * SECONDS / 3)
        with Server(["redis-server", "--port", "16379", "--bind", "127.0.0.1", "--save", "", "--appendonly",
                     "no", "--daemonize", "no"], 16379):
            out = run(["redis-benchmark", "-h", "127.0.0.1", "-p", "16379", "--csv", "-t", test, "-n", str(n),
                       "-c", str(clients), "-d", "1024", "-P", str(pipeline)]).stdout
        return number(r'"%s","([0-9.]+)"' % test.upper(), out, "redis-benchmark")
    return go


def nginx(close, clients=None):
    """@clients: wrk's connections (keep-alive; 100 unless given)."""
    def go(ctx):
        d = ctx["tmp"]
        os.makedirs(os.path.join(d, "html"), exist_ok=True)
        os.makedirs(os.path.join(d, "logs"), exist_ok=True)
        with open(os.path.join(d, "html", "index.html"), "w") as f:
            f.write("x" * 1024)
        conf = os.path.join(d, "nginx.conf")
        with open(conf, "w") as f:
            f.write("worker_processes 1; daemon off; error_log %s/logs/error.log; pid %s/nginx.pid;\n"
                    "events { worker_connections 4096; }\n"
                    "http { access_log off; server { listen 127.0.0.1:18080; root %s/html; "
                    "keepalive_requests 1000000; } }\n" % (d, d, d))
        args = ["-c", "50", "-H", "Connection: close"] if close else ["-c", str(clients or 100)]
        with Netns() as ns, Server(ns.prefix + ["nginx", "-c", conf, "-p", d], 18080):
            out = run(ns.prefix + ["wrk", "-t", "1", "-d", "%ds" % max(1, int(SECONDS))] + args +
                      ["http://127.0.0.1:18080/"]).stdout
        if re.search(r"Non-2xx|Socket errors", out):
            raise RuntimeError("wrk saw errors: " + out.strip()[-300:])
        return number(r"Requests/sec:\s+([0-9.]+)", out, "wrk")
    return go


def pinned_cpus(placement):
    """Server and client CPUs for "same" or "cross" core (the first two CPUs
    this process may use)."""
    cpus = sorted(os.sched_getaffinity(0))
    if placement == "cross" and len(cpus) < 2:
        raise RuntimeError("a cross-core run needs two CPUs, this process may use %s" % cpus)
    return cpus[0], cpus[0] if placement == "same" else cpus[1]


DOWNLOAD_BYTES = 256 << 20


def nginx_download(placement, sndbuf=None):
    """A same-node download: nginx with sendfile on (as Debian's and the
    nginx image's configs have it) serves a 256 MiB file to curl, over and
    over for the run's seconds, a new connection each time.  Pinned, because
    on one CPU lism's one-way bulk writer can stay behind its own TCP bytes
    for the whole response (docs/performance.md, "DMB size"), and across
    two it mostly takes the shortcut.  @sndbuf: nginx's `listen ... sndbuf=`,
    an application that sizes its send buffer itself, the workload of the
    send-limit check (include/lism/sender.h; ablation lism-no-send-limits)."""
    def go(ctx):
        d = os.path.join(ctx["tmp"], "download")
        blob = os.path.join(d, "blob")
        os.makedirs(d, exist_ok=True)
        if not os.path.exists(blob):
            with open(blob, "wb") as f:
                for _ in range(DOWNLOAD_BYTES >> 20):
                    f.write(os.urandom(1 << 20))
        conf = os.path.join(d, "nginx.conf")
        with open(conf, "w") as f:
            f.write("worker_processes 1; daemon off; error_log %s/error.log; pid %s/nginx.pid;\n"
                    "events { worker_connections 64; }\n"
                    "http { access_log off; sendfile on; server { listen 127.0.0.1:18081%s; root %s; } }\n"
                    % (d, d, " sndbuf=" + sndbuf if sndbuf else "", d))
        srv, cli = pinned_cpus(placement)
        with Server(taskset(str(srv)) + ["nginx", "-c", conf, "-p", d], 18081):
            n, t0 = 0, time.time()
            while n == 0 or time.time() - t0 < SECONDS:
                out = run(taskset(str(cli)) + ["curl", "-fsS", "-o", "/dev/null", "-w", "%{size_download}",
                                               "http://127.0.0.1:18081/blob"]).stdout
                if int(out) != DOWNLOAD_BYTES:
                    raise RuntimeError("curl got %s of %d bytes" % (out, DOWNLOAD_BYTES))
                n += 1
            elapsed = time.time() - t0
        return n * DOWNLOAD_BYTES / elapsed / 1e6
    return go


def iperf3(ctx):
    with Server(["iperf3", "-s", "-B", "127.0.0.1", "-p", "15201", "-1"], 15201):
        out = run(["iperf3", "-c", "127.0.0.1", "-p", "15201", "-t", str(int(max(1, SECONDS))), "-J"]).stdout
    return json.loads(out)["end"]["sum_received"]["bits_per_second"] / 1e9


def msgrate(size, pingpong=False, placement=None):
    """placement "same" or "cross" core: a one-way stream's rate depends about
    2x on whether the scheduler put both ends on one CPU, so the stream rows
    pin them (the first two CPUs this process may use).  In the BPF-time
    pass it records the data path's (sk_msg) run time per send."""
    tag = "_".join(t for t in ("pingpong" if pingpong else None, placement) if t)

    def go(ctx):
        cmd = [os.path.join(OUT, "msgrate"), "-s", str(size), "-t", str(SECONDS)] + (["--pingpong"] if pingpong else [])
        if placement:
            cmd += ["--cpus", "%d,%d" % pinned_cpus(placement)]
        timed = ctx.get("bpf_pass")
        before = ctx["bpf_msg"]() if timed else None
        out = run(cmd).stdout
        after = ctx["bpf_msg"]() if timed else None
        if before and after and after[1] > before[1]:
            ctx["extra"].setdefault("skmsg_ns_per_send_%dB_%s" % (size, tag), []).append(
                (after[0] - before[0]) / (after[1] - before[1]))
        return number(r"msgs_per_s ([0-9.]+)", out, "msgrate")
    return go


def connsetup(idle, engaged=True, exec_contract=False):
    """Connect, 1-byte exchange, close, with @idle connections established.
    @exec_contract: both ends follow lism exec's contract (connsetup -x: mark,
    decision, the ring from the device), so lism's figure is what a
    connection between two preloaded processes costs to set up; this
    build's lism must give every end its ring.
    Engaged: churn detection off for the run, so every connection pays the
    whole handshake (the O(1) check); otherwise lism's default, where this
    churning destination soon skips the shortcut (include/lism/churn.h).
    In the BPF-time pass (ctx["bpf_pass"], bpf_stats on) it also records
    the sockops program's run time per connection."""
    def go(ctx):
        tag = ("%d" % idle if engaged else "churning") + ("_exec" if exec_contract else "")
        if engaged:
            ctx["lism_set"]("churn-detect", "off")
        timed = ctx.get("bpf_pass")
        try:
            before = ctx["bpf_sockops"]() if timed else None
            with Netns() as ns:
                out = run(ns.prefix + [os.path.join(OUT, "connsetup"), "-n", str(idle), "-t",
                                       str(SECONDS)] + (["-x"] if exec_contract else [])).stdout
            after = ctx["bpf_sockops"]() if timed else None
        finally:
            if engaged:
                ctx["lism_set"]("churn-detect", "on")
        conns = number(r"conns ([0-9]+)", out, "connsetup")
        if exec_contract and ctx.get("mode") == "lism":
            rings = [int(x) for x in re.search(r"rings ([0-9]+) ([0-9]+)", out).groups()]
            if rings != [conns, conns]:
                raise RuntimeError("connsetup -x: %s of %d ends took their ring" % (rings, conns))
        if before is not None and after is not None and conns:
            ctx["extra"].setdefault("sockops_ns_per_conn_%s" % tag, []).append((after - before) / conns)
        return number(r"us_per_conn ([0-9.]+)", out, "connsetup")
    return go


IDLE_CONNS = 1000


def idle_ring_conns(n):
    """What @n idle ring connections cost: bench/idlering's own CPU s/s over
    its idle window, every pair attached first (issue 28: a reader's spin is
    bounded, so an idle connection costs ~0).  Only in tcp (for reference)
    and the lism-exec modes (EXEC_ONLY), where it checks that every pair
    really was a ring: lism and its device are fresh for each run, so the
    handshake's ring decisions and the device's attaches count this run's
    alone."""
    def go(ctx):
        before = ctx["lism_stats"]()
        with Netns() as ns:
            out = run(ns.prefix + [os.path.join(OUT, "idlering"), "-n", str(n), "-t",
                                   "%g" % max(1.0, SECONDS)]).stdout
        after = ctx["lism_stats"]()
        conns = int(number(r"conns ([0-9]+)", out, "idlering"))
        if is_exec(ctx["mode"]):
            pairs = after["ring_pairs"] - before["ring_pairs"]
            dev0, dev1 = before.get("device") or {}, after.get("device") or {}
            attaches = dev1.get("attaches", 0) - dev0.get("attaches", 0)
            if pairs != conns or attaches != 2 * conns:
                raise RuntimeError("idlering: %d connections, %d ring pairs decided, %d ends attached"
                                   % (conns, pairs, attaches))
        return number(r"cpu_s_per_s ([0-9.eE+-]+)", out, "idlering")
    return go


def yield_pp(ctx):
    """The floor of any one-CPU ping-pong between two processes (bench/yieldpp:
    shared memory, each one-way one sched_yield and one switch): only in tcp,
    a reference for sockperf_pp_same_core (REFERENCE_ONLY)."""
    out = run([os.path.join(OUT, "yieldpp"), "-t", "%g" % max(1.0, SECONDS),
               "-c", str(pinned_cpus("same")[0])]).stdout
    return number(r"one_way_us ([0-9.]+)", out, "yieldpp")


# name, unit, higher is better, uses blocking sockets, target ratio (lism/tcp), runner
WORKLOADS = [
    ("sockperf_tp_14B", "MB/s", True, True, 1.0, sockperf_tp(14)),
    ("sockperf_tp_1KiB", "MB/s", True, True, 1.0, sockperf_tp(1024)),
    ("sockperf_tp_16KiB", "MB/s", True, True, 1.3, sockperf_tp(16384)),
    ("sockperf_tp_64000B", "MB/s", True, True, 1.7, sockperf_tp(64000)),
    ("sockperf_pp_same_core", "us", False, True, 0.5, sockperf_pp("0", "0")),
    ("sockperf_pp_cross_core", "us", False, True, 0.99, sockperf_pp("0", "1")),
    ("yield_pp_same_core", "us", False, False, None, yield_pp),
    ("redis_set", "req/s", True, False, 1.9, redis("set", 1)),
    ("redis_get", "req/s", True, False, 1.9, redis("get", 1)),
    ("redis_set_P16", "req/s", True, False, 1.9, redis("set", 16)),
    ("redis_get_P16", "req/s", True, False, 1.9, redis("get", 16)),
    ("redis_get_c1", "req/s", True, False, None, redis("get", 1, clients=1)),
    ("nginx_keepalive", "req/s", True, False, 2.3, nginx(False)),
    ("nginx_keepalive_c1", "req/s", True, False, None, nginx(False, clients=1)),
    ("nginx_conn_close", "req/s", True, False, 1.3, nginx(True)),
    ("nginx_download_same_core", "MB/s", True, False, 1.0, nginx_download("same")),
    ("nginx_download_cross_core", "MB/s", True, False, 1.0, nginx_download("cross")),
    ("nginx_download_sndbuf64k_same_core", "MB/s", True, False, 1.0, nginx_download("same", "64k")),
    ("iperf3", "Gbit/s", True, True, 3.5, iperf3),
    ("msgrate_100B_same_core", "msg/s", True, False, 1.0, msgrate(100, placement="same")),
    ("msgrate_100B_cross_core", "msg/s", True, False, 1.0, msgrate(100, placement="cross")),
    ("msgrate_100B_pingpong", "msg/s", True, False, 1.0, msgrate(100, True)),
    # one CPU: the data path's own instructions, not the lines the other CPU wrote, set its cost
    ("msgrate_100B_pingpong_same_core", "msg/s", True, False, 1.0, msgrate(100, True, placement="same")),
    # churning first: the engaged rows leave ~40 k psocks to tear down in
    # the background (deferred work), which would land in the row after them
    ("connsetup_churning", "us/conn", False, False, None, connsetup(1, engaged=False)),
    ("connsetup_1_established", "us/conn", False, False, None, connsetup(1)),
    ("connsetup_200_established", "us/conn", False, False, None, connsetup(200)),
    ("connsetup_1000_established", "us/conn", False, False, None, connsetup(1000)),
    ("connsetup_exec", "us/conn", False, False, None, connsetup(1, exec_contract=True)),
    ("idle_%d_ring_conns" % IDLE_CONNS, "CPU s/s", False, False, None, idle_ring_conns(IDLE_CONNS)),
]
# workloads only the lism-exec modes (and tcp, for reference) run
EXEC_ONLY = {"idle_%d_ring_conns" % IDLE_CONNS}
# references no lism mode changes: tcp alone runs them
REFERENCE_ONLY = {"yield_pp_same_core"}


def cpu_busy_idle():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4]  # idle + iowait
    return sum(v) - idle, idle


def settle(idle_share=0.9, window=0.2, limit=5.0):
    """Wait until the CPUs are idle: what the last run left behind (a
    torn-down sockmap's deferred psock frees, TIME_WAIT timers, a server's
    exit) must not land in the next one's numbers."""
    end = time.time() + limit
    while time.time() < end:
        b0, i0 = cpu_busy_idle()
        time.sleep(window)
        b1, i1 = cpu_busy_idle()
        if (i1 - i0) >= idle_share * max(1, (b1 - b0) + (i1 - i0)):
            return


# ---------------------------------------------------------------- modes

ABLATIONS = {"lism-eager": ["--eager-senders"], "lism-no-churn": ["--no-churn-detect"],
             "lism-no-bulk-sndbuf": ["LISM_ABLATE=bulk-sndbuf"],
             # the sender rules' parts (include/lism/sender.h), each off alone
             "lism-no-one-way-stop": ["LISM_ABLATE=one-way-stop"],
             "lism-no-bulk-join": ["LISM_ABLATE=bulk-join"],
             "lism-no-send-limits": ["LISM_ABLATE=send-limits"],
             # lism-ab with the sender rules back (--senders after --eager-senders wins): the rules on
             # the blocking small-message streams they were made for (sockperf's reader)
             "lism-ab-adaptive": ["--senders=adaptive"],
             # and without their bulk joins: the rule on the blocking bulk streams it was made for
             "lism-ab-adaptive-no-bulk-join": ["--senders=adaptive", "LISM_ABLATE=bulk-join"],
             # issue 28's spin off: the workload programs' environment, not lism's
             "lism-exec-nospin": ["LISM_BUSY_POLL_US=0"],
             "lism-exec-yield2us": ["LISM_BUSY_POLL_YIELD_NS=2000"],
             # the default bound before 2026-12-04 (exec/spin.h)
             "lism-exec-spin50": ["LISM_BUSY_POLL_US=50"],
             # readers that ring for every stretch (exec/bell.h, lism_bell_take_look off)
             "lism-exec-nolook": ["LISM_READER_LOOKS=0"],
             # every epoll_ctl on a ring socket to the kernel at once (exec/poll.c, lazy registrations)
             "lism-exec-eager": ["LISM_EPOLL_LAZY=0"],
             # writers that add every send to the count (exec/bell.h, carried counts off)
             "lism-exec-nocarry": ["LISM_CARRY=0"],
             # writers that look at the doorbell word on every carry (exec/bell.h, the spin mirror off)
             "lism-exec-nomirror": ["LISM_MIRROR=0"],
             # a tx lock and atomic references in every process, one thread or not (exec/conn.h)
             "lism-exec-locked": ["LISM_ONE_THREAD=0"],
             # ring DMBs of the whole --dmb-size, not at most 1 MiB (include/lism/ring.h)
             "lism-exec-dmb4m": ["LISM_ABLATE=ring-dmb-cache"]}
# the settings of the workload programs' liblism (exec/spin.h), set by switch() per mode
EXEC_SETTINGS = ("LISM_BUSY_POLL_US", "LISM_BUSY_POLL_YIELD_NS", "LISM_READER_LOOKS", "LISM_EPOLL_LAZY",
                 "LISM_CARRY", "LISM_MIRROR", "LISM_ONE_THREAD")
# BENCH_LISM_OLD=path/to/lism: modes lism-old and lism-ab-old, another build's lism, interleaved
# with this one (an A/B)
LISM_OLD = os.environ.get("BENCH_LISM_OLD")
if LISM_OLD:
    ABLATIONS["lism-old"] = ["build " + LISM_OLD]
    ABLATIONS["lism-ab-old"] = ["build " + LISM_OLD]
LISM_MODES = ("lism", "lism-ab", "lism-exec") + tuple(ABLATIONS)
# issue 27's targets for lism exec, as ratios to TCP in the same run
EXEC_TARGETS = {"sockperf_tp_14B": 5.0, "sockperf_tp_64000B": 1.8, "sockperf_pp_same_core": 0.4,
                "redis_set": 2.0, "redis_get": 2.0, "nginx_keepalive": 2.0, "iperf3": 2.5}
# issue 28's (busy-polling ring readers), the same way
BUSY_POLL_TARGETS = {"sockperf_pp_cross_core": 0.1, "sockperf_pp_same_core": 0.3, "redis_get_c1": 3.0,
                     "nginx_keepalive_c1": 2.5}
# and its idle cost: "~0", read here as under 1 % of a CPU for all the idle connections
IDLE_CPU_MAX = 0.01
BPF_STATS = "/proc/sys/kernel/bpf_stats_enabled"
AB_ARGS = ["--allow-blocking", "--eager-senders"]


def ablation_base(mode):
    """The mode an ablation is measured against: lism-ab for lism-ab-*, lism-exec for lism-exec-*, else lism."""
    return next((b for b in ("lism-ab", "lism-exec") if mode.startswith(b + "-")), "lism")


def blocking_only(mode):
    """lism-ab and its ablations run only the workloads with blocking sockets."""
    return mode == "lism-ab" or mode.startswith("lism-ab-")


def is_exec(mode):
    """lism-exec and its ablations: the workload programs under lism exec."""
    return mode == "lism-exec" or (mode or "").startswith("lism-exec-")


def runs(mode, name, blocking):
    """Whether @mode runs workload @name (@blocking: it uses blocking sockets)."""
    if name in EXEC_ONLY and not (mode == "tcp" or is_exec(mode)):
        return False
    if name in REFERENCE_ONLY and mode != "tcp":
        return False
    return blocking or not blocking_only(mode)


LISM_ARGS = dict({"lism": [], "lism-ab": AB_ARGS, "lism-exec": []},
                 **{m: (AB_ARGS if ablation_base(m) == "lism-ab" else []) + [a for a in args if a.startswith("--")]
                    for m, args in ABLATIONS.items()})


def lism_env(mode):
    """The environment of a mode's lism: an ablation without a setting of its own is LISM_ABLATE
    (include/lism/ablate.h), for the load and for the daemon, whose adoption upgrades the programs."""
    env = dict(os.environ)
    env.pop("BENCH_LISM_OLD", None)
    env.pop("LISM_ABLATE", None)
    for k in EXEC_SETTINGS:
        env.pop(k, None)  # the workload programs', set by switch()
    for a in ABLATIONS.get(mode, []):
        if a.startswith("LISM_ABLATE="):
            env["LISM_ABLATE"] = a.split("=", 1)[1]
    return env


def lism_bin(mode):
    """The lism binary of @mode: this build's, or another build's for a mode that names one."""
    return next((a.split(" ", 1)[1] for a in ABLATIONS.get(mode, []) if a.startswith("build ")), LISM)


class Bench:
    def __init__(self):
        self.cg_root = cgroup2_mount()
        self.cg = os.path.join(self.cg_root, "lism-bench-%d" % os.getpid())
        self.pin = "/sys/fs/bpf/lism-bench-%d" % os.getpid()
        self.tmp = tempfile.mkdtemp(prefix="lism-bench-")
        # lism exec's device of the bench's lism run (and of its callers), not the host's /run/lism
        os.environ["LISM_DEVICE"] = os.path.join(self.tmp, "device.sock")
        os.chmod(self.tmp, 0o755)  # nginx workers run unprivileged
        self.mode = None
        self.daemon = None
        self.baseline = self.pin + "-sockmap"

    def __enter__(self):
        os.mkdir(self.cg)
        with open(os.path.join(self.cg, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))  # every workload process starts in here
        return self

    def __exit__(self, *a):
        self.switch(None)
        with open(os.path.join(self.cg_root, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
        for _ in range(50):
            try:
                os.rmdir(self.cg)
                break
            except OSError:
                time.sleep(0.1)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def baseline_load(self):
        """The plain sockmap: its sockops on this run's cgroup, its sk_msg on its sockhash."""
        progs, maps = os.path.join(self.baseline, "progs"), os.path.join(self.baseline, "maps")
        os.mkdir(self.baseline, 0o700)
        try:
            run(["bpftool", "prog", "loadall", BASELINE, progs, "pinmaps", maps])
            run(["bpftool", "cgroup", "attach", self.cg, "sock_ops", "pinned",
                 os.path.join(progs, "baseline_sockops")])
            run(["bpftool", "prog", "attach", "pinned", os.path.join(progs, "baseline_msg"), "msg_verdict",
                 "pinned", os.path.join(maps, "baseline_socks")])
        except Exception:
            self.baseline_unload()  # nothing of a half-done load stays
            raise

    def baseline_unload(self):
        progs = os.path.join(self.baseline, "progs")
        run(["bpftool", "cgroup", "detach", self.cg, "sock_ops", "pinned", os.path.join(progs, "baseline_sockops")],
            check=False)
        shutil.rmtree(self.baseline, ignore_errors=True)  # unpinned: the programs and map go with the last socket

    def switch(self, mode):
        """Fresh state for every run: the mode before is taken down even when it is the same."""
        EXEC_PREFIX[:] = [LISM, "exec", "--"] if is_exec(mode) else []
        # the workload programs inherit the bench's environment: an ablation's LISM_BUSY_POLL_US=0
        # there, unset otherwise (so lism-exec measures the library's default)
        for k in EXEC_SETTINGS:
            os.environ.pop(k, None)
        for a in ABLATIONS.get(mode, []):
            k, _, v = a.partition("=")
            if k in EXEC_SETTINGS:
                os.environ[k] = v
        if self.daemon:
            if self.daemon.poll() is not None:
                raise RuntimeError("lism run exited (%d) during the workload" % self.daemon.returncode)
            self.daemon.send_signal(signal.SIGTERM)  # it leaves lism loaded
            if self.daemon.wait(timeout=10):
                raise RuntimeError("lism run exited %d on SIGTERM" % self.daemon.returncode)
            self.daemon = None
        if self.mode in LISM_MODES:
            run([lism_bin(self.mode), "unload", "--pin-path", self.pin, "--timeout", "10", "--force"])
        elif self.mode == "sockmap":
            self.baseline_unload()
        self.mode = None
        if mode in LISM_MODES:
            run([lism_bin(mode), "load", "--pin-path", self.pin, "--cgroup", self.cg] + LISM_ARGS[mode],
                env=lism_env(mode))
            # the daemon adopts it, as on a node (its cost belongs in the numbers), with the same
            # options: an adopting lism run applies its own, and without them it set every mode
            # back to the defaults (every ablation before 2026-12-03 14:00 measured the default)
            self.daemon = subprocess.Popen([lism_bin(mode), "run", "--pin-path", self.pin, "--metrics-addr",
                                            "127.0.0.1:%d" % (19435 + os.getpid() % 1000)] + LISM_ARGS[mode],
                                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=lism_env(mode))
        elif mode == "sockmap":
            self.baseline_load()
        self.mode = mode

    def prog_run(self, pin):
        """(run time in ns, runs) of lism's program pinned as @pin, None when lism is not loaded."""
        if self.mode not in LISM_MODES:
            return None
        j = json.loads(run(["bpftool", "-j", "prog", "show", "pinned", os.path.join(self.pin, pin)]).stdout)
        return j.get("run_time_ns", 0), j.get("run_cnt", 0)

    def sockops_run_time(self):
        """Total BPF run time (ns) of lism's sockops program, None when lism is not loaded."""
        r = self.prog_run("prog_sockops")
        return r and r[0]

    def msg_run(self):
        """(run time in ns, runs) of the data path's sk_msg program, None without it."""
        try:
            return self.prog_run("prog_msg")
        except RuntimeError:  # no data path on this kernel
            return None

    def lism_set(self, key, value):
        """`lism set KEY VALUE` on the loaded instance; nothing in other modes."""
        if self.mode in LISM_MODES:
            run([lism_bin(self.mode), "set", key, value, "--pin-path", self.pin])

    def stats(self):
        if self.mode not in LISM_MODES:
            return None
        return json.loads(run([lism_bin(self.mode), "stats", "-j", "--pin-path", self.pin]).stdout)


def fmt(v):
    if v is None:
        return "-"
    if 0 < abs(v) < 0.01:
        return "%.2g" % v
    if v >= 1000:
        return "%.0f" % v
    if v >= 10:
        return "%.1f" % v
    return "%.2f" % v


def main():
    # SIGTERM unwinds like Ctrl-C: servers stopped, lism and the baseline unloaded, cgroup removed
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("bench: terminated"))
    if os.geteuid() != 0:
        sys.exit("bench: needs root (cgroup2, bpffs, BPF programs)")
    for tool in ("sockperf", "redis-server", "redis-benchmark", "nginx", "wrk", "iperf3", "taskset", "bpftool"):
        if not shutil.which(tool):
            sys.exit("bench: %s is missing (make bench installs it with apt-get)" % tool)
    # a fresh machine may have no bpffs at /sys/fs/bpf yet: lism mounts it as `make run` does
    run([LISM, "mount-bpffs"])
    only = re.compile(os.environ.get("BENCH_ONLY", "."))
    workloads = [w for w in WORKLOADS if only.search(w[0])]
    modes = ["tcp", "sockmap", "lism", "lism-ab", "lism-exec"]
    if not any(w[3] for w in workloads):
        modes.remove("lism-ab")
    if "BENCH_MODES" in os.environ:
        modes = [m for m in os.environ["BENCH_MODES"].split(",") if m]
    with Bench() as b:
        if "sockmap" in modes and not os.path.isfile(BASELINE):
            sys.exit("bench: %s is missing: make bench builds it" % BASELINE)
        os.makedirs(OUT, exist_ok=True)
        res = {w[0]: {m: [] for m in modes} for w in workloads}
        cpu = {w[0]: {m: [] for m in modes} for w in workloads}
        counters = {}
        ctx = {"tmp": b.tmp, "bpf_sockops": b.sockops_run_time, "bpf_msg": b.msg_run, "lism_set": b.lism_set,
               "lism_stats": b.stats, "extra": {}}
        with open(BPF_STATS) as f:
            stats_was = f.read().strip()
        # Off while measuring: with it on, every run of every BPF program
        # reads the clock twice (sched_clock, a pvclock read on these VMs),
        # which cost an engaged connection ~14 % of its setup time here
        # (docs/performance.md, "What bpf_stats costs").
        set_bpf_stats("0")
        seed = int(os.environ.get("BENCH_SEED", "0")) or random.SystemRandom().randrange(1, 1 << 31)
        rng = random.Random(seed)
        log("modes' order: BENCH_SEED=%d" % seed)
        ctx["extra"]["seed"] = seed  # not a list: the report's figures skip it
        t0 = time.time()
        steps = sum(len([m for m in modes if runs(m, w[0], w[3])]) for w in workloads) * ROUNDS
        step = 0
        try:
            for r in range(ROUNDS):
                for wi, (name, unit, _, blocking, _, fn) in enumerate(workloads):
                    # a workload's modes back to back (seconds apart, so the machine's
                    # drift cancels in their ratio), in a fresh random order each time:
                    # a rotation put lism right after tcp in every round, and the slot
                    # after tcp measured low on nginx_conn_close (docs/benchmarks.md)
                    for m in rng.sample(modes, len(modes)):
                        if not runs(m, name, blocking):
                            continue
                        b.switch(m)
                        settle()
                        step += 1
                        ctx["mode"] = m
                        # CPU s/s from RUSAGE_CHILDREN: every process the workload starts is waited
                        # for when it returns (run(), Server's exit; ip netns exec, taskset and lism
                        # exec exec their program; nginx's master reaps its worker), and lism's
                        # daemon is reaped in switch(), outside this window
                        c0, w0 = children_cpu_s(), time.time()
                        v = fn(ctx)
                        c1, w1 = children_cpu_s(), time.time()
                        res[name][m].append((r, v))
                        cpu[name][m].append((r, (c1 - c0) / (w1 - w0)))
                        s = b.stats()
                        if s is not None:
                            counters.setdefault(m, {}).setdefault(name, []).append(s)
                        eta = (time.time() - t0) / step * (steps - step)
                        log("[%3d/%d] round %d  %-8s %-28s %10s %-7s CPU %5s s/s (%.0f s left)" %
                            (step, steps, r + 1, m, name, fmt(v), unit, fmt(cpu[name][m][-1][1]), eta))
            elapsed = time.time() - t0  # the rows' time, without the pass
            bpf_time_pass(b, ctx, workloads, modes)
        finally:
            set_bpf_stats(stats_was)
            b.switch(None)
        report(workloads, modes, res, cpu, ctx["extra"], counters, elapsed)


def children_cpu_s():
    """User + sys seconds of this process's children that were waited for (and of theirs)."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def set_bpf_stats(value):
    with open(BPF_STATS, "w") as f:
        f.write(value)


def bpf_time_pass(b, ctx, workloads, modes):
    """lism's sockops time per connection and its data path's time per send
    (medians of ROUNDS runs), read from bpf_stats in a pass of its own after
    the rounds, so that the clock reads it adds (per program run) are in
    none of the compared rows.  Each run as in the rounds: lism loaded
    fresh, the CPUs idle first.  A failure here costs only these figures,
    not the rows."""
    rows = [w for w in workloads if w[0].startswith(("connsetup", "msgrate"))]
    if not rows or "lism" not in modes:
        return
    log("bench: BPF time per connection and per send (bpf_stats on; not in the table's rows)")
    ctx["bpf_pass"] = True
    try:
        for r in range(ROUNDS):
            for name, _, _, _, _, fn in rows:
                b.switch("lism")
                ctx["mode"] = "lism"
                settle()
                set_bpf_stats("1")
                try:
                    fn(ctx)
                finally:
                    set_bpf_stats("0")
                log("  round %d  %s" % (r + 1, name))
    except Exception as e:  # the rows are measured already: report them
        log("bench: the BPF-time pass failed (%s): no sockops time per connection" % e)
    finally:
        ctx["bpf_pass"] = False


def round_ratios(samples, a, b):
    """a's value over b's, round by round."""
    rb = dict(samples.get(b, []))
    return [v / rb[r] for r, v in samples.get(a, []) if rb.get(r)]


def paired_ratio(samples, a, b):
    """Median over the rounds of a's value over b's in the same round."""
    rs = round_ratios(samples, a, b)
    return statistics.median(rs) if rs else None


def fmt_spread(samples, a, b):
    """The paired ratio with its rounds' range: a ratio inside the range a
    same-code pair shows is no finding."""
    rs = round_ratios(samples, a, b)
    if not rs:
        return "-"
    return fmt(statistics.median(rs)) + ("" if len(rs) < 2 else " (%s-%s)" % (fmt(min(rs)), fmt(max(rs))))


def exec_met(row):
    """lism exec's target for the row, and whether the run met it (and never lost to the sk_msg path)."""
    t, r, vs = row["exec_target"], row["lism_exec_over_tcp"], row["exec_over_best_lism"]
    if r is None or row["workload"] in EXEC_ONLY:  # no sk_msg figure to lose to, and issue 28's target
        return "-"
    ok = (vs is None or (vs >= 1.0 if row["higher_is_better"] else vs <= 1.0))
    if t is not None:
        ok = ok and (r >= t if row["higher_is_better"] else r <= t)
    return "%s%s" % (("%s %.2f: " % (">=" if row["higher_is_better"] else "<=", t)) if t else "", "yes" if ok else "**no**")


def busy_poll_met(row):
    """Issue 28's target for the row ("<= 0.30: yes"), None without one: lism exec against TCP, and
    the idle connections' CPU s/s against IDLE_CPU_MAX."""
    if row["workload"] in EXEC_ONLY:
        v = row["median"].get("lism-exec")
        return None if v is None else (IDLE_CPU_MAX, v <= IDLE_CPU_MAX)
    t, r = row["busy_poll_target"], row["lism_exec_over_tcp"]
    if t is None or r is None:
        return None
    return t, (r >= t if row["higher_is_better"] else r <= t)


def report(workloads, modes, res, cpu, extra, counters, elapsed):
    medians = lambda runs: {n: {m: (statistics.median(v for _, v in s) if s else None) for m, s in d.items()}
                            for n, d in runs.items()}
    med, cpu_med = medians(res), medians(cpu)
    rows = []
    for name, unit, higher, blocking, target, _ in workloads:
        md = med[name]
        pr = lambda a, b: paired_ratio(res[name], a, b)
        ab_mode = "lism-ab" if blocking and md.get("lism-ab") is not None else None
        best = ab_mode or "lism"
        r_sm = pr(best, "sockmap")

        def met_by(mode):
            """Whether @mode meets the target against TCP and does not lose to plain sockmap."""
            r = pr(mode, "tcp") if mode else None
            if target is None or r is None:
                return None
            ok = r >= target if higher else r <= target
            rs = pr(mode, "sockmap")
            if rs is not None:
                ok = ok and (rs >= 1.0 if higher else rs <= 1.0)
            return ok
        met, met_ab = met_by("lism"), met_by(ab_mode)
        rows.append({"workload": name, "unit": unit, "higher_is_better": higher, "blocking_sockets": blocking,
                     "median": md, "lism_over_tcp": pr("lism", "tcp"), "sockmap_over_tcp": pr("sockmap", "tcp"),
                     "lism_ab_over_tcp": pr(ab_mode, "tcp") if ab_mode else None, "best_over_sockmap": r_sm,
                     "target": target, "met": met, "met_allow_blocking": met_ab,
                     "lism_exec_over_tcp": pr("lism-exec", "tcp"), "exec_over_best_lism": pr("lism-exec", best),
                     "exec_target": EXEC_TARGETS.get(name), "busy_poll_target": BUSY_POLL_TARGETS.get(name),
                     "samples": res[name], "cpu_s_per_s": cpu_med[name], "cpu_samples": cpu[name]})
        met28 = busy_poll_met(rows[-1])
        rows[-1]["busy_poll_met"] = met28 and met28[1]
    info = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "kernel": os.uname().release,
            "cpus": os.cpu_count(), "rounds": ROUNDS, "seconds": SECONDS, "elapsed_s": round(elapsed),
            "modes": modes, "seed": extra.get("seed"), "bpf_stats_while_measuring": False,
            "cpu_s_per_s": "user+sys seconds of the workload's processes (getrusage RUSAGE_CHILDREN) per "
                           "second of its wall time, server start to server reaped",
            "idle_cpu_max": IDLE_CPU_MAX,
            "sockops_ns_per_conn": {k: statistics.median(v) for k, v in extra.items() if k.startswith("sockops")},
            "skmsg_ns_per_send": {k: statistics.median(v) for k, v in extra.items() if k.startswith("skmsg")}}
    with open(os.path.join(OUT, "results.json"), "w") as f:
        json.dump({"info": info, "rows": rows, "lism_stats": counters}, f, indent=1)

    head = ("| workload | unit | TCP | plain sockmap | lism | lism --allow-blocking --eager-senders | lism/TCP | best lism/sockmap |"
            " target | met (default) | met (all engaged) | lism exec | exec/TCP | exec/best sk_msg | exec target |")
    lines = [head, "|" + "---|" * 15]
    for row in rows:
        md = row["median"]
        t = row["target"]
        tgt = "-" if t is None else ("%s %.2f" % (">=" if row["higher_is_better"] else "<=", t))
        yn = lambda v: "-" if v is None else ("yes" if v else "**no**")
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            row["workload"], row["unit"], fmt(md.get("tcp")), fmt(md.get("sockmap")), fmt(md.get("lism")),
            fmt(md.get("lism-ab")) if row["blocking_sockets"] else "n/a",
            fmt(row["lism_over_tcp"]) + ("" if row["lism_ab_over_tcp"] is None else
                                         " (%s)" % fmt(row["lism_ab_over_tcp"])),
            fmt(row["best_over_sockmap"]), tgt, yn(row["met"]), yn(row["met_allow_blocking"]),
            fmt(md.get("lism-exec")), fmt_spread(row["samples"], "lism-exec", "tcp"), fmt(row["exec_over_best_lism"]),
            exec_met(row)))
    lines += ["", "CPU s/s: user + sys seconds of the workload's processes (its servers and clients) per second "
              "of its wall time, servers' start to their exit (medians; for idle_%d_ring_conns with its setup, "
              "its figure above is the idle window's alone)" % IDLE_CONNS, "",
              "| workload | " + " | ".join(modes) + " |", "|---|" + "---|" * len(modes)]
    lines += ["| %s | %s |" % (row["workload"], " | ".join(fmt(row["cpu_s_per_s"].get(m)) for m in modes))
              for row in rows]
    busy = [row for row in rows if row["workload"] in BUSY_POLL_TARGETS or row["workload"] in EXEC_ONLY or
            row["workload"] == "redis_get"]
    if "lism-exec" in modes and busy:
        lines += ["", "lism exec, issue 28's targets (busy-polling ring readers; idle_%d_ring_conns: lism exec's "
                  "CPU s/s itself, at most %g)" % (IDLE_CONNS, IDLE_CPU_MAX), "",
                  "| workload | unit | TCP | lism exec | exec/TCP (rounds' range) | CPU s/s TCP | CPU s/s exec | "
                  "target | met |", "|---|" + "---|" * 8]
        for row in busy:
            m28 = busy_poll_met(row)
            lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                row["workload"], row["unit"], fmt(row["median"].get("tcp")), fmt(row["median"].get("lism-exec")),
                fmt_spread(row["samples"], "lism-exec", "tcp"), fmt(row["cpu_s_per_s"].get("tcp")),
                fmt(row["cpu_s_per_s"].get("lism-exec")),
                "-" if not m28 else "%s %.2f" % (">=" if row["higher_is_better"] else "<=", m28[0]),
                "-" if not m28 else ("yes" if m28[1] else "**no**")))
        floor = next((r for r in rows if r["workload"] == "yield_pp_same_core"), None)
        pp1 = next((r for r in rows if r["workload"] == "sockperf_pp_same_core"), None)
        if floor and pp1:
            fl = floor["samples"].get("tcp", [])
            r_floor = paired_ratio({"x": fl, "tcp": pp1["samples"].get("tcp", [])}, "x", "tcp")
            lines += ["", "One CPU's floor (yield_pp_same_core: two processes passing a turn through shared memory, "
                      "each one-way one sched_yield and one switch): %s us, %s of TCP's sockperf ping-pong on one CPU "
                      "(median of each round's ratio); lism exec's is %s of the floor" % (
                          fmt(floor["median"].get("tcp")), fmt(r_floor),
                          fmt(paired_ratio({"x": pp1["samples"].get("lism-exec", []),
                                            "y": fl}, "x", "y")))]
    conn = info["sockops_ns_per_conn"]
    if conn:
        lines.append("")
        label = lambda k: ("churning destination (default policy)" if k.endswith("churning")
                           else "lism exec's contract, 1 established" if k.endswith("_exec")
                           else "%s established" % k.split("_")[-1])
        lines.append("lism sockops BPF time per connection (both ends; bpf_stats, in a pass after the rounds): " + ", ".join(
            "%s: %.1f us" % (label(k), v / 1000) for k, v in sorted(conn.items())))
    send = info["skmsg_ns_per_send"]
    if send:
        lines.append("lism data path (sk_msg) BPF time per send (bpf_stats, same pass): " + ", ".join(
            "msgrate %s: %.0f ns" % (k[len("skmsg_ns_per_send_"):].replace("_", " "), v)
            for k, v in sorted(send.items())))
    text = "\n".join(lines)
    for ab in [m for m in modes if m in ABLATIONS]:
        base = ablation_base(ab)
        flag = " ".join(ABLATIONS[ab])
        extra_rows = ["| workload | unit | %s | %s %s | %s / ablation (rounds' range) | CPU s/s %s / ablation |"
                      % (base, base, flag, base, base), "|---|---|---|---|---|---|"]
        for row in rows:
            if not runs(ab, row["workload"], row["blocking_sockets"]):
                continue
            r = fmt_spread(res[row["workload"]], base, ab)
            c = row["cpu_s_per_s"]
            extra_rows.append("| %s | %s | %s | %s | %s | %s / %s |" % (row["workload"], row["unit"],
                                                                    fmt(row["median"].get(base)),
                                                                    fmt(row["median"].get(ab)), r,
                                                                    fmt(c.get(base)), fmt(c.get(ab))))
        text += "\n\nAblation: " + flag + "\n\n" + "\n".join(extra_rows)
    with open(os.path.join(OUT, "results.md"), "w") as f:
        f.write("Machine: %d vCPU, kernel %s, %s; %d rounds x %.0f s, a workload's modes back to back "
                "in random order (BENCH_SEED=%s); medians, ratios the median of each round's ratio.\n\n%s\n" %
                (info["cpus"], info["kernel"], info["date"], ROUNDS, SECONDS, info["seed"], text))
    log("")
    log(text)
    log("")
    log("bench: %d rounds in %.0f s; results in %s/results.{md,json}" % (ROUNDS, elapsed, OUT))
    plots(rows)


def plots(rows):
    if not shutil.which("gnuplot"):
        log("bench: gnuplot missing, no plots")
        return
    sockmap_ratios = False
    with open(os.path.join(OUT, "ratios.dat"), "w") as f:
        for row in rows:
            r = row["lism_ab_over_tcp"] if row["lism_ab_over_tcp"] is not None else row["lism_over_tcp"]
            s = row["sockmap_over_tcp"]
            if r is None:
                continue
            if not row["higher_is_better"]:  # plot speed-up: higher is better everywhere
                r = 1 / r if r else 0
                s = 1 / s if s else None
            sockmap_ratios = sockmap_ratios or bool(s)
            f.write("%s %.3f %s\n" % (row["workload"].replace("_", "\\\\_"), r, "%.3f" % s if s else "NaN"))
    with open(os.path.join(OUT, "tp.dat"), "w") as f:
        for row in rows:
            m = re.match(r"sockperf_tp_(\d+)(KiB|B)$", row["workload"])
            if not m:
                continue
            size = int(m.group(1)) * (1024 if m.group(2) == "KiB" else 1)
            md = row["median"]
            vals = [md.get(k) for k in ("tcp", "sockmap", "lism", "lism-ab")]
            f.write("%d %s\n" % (size, " ".join("NaN" if v is None else "%.2f" % v for v in vals)))
    script = """
set terminal pngcairo size 1100,600 font ",10"
set style fill solid 0.8 border -1
set grid ytics
"""
    if os.path.getsize(os.path.join(OUT, "ratios.dat")):
        script += """
set output '{out}/ratios.png'
set title 'Speed-up over plain TCP (median of the per-round ratios; latency and us/conn inverted so higher is better)'
set style data histograms
set style histogram clustered gap 1
set boxwidth 0.9
set xtics rotate by -40 left
set yrange [0:*]
set key top right
plot '{out}/ratios.dat' using 2:xtic(1) title 'lism',{sockmap} 1 with lines lc rgb 'black' dt 2 title 'TCP'
"""
    if os.path.getsize(os.path.join(OUT, "tp.dat")):
        script += """
set output '{out}/tp.png'
set title 'sockperf throughput vs message size'
set style data linespoints
set logscale xy
set xlabel 'message size (bytes)'
set ylabel 'MB/s'
set xtics norotate
set yrange [*:*]
set key top left
plot '{out}/tp.dat' using 1:2 title 'TCP', '' using 1:3 title 'plain sockmap', '' using 1:4 title 'lism (default policy)', '' using 1:5 title 'lism --allow-blocking --eager-senders'
"""
    # a run without the sockmap mode has no such column: gnuplot refuses an empty series
    script = script.format(out=OUT, sockmap=" '' using 3 title 'plain sockmap'," if sockmap_ratios else "")
    r = subprocess.run(["gnuplot"], input=script, text=True, stderr=subprocess.PIPE)
    if r.returncode:
        log("bench: gnuplot failed: " + r.stderr.strip()[-300:])
    else:
        log("bench: plots in %s/ratios.png and %s/tp.png" % (OUT, OUT))


if __name__ == "__main__":
    main()
