"""Built-in example models for tools/export_jax_bundle.py. Each builder returns the keyword
arguments of export_bundle (apply, params, inputs, batch_sizes, ...) with seeded random weights."""

from .mlp import build as build_mlp
from .cnn import build as build_cnn
from .transformer import build as build_transformer
from .resnet50 import build as build_resnet50

EXAMPLES = {
    "mlp": build_mlp,
    "cnn": build_cnn,
    "transformer": build_transformer,
    "resnet50": build_resnet50,
}
