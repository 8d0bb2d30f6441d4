"""The upstream table renamed 'price' to 'price_usd'."""

import pandas as pd

df = pd.DataFrame({"item": ["a", "b", "c"], "price_usd": [1.0, 2.5, 3.0]})
print("rows:", len(df))
print("mean price:", df["price"].mean())
