"""Small CNN on 32x32 RGB images (NHWC): conv + batch norm + relu, max pool, one residual block,
strided conv, global average pool, dense to 10 classes."""

import jax
import jax.numpy as jnp
import numpy as np

from .layers import batchnorm, batchnorm_params, conv, conv_params, dense, dense_params, max_pool


def build() -> dict:
    rng = np.random.default_rng(2)
    params = {
        "stem": {"conv": conv_params(rng, 3, 3, 3, 16), "bn": batchnorm_params(rng, 16)},
        "res": {
            "conv1": conv_params(rng, 3, 3, 16, 16), "bn1": batchnorm_params(rng, 16),
            "conv2": conv_params(rng, 3, 3, 16, 16), "bn2": batchnorm_params(rng, 16),
        },
        "down": {"conv": conv_params(rng, 3, 3, 16, 32), "bn": batchnorm_params(rng, 32)},
        "head": dense_params(rng, 32, 10),
    }

    def apply(p, image):
        x = jax.nn.relu(batchnorm(p["stem"]["bn"], conv(p["stem"]["conv"], image)))
        x = max_pool(x, 2, 2)
        r = p["res"]
        y = jax.nn.relu(batchnorm(r["bn1"], conv(r["conv1"], x)))
        y = batchnorm(r["bn2"], conv(r["conv2"], y))
        x = jax.nn.relu(x + y)
        x = jax.nn.relu(batchnorm(p["down"]["bn"], conv(p["down"]["conv"], x, stride=2)))
        x = jnp.mean(x, axis=(1, 2))
        return dense(p["head"], x)

    return {
        "apply": apply, "params": params, "inputs": {"image": ((32, 32, 3), "float32")},
        "batch_sizes": [1, 4], "output_names": ["logits"],
        "description": "Small CNN (conv, batch norm, max pool, residual block) on 32x32 RGB images",
    }
