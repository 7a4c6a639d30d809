"""Attention models: a GPT-style causal decoder, a BERT-style encoder with a padding mask, a
ViT-style patch encoder, and the encoder again with bf16 and f16 weights and activations."""

import jax
import jax.numpy as jnp
import numpy as np


def _dense(rng, fan_in, fan_out, dtype):
    return {
        "kernel": (rng.standard_normal((fan_in, fan_out)) * np.sqrt(1.0 / fan_in)).astype(dtype),
        "bias": (rng.standard_normal((fan_out,)) * 0.01).astype(dtype),
    }


def _apply_dense(p, x):
    return x @ p["kernel"] + p["bias"]


def _ln_params(d, dtype):
    return {"scale": np.ones((d,), dtype), "bias": np.zeros((d,), dtype)}


def _ln(p, x, eps=1e-5):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + eps) * p["scale"] + p["bias"]


def _layers(rng, n, d, ff, dtype):
    return [{
        "ln1": _ln_params(d, dtype), "qkv": _dense(rng, d, 3 * d, dtype), "proj": _dense(rng, d, d, dtype),
        "ln2": _ln_params(d, dtype), "ff1": _dense(rng, d, ff, dtype), "ff2": _dense(rng, ff, d, dtype),
    } for _ in range(n)]


def _attention(p, x, heads, mask):
    b, s, d = x.shape
    qkv = _apply_dense(p["qkv"], x).reshape(b, s, 3, heads, d // heads)
    q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) * jnp.asarray(1.0 / np.sqrt(d // heads), x.dtype)
    if mask is not None:
        scores = jnp.where(mask, scores, jnp.asarray(-1e4, x.dtype))
    weights = jax.nn.softmax(scores, axis=-1)
    out = jnp.einsum("bhqk,bkhd->bqhd", weights, v).reshape(b, s, d)
    return _apply_dense(p["proj"], out)


def _block(layer, x, heads, mask):
    x = x + _attention(layer, _ln(layer["ln1"], x), heads, mask)
    return x + _apply_dense(layer["ff2"], jax.nn.gelu(_apply_dense(layer["ff1"], _ln(layer["ln2"], x))))


def build_gpt() -> dict:
    vocab, seq, d, heads, ff = 256, 32, 64, 4, 256
    rng = np.random.default_rng(101)
    params = {
        "wte": (rng.standard_normal((vocab, d)) * 0.1).astype(np.float32),
        "wpe": (rng.standard_normal((seq, d)) * 0.1).astype(np.float32),
        "layers": _layers(rng, 2, d, ff, np.float32), "ln_f": _ln_params(d, np.float32),
    }
    causal = np.tril(np.ones((seq, seq), bool))[None, None]

    def apply(p, tokens):
        x = jnp.take(p["wte"], tokens, axis=0) + p["wpe"]
        for layer in p["layers"]:
            x = _block(layer, x, heads, causal)
        x = _ln(p["ln_f"], x)
        logits = x[:, -1] @ p["wte"].T  # tied embeddings, next-token logits
        return logits, jnp.argmax(logits, axis=-1).astype(jnp.int32)

    return {"apply": apply, "params": params, "inputs": {"tokens": ((seq,), "int32")}, "batch_sizes": [1, 8],
            "output_names": ["logits", "next_token"], "int_input_high": vocab,
            "description": "GPT-style decoder (2 layers, causal attention, tied embeddings): next-token logits"}


def build_bert() -> dict:
    vocab, seq, d, heads, ff, classes = 512, 32, 64, 4, 256, 3
    rng = np.random.default_rng(102)
    params = {
        "embed": (rng.standard_normal((vocab, d)) * 0.1).astype(np.float32),
        "pos": (rng.standard_normal((seq, d)) * 0.1).astype(np.float32),
        "ln_e": _ln_params(d, np.float32), "layers": _layers(rng, 2, d, ff, np.float32),
        "pool": _dense(rng, d, d, np.float32), "head": _dense(rng, d, classes, np.float32),
    }

    def apply(p, tokens):
        # Token id 0 is padding: masked out of attention.
        mask = (tokens != 0)[:, None, None, :]
        x = _ln(p["ln_e"], jnp.take(p["embed"], tokens, axis=0) + p["pos"])
        for layer in p["layers"]:
            x = _block(layer, x, heads, mask)
        pooled = jnp.tanh(_apply_dense(p["pool"], x[:, 0]))
        return _apply_dense(p["head"], pooled)

    return {"apply": apply, "params": params, "inputs": {"tokens": ((seq,), "int32")}, "batch_sizes": [1, 8],
            "output_names": ["logits"], "int_input_high": 24,
            "description": "BERT-style encoder (2 layers, padding mask, tanh pooler) classifying 32-token sequences"}


def build_vit() -> dict:
    image, patch, d, heads, ff, classes = 32, 8, 64, 4, 128, 10
    n = (image // patch) ** 2
    rng = np.random.default_rng(103)
    params = {
        "patch": _dense(rng, patch * patch * 3, d, np.float32),
        "cls": (rng.standard_normal((1, 1, d)) * 0.1).astype(np.float32),
        "pos": (rng.standard_normal((n + 1, d)) * 0.1).astype(np.float32),
        "layers": _layers(rng, 2, d, ff, np.float32), "ln_f": _ln_params(d, np.float32),
        "head": _dense(rng, d, classes, np.float32),
    }

    def apply(p, img):
        b = img.shape[0]
        g = image // patch
        x = img.reshape(b, g, patch, g, patch, 3).transpose(0, 1, 3, 2, 4, 5).reshape(b, n, patch * patch * 3)
        x = _apply_dense(p["patch"], x)
        x = jnp.concatenate([jnp.broadcast_to(p["cls"], (b, 1, d)), x], axis=1) + p["pos"]
        for layer in p["layers"]:
            x = _block(layer, x, heads, None)
        return _apply_dense(p["head"], _ln(p["ln_f"], x)[:, 0])

    return {"apply": apply, "params": params, "inputs": {"image": ((image, image, 3), "float32")},
            "batch_sizes": [1, 8], "output_names": ["logits"],
            "description": "ViT-style encoder (8x8 patches of a 32x32 image, class token, 2 layers)"}


def _low_precision_encoder(dtype, seed, label) -> dict:
    vocab, seq, d, heads, ff, classes = 512, 16, 64, 4, 128, 4
    rng = np.random.default_rng(seed)
    params = {
        "embed": (rng.standard_normal((vocab, d)) * 0.1).astype(dtype),
        "pos": (rng.standard_normal((seq, d)) * 0.1).astype(dtype),
        "layers": _layers(rng, 2, d, ff, dtype), "ln_f": _ln_params(d, dtype), "head": _dense(rng, d, classes, dtype),
    }

    def apply(p, tokens):
        x = jnp.take(p["embed"], tokens, axis=0) + p["pos"]
        for layer in p["layers"]:
            x = _block(layer, x, heads, None)
        return _apply_dense(p["head"], jnp.mean(_ln(p["ln_f"], x), axis=1))

    return {"apply": apply, "params": params, "inputs": {"tokens": ((seq,), "int32")}, "batch_sizes": [1, 8],
            "output_names": ["logits"], "int_input_high": vocab,
            "description": f"Transformer encoder (2 layers, d=64) with {label} weights and activations"}


def build_transformer_bf16() -> dict:
    return _low_precision_encoder(jnp.bfloat16, 104, "bf16")


def build_transformer_f16() -> dict:
    return _low_precision_encoder(np.float16, 105, "f16")
