#!/usr/bin/env python3
"""HeraldKit's interop test drives the reference cipher (kasia_cipher_ref.py, copied verbatim
from the Kasia protocol document's folder) through this script.

  kasia_interop.py make N   -> {"boxes": [{"private_key", "address", "plaintext", "sealed_hex"}, ...]}
  kasia_interop.py open     <- {"boxes": [{"private_key", "sealed_hex"}, ...]} on stdin
                            -> {"plaintexts": [text or null, ...]}
  kasia_interop.py open-comm <- {"payloads": [{"private_key", "payload_hex"}, ...]} on stdin
                            -> {"messages": [{"alias", "plaintext"} or null, ...]}
  kasia_interop.py make-comm ADDRESS ALIAS N
                            -> {"payloads": [{"plaintext", "payload_hex"}, ...]}: contextual
                               messages sealed to ADDRESS, framed as the reference frames them
Needs: pip install coincurve cryptography
"""
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kasia_cipher_ref as ref  # noqa: E402

ALPHABET = "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,!?é☕🙂日本"


def make(n: int) -> dict:
    boxes = []
    for _ in range(n):
        sk = os.urandom(32)
        address = ref.address_from_private_key(sk, random.choice(["kaspa", "kaspatest"]))
        text = "".join(random.choice(ALPHABET) for _ in range(random.randint(0, 300)))
        boxes.append({"private_key": sk.hex(), "address": address, "plaintext": text,
                      "sealed_hex": ref.encrypt(address, text).hex()})
    return {"boxes": boxes}


def open_all(request: dict) -> dict:
    out = []
    for box in request["boxes"]:
        try:
            out.append(ref.decrypt(bytes.fromhex(box["private_key"]), bytes.fromhex(box["sealed_hex"])))
        except Exception:
            out.append(None)
    return {"plaintexts": out}


def open_comm(request: dict) -> dict:
    out = []
    for item in request["payloads"]:
        try:
            parsed = ref.parse_payload(bytes.fromhex(item["payload_hex"]))
            if parsed is None or parsed["type"] != "comm":
                out.append(None)
                continue
            sealed = ref.comm_body_to_sealed(parsed["body"])
            out.append({"alias": parsed["alias"], "plaintext": ref.decrypt(bytes.fromhex(item["private_key"]), sealed)})
        except Exception:
            out.append(None)
    return {"messages": out}


def make_comm(address: str, alias: str, n: int) -> dict:
    payloads = []
    for _ in range(n):
        text = "".join(random.choice(ALPHABET) for _ in range(random.randint(1, 300)))
        payloads.append({"plaintext": text, "payload_hex": ref.payload_comm(alias, ref.encrypt(address, text)).hex()})
    return {"payloads": payloads}


if __name__ == "__main__":
    if sys.argv[1] == "make":
        print(json.dumps(make(int(sys.argv[2]))))
    elif sys.argv[1] == "open-comm":
        print(json.dumps(open_comm(json.load(sys.stdin))))
    elif sys.argv[1] == "make-comm":
        print(json.dumps(make_comm(sys.argv[2], sys.argv[3], int(sys.argv[4]))))
    else:
        print(json.dumps(open_all(json.load(sys.stdin))))
