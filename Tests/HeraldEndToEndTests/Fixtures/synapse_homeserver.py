"""A throwaway Synapse homeserver on 127.0.0.1 for Herald's Matrix tests.

Usage: python3 synapse_homeserver.py DIRECTORY

Generates a config in DIRECTORY (SQLite, a free port, registration open without
verification, rate limits out of the way, and 127.0.0.1 allowed as a push gateway
address, which Synapse blocks by default), prints one JSON line
{"url": "http://127.0.0.1:PORT"} and becomes the homeserver (exec), so the caller's
kill stops it.
"""
import json
import os
import socket
import subprocess
import sys

directory = os.path.abspath(sys.argv[1])
os.makedirs(directory, exist_ok=True)
config = os.path.join(directory, "homeserver.yaml")
subprocess.run(
    [sys.executable, "-m", "synapse.app.homeserver", "--server-name", "localhost", "--config-path", config,
     "--data-directory", directory, "--generate-config", "--report-stats=no"],
    check=True, stdout=subprocess.DEVNULL, cwd=directory)  # its log config names a file in the working directory

with socket.socket() as probe:
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]

generous = {"per_second": 10000, "burst_count": 10000}
overrides = {
    "listeners": [{"port": port, "bind_addresses": ["127.0.0.1"], "type": "http", "tls": False, "x_forwarded": False,
                   "resources": [{"names": ["client"], "compress": False}]}],
    "database": {"name": "sqlite3", "args": {"database": os.path.join(directory, "homeserver.db")}},
    "trusted_key_servers": [],
    "suppress_key_server_warning": True,
    "enable_registration": True,
    "enable_registration_without_verification": True,
    "ip_range_whitelist": ["127.0.0.1"],
    "rc_message": generous,
    "rc_registration": generous,
    "rc_joins": {"local": generous, "remote": generous},
    "rc_invites": {"per_room": generous, "per_user": generous, "per_issuer": generous},
    "rc_login": {"address": generous, "account": generous, "failed_attempts": generous},
    "push": {"include_content": True},
}
# JSON is YAML: Synapse reads this file after its own and takes its top-level keys.
with open(os.path.join(directory, "overrides.yaml"), "w") as f:
    json.dump(overrides, f)

print(json.dumps({"url": f"http://127.0.0.1:{port}"}), flush=True)
os.execv(sys.executable, [sys.executable, "-m", "synapse.app.homeserver", "-c", config,
                          "-c", os.path.join(directory, "overrides.yaml")])
