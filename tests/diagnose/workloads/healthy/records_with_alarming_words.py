# expect: none
"""A data preparation job previews its text column, one record a line: a record may be the word
"Killed" alone, or hold "error". What a run prints from its data, followed by its summary, is no
OOM kill (issue 29)."""

titles = [
    "The Shawshank Redemption",
    "Killed",
    "An error in judgement",
    "Out of Memory: a novel",
    "Segmentation",
]
print("preview of column 'title':")
for title in titles:
    print(title)
print(f"{len(titles)} titles, 0 duplicates")
print("wrote titles.parquet")
