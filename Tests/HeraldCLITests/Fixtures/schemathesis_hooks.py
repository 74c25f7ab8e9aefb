"""Schemathesis hooks for Herald's OpenAPI document (SCHEMATHESIS_HOOKS=schemathesis_hooks).

The document marks Kaspa addresses with `format: kaspa-address`: a bech32-style checksum that no
pattern can express. This gives schemathesis real addresses for it, made by the official Kaspa
SDK (`pip install kaspa`) from random keys, so requests the document calls valid are valid.
"""
import os

import kaspa
import schemathesis
from hypothesis import strategies as st

_addresses = []
for _ in range(16):
    key = kaspa.PrivateKey(os.urandom(32).hex())
    for network in ("mainnet", "testnet"):
        _addresses.append(key.to_address(network).to_string())

schemathesis.openapi.format("kaspa-address", st.sampled_from(_addresses))
