"""Schemathesis hooks for Herald's OpenAPI document (SCHEMATHESIS_HOOKS=schemathesis_hooks).

The document marks values no pattern can state with formats of its own; these give schemathesis
real ones, so requests the document calls valid are valid:
- `kaspa-address`: a bech32-style checksum. Addresses made by the official Kaspa SDK from random keys.
- `p256dh`, `webpush-auth`: a point on P-256 and 16 bytes, base64url. Made with `cryptography`.
- `webpush-endpoint`: an https URL whose host resolves to addresses Herald may send to. Endpoints
  on the built-in Web Push simulator's host (HERALD_TEST_WEBPUSH_HOST, `127.0.0.1:port`), the one
  inside host Herald sends to without being told; the test machine resolves no other name.
"""
import base64
import os

import kaspa
import schemathesis
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from hypothesis import strategies as st


def _b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


_addresses = []
for _ in range(16):
    key = kaspa.PrivateKey(os.urandom(32).hex())
    for network in ("mainnet", "testnet"):
        _addresses.append(key.to_address(network).to_string())

_points = [
    _b64url(ec.generate_private_key(ec.SECP256R1()).public_key().public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint))
    for _ in range(16)
]
_secrets = [_b64url(os.urandom(16)) for _ in range(16)]
_host = os.environ.get("HERALD_TEST_WEBPUSH_HOST", "push.example.net")

schemathesis.openapi.format("kaspa-address", st.sampled_from(_addresses))
schemathesis.openapi.format("p256dh", st.sampled_from(_points))
schemathesis.openapi.format("webpush-auth", st.sampled_from(_secrets))
schemathesis.openapi.format(
    "webpush-endpoint", st.from_regex(r"\A[A-Za-z0-9_-]{1,64}\Z").map(lambda path: "https://%s/push/%s" % (_host, path)))
