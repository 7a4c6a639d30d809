"""MLP classifier: 64 features -> 256 -> 256 -> 10 classes; returns probabilities and logits."""

import jax
import numpy as np

from .layers import dense, dense_params


def build() -> dict:
    rng = np.random.default_rng(1)
    params = {
        "fc1": dense_params(rng, 64, 256),
        "fc2": dense_params(rng, 256, 256),
        "fc3": dense_params(rng, 256, 10),
    }

    def apply(p, x):
        h = jax.nn.relu(dense(p["fc1"], x))
        h = jax.nn.relu(dense(p["fc2"], h))
        logits = dense(p["fc3"], h)
        return jax.nn.softmax(logits, axis=-1), logits

    return {
        "apply": apply, "params": params, "inputs": {"features": ((64,), "float32")},
        "batch_sizes": [1, 8], "output_names": ["probabilities", "logits"],
        "description": "MLP classifier: 64 features, two hidden layers of 256, 10 classes",
    }
