"""ResNet-50 (v1.5, inference mode, NHWC 224x224x3 -> 1000 logits) with seeded random weights.
Used for benchmarks only; its bundle (about 100 MB of weights) is never committed."""

import jax
import jax.numpy as jnp
import numpy as np

from .layers import batchnorm, batchnorm_params, conv, conv_params, dense, dense_params, max_pool

STAGES = [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]


def build() -> dict:
    rng = np.random.default_rng(50)
    params = {"stem": {"conv": conv_params(rng, 7, 7, 3, 64), "bn": batchnorm_params(rng, 64)}, "stages": []}
    cin = 64
    for width, blocks, stride in STAGES:
        stage = []
        for i in range(blocks):
            block = {
                "conv1": conv_params(rng, 1, 1, cin, width), "bn1": batchnorm_params(rng, width),
                "conv2": conv_params(rng, 3, 3, width, width), "bn2": batchnorm_params(rng, width),
                "conv3": conv_params(rng, 1, 1, width, width * 4), "bn3": batchnorm_params(rng, width * 4),
            }
            if i == 0:
                block["proj"] = conv_params(rng, 1, 1, cin, width * 4)
                block["proj_bn"] = batchnorm_params(rng, width * 4)
            stage.append(block)
            cin = width * 4
        params["stages"].append(stage)
    params["head"] = dense_params(rng, 2048, 1000)

    def apply(p, image):
        x = jax.nn.relu(batchnorm(p["stem"]["bn"], conv(p["stem"]["conv"], image, stride=2)))
        x = max_pool(x, 3, 2, padding=((0, 0), (1, 1), (1, 1), (0, 0)))
        for (width, blocks, stride), stage in zip(STAGES, p["stages"]):
            for i, b in enumerate(stage):
                s = stride if i == 0 else 1
                y = jax.nn.relu(batchnorm(b["bn1"], conv(b["conv1"], x)))
                y = jax.nn.relu(batchnorm(b["bn2"], conv(b["conv2"], y, stride=s)))
                y = batchnorm(b["bn3"], conv(b["conv3"], y))
                shortcut = batchnorm(b["proj_bn"], conv(b["proj"], x, stride=s)) if "proj" in b else x
                x = jax.nn.relu(y + shortcut)
        x = jnp.mean(x, axis=(1, 2))
        return dense(p["head"], x)

    return {
        "apply": apply, "params": params, "inputs": {"image": ((224, 224, 3), "float32")},
        "batch_sizes": [1, 32], "output_names": ["logits"],
        "description": "ResNet-50 v1.5 (random weights) for benchmarks",
    }
