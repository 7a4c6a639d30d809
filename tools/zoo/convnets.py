"""Convolutional models: a small residual convnet in bf16 and in f16, a UNet with transposed
convolutions and skip connections, and a MobileNet-style net of depthwise and grouped convolutions."""

import jax
import jax.numpy as jnp
import numpy as np

DN = ("NHWC", "HWIO", "NHWC")


def _conv_w(rng, kh, kw, cin, cout, dtype=np.float32):
    return (rng.standard_normal((kh, kw, cin, cout)) * np.sqrt(2.0 / (kh * kw * cin))).astype(dtype)


def _conv(x, w, stride=1, groups=1, padding="SAME"):
    return jax.lax.conv_general_dilated(x, w, (stride, stride), padding, dimension_numbers=DN,
                                        feature_group_count=groups)


def _bn(rng, c, dtype=np.float32):
    return {"scale": (1.0 + 0.1 * rng.standard_normal((c,))).astype(dtype),
            "bias": (0.1 * rng.standard_normal((c,))).astype(dtype)}


def _affine(p, x):
    return x * p["scale"] + p["bias"]


def _convnet(dtype, seed, label) -> dict:
    rng = np.random.default_rng(seed)
    params = {
        "stem": _conv_w(rng, 3, 3, 3, 16, dtype), "bn0": _bn(rng, 16, dtype),
        "c1": _conv_w(rng, 3, 3, 16, 16, dtype), "bn1": _bn(rng, 16, dtype),
        "c2": _conv_w(rng, 3, 3, 16, 16, dtype), "bn2": _bn(rng, 16, dtype),
        "down": _conv_w(rng, 3, 3, 16, 32, dtype), "bn3": _bn(rng, 32, dtype),
        "head": (rng.standard_normal((32, 10)) * 0.2).astype(dtype),
    }

    def apply(p, img):
        x = jax.nn.relu(_affine(p["bn0"], _conv(img, p["stem"])))
        x = jax.lax.reduce_window(x, jnp.asarray(-jnp.inf, dtype), jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        y = jax.nn.relu(_affine(p["bn1"], _conv(x, p["c1"])))
        x = jax.nn.relu(x + _affine(p["bn2"], _conv(y, p["c2"])))
        x = jax.nn.relu(_affine(p["bn3"], _conv(x, p["down"], stride=2)))
        return jnp.mean(x, axis=(1, 2)) @ p["head"]

    return {"apply": apply, "params": params, "inputs": {"image": ((32, 32, 3), jnp.dtype(dtype).name)},
            "batch_sizes": [1, 8], "output_names": ["logits"],
            "description": f"Residual convnet (conv, affine norm, max pool) on 32x32 images in {label}"}


def build_convnet_bf16() -> dict:
    return _convnet(jnp.bfloat16, 201, "bf16")


def build_convnet_f16() -> dict:
    return _convnet(np.float16, 202, "f16")


def build_unet() -> dict:
    rng = np.random.default_rng(203)
    params = {
        "e1": _conv_w(rng, 3, 3, 3, 16), "e2": _conv_w(rng, 3, 3, 16, 32), "mid": _conv_w(rng, 3, 3, 32, 32),
        "up2": _conv_w(rng, 2, 2, 32, 32), "d2": _conv_w(rng, 3, 3, 64, 16),
        "up1": _conv_w(rng, 2, 2, 16, 16), "d1": _conv_w(rng, 3, 3, 32, 16), "out": _conv_w(rng, 1, 1, 16, 2),
        "b": {k: (0.01 * rng.standard_normal((c,))).astype(np.float32)
              for k, c in [("e1", 16), ("e2", 32), ("mid", 32), ("d2", 16), ("d1", 16)]},
    }

    def up(x, w):
        return jax.lax.conv_transpose(x, w, (2, 2), "SAME", dimension_numbers=DN)

    def apply(p, img):
        b = p["b"]
        s1 = jax.nn.relu(_conv(img, p["e1"]) + b["e1"])                   # 32x32x16
        s2 = jax.nn.relu(_conv(s1, p["e2"], stride=2) + b["e2"])          # 16x16x32
        m = jax.nn.relu(_conv(s2, p["mid"], stride=2) + b["mid"])         # 8x8x32
        u2 = up(m, p["up2"])                                              # 16x16x32
        x = jax.nn.relu(_conv(jnp.concatenate([u2, s2], -1), p["d2"]) + b["d2"])
        u1 = up(x, p["up1"])                                              # 32x32x16
        x = jax.nn.relu(_conv(jnp.concatenate([u1, s1], -1), p["d1"]) + b["d1"])
        return jax.nn.sigmoid(_conv(x, p["out"]))

    return {"apply": apply, "params": params, "inputs": {"image": ((32, 32, 3), "float32")},
            "batch_sizes": [1, 4], "output_names": ["mask"],
            "description": "UNet (two strided encoder stages, transposed-convolution decoder, skips) 32x32 -> 2-channel mask"}


def build_mobilenet() -> dict:
    rng = np.random.default_rng(204)
    # (channels in, channels out, stride) of each inverted-residual block: expand 1x1 (grouped,
    # 4 groups), depthwise 3x3, project 1x1.
    blocks = [(16, 24, 2), (24, 24, 1), (24, 32, 2), (32, 32, 1)]
    params = {"stem": _conv_w(rng, 3, 3, 3, 16), "blocks": [], "head": (rng.standard_normal((32, 10)) * 0.2).astype(np.float32)}
    for cin, cout, _ in blocks:
        hidden = cin * 4
        params["blocks"].append({
            "expand": _conv_w(rng, 1, 1, cin // 4, hidden), "bn_e": _bn(rng, hidden),
            "dw": _conv_w(rng, 3, 3, 1, hidden), "bn_d": _bn(rng, hidden),
            "project": _conv_w(rng, 1, 1, hidden, cout), "bn_p": _bn(rng, cout),
        })

    def apply(p, img):
        x = jax.nn.relu6(_conv(img, p["stem"], stride=2))
        for (cin, cout, stride), q in zip(blocks, p["blocks"]):
            hidden = cin * 4
            y = jax.nn.relu6(_affine(q["bn_e"], _conv(x, q["expand"], groups=4)))
            y = jax.nn.relu6(_affine(q["bn_d"], _conv(y, q["dw"], stride=stride, groups=hidden)))
            y = _affine(q["bn_p"], _conv(y, q["project"]))
            x = x + y if (stride == 1 and cin == cout) else y
        return jnp.mean(x, axis=(1, 2)) @ p["head"]

    return {"apply": apply, "params": params, "inputs": {"image": ((32, 32, 3), "float32")},
            "batch_sizes": [1, 8], "output_names": ["logits"],
            "description": "MobileNetV2-style net: grouped 1x1 expansions, depthwise 3x3, linear bottlenecks"}
