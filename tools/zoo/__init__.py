"""The model zoo: small real models of the kinds users serve, each exported by
tools/build_zoo.py at batch 1 and a larger batch with XLA CPU's outputs as the reference. Each
builder returns export_bundle's keyword arguments (apply, params, inputs, batch_sizes, ...) with
seeded random weights; weights stay small so the committed bundles stay light."""

from .attention import build_bert, build_gpt, build_transformer_bf16, build_transformer_f16, build_vit
from .convnets import build_convnet_bf16, build_convnet_f16, build_mobilenet, build_unet
from .indexing import build_dynamic_loop, build_ranker, build_recommender
from .quantized import build_int8_mlp
from .recurrent import build_rnn_scan

ZOO = {
    "gpt_decoder": build_gpt,
    "bert_encoder": build_bert,
    "vit_encoder": build_vit,
    "transformer_bf16": build_transformer_bf16,
    "transformer_f16": build_transformer_f16,
    "rnn_scan": build_rnn_scan,
    "ranker_topk": build_ranker,
    "recommender": build_recommender,
    "convnet_bf16": build_convnet_bf16,
    "convnet_f16": build_convnet_f16,
    "unet": build_unet,
    "mobilenet": build_mobilenet,
    "int8_mlp": build_int8_mlp,
    "dynamic_loop": build_dynamic_loop,
}
