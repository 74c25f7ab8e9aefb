#!/usr/bin/env python3
"""The official Kaspa Python SDK (PyPI `kaspa`) as a client of Herald's node simulator:
connects with JSON encoding, subscribes to BlockAdded and VirtualChainChanged, prints
"subscribed", waits for both notifications (60 s at most: a loaded CI machine is slow; 150 s for the whole run), calls getBlock,
getUtxoReturnAddress, getBlockDagInfo, getVirtualChainFromBlock and getVirtualChainFromBlockV2, and prints one JSON
line of what it decoded. Each call after the notifications is bounded and made again on a new
connection when its connection was lost; progress goes to standard error.

    python3 sdk_client.py ws://127.0.0.1:PORT TXID
"""
import asyncio
import json
import os
import sys

import kaspa
from kaspa import NetworkId, RpcClient


def note(text: str) -> None:
    """Progress on standard error: a run that fails says which call it was in."""
    print(text, file=sys.stderr, flush=True)


async def call(client: RpcClient, name: str, make):
    """One RPC call, bounded at 20 s; a call whose connection was lost (seen on a loaded CI
    machine: the call never returned) is made again on a new connection, twice at most. The
    notifications were collected before these calls, so a new connection loses nothing."""
    for attempt in range(3):
        try:
            result = await asyncio.wait_for(make(), timeout=20)
            note(f"{name}: answered")
            return result
        except Exception as error:
            note(f"{name}: attempt {attempt + 1} failed: {error!r}")
            if attempt == 2:
                raise
            try:
                await asyncio.wait_for(client.disconnect(), timeout=5)
            except Exception as closing:
                note(f"{name}: disconnect: {closing!r}")
            await asyncio.wait_for(client.connect(timeout_duration=10000, strategy="fallback"), timeout=15)


async def main(url: str, txid: str) -> None:
    events = []
    client = RpcClient(url=url, encoding="json", network_id=NetworkId("mainnet"))
    client.add_event_listener("all", lambda event, *a, **k: events.append(event))
    # On a loaded machine the SDK's first connection sometimes closes before the first call:
    # connect again (three tries) rather than fail on the SDK's own timing.
    for attempt in range(3):
        await client.connect(timeout_duration=30000, strategy="fallback")
        try:
            await client.subscribe_block_added()
            break
        except Exception as error:
            if "closed connection" not in str(error) or attempt == 2:
                raise
            await client.disconnect()
            await asyncio.sleep(0.5)
    await client.subscribe_virtual_chain_changed(True)
    info = await client.get_server_info()
    note("subscribed")
    print("subscribed", flush=True)
    deadline = asyncio.get_running_loop().time() + 60
    while asyncio.get_running_loop().time() < deadline:
        if {"BlockAdded", "VirtualChainChanged"} <= {e["type"] for e in events}:
            break
        await asyncio.sleep(0.05)
    note(f"notifications: {sorted({e['type'] for e in events})}")
    blocks = [e["data"]["block"] for e in events if e["type"] == "BlockAdded"]
    chain = [e["data"] for e in events if e["type"] == "VirtualChainChanged"]
    block_hash = blocks[0]["header"]["hash"] if blocks else None
    fetched = await call(client, "getBlock", lambda: client.get_block({"hash": block_hash, "includeTransactions": True})) if block_hash else None
    returned = await call(client, "getUtxoReturnAddress", lambda: client.get_utxo_return_address({"txid": txid, "acceptingBlockDaaScore": 1}))
    dag = await call(client, "getBlockDagInfo", lambda: client.get_block_dag_info())
    parent = fetched["block"]["verboseData"]["selectedParentHash"] if fetched else None
    virtual_chain = await call(
        client, "getVirtualChainFromBlock",
        lambda: client.get_virtual_chain_from_block({"startHash": parent, "includeAcceptedTransactionIds": True})) if parent else None
    v2 = await call(client, "getVirtualChainFromBlockV2", lambda: client.get_virtual_chain_from_block_v2({"startHash": parent})) if parent else None
    v2_accepted = [t for b in (v2 or {}).get("chainBlockAcceptedTransactions", []) for t in b.get("acceptedTransactions", [])]
    v2_entry = ((v2_accepted[0]["inputs"][0].get("verboseData") or {}).get("utxoEntry") or {}) if v2_accepted else {}
    try:
        await asyncio.wait_for(client.disconnect(), timeout=5)
    except Exception as error:
        note(f"disconnect: {error!r}")
    print(json.dumps({
        "sdk": getattr(kaspa, "__version__", "?"),
        "server_version": info.get("serverVersion"),
        "event_types": sorted({e["type"] for e in events}),
        "block_added_txids": [t["verboseData"]["transactionId"] for b in blocks for t in b["transactions"]],
        "block_added_payloads": [t["payload"] for b in blocks for t in b["transactions"]],
        "block_added_daa_scores": [b["header"]["daaScore"] for b in blocks],
        "chain_added": [h for c in chain for h in c.get("addedChainBlockHashes", [])],
        "chain_accepted": [t for c in chain for a in c.get("acceptedTransactionIds", []) for t in a.get("acceptedTransactionIds", [])],
        "get_block_txids": [t["verboseData"]["transactionId"] for t in fetched["block"]["transactions"]] if fetched else [],
        "dag_sink": dag.get("sink"),
        "dag_pruning_point": dag.get("pruningPointHash"),
        "dag_network": str(dag.get("network")),
        "virtual_chain_added": virtual_chain.get("addedChainBlockHashes") if virtual_chain else None,
        "v2_added": v2.get("addedChainBlockHashes") if v2 else None,
        "v2_txids": [(t.get("verboseData") or {}).get("transactionId") for t in v2_accepted],
        "v2_spent_amount": v2_entry.get("amount"),
        "v2_spent_script": v2_entry.get("scriptPublicKey"),
        "v2_spent_address": (v2_entry.get("verboseData") or {}).get("scriptPublicKeyAddress"),
        "return_address": returned.get("returnAddress") if isinstance(returned, dict) else str(returned),
    }, default=str), flush=True)


if __name__ == "__main__":
    # Every call has a bound: a connection the SDK lost mid-call has been seen to leave a call
    # waiting for ever, and with it the test that reads this client's output.
    try:
        asyncio.run(asyncio.wait_for(main(sys.argv[1], sys.argv[2]), timeout=150))
    except asyncio.TimeoutError:
        print("the SDK client did not finish within 150 s", file=sys.stderr, flush=True)
        os._exit(1)
    # Everything is printed and flushed: leave without the interpreter's teardown, in which the
    # SDK's native runtime has been seen to abort (exit status 6) on a loaded machine.
    sys.stdout.flush()
    os._exit(0)
