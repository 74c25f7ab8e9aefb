#!/usr/bin/env python3
"""PyJWT (PyPI) checks a VAPID Authorization header the way a push service does: the ES256
signature with the key in k=, the audience, and exp/sub present. Prints the claims as JSON.

    python3 vapid_check.py 'vapid t=..., k=...' https://push.example.net
"""
import base64
import json
import sys

import jwt
from cryptography.hazmat.primitives.asymmetric import ec


def b64d(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def main(header, audience):
    scheme, _, rest = header.partition(" ")
    assert scheme == "vapid", scheme
    parts = dict(item.strip().split("=", 1) for item in rest.split(","))
    key = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), b64d(parts["k"]))
    claims = jwt.decode(parts["t"], key=key, algorithms=["ES256"], audience=audience, options={"require": ["exp", "sub", "aud"]})
    assert jwt.get_unverified_header(parts["t"])["typ"] == "JWT"
    print(json.dumps(claims, sort_keys=True))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
