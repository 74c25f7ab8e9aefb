"""Sends one Web Push message with pywebpush (PyPI), the library most Python push servers use.

Usage: pywebpush_send.py ENDPOINT P256DH AUTH VAPID_PEM_PATH CA_PEM_PATH MESSAGE
Prints the push service's HTTP status.
"""
import os
import sys

import requests
from pywebpush import webpush

endpoint, p256dh, auth, pem_path, ca_path, message = sys.argv[1:7]
# requests lets REQUESTS_CA_BUNDLE override a session's own `verify`: point both at the simulator's CA.
os.environ["REQUESTS_CA_BUNDLE"] = ca_path
session = requests.Session()
session.verify = ca_path
response = webpush(
    subscription_info={"endpoint": endpoint, "keys": {"p256dh": p256dh, "auth": auth}},
    data=message,
    vapid_private_key=pem_path,
    vapid_claims={"sub": "mailto:interop@example.com"},
    ttl=60,
    timeout=30,
    requests_session=session,
)
print(response.status_code)
