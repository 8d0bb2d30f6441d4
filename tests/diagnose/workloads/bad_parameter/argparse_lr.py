# argv: --lr fast --epochs 3
"""argparse rejects the learning rate: usage error, exit 2."""

import argparse

parser = argparse.ArgumentParser(prog="train.py")
parser.add_argument("--lr", type=float, default=0.1)
parser.add_argument("--epochs", type=int, default=10)
args = parser.parse_args()
print(args)
