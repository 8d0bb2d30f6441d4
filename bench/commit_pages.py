"""What one short run's commit writes: the WAL frames of W2's run (20 params, 5 final metrics),
by the table or index each page belongs to.

A store's commit writes every page it changed to the write-ahead log, and the next checkpoint
copies each back: the pages a run touches are most of what its `finish()` costs the store
(issue #32). After --warm runs, each of --runs runs is made alone in the WAL (a second
connection truncates it first, `wal_checkpoint(TRUNCATE)`), then the frames it wrote are read
back and their page numbers mapped to their tables with SQLite's `dbstat`. Prints one JSON
object: the mean frames a commit, and per table or index. Run it with PYTHONPATH pointing at
another checkout's src/ to compare two versions.
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import struct
from collections import Counter

from _common import emit, fresh_home, machine

_WAL_HEADER = 32
_FRAME_HEADER = 24


def one_run(rng: random.Random, i: int) -> None:
    import flightlog

    params = {f"p{j}": rng.random() for j in range(19)}
    params["lr"] = rng.choice([0.001, 0.003, 0.01, 0.03, 0.1])
    run = flightlog.init(project="w2", name=f"run-{i}", params=params, quiet=True)
    run.log({name: rng.random() for name in ("acc", "loss", "f1", "auc", "val_loss")})
    run.finish()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--warm", type=int, default=300, help="runs made first (the store's trees grown)")
    parser.add_argument("--runs", type=int, default=50, help="runs whose commits are read back")
    args = parser.parse_args()
    home = fresh_home("commit-pages")
    rng = random.Random(7)
    for i in range(args.warm):
        one_run(rng, i)
    path = home / "flightlog.db"
    side = sqlite3.connect(path)
    page_size = side.execute("PRAGMA page_size").fetchone()[0]
    pages: list[int] = []
    for i in range(args.runs):
        side.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        one_run(rng, args.warm + i)
        with open(f"{path}-wal", "rb") as wal:
            data = wal.read()[_WAL_HEADER:]
        step = _FRAME_HEADER + page_size
        pages += [struct.unpack(">I", data[at : at + 4])[0] for at in range(0, len(data) - step + 1, step)]
    owner = dict(side.execute("SELECT pageno, name FROM dbstat"))
    side.close()
    by_table = Counter(owner.get(page, "?") for page in pages)
    emit(
        {
            "workload": "one W2 run's commit (20 params, 5 final metrics): WAL frames by table or index",
            "machine": machine(),
            "page_size": page_size,
            "runs": args.runs,
            "frames_per_commit": round(len(pages) / args.runs, 2),
            "by_table": {name: round(n / args.runs, 2) for name, n in by_table.most_common()},
            "load_average": [round(x, 2) for x in os.getloadavg()],
        }
    )


if __name__ == "__main__":
    main()
