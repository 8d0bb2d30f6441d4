"""A truncated JSON Lines export."""

import json

lines = ['{"id": 1, "text": "ok"}', '{"id": 2, "text": "fine"}', '{"id": 3, "text": "cut here']
records = []
for i, line in enumerate(lines):
    records.append(json.loads(line))
    print("parsed record", i)
