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
import json
import os

import jsonschema
import kaspa
import schemathesis
from schemathesis.core.parameters import ParameterLocation
from schemathesis.generation.modes import GenerationMode
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


# Two rules the document cannot state, each on one field. Only cases schemathesis generates as
# valid for that part of the request are completed; its invalid cases go out as generated.
def _positive(case, location):
    component = case.meta.components.get(location) if case.meta is not None else None
    return component is None or component.mode == GenerationMode.POSITIVE


@schemathesis.hook("map_case").apply_to(path="/v1/push/register")
def web_token_is_its_endpoint(context, case):
    """A web registration that names `device_token` names its subscription's endpoint: equality of
    two fields, which JSON Schema cannot state (a different token is 422 naming `device_token`)."""
    body = case.body
    if _positive(case, ParameterLocation.BODY) and isinstance(body, dict) and body.get("platform") == "web":
        subscription = body.get("subscription")
        if isinstance(subscription, dict) and isinstance(subscription.get("endpoint"), str) and body.get("device_token") is not None:
            body["device_token"] = subscription["endpoint"]
    return case


@schemathesis.hook("map_case").apply_to(path="/v1/push/status")
def status_names_its_token(context, case):
    """The token is in the X-Device-Token header or the device_token query parameter: one of two
    parameters in different places is required, which OpenAPI cannot state (neither is 422)."""
    if not (_positive(case, ParameterLocation.QUERY) and _positive(case, ParameterLocation.HEADER)):
        return case
    query, headers = case.query or {}, case.headers or {}
    if query.get("device_token") is None and headers.get("X-Device-Token") is None:
        query["device_token"] = "0" * 64
        case.query = query
    return case


_body_limit = int(os.environ.get("HERALD_TEST_BODY_LIMIT", "65536"))
_batch_body_limit = int(os.environ.get("HERALD_TEST_BATCH_BODY_LIMIT", str(8 << 20)))


@schemathesis.hook
def filter_case(context, case):
    """A body over Herald's byte limit is answered 413 before any field is read (LimitsTests holds
    that), so it tests no field: not sent. OpenAPI has no keyword for a byte limit. The size is
    json.dumps's with its spaces and \\u escapes, never less than what schemathesis sends.
    A body generated to break the schema that the schema accepts after all (a mutation into an
    allowed `null`) is not sent either: it would be a valid request reported as invalid."""
    if not isinstance(case.body, (dict, list)):
        return True
    limit = _batch_body_limit if case.operation.path == "/v1/events:batch" else _body_limit
    if len(json.dumps(case.body).encode()) > limit:
        return False
    return _positive(case, ParameterLocation.BODY) or not _body_is_valid(case)


def _body_is_valid(case):
    """Whether the operation's own body schema accepts `case.body` (formats unchecked: a body
    whose only fault is a format stays invalid to schemathesis and is dropped; the cost is that case)."""
    document = case.operation.schema.raw_schema
    try:
        content = document["paths"][case.operation.path][case.operation.method.lower()]["requestBody"]["content"]
        schema = next(iter(content.values()))["schema"]
    except (KeyError, StopIteration):
        return False
    root = dict(document)
    root.pop("$schema", None)
    validator = jsonschema.Draft202012Validator({**root, **schema} if "$ref" not in schema else {**root, "$ref": schema["$ref"]})
    return validator.is_valid(case.body)


_max_watch_keys = int(os.environ.get("HERALD_TEST_MAX_WATCH_KEYS", "30"))


@schemathesis.hook("map_case").apply_to(path_regex=r"/push/(register|update)$")
def watch_keys_within_the_limit(context, case):
    """A device's watched keys and its own addresses count together against the watch-key limit
    (HERALD_MAX_WATCH_KEYS): a sum of two lists, which JSON Schema cannot state (each list's
    maxItems is the limit; entries count as given). Over it is 422 naming `watched_addresses`. Own
    addresses give way."""
    body = case.body
    if not (_positive(case, ParameterLocation.BODY) and isinstance(body, dict)):
        return case
    watched, own = body.get("watched_addresses"), body.get("addresses")
    if not isinstance(watched, list) or not isinstance(own, list):
        return case
    while own and len(watched) + len(own) > _max_watch_keys:
        own.pop()
    return case
