#!/usr/bin/env python3
"""Makes kasia_transactions.json: real keys, addresses and signed transactions carrying Kasia
payloads, built with the official Kaspa Python SDK (PyPI `kaspa` 2.1.0) and serialized as the
node's RPC JSON (the shape of BlockAdded / getBlock), with what Herald must make of each.

    pip install kaspa coincurve cryptography
    python3 make_fixtures.py > kasia_transactions.json

Schnorr signatures are randomized, so signature scripts differ run to run; transaction ids,
addresses and payload layouts do not. Ephemeral keys and nonces are fresh each run too.
"""
import hashlib
import json
import os
import sys

import kaspa
from kaspa import NetworkId, PaymentOutput, PrivateKey, UtxoEntryReference

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "HeraldKitTests", "Fixtures"))
import kasia_cipher_ref as kc  # noqa: E402  (the Kasia reference cipher, copied into HeraldKit's fixtures)

NET = NetworkId("mainnet")
BULK = 50


def key(name: str) -> PrivateKey:
    return PrivateKey(hashlib.sha256(("herald-fixture-" + name).encode()).hexdigest())


def utxo(address, amount: int, txid: str, index: int) -> UtxoEntryReference:
    return UtxoEntryReference.from_dict({
        "address": address.to_string(), "outpoint": {"transactionId": txid, "index": index}, "amount": amount,
        "scriptPublicKey": {"version": 0, "script": kaspa.pay_to_address_script(address).script},
        "blockDaaScore": 1000, "isCoinbase": False, "covenantId": None,
    })


def rpc_json(tx, block_hash: str, block_time_ms: int) -> dict:
    """SDK Transaction -> the RpcTransaction JSON a node emits (reference kaspa_py_examples.to_rpc_json)."""
    d = tx.to_dict()
    outputs = []
    for o in d["outputs"]:
        spk = kaspa.ScriptPublicKey(o["scriptPublicKey"]["version"], o["scriptPublicKey"]["script"])
        outputs.append({
            "value": o["value"],
            "scriptPublicKey": "%04x" % o["scriptPublicKey"]["version"] + o["scriptPublicKey"]["script"],
            "verboseData": {"scriptPublicKeyType": "PubKey",
                            "scriptPublicKeyAddress": kaspa.address_from_script_public_key(spk, "mainnet").to_string()},
        })
    return {
        "version": d["version"],
        "inputs": [{"previousOutpoint": i["previousOutpoint"], "signatureScript": i["signatureScript"] or "",
                    "sequence": i["sequence"], "sigOpCount": i["sigOpCount"], "verboseData": None} for i in d["inputs"]],
        "outputs": outputs, "lockTime": d["lockTime"], "subnetworkId": d["subnetworkId"], "gas": d["gas"],
        "payload": d["payload"], "mass": d.get("mass", 0),
        # Newer nodes (post-Toccata) add fields; decoders must ignore them.
        "storageMass": 0,
        "verboseData": {"transactionId": d["id"], "hash": "00" * 32, "computeMass": 0,
                        "blockHash": block_hash, "blockTime": block_time_ms},
    }


