"""A metric divides by the number of positives, which is zero in this split."""


def precision(tp, fp):
    return tp / (tp + fp)


print("evaluating")
print(precision(0, 0))
