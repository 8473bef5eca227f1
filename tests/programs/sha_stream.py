#!/usr/bin/env python3
"""A checksummed byte stream between two "pods" of the node simulation
(tests/node/node-sim.sh), run with or without liblism.so preloaded: it knows
nothing of lism, and makes its socket calls through libc as any program.

  sha_stream.py serve ADDR PORT [nonblock]
                                       say "listening pid P", accept one
                                       connection, read it to its end, print
                                       "bytes N sha256 H tcp T" (T: the bytes
                                       TCP itself received, from TCP_INFO),
                                       write that line back, close; nonblock:
                                       its sockets non-blocking, waiting in
                                       select() (as servers' event loops do)
  sha_stream.py send HOST PORT BYTES   send BYTES random bytes, shut down
                                       writing, print "bytes N sha256 H", then
                                       the server's line
"""
import hashlib
import os
import select
import socket
import struct
import sys

CHUNK = 1 << 20
TCPI_BYTES_RECEIVED = 128  # struct tcp_info (linux/tcp.h): __u64 tcpi_bytes_received


def tcp_received(s):
    info = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    if len(info) < TCPI_BYTES_RECEIVED + 8:
        return -1
    return struct.unpack_from("=Q", info, TCPI_BYTES_RECEIVED)[0]


def serve(addr, port, nonblock):
    lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lst.bind((addr, port))
    lst.setblocking(not nonblock)
    lst.listen(4)
    print("listening pid %d" % os.getpid(), flush=True)
    if nonblock:
        select.select([lst], [], [])
    conn, _ = lst.accept()
    conn.setblocking(not nonblock)
    h, n, buf = hashlib.sha256(), 0, bytearray(CHUNK)
    view = memoryview(buf)
    while True:
        try:
            r = conn.recv_into(buf)
        except BlockingIOError:
            select.select([conn], [], [])
            continue
        if r == 0:
            break
        h.update(view[:r])
        n += r
    line = "bytes %d sha256 %s tcp %d" % (n, h.hexdigest(), tcp_received(conn))
    print(line, flush=True)
    conn.setblocking(True)
    conn.sendall((line + "\n").encode())
    conn.close()
    return 0


def send(host, port, total):
    s = socket.create_connection((host, port))
    h, n = hashlib.sha256(), 0
    while n < total:
        b = os.urandom(min(CHUNK, total - n))
        s.sendall(b)
        h.update(b)
        n += len(b)
    s.shutdown(socket.SHUT_WR)
    print("bytes %d sha256 %s" % (n, h.hexdigest()), flush=True)
    answer = b""
    while True:
        r = s.recv(4096)
        if not r:
            break
        answer += r
    print(answer.decode().strip(), flush=True)
    return 0 if answer else 1


if __name__ == "__main__":
    if len(sys.argv) in (4, 5) and sys.argv[1] == "serve" and sys.argv[4:] in ([], ["nonblock"]):
        sys.exit(serve(sys.argv[2], int(sys.argv[3]), len(sys.argv) == 5))
    if len(sys.argv) == 5 and sys.argv[1] == "send":
        sys.exit(send(sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
    sys.exit(__doc__)
