# expect: none
"""A loader fetches three batches with asyncio, each under a deadline; the first times out, is
logged with its traceback (``logging.exception``) and skipped, and the epoch ends with the two
others: one INFO line follows the traceback. A handled timeout the run logged on from is no
failure of a run that exited 0 (led as timeout 0.76; issue 29)."""

import asyncio
import logging

logging.basicConfig(level=logging.INFO)


async def fetch(i):
    await asyncio.sleep(1.0 if i == 0 else 0.01)
    return i


async def main():
    got = []
    for i in range(3):
        try:
            got.append(await asyncio.wait_for(fetch(i), timeout=0.1))
        except TimeoutError:
            logging.exception("batch %d timed out, skipping", i)
    logging.info("epoch done: %d of 3 batches", len(got))


asyncio.run(main())