def main():
    alice, bob, funder = key("alice"), key("bob"), key("funder")
    a, b, f = (k.to_address("mainnet") for k in (alice, bob, funder))
    block, block_time = "ab" * 32, 1_750_000_000_000

    # A funding transaction: five coins to alice, one to bob (their inputs' outpoints below).
    funding = kaspa.create_transaction(
        [utxo(f, 10_000_000_000, "11" * 32, 0)],
        [PaymentOutput(a, 1_000_000_000)] * 5 + [PaymentOutput(b, 1_000_000_000)]
        + [PaymentOutput(a, 100_000_000)] * BULK, 0, b"", 1)
    funding = kaspa.sign_transaction(funding, [funder], True)
    fid = funding.id

    def spend(sk, addr, index, outputs, payload):
        tx = kaspa.create_transaction([utxo(addr, 1_000_000_000, fid, index)], outputs, 0, payload, 1)
        return kaspa.sign_transaction(tx, [sk], True)

    handshake_text = json.dumps({"type": "handshake", "alias": "0123456789ab", "timestamp": block_time, "version": 1})
    payment_text = json.dumps({"type": "payment", "message": "for lunch", "amount": 1.5, "timestamp": block_time, "version": 1})
    long_text = "x" * 3000
    cases = []

    def case(name, tx, expected, plaintext=None, reader=None):
        cases.append({"name": name, "tx": rpc_json(tx, block, block_time), "expected": expected,
                      "plaintext": plaintext, "reader_private_key": reader.to_string() if reader else None})

    case("handshake", spend(alice, a, 0, [PaymentOutput(b, 20_000_000), PaymentOutput(a, 979_990_000)],
                            kc.payload_handshake(kc.encrypt(b.to_string(), handshake_text))),
         {"kind": "handshake", "sender": a.to_string(), "recipient": b.to_string(), "alias": None, "amount": None},
         handshake_text, bob)
    case("contextual_message", spend(alice, a, 1, [PaymentOutput(a, 999_990_000)],
                                     kc.payload_comm("a1b2c3d4e5f6", kc.encrypt(b.to_string(), "hi bob"))),
         {"kind": "contextual_message", "sender": a.to_string(), "recipient": None, "alias": "a1b2c3d4e5f6", "amount": None},
         "hi bob", bob)
    case("payment", spend(alice, a, 2, [PaymentOutput(b, 150_000_000), PaymentOutput(a, 849_990_000)],
                          kc.payload_payment(kc.encrypt(b.to_string(), payment_text))),
         {"kind": "payment", "sender": a.to_string(), "recipient": b.to_string(), "alias": None, "amount": 150_000_000},
         payment_text, bob)
    case("payment_kachat_pay", spend(bob, b, 5, [PaymentOutput(a, 50_000_000), PaymentOutput(b, 949_990_000)],
                                     b"ciph_msg:1:pay:" + kc.encrypt(a.to_string(), "{}")),
         {"kind": "payment", "sender": b.to_string(), "recipient": a.to_string(), "alias": None, "amount": 50_000_000},
         "{}", alice)
    case("legacy_handshake", spend(alice, a, 3, [PaymentOutput(b, 20_000_000), PaymentOutput(a, 979_990_000)],
                                   b"ciph_msg:" + kc.encrypt(b.to_string(), "ciph_msg:1:handshake:" + handshake_text)),
         {"kind": "handshake", "sender": a.to_string(), "recipient": b.to_string(), "alias": None, "amount": None},
         "ciph_msg:1:handshake:" + handshake_text, bob)
    case("long_message", spend(alice, a, 4, [PaymentOutput(a, 999_900_000)],
                               kc.payload_comm("a1b2c3d4e5f6", kc.encrypt(b.to_string(), long_text))),
         {"kind": "contextual_message", "sender": a.to_string(), "recipient": None, "alias": "a1b2c3d4e5f6", "amount": None},
         long_text, bob)
    case("self_stash", spend(alice, a, 0, [PaymentOutput(a, 999_990_000)],
                             kc.payload_self_stash("saved_handshake", kc.encrypt(a.to_string(), "{}"))),
         {"ignored": "self_stash"})
    case("broadcast", spend(alice, a, 1, [PaymentOutput(a, 999_990_000)], b"ciph_msg:1:bcast:general:hello"),
         {"ignored": "broadcast"})
    case("plain_transfer", spend(alice, a, 2, [PaymentOutput(b, 100_000_000), PaymentOutput(a, 899_990_000)], b""),
         {"not_kasia": True})

    # 50 more contextual messages from alice (the restart test's backlog), each spending its own coin.
    bulk = []
    for n in range(BULK):
        tx = kaspa.create_transaction([utxo(a, 100_000_000, fid, 6 + n)], [PaymentOutput(a, 99_990_000)], 0,
                                      kc.payload_comm("a1b2c3d4e5f6", kc.encrypt(b.to_string(), "message %d" % n)), 1)
        bulk.append(rpc_json(kaspa.sign_transaction(tx, [alice], True), block, block_time))

    print(json.dumps({
        "sdk": "kaspa " + getattr(kaspa, "__version__", "2.1.0"),
        "addresses": {"alice": a.to_string(), "bob": b.to_string(), "funder": f.to_string()},
        "funding": rpc_json(funding, block, block_time),
        "block_hash": block, "block_time_ms": block_time, "cases": cases, "bulk_messages": bulk,
    }, indent=1))


if __name__ == "__main__":
    main()
