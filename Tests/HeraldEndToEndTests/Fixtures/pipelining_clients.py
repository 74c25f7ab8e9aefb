#!/usr/bin/env python3
"""Pipelining clients that never read, as an attacker runs them: each connection sends
`GET /healthz` many times per write and reads nothing back (a small receive buffer, so the
server's answers back up at once). Bounded: at most ROUNDS writes per connection, and each write
waits at most 2 s. Prints one JSON line: how many connections the server closed, how many it
still had open at the end, and fresh clients' /healthz answers after every round.

Usage: pipelining_clients.py HOST PORT CONNECTIONS ROUNDS [PATH]"""
import json
import socket
import sys

host, port, count, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
path = sys.argv[5] if len(sys.argv) > 5 else "/healthz"
burst = ("GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path).encode() * 1000


def fresh_healthz():
    try:
        with socket.create_connection((host, port), timeout=10) as s:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            reply = s.recv(64)
            return reply.split(b" ")[1].decode() if reply.startswith(b"HTTP/1.1 ") else "no answer"
    except OSError as error:
        return type(error).__name__


sockets = []
for _ in range(count):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(2)
    s.connect((host, port))
    sockets.append(s)

closed = set()
answers = []
for _ in range(rounds):
    for i, s in enumerate(sockets):
        if i in closed:
            continue
        try:
            s.sendall(burst)
        except (BrokenPipeError, ConnectionResetError):
            closed.add(i)
        except socket.timeout:
            pass  # the server stopped reading this one: that is the point
    answers.append(fresh_healthz())

print(json.dumps({"closed": len(closed), "open": count - len(closed), "answers": answers}))
