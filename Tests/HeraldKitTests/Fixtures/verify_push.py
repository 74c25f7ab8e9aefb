#!/usr/bin/env python3
"""An independent verifier of Herald's signed and sealed pushes, written from docs/signed-pushes.md
alone, with `cryptography` (Ed25519, P-256) and Mozilla's `http_ece` (RFC 8291). Nobody's Swift.

Reads one JSON object on standard input:
    {"public_key": b64url,          the app's pinned Ed25519 key (32 bytes)
     "form": "apns" | "fcm" | "payload",
     "push": ...,                   the APNs payload (text), the FCM data map, or any payload's text
     "private_key": b64url, "auth": b64url,   the device's sealed-push keys, when it has some
     "now": seconds, "window": seconds}
Prints {"document": b64url} and exits 0, or prints {"error": reason} and exits 1.
"""
import base64
import json
import re
import sys

import http_ece
from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

SEALED = "herald_sealed"
ENVELOPE = re.compile(rb'\{"herald":1,"iat":(0|[1-9][0-9]{0,17}),"sig":"([A-Za-z0-9_-]+)","doc":(.+)\}\Z', re.S)
ATTACHED = re.compile(rb'(.*)"herald_signature":"(0|[1-9][0-9]{0,17})\.([A-Za-z0-9_-]+)"\}\Z', re.S)


class Rejected(Exception):
    pass


def b64d(text):
    if isinstance(text, str):
        text = text.encode()
    if not re.fullmatch(rb"[A-Za-z0-9_-]*", text):
        raise Rejected("malformed")
    return base64.urlsafe_b64decode(text + b"=" * (-len(text) % 4))


def b64e(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def verified(document, iat, signature, public_key, now, window):
    try:
        Ed25519PublicKey.from_public_bytes(public_key).verify(signature, b"herald-push-v1\n" + str(iat).encode() + b"\n" + document)
    except (InvalidSignature, ValueError):
        raise Rejected("badSignature")
    if iat > now + 300:
        raise Rejected("fromTheFuture")
    if now - iat > window:
        raise Rejected("stale")
    return document


def open_sealed(text, request):
    if "private_key" not in request:
        raise Rejected("noKeys")
    scalar, auth = b64d(request["private_key"]), b64d(request["auth"])
    key = ec.derive_private_key(int.from_bytes(scalar, "big"), ec.SECP256R1())
    body = b64d(text)
    # Herald writes one record size, 4096: RFC 8188 leaves it unauthenticated.
    if body[16:20] != (4096).to_bytes(4, "big"):
        raise Rejected("malformed")
    try:
        plaintext = http_ece.decrypt(body, private_key=key, auth_secret=auth, version="aes128gcm")
    except (InvalidTag, http_ece.ECEException):
        raise Rejected("notForThisDevice")
    except Exception:
        raise Rejected("malformed")
    match = ENVELOPE.match(plaintext)
    if not match:
        raise Rejected("malformed")
    return int(match.group(1)), b64d(match.group(2)), match.group(3)


def document(request):
    public_key, now, window = b64d(request["public_key"]), int(request["now"]), int(request["window"])
    form, push = request["form"], request["push"]
    if form == "fcm":
        if SEALED not in push:
            raise Rejected("notSealed")
        iat, signature, doc = open_sealed(push[SEALED], request)
        return verified(doc, iat, signature, public_key, now, window)
    raw = push.encode()
    try:
        parsed = json.loads(raw)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and isinstance(parsed.get(SEALED), str):
        iat, signature, doc = open_sealed(parsed[SEALED], request)
        return verified(doc, iat, signature, public_key, now, window)
    match = ATTACHED.match(raw)
    if not match:
        raise Rejected("unsigned")
    head = match.group(1)
    doc = (head[:-1] if head.endswith(b",") else head) + b"}"
    return verified(doc, int(match.group(2)), b64d(match.group(3)), public_key, now, window)


def main():
    request = json.load(sys.stdin)
    try:
        print(json.dumps({"document": b64e(document(request))}))
    except Rejected as rejection:
        print(json.dumps({"error": str(rejection)}))
        sys.exit(1)


if __name__ == "__main__":
    main()
