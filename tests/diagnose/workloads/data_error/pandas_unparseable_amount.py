"""A new supplier writes amounts with a decimal comma."""

import io
import logging

import pandas as pd

logging.basicConfig(level=logging.INFO)
csv = io.StringIO('order,amount\n1,12.50\n2,7.25\n3,"12,50"\n')
df = pd.read_csv(csv, dtype=str)
logging.getLogger("etl").info("read %d orders", len(df))
df["amount"] = df["amount"].astype(float)
