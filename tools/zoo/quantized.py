"""An integer-quantized MLP: activations quantized to int8, int8 x int8 matmuls accumulated in
int32 (preferred_element_type), per-channel dequantization in f32."""

import jax
import jax.numpy as jnp
import numpy as np


def _quantize(x, scale):
    return jnp.clip(jnp.round(x / scale), -127, 127).astype(jnp.int8)


def build_int8_mlp() -> dict:
    features, hidden, classes = 128, 256, 10
    rng = np.random.default_rng(501)
    params = {
        "w1": rng.integers(-127, 128, (features, hidden)).astype(np.int8),
        "s1": (np.abs(rng.standard_normal(hidden)) * 1e-3 + 1e-3).astype(np.float32),
        "b1": (rng.standard_normal(hidden) * 0.1).astype(np.float32),
        "w2": rng.integers(-127, 128, (hidden, classes)).astype(np.int8),
        "s2": (np.abs(rng.standard_normal(classes)) * 1e-3 + 1e-3).astype(np.float32),
    }
    in_scale, hidden_scale = np.float32(0.03), np.float32(0.05)

    def apply(p, x):
        q = _quantize(x, in_scale)
        acc1 = jax.lax.dot(q, p["w1"], preferred_element_type=jnp.int32)
        h = jax.nn.relu(acc1.astype(jnp.float32) * (in_scale * p["s1"]) + p["b1"])
        acc2 = jax.lax.dot(_quantize(h, hidden_scale), p["w2"], preferred_element_type=jnp.int32)
        return acc2.astype(jnp.float32) * (hidden_scale * p["s2"]), acc1

    return {"apply": apply, "params": params, "inputs": {"x": ((features,), "float32")},
            "batch_sizes": [1, 32], "output_names": ["logits", "hidden_acc"],
            "description": "int8 MLP: int8 activations and weights, int32 accumulation, per-channel f32 dequantization"}
