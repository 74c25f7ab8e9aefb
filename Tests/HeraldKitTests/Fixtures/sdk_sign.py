"""Signs messages with the official Kaspa Python SDK (`kaspa.sign_message`): Kaspa message
signing, as a wallet does for Herald's `wallet` policy.

stdin: {"keys": {name: private key hex}, "messages": [[name, message], ...]}
stdout: {"addresses": {name: mainnet address}, "signatures": [hex, ...]} (in the messages' order)
"""
import json
import os
import sys

import kaspa

request = json.load(sys.stdin)
keys = {name: kaspa.PrivateKey(hex_key) for name, hex_key in request["keys"].items()}
answer = {
    "addresses": {name: key.to_address("mainnet").to_string() for name, key in keys.items()},
    "signatures": [kaspa.sign_message(message, keys[name]) for name, message in request["messages"]],
}
print(json.dumps(answer), flush=True)
os._exit(0)  # past the SDK's native teardown, which has aborted on a loaded machine
