"""Keras 3 on the torch backend: a small dense classifier fitted with FlightlogKerasCallback and a validation split."""

import os

os.environ.setdefault("KERAS_BACKEND", "torch")

import keras  # noqa: E402
import numpy as np  # noqa: E402

from flightlog.integrations.keras import FlightlogKerasCallback  # noqa: E402

keras.utils.set_random_seed(0)
rng = np.random.default_rng(0)
x = rng.normal(size=(1024, 8)).astype("float32")
y = (x[:, 0] + 0.5 * x[:, 1] - 0.3 * x[:, 2] > 0).astype("float32")
model = keras.Sequential(
    [keras.Input(shape=(8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1, activation="sigmoid")]
)
model.compile(optimizer=keras.optimizers.Adam(learning_rate=0.01), loss="binary_crossentropy", metrics=["accuracy"])
callback = FlightlogKerasCallback(
    project=os.environ.get("FLIGHTLOG_PROJECT", "healthy"), name=os.environ.get("WORKLOAD_NAME")
)
model.fit(x, y, epochs=12, batch_size=64, validation_split=0.2, callbacks=[callback], verbose=0)
