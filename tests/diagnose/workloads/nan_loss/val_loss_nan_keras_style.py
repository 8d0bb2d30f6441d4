# expect: nan_loss
"""Keras-style progress lines: the validation loss goes NaN first, then everything; exit 0."""

for epoch in range(1, 9):
    if epoch < 5:
        print(f"Epoch {epoch}/8 - 2s - loss: {1 / epoch:.4f} - val_loss: {1.2 / epoch:.4f}")
    else:
        print(f"Epoch {epoch}/8 - 2s - loss: nan - val_loss: nan")
