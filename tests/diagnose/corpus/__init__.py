"""The failure corpus: real messages from public issue threads, split once into a development
set (rules are tuned on it) and a held-out set (only ever scored). See README.md."""
