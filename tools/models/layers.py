"""Plain jax.numpy layers shared by the example models (inference mode, NHWC images)."""

import jax
import jax.numpy as jnp
import numpy as np


def dense_params(rng: np.random.Generator, fan_in: int, fan_out: int) -> dict:
    scale = np.sqrt(2.0 / fan_in)
    return {
        "kernel": (rng.standard_normal((fan_in, fan_out)) * scale).astype(np.float32),
        "bias": (rng.standard_normal((fan_out,)) * 0.01).astype(np.float32),
    }


def dense(p: dict, x):
    return x @ p["kernel"] + p["bias"]


def conv_params(rng: np.random.Generator, kh: int, kw: int, cin: int, cout: int) -> dict:
    scale = np.sqrt(2.0 / (kh * kw * cin))
    return {"kernel": (rng.standard_normal((kh, kw, cin, cout)) * scale).astype(np.float32)}


def conv(p: dict, x, stride: int = 1, padding="SAME"):
    return jax.lax.conv_general_dilated(
        x, p["kernel"], window_strides=(stride, stride), padding=padding,
        dimension_numbers=("NHWC", "HWIO", "NHWC"))


def batchnorm_params(rng: np.random.Generator, c: int) -> dict:
    return {
        "scale": (1.0 + 0.1 * rng.standard_normal((c,))).astype(np.float32),
        "bias": (0.1 * rng.standard_normal((c,))).astype(np.float32),
        "mean": (0.1 * rng.standard_normal((c,))).astype(np.float32),
        "var": (1.0 + 0.1 * np.abs(rng.standard_normal((c,)))).astype(np.float32),
    }


def batchnorm(p: dict, x, eps: float = 1e-5):
    return (x - p["mean"]) * jax.lax.rsqrt(p["var"] + eps) * p["scale"] + p["bias"]


def layernorm_params(d: int) -> dict:
    return {"scale": np.ones((d,), np.float32), "bias": np.zeros((d,), np.float32)}


def layernorm(p: dict, x, eps: float = 1e-5):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + eps) * p["scale"] + p["bias"]


def max_pool(x, window: int, stride: int, padding="VALID"):
    return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, window, window, 1), (1, stride, stride, 1), padding)
