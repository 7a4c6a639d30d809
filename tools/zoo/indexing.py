"""Sorting, indexing and dynamic-offset models: a ranker (score, top_k, full argsort, beam search
with pruning), an embedding recommender (gathers, segment sums, scatter-add, top_k over the
catalogue), and a loop of dynamic_slice reads and dynamic_update_slice writes."""

import jax
import jax.numpy as jnp
import numpy as np


def build_ranker() -> dict:
    candidates, features, hidden, k, beam, vocab, steps = 256, 16, 32, 16, 8, 64, 4
    rng = np.random.default_rng(401)
    params = {
        "w1": (rng.standard_normal((features, hidden)) * 0.25).astype(np.float32),
        "w2": (rng.standard_normal((hidden, 1)) * 0.25).astype(np.float32),
        "trans": rng.standard_normal((vocab, vocab)).astype(np.float32),
    }

    def apply(p, feats):
        b = feats.shape[0]
        scores = (jax.nn.relu(feats @ p["w1"]) @ p["w2"])[..., 0]       # [b, candidates]
        top_v, top_i = jax.lax.top_k(scores, k)
        order = jnp.argsort(-scores, axis=-1).astype(jnp.int32)          # full ranking (stable sort)
        # Beam search over a transition table, starting from the best candidates (mod vocab);
        # each step expands every beam by every token and prunes back to the best `beam`.
        tokens = top_i[:, :beam] % vocab
        beam_scores = top_v[:, :beam]
        for _ in range(steps):
            expanded = beam_scores[:, :, None] + p["trans"][tokens]      # [b, beam, vocab]
            beam_scores, flat = jax.lax.top_k(expanded.reshape(b, beam * vocab), beam)
            tokens = (flat % vocab).astype(jnp.int32)
        return top_v, top_i, order, beam_scores, tokens

    return {"apply": apply, "params": params, "inputs": {"candidates": ((candidates, features), "float32")},
            "batch_sizes": [1, 16], "output_names": ["top_scores", "top_ids", "ranking", "beam_scores", "beam_tokens"],
            "description": "Ranker: MLP scores 256 candidates, top_k 16, full argsort, 4-step beam search (beam 8) with pruning"}


def build_recommender() -> dict:
    items, users, d, history, buckets, k = 1000, 1000, 32, 20, 64, 10
    rng = np.random.default_rng(402)
    params = {
        "items": (rng.standard_normal((items, d)) * 0.1).astype(np.float32),
        "users": (rng.standard_normal((users, d)) * 0.1).astype(np.float32),
        "w1": (rng.standard_normal((2 * d + buckets, 64)) * 0.1).astype(np.float32),
        "w2": (rng.standard_normal((64, d)) * 0.1).astype(np.float32),
    }

    def apply(p, user, hist):
        b = hist.shape[0]
        u = jnp.take(p["users"], user[:, 0], axis=0)                                  # gather [b, d]
        rows = jnp.take(p["items"], hist.reshape(-1), axis=0)                          # [b*history, d]
        segments = jnp.repeat(jnp.arange(b, dtype=jnp.int32), history)
        bag = jax.ops.segment_sum(rows, segments, num_segments=b) / history             # segment sums
        hashed = jnp.zeros((b, buckets), jnp.float32).at[
            jnp.arange(b)[:, None], hist % buckets].add(1.0)                          # scatter-add
        popularity = jnp.zeros((items,), jnp.float32).at[hist.reshape(-1)].add(1.0)   # scatter-add
        x = jnp.concatenate([u, bag, hashed], axis=-1)
        query = jnp.tanh(x @ p["w1"]) @ p["w2"]
        scores = query @ p["items"].T - 0.01 * popularity                             # [b, items]
        top_v, top_i = jax.lax.top_k(scores, k)
        return top_v, top_i

    return {"apply": apply, "params": params,
            "inputs": {"user": ((1,), "int32"), "history": ((history,), "int32")},
            "batch_sizes": [1, 32], "output_names": ["scores", "items"], "int_input_high": items,
            "description": "Embedding recommender: user and history gathers, segment-sum bag, scatter-add counts, top_k items"}


def build_dynamic_loop() -> dict:
    length, features, hidden, window = 64, 16, 32, 4
    steps = length - window + 1
    rng = np.random.default_rng(403)
    params = {
        "w": (rng.standard_normal((features, hidden)) * 0.3).astype(np.float32),
        "u": (rng.standard_normal((hidden, hidden)) * 0.2).astype(np.float32),
    }

    def apply(p, x):
        b = x.shape[0]

        def body(i, carry):
            out, state = carry
            win = jax.lax.dynamic_slice(x, (0, i, 0), (b, window, features))
            h = jnp.tanh(jnp.mean(win, axis=1) @ p["w"] + state @ p["u"])
            return jax.lax.dynamic_update_slice(out, h[:, None, :], (0, i, 0)), h

        init = (jnp.zeros((b, steps, hidden), jnp.float32), jnp.zeros((b, hidden), jnp.float32))
        out, state = jax.lax.fori_loop(0, steps, body, init)
        return out, state

    return {"apply": apply, "params": params, "inputs": {"signal": ((length, features), "float32")},
            "batch_sizes": [1, 16], "output_names": ["states", "last"],
            "description": "fori_loop over a sliding window: dynamic_slice reads, a recurrent update, dynamic_update_slice writes"}
