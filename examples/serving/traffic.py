"""Production traffic for the fraud API: transactions, then (for most of them) their truth.

    python traffic.py --url http://127.0.0.1:8001 --url http://127.0.0.1:8002 --requests 400

Transactions come from the real world's process (fraud.generate: BR's card-not-present pattern
included, whatever a training snapshot said). Requests go round-robin over the replicas, one
worker per replica (a load balancer in miniature); each prediction's ``X-Request-ID`` is kept,
and ``--label-share`` of them get their label posted back to ``/label``, as chargebacks come
in later. Prints one JSON object: requests, errors, labels, and predictions per version.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
from fraud import generate


def send(url: str, rows: list[dict[str, Any]], seed: int, label_share: float) -> dict[str, Any]:
    """One worker: its transactions to one replica, then the labels of ``label_share`` of them."""
    errors, versions, answered = 0, Counter[str](), []
    with httpx.Client(base_url=url, timeout=30) as http:
        for i, row in enumerate(rows):
            features = {k: v for k, v in row.items() if k != "fraud"}
            features["merchant"] = f"m-{(seed + i) % 97:03d}"  # not allow-listed: recorded as a hash
            response = http.post("/predict", json=features)
            if response.status_code != 200:
                errors += 1
                continue
            versions[str(response.json()["version"])] += 1
            answered.append((response.headers["x-request-id"], row["fraud"]))
        labels = 0
        for n, (request_id, truth) in enumerate(answered):
            if (n * 7919 % 100) < label_share * 100:  # a fixed, spread-out share of the requests
                http.post("/label", json={"request_id": request_id, "label": truth}).raise_for_status()
                labels += 1
    return {"requests": len(rows), "errors": errors, "labels": labels, "versions": versions}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", action="append", required=True, help="a replica's address (repeatable)")
    ap.add_argument("--requests", type=int, default=400)
    ap.add_argument("--seed", type=int, default=100)
    ap.add_argument("--label-share", type=float, default=0.9, help="share of predictions whose truth is posted")
    args = ap.parse_args()
    rows = generate(args.requests, args.seed)
    shares = [rows[i :: len(args.url)] for i in range(len(args.url))]
    try:
        with ThreadPoolExecutor(len(args.url)) as pool:
            results = list(
                pool.map(send, args.url, shares, [args.seed] * len(shares), [args.label_share] * len(shares))
            )
    except httpx.HTTPError as exc:
        sys.exit(f"traffic: {type(exc).__name__}: {exc}")
    versions: Counter[str] = Counter()
    for r in results:
        versions.update(r["versions"])
    total = {k: sum(r[k] for r in results) for k in ("requests", "errors", "labels")}
    print(json.dumps({**total, "versions": dict(sorted(versions.items()))}), flush=True)


if __name__ == "__main__":
    main()
