#!/usr/bin/env python3
"""Makes kasia_chain.json: Alice's conversation with Bob as it lands on the chain, each
transaction spending the change of the one before (as Kasia wallets do), signed with the official
Kaspa Python SDK. A plain funding transaction pays Alice; her self-stash spends it; her handshake
spends the self-stash's change, her message the handshake's, her payment the message's. The
chain source knows the output each Kasia transaction spends from the one before, so it can pass
the phone the proof (the transaction and the spent output) for all three.

    python3 make_chain_fixture.py > kasia_chain.json
"""
import json

import kaspa
from kaspa import PaymentOutput

from make_fixtures import kc, key, rpc_json, utxo


def main():
    alice, bob, funder = key("alice"), key("bob"), key("funder")
    a, b, f = (k.to_address("mainnet") for k in (alice, bob, funder))
    block, block_time = "ef" * 32, 1_750_000_200_000
    funding = kaspa.sign_transaction(
        kaspa.create_transaction([utxo(f, 3_000_000_000, "33" * 32, 0)], [PaymentOutput(a, 2_000_000_000)], 0, b"", 1),
        [funder], True)
    handshake_text = json.dumps({"type": "handshake", "alias": "0123456789ab", "timestamp": block_time, "version": 1})
    payment_text = json.dumps({"type": "payment", "message": "for lunch", "amount": 1.5, "timestamp": block_time, "version": 1})

    def spend(previous, index, amount, outputs, payload):
        tx = kaspa.create_transaction([utxo(a, amount, previous.id, index)], outputs, 0, payload, 1)
        return kaspa.sign_transaction(tx, [alice], True)

    stash = spend(funding, 0, 2_000_000_000, [PaymentOutput(a, 1_999_990_000)],
                  kc.payload_self_stash("saved_handshake", kc.encrypt(a.to_string(), "{}")))
    handshake = spend(stash, 0, 1_999_990_000, [PaymentOutput(b, 20_000_000), PaymentOutput(a, 1_979_980_000)],
                      kc.payload_handshake(kc.encrypt(b.to_string(), handshake_text)))
    message = spend(handshake, 1, 1_979_980_000, [PaymentOutput(a, 1_979_970_000)],
                    kc.payload_comm("a1b2c3d4e5f6", kc.encrypt(b.to_string(), "hi bob")))
    payment = spend(message, 0, 1_979_970_000, [PaymentOutput(b, 150_000_000), PaymentOutput(a, 1_829_960_000)],
                    kc.payload_payment(kc.encrypt(b.to_string(), payment_text)))
    print(json.dumps({
        "sdk": "kaspa " + getattr(kaspa, "__version__", "2.1.0"),
        "addresses": {"alice": a.to_string(), "bob": b.to_string(), "funder": f.to_string()},
        "transactions": {name: rpc_json(tx, block, block_time) for name, tx in [
            ("funding", funding), ("self_stash", stash), ("handshake", handshake), ("contextual_message", message), ("payment", payment)]},
        "plaintexts": {"handshake": handshake_text, "contextual_message": "hi bob", "payment": payment_text},
        "alias": "a1b2c3d4e5f6", "reader_private_key": bob.to_string(),
    }, indent=1))


if __name__ == "__main__":
    main()
