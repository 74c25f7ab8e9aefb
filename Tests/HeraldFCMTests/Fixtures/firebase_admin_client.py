#!/usr/bin/env python3
"""Google's own client, the official firebase-admin Python SDK (PyPI `firebase-admin`), sending
through Herald's FCM simulator: it exchanges the service account's grant at the file's token_uri
(the simulator), then sends one message to a live token and one to a dead one. Prints one JSON
line of what the SDK made of each.

    REQUESTS_CA_BUNDLE=ca.pem python3 firebase_admin_client.py SERVICE_ACCOUNT.json https://127.0.0.1:PORT LIVE DEAD
"""
import json
import os
import sys

import firebase_admin
from firebase_admin import credentials, messaging


def main(account_path: str, base_url: str, live: str, dead: str) -> None:
    # The SDK's endpoint, pointed at the simulator (the SDK has no option for it).
    messaging._MessagingService.FCM_URL = base_url + "/v1/projects/{0}/messages:send"
    app = firebase_admin.initialize_app(credentials.Certificate(account_path))
    result = {"sdk": firebase_admin.__version__}
    message = messaging.Message(
        token=live, data={"kasia": '{"kind":"message"}', "title": "New Message"},
        android=messaging.AndroidConfig(priority="high", ttl=3600, collapse_key="c1"))
    result["live"] = messaging.send(message, app=app)
    try:
        messaging.send(messaging.Message(token=dead, data={"a": "b"}), app=app)
        result["dead"] = "accepted"
    except messaging.UnregisteredError as error:
        result["dead"] = "UnregisteredError"
        result["dead_message"] = str(error)
    except Exception as error:  # any other class is a mismatch the test reports
        result["dead"] = type(error).__name__ + ": " + str(error)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:5])
    sys.stdout.flush()
    os._exit(0)
