"""The bundled MiniLM's BERT encoder written as an ONNX graph straight from its safetensors
weights, with numpy and ``onnx.helper``: what ``torch.onnx.export`` traced before, without
torch (a plain install then needs neither torch nor transformers).

The graph is BERT as ``transformers`` runs it in eval mode: word + position + token-type
embeddings and a LayerNorm, then per layer self-attention (scaled dot product, padding
masked with float32's lowest value), a residual LayerNorm, a GELU feed-forward (the erf
form) and another residual LayerNorm. Its output is ``last_hidden_state``; pooling and
normalising stay in ``OnnxEncoder``. ``graphmem._onnx.export`` checks every build against
the reference vectors before it is used.
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["build_encoder", "read_safetensors"]

_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Every tensor of a ``.safetensors`` file: an 8-byte little-endian header length, a
    JSON header (name -> dtype, shape, byte offsets), then the raw bytes."""
    data = path.read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    body = memoryview(data)[8 + length:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        array = np.frombuffer(body[start:end], dtype=_DTYPES[info["dtype"]])
        out[name] = array.reshape(info["shape"]).astype(np.float32 if info["dtype"] == "F16"
                                                        else array.dtype)
    return out


class _Graph:
    """Nodes and initializers under construction, each output named once."""

    def __init__(self) -> None:
        from onnx import helper, numpy_helper

        self.helper, self.numpy_helper = helper, numpy_helper
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self._count = 0

    def const(self, name: str, value: np.ndarray) -> str:
        self.initializers.append(self.numpy_helper.from_array(np.ascontiguousarray(value),
                                                              name))
        return name

    def op(self, op_type: str, *inputs: str, **attributes: Any) -> str:
        self._count += 1
        output = f"{op_type.lower()}_{self._count}"
        self.nodes.append(self.helper.make_node(op_type, list(inputs), [output],
                                                **attributes))
        return output

    def linear(self, x: str, weights: dict[str, np.ndarray], prefix: str) -> str:
        """``x @ W.T + b``: MatMul on the transposed weight, so int8 quantization sees a
        constant right-hand side (per output channel)."""
        w = self.const(f"{prefix}.weight_t", weights[f"{prefix}.weight"].T)
        b = self.const(f"{prefix}.bias", weights[f"{prefix}.bias"])
        return self.op("Add", self.op("MatMul", x, w), b)

    def layer_norm(self, x: str, weights: dict[str, np.ndarray], prefix: str,
                   eps: float) -> str:
        return self.op("LayerNormalization", x,
                       self.const(f"{prefix}.weight", weights[f"{prefix}.weight"]),
                       self.const(f"{prefix}.bias", weights[f"{prefix}.bias"]),
                       axis=-1, epsilon=eps)


def build_encoder(model_dir: Path, target: Path) -> Path:
    """Write the encoder of the BERT model in ``model_dir`` (``config.json``,
    ``model.safetensors``) to ``target`` as an ONNX graph (opset 17) whose inputs are
    ``input_ids``, ``attention_mask`` and ``token_type_ids`` (batch x tokens, int64), its
    weights in ``<target>.data`` beside it."""
    import onnx
    from onnx import TensorProto, helper

    config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    weights = {name.removeprefix("bert."): value
               for name, value in read_safetensors(model_dir / "model.safetensors").items()}
    heads, hidden = int(config["num_attention_heads"]), int(config["hidden_size"])
    head_dim, eps = hidden // heads, float(config.get("layer_norm_eps", 1e-12))
    g = _Graph()
    i64 = lambda name, *values: g.const(name, np.array(values, dtype=np.int64))  # noqa: E731
    f32 = lambda name, value: g.const(name, np.array(value, dtype=np.float32))  # noqa: E731

    # embeddings: positions 0 .. tokens-1 gathered from the table, as transformers does
    # (a Gather, so that int8 quantization treats the table as it treats the others)
    tokens = g.op("Slice", g.op("Shape", "input_ids"), i64("from_1", 1), i64("to_2", 2))
    table = weights["embeddings.position_embeddings.weight"]
    ids = g.op("Slice", g.const("position_ids", np.arange(len(table), dtype=np.int64)[None]),
               i64("from_0", 0), tokens, i64("axis_1", 1))
    positions = g.op("Gather", g.const("position", table), ids)
    words = g.op("Gather", g.const("word", weights["embeddings.word_embeddings.weight"]),
                 "input_ids")
    types = g.op("Gather", g.const("token_type", weights[
        "embeddings.token_type_embeddings.weight"]), "token_type_ids")
    summed = g.op("Add", g.op("Add", words, types), positions)
    x = g.layer_norm(summed, weights, "embeddings.LayerNorm", eps)

    # padding: 0 where attended, float32's lowest where masked, shaped batch x 1 x 1 x tokens
    attended = g.op("Cast", "attention_mask", to=TensorProto.FLOAT)
    masked = g.op("Mul", g.op("Sub", f32("f_one", 1.0), attended),
                  f32("lowest", np.finfo(np.float32).min))
    bias = g.op("Unsqueeze", masked, i64("axes_1_2", 1, 2))
    split = i64("split_heads", 0, 0, heads, head_dim)
    merge = i64("merge_heads", 0, 0, hidden)
    scale = f32("scale", 1.0 / math.sqrt(head_dim))

    for n in range(int(config["num_hidden_layers"])):
        p = f"encoder.layer.{n}"

        def heads_of(name: str, perm: list[int], p: str = p, x: str = x) -> str:
            projected = g.linear(x, weights, f"{p}.attention.self.{name}")
            return g.op("Transpose", g.op("Reshape", projected, split), perm=perm)

        query = heads_of("query", [0, 2, 1, 3])
        key = heads_of("key", [0, 2, 3, 1])
        value = heads_of("value", [0, 2, 1, 3])
        scores = g.op("Add", g.op("Mul", g.op("MatMul", query, key), scale), bias)
        context = g.op("MatMul", g.op("Softmax", scores, axis=-1), value)
        context = g.op("Reshape", g.op("Transpose", context, perm=[0, 2, 1, 3]), merge)
        attention = g.linear(context, weights, f"{p}.attention.output.dense")
        x = g.layer_norm(g.op("Add", attention, x), weights, f"{p}.attention.output.LayerNorm",
                         eps)
        inner = g.linear(x, weights, f"{p}.intermediate.dense")
        gelu = g.op("Mul", g.op("Mul", inner, f32(f"half_{n}", 0.5)),
                    g.op("Add", f32(f"one_{n}", 1.0),
                         g.op("Erf", g.op("Mul", inner, f32(f"rsqrt2_{n}",
                                                            1.0 / math.sqrt(2.0))))))
        out = g.linear(gelu, weights, f"{p}.output.dense")
        x = g.layer_norm(g.op("Add", out, x), weights, f"{p}.output.LayerNorm", eps)

    g.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"]))
    inputs = [helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "tokens"])
              for name in ("input_ids", "attention_mask", "token_type_ids")]
    output = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                           ["batch", "tokens", hidden])
    graph = helper.make_graph(g.nodes, "minilm", inputs, [output], g.initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="graphmem")
    model.ir_version = 8  # what ONNX Runtime 1.18 and later read
    onnx.checker.check_model(model)
    # the weights in a file of their own beside the graph (``<target>.data``), which
    # ONNX Runtime maps instead of parsing them out of the graph: a session is made in
    # ~0.03 s instead of ~0.11 s, the same graph and the same vectors, bit for bit
    onnx.save_model(model, str(target), save_as_external_data=True,
                    all_tensors_to_one_file=True, location=f"{target.name}.data",
                    size_threshold=1024)
    return target
