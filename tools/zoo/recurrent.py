"""A recurrent model written with lax.scan (a while loop in StableHLO): an LSTM layer feeding a
GRU layer over 32 time steps, then a dense head on the last state."""

import jax
import jax.numpy as jnp
import numpy as np

STEPS, FEATURES, HIDDEN, CLASSES = 32, 16, 64, 5


def _w(rng, a, b):
    return (rng.standard_normal((a, b)) * np.sqrt(1.0 / a)).astype(np.float32)


def build_rnn_scan() -> dict:
    rng = np.random.default_rng(301)
    params = {
        "lstm": {"wx": _w(rng, FEATURES, 4 * HIDDEN), "wh": _w(rng, HIDDEN, 4 * HIDDEN), "b": np.zeros(4 * HIDDEN, np.float32)},
        "gru": {"wx": _w(rng, HIDDEN, 3 * HIDDEN), "wh": _w(rng, HIDDEN, 3 * HIDDEN), "b": np.zeros(3 * HIDDEN, np.float32)},
        "head": _w(rng, HIDDEN, CLASSES),
    }

    def lstm_step(p, carry, x):
        h, c = carry
        z = x @ p["wx"] + h @ p["wh"] + p["b"]
        i, f, g, o = jnp.split(z, 4, axis=-1)
        c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
        h = jax.nn.sigmoid(o) * jnp.tanh(c)
        return (h, c), h

    def gru_step(p, h, x):
        zx = x @ p["wx"] + p["b"]
        zh = h @ p["wh"]
        rx, ux, nx = jnp.split(zx, 3, axis=-1)
        rh, uh, nh = jnp.split(zh, 3, axis=-1)
        r = jax.nn.sigmoid(rx + rh)
        u = jax.nn.sigmoid(ux + uh)
        n = jnp.tanh(nx + r * nh)
        h = (1 - u) * n + u * h
        return h, h

    def apply(p, seq):
        b = seq.shape[0]
        xs = jnp.swapaxes(seq, 0, 1)  # time major
        zeros = jnp.zeros((b, HIDDEN), jnp.float32)
        _, hs = jax.lax.scan(lambda c, x: lstm_step(p["lstm"], c, x), (zeros, zeros), xs)
        h, _ = jax.lax.scan(lambda c, x: gru_step(p["gru"], c, x), zeros, hs)
        return h @ p["head"]

    return {"apply": apply, "params": params, "inputs": {"sequence": ((STEPS, FEATURES), "float32")},
            "batch_sizes": [1, 16], "output_names": ["logits"],
            "description": "LSTM then GRU over 32 steps (lax.scan), dense head on the last state"}
