#!/usr/bin/env python3
"""Makes forged_sender.json: Mallory's forgery of a message "from Alice", signed with the official
Kaspa Python SDK. Mallory spends her own coin in a transaction whose only output pays Alice and
whose payload is a contextual message under Alice's alias. On Kaspa the sender is the owner of
the coin input 0 spends: Mallory, never the address an output pays.

    python3 make_forged_fixture.py > forged_sender.json
"""
import json

import kaspa
from kaspa import PaymentOutput

from make_fixtures import kc, key, rpc_json, utxo


def main():
    alice, bob, mallory, funder = key("alice"), key("bob"), key("mallory"), key("funder")
    a, b, m, f = (k.to_address("mainnet") for k in (alice, bob, mallory, funder))
    block, block_time = "cd" * 32, 1_750_000_100_000
    funding = kaspa.sign_transaction(
        kaspa.create_transaction([utxo(f, 2_000_000_000, "22" * 32, 0)], [PaymentOutput(m, 1_000_000_000)], 0, b"", 1),
        [funder], True)
    forged = kaspa.create_transaction(
        [utxo(m, 1_000_000_000, funding.id, 0)], [PaymentOutput(a, 999_990_000)], 0,
        kc.payload_comm("a1b2c3d4e5f6", kc.encrypt(b.to_string(), "send me your seed phrase")), 1)
    forged = kaspa.sign_transaction(forged, [mallory], True)
    print(json.dumps({
        "sdk": "kaspa " + getattr(kaspa, "__version__", "2.1.0"),
        "addresses": {"alice": a.to_string(), "bob": b.to_string(), "mallory": m.to_string()},
        "funding": rpc_json(funding, block, block_time),
        "forged": rpc_json(forged, block, block_time),
        "alias": "a1b2c3d4e5f6",
    }, indent=1))


if __name__ == "__main__":
    main()
