"""Small transformer encoder: token ids (16 per sequence, vocabulary 512) -> embeddings + learned
positions -> 2 pre-norm layers (4-head self-attention, GELU MLP) -> layer norm -> mean pool ->
4-class logits."""

import jax
import jax.numpy as jnp
import numpy as np

from .layers import dense, dense_params, layernorm, layernorm_params

VOCAB, SEQ, D, HEADS, FF, LAYERS, CLASSES = 512, 16, 64, 4, 128, 2, 4


def build() -> dict:
    rng = np.random.default_rng(3)
    layers = []
    for _ in range(LAYERS):
        layers.append({
            "ln1": layernorm_params(D), "qkv": dense_params(rng, D, 3 * D), "proj": dense_params(rng, D, D),
            "ln2": layernorm_params(D), "ff1": dense_params(rng, D, FF), "ff2": dense_params(rng, FF, D),
        })
    params = {
        "embed": (rng.standard_normal((VOCAB, D)) * 0.1).astype(np.float32),
        "pos": (rng.standard_normal((SEQ, D)) * 0.1).astype(np.float32),
        "layers": layers, "ln_f": layernorm_params(D), "head": dense_params(rng, D, CLASSES),
    }

    def attention(p, x):
        b, s, _ = x.shape
        qkv = dense(p["qkv"], x).reshape(b, s, 3, HEADS, D // HEADS)
        q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
        scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(D // HEADS).astype(np.float32)
        weights = jax.nn.softmax(scores, axis=-1)
        out = jnp.einsum("bhqk,bkhd->bqhd", weights, v).reshape(b, s, D)
        return dense(p["proj"], out)

    def apply(p, tokens):
        x = jnp.take(p["embed"], tokens, axis=0) + p["pos"]
        for layer in p["layers"]:
            x = x + attention(layer, layernorm(layer["ln1"], x))
            x = x + dense(layer["ff2"], jax.nn.gelu(dense(layer["ff1"], layernorm(layer["ln2"], x))))
        x = layernorm(p["ln_f"], x)
        return dense(p["head"], jnp.mean(x, axis=1))

    return {
        "apply": apply, "params": params, "inputs": {"tokens": ((SEQ,), "int32")},
        "batch_sizes": [1, 4], "output_names": ["logits"], "int_input_high": VOCAB,
        "description": "Transformer encoder (2 layers, 4 heads, d=64) classifying 16-token sequences",
    }
