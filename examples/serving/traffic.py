"""Production traffic for the fraud API: transactions, then (for most of them) their truth.

    python traffic.py --url http://127.0.0.1:8001 --url http://127.0.0.1:8002 --requests 400

Transactions come from the real world's process (fraud.generate: BR's card-not-present pattern
included, whatever a training snapshot said). Requests go round-robin over the replicas (a load
balancer in miniature), one at a time; each prediction's ``X-Request-ID`` is kept,
and ``--label-share`` of them get their label posted back to ``/label``, as chargebacks come
in later. Prints one JSON object: requests, errors, labels, and predictions per version.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from typing import Any

import httpx
from fraud import generate


def send(urls: list[str], rows: list[dict[str, Any]], seed: int, label_share: float) -> dict[str, Any]:
    """The transactions round-robin over the replicas, one at a time (so a replica's latency is
    its own work, not a neighbour's on the same cores), then the labels of ``label_share`` of them
    to the replica that answered."""
    errors, versions, answered = 0, Counter[str](), []
    clients = [httpx.Client(base_url=url, timeout=30) for url in urls]
    try:
        for i, row in enumerate(rows):
            http = clients[i % len(clients)]
            features = {k: v for k, v in row.items() if k != "fraud"}
            features["merchant"] = f"m-{(seed + i) % 97:03d}"  # not allow-listed: recorded as a hash
            response = http.post("/predict", json=features)
            if response.status_code != 200:
                errors += 1
                continue
            versions[str(response.json()["version"])] += 1
            answered.append((http, response.headers["x-request-id"], row["fraud"]))
        labels = 0
        for n, (http, request_id, truth) in enumerate(answered):
            if (n * 7919 % 100) < label_share * 100:  # a fixed, spread-out share of the requests
                http.post("/label", json={"request_id": request_id, "label": truth}).raise_for_status()
                labels += 1
    finally:
        for http in clients:
            http.close()
    return {"requests": len(rows), "errors": errors, "labels": labels, "versions": dict(sorted(versions.items()))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", action="append", required=True, help="a replica's address (repeatable)")
    ap.add_argument("--requests", type=int, default=400)
    ap.add_argument("--seed", type=int, default=100)
    ap.add_argument("--label-share", type=float, default=0.9, help="share of predictions whose truth is posted")
    args = ap.parse_args()
    rows = generate(args.requests, args.seed)
    try:
        result = send(args.url, rows, args.seed, args.label_share)
    except httpx.HTTPError as exc:
        sys.exit(f"traffic: {type(exc).__name__}: {exc}")
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
