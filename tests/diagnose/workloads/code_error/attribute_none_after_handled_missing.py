"""Noise: a handled missing optional file (logged with its traceback); then a real bug."""

import logging

logging.basicConfig(level=logging.INFO)
log = logging.getLogger("train")


def load_optional_vocab():
    try:
        with open("extra_vocab.txt") as f:
            return f.read().split()
    except FileNotFoundError:
        log.exception("no extra vocabulary, using the default")
        return None


vocab = load_optional_vocab()
log.info("building model")
size = len(vocab) + vocab.count("<pad>")
