"""Slow clients, as an attacker runs them, from a process of their own (the test process must not
hold thousands of descriptors: Foundation's Process.run breaks past 1,024 of them).

usage: slow_clients.py PORT ATTACKERS ROUNDS
Each attacker sends a registration head announcing a 65,536-byte body and its first byte, then a
byte each round; a connection the server closed comes back. Every 250 connections and after
every round, GET /healthz on a fresh connection. Prints one JSON line: the health answers.
"""
import json
import resource
import socket
import sys
import time

port, attackers, rounds = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, attackers + 512)), hard))
HEAD = (b"POST /v1/push/register HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: 65536\r\n\r\n{")


def connect():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(("127.0.0.1", port))
    return s


def slow_request():
    try:
        s = connect()
        s.sendall(HEAD)
        return s
    except OSError:
        return None


def healthz():
    try:
        s = connect()
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        answer = s.recv(512)
        s.close()
        return answer[9:12].decode() if len(answer) > 12 else "no answer"
    except OSError as error:
        return "error: %s" % error


answers = []
open_sockets = []
for i in range(attackers):
    s = slow_request()
    if s is not None:
        open_sockets.append(s)
    if i % 250 == 249:
        answers.append(healthz())
for _ in range(rounds):
    for i, s in enumerate(open_sockets):
        try:
            s.send(b" ")
        except OSError:
            s.close()
            open_sockets[i] = slow_request()
    open_sockets = [s for s in open_sockets if s is not None]
    answers.append(healthz())
    time.sleep(0.5)
for s in open_sockets:
    s.close()
print(json.dumps({"answers": answers}))
