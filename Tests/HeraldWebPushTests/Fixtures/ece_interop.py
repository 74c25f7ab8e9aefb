#!/usr/bin/env python3
"""The independent `http_ece` package (PyPI, Mozilla's reference RFC 8188/8291 code) against
Herald's Web Push encryption. All values base64url without padding.

    python3 ece_interop.py decrypt BODY UA_PRIVATE_SCALAR AUTH     -> prints the plaintext
    python3 ece_interop.py encrypt UA_PUBLIC AUTH PLAINTEXT         -> prints the body
"""
import base64
import sys

import http_ece
from cryptography.hazmat.primitives.asymmetric import ec


def b64d(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def b64e(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def main(mode, *args):
    if mode == "decrypt":
        body, scalar, auth = (b64d(a) for a in args)
        key = ec.derive_private_key(int.from_bytes(scalar, "big"), ec.SECP256R1())
        print(b64e(http_ece.decrypt(body, private_key=key, auth_secret=auth, version="aes128gcm")))
    elif mode == "encrypt":
        ua_public, auth, plaintext = (b64d(a) for a in args)
        server_key = ec.generate_private_key(ec.SECP256R1())
        print(b64e(http_ece.encrypt(plaintext, private_key=server_key, dh=ua_public, auth_secret=auth, version="aes128gcm")))
    else:
        raise SystemExit("mode is decrypt or encrypt")


if __name__ == "__main__":
    main(*sys.argv[1:])
