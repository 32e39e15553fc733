#!/usr/bin/env python3
"""Writes a CLIP model folder (HF layout) to ONNX for ort_clip_bench.mjs.

Two graphs, as Immich ships a CLIP model for ONNX Runtime (a visual and a
textual model, each a tower with its projection):

  OUT/visual/model.onnx   pixel_values [N, 3, S, S] float32 -> image_embeds [N, P]
  OUT/textual/model.onnx  input_ids [N, 77] int64           -> text_embeds  [N, P]

The weights go to model.onnx.data beside each graph (ONNX external data), so
a ViT-H/14 (2.5 GB of vision weights) passes protobuf's 2 GB limit. The towers
are written here with torch.nn.functional (no transformers package needed):
pre-LayerNorm ViT, fused QKV product as open_clip's nn.MultiheadAttention
exports it, exact or quick GELU as config.json says, causal text mask, the
text pooled at the first EOS token. The embeddings are not normalised (the
runtimes do that outside the graph).

--check also runs the towers in torch on fixed inputs and writes them and
torch's outputs under OUT/check/, for `node ort_clip_bench.mjs --check OUT`
to compare against ONNX Runtime's. Needs Debian's python3-torch and
python3-onnx; see README.md.
"""
import argparse
import json
import math
import os
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F

DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": None}


def load_safetensors(path):
    """name -> float32 torch tensor, read without the safetensors package."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    base = 8 + n
    raw = np.memmap(path, dtype=np.uint8, mode="r")
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        lo, hi = t["data_offsets"]
        b = raw[base + lo:base + hi]
        if t["dtype"] == "BF16":
            u = b.view(np.uint16).astype(np.uint32) << 16
            a = u.view(np.float32)
        elif t["dtype"] in DTYPES:
            a = b.view(DTYPES[t["dtype"]]).astype(np.float32)
        else:
            raise SystemExit("%s: tensor %s has dtype %s, want F32, F16 or BF16" % (path, name, t["dtype"]))
        out[name] = torch.from_numpy(np.array(a).reshape(t["shape"]))
    return out


def gelu(x, act):
    if act == "quick_gelu":
        return x * torch.sigmoid(1.702 * x)
    return F.gelu(x)


class Tower(torch.nn.Module):
    """The encoder layers shared by both towers: W[prefix.encoder.layers.i.*]."""

    def __init__(self, w, prefix, cfg):
        super().__init__()
        self.heads, self.act, self.eps = cfg["num_attention_heads"], cfg.get("hidden_act", "gelu"), cfg.get("layer_norm_eps", 1e-5)
        self.width = cfg["hidden_size"]
        self.layers = []
        for i in range(cfg["num_hidden_layers"]):
            p = "%s.encoder.layers.%d." % (prefix, i)
            a = p + "self_attn."
            layer = {
                "ln1_w": w[p + "layer_norm1.weight"], "ln1_b": w[p + "layer_norm1.bias"],
                # [3W, W]: one product for Q, K and V, as open_clip's in_proj.
                "qkv_w": torch.cat([w[a + "q_proj.weight"], w[a + "k_proj.weight"], w[a + "v_proj.weight"]]),
                "qkv_b": torch.cat([w[a + "q_proj.bias"], w[a + "k_proj.bias"], w[a + "v_proj.bias"]]),
                "o_w": w[a + "out_proj.weight"], "o_b": w[a + "out_proj.bias"],
                "ln2_w": w[p + "layer_norm2.weight"], "ln2_b": w[p + "layer_norm2.bias"],
                "fc1_w": w[p + "mlp.fc1.weight"], "fc1_b": w[p + "mlp.fc1.bias"],
                "fc2_w": w[p + "mlp.fc2.weight"], "fc2_b": w[p + "mlp.fc2.bias"],
            }
            for k, v in layer.items():
                name = "l%d_%s" % (i, k)
                self.register_buffer(name, v)
                layer[k] = name
            self.layers.append(layer)

    def block(self, x, p, mask):
        """x [n, T, W] -> [n, T, W]."""
        g = lambda k: getattr(self, p[k])
        n, t = x.shape[0], x.shape[1]
        w = self.width  # a constant in the graph (LayerNorm's shape must be)
        hd = w // self.heads
        h = F.layer_norm(x, (w,), g("ln1_w"), g("ln1_b"), self.eps)
        qkv = F.linear(h, g("qkv_w"), g("qkv_b")).reshape(n, t, 3, self.heads, hd).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]  # [n, heads, T, hd]
        s = torch.matmul(q * (1.0 / math.sqrt(hd)), k.transpose(-1, -2))
        if mask is not None:
            s = s + mask
        a = torch.matmul(torch.softmax(s, dim=-1), v).transpose(1, 2).reshape(n, t, w)
        x = x + F.linear(a, g("o_w"), g("o_b"))
        h = F.layer_norm(x, (w,), g("ln2_w"), g("ln2_b"), self.eps)
        return x + F.linear(gelu(F.linear(h, g("fc1_w"), g("fc1_b")), self.act), g("fc2_w"), g("fc2_b"))

    def encode(self, x, mask=None):
        for p in self.layers:
            x = self.block(x, p, mask)
        return x


class Visual(Tower):
    def __init__(self, w, cfg):
        v = cfg["vision_config"]
        super().__init__(w, "vision_model", v)
        self.patch = v["patch_size"]
        self.register_buffer("patch_w", w["vision_model.embeddings.patch_embedding.weight"])  # [W, 3, p, p]
        self.register_buffer("cls", w["vision_model.embeddings.class_embedding"])  # [W]
        self.register_buffer("pos", w["vision_model.embeddings.position_embedding.weight"])  # [G*G+1, W]
        self.register_buffer("pre_w", w["vision_model.pre_layrnorm.weight"])
        self.register_buffer("pre_b", w["vision_model.pre_layrnorm.bias"])
        self.register_buffer("post_w", w["vision_model.post_layernorm.weight"])
        self.register_buffer("post_b", w["vision_model.post_layernorm.bias"])
        self.register_buffer("proj", w["visual_projection.weight"])  # [P, W]

    def forward(self, pixel_values):  # [n, 3, S, S] -> [n, P]
        x = F.conv2d(pixel_values, self.patch_w, stride=self.patch).flatten(2).transpose(1, 2)
        # [n, 1, W] by broadcasting: expand(n, ...) would fix n in the graph.
        cls = self.cls.reshape(1, 1, self.width) + torch.zeros_like(x[:, :1])
        x = torch.cat([cls, x], dim=1) + self.pos
        x = F.layer_norm(x, (self.width,), self.pre_w, self.pre_b, self.eps)
        x = self.encode(x)
        x = F.layer_norm(x[:, 0], (self.width,), self.post_w, self.post_b, self.eps)
        return F.linear(x, self.proj)


class Textual(Tower):
    def __init__(self, w, cfg):
        t = cfg["text_config"]
        super().__init__(w, "text_model", t)
        self.eos = t.get("eos_token_id", 49407)
        ctx = t.get("max_position_embeddings", 77)
        self.register_buffer("tok", w["text_model.embeddings.token_embedding.weight"])  # [V, W]
        self.register_buffer("pos", w["text_model.embeddings.position_embedding.weight"])  # [77, W]
        self.register_buffer("fin_w", w["text_model.final_layer_norm.weight"])
        self.register_buffer("fin_b", w["text_model.final_layer_norm.bias"])
        self.register_buffer("proj", w["text_projection.weight"])  # [P, W]
        self.register_buffer("mask", torch.full((ctx, ctx), float("-inf")).triu(1))  # [77, 77]

    def forward(self, input_ids):  # [n, 77] int64 -> [n, P]
        x = self.tok[input_ids] + self.pos
        x = self.encode(x, self.mask)
        x = F.layer_norm(x, (self.width,), self.fin_w, self.fin_b, self.eps)
        eos = (input_ids == self.eos).int().argmax(dim=-1)  # the first EOS
        return F.linear(x[torch.arange(input_ids.shape[0]), eos], self.proj)


def export(module, example, in_name, out_name, folder, opset):
    """Writes folder/model.onnx with its weights in folder/model.onnx.data."""
    import onnx
    os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(folder, "tmp")
    os.makedirs(tmp, exist_ok=True)
    raw = os.path.join(tmp, "model.onnx")
    with torch.no_grad():
        # torch writes one file per tensor once a graph passes 2 GB; the
        # graph is loaded and saved again below with one data file.
        torch.onnx.export(module, (example,), raw, input_names=[in_name], output_names=[out_name],
                          dynamic_axes={in_name: {0: "batch"}, out_name: {0: "batch"}},
                          opset_version=opset, do_constant_folding=True)
    m = onnx.load(raw, load_external_data=True)
    dst = os.path.join(folder, "model.onnx")
    for f in (dst, dst + ".data"):
        if os.path.exists(f):
            os.remove(f)
    onnx.save_model(m, dst, save_as_external_data=True, all_tensors_to_one_file=True,
                    location="model.onnx.data", size_threshold=1024)
    del m
    for f in os.listdir(tmp):
        os.remove(os.path.join(tmp, f))
    os.rmdir(tmp)
    print("wrote %s (%.1f MB of weights)" % (dst, os.path.getsize(dst + ".data") / 1e6), file=sys.stderr)


def check_inputs(cfg, n_img, n_txt):
    g = torch.Generator().manual_seed(7)
    s = cfg["vision_config"]["image_size"]
    px = torch.randn(n_img, 3, s, s, generator=g)
    t = cfg["text_config"]
    ctx, eos = t.get("max_position_embeddings", 77), t.get("eos_token_id", 49407)
    ids = torch.randint(0, eos - 1, (n_txt, ctx), generator=g)
    for i in range(n_txt):  # BOS, words, EOS, then EOS padding (the first EOS is pooled)
        end = 3 + 5 * i % (ctx - 4)
        ids[i, 0], ids[i, end:] = eos - 1, eos
    return px, ids


def write_check(out, cfg, vis, txt):
    """OUT/check/: inputs and torch's outputs as raw little-endian arrays."""
    d = os.path.join(out, "check")
    os.makedirs(d, exist_ok=True)
    px, ids = check_inputs(cfg, 2, 3)
    with torch.no_grad():
        img, tx = vis(px), txt(ids)
    arrays = {"pixel_values": px, "input_ids": ids, "image_embeds": img, "text_embeds": tx}
    meta = {}
    for name, a in arrays.items():
        a = a.numpy()
        a.tofile(os.path.join(d, name + ".bin"))
        meta[name] = {"dtype": str(a.dtype), "shape": list(a.shape)}
    with open(os.path.join(d, "check.json"), "w") as f:
        json.dump(meta, f, indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model", help="model folder in HF layout: config.json and model.safetensors")
    ap.add_argument("out", help="output folder: visual/, textual/ (and check/ with --check)")
    ap.add_argument("--opset", type=int, default=17)
    ap.add_argument("--check", action="store_true",
                    help="also write fixed inputs and torch's outputs to OUT/check for ort_clip_bench.mjs --check")
    a = ap.parse_args()
    try:
        with open(os.path.join(a.model, "config.json")) as f:
            cfg = json.load(f)
    except (OSError, ValueError) as e:
        raise SystemExit("%s/config.json: %s" % (a.model, e))
    w = load_safetensors(os.path.join(a.model, "model.safetensors"))
    s = cfg["vision_config"]["image_size"]
    ctx = cfg["text_config"].get("max_position_embeddings", 77)
    torch.set_num_threads(2)
    vis = Visual(w, cfg).eval()
    txt = Textual(w, cfg).eval()
    del w
    if a.check:
        write_check(a.out, cfg, vis, txt)
    export(vis, torch.zeros(1, 3, s, s), "pixel_values", "image_embeds", os.path.join(a.out, "visual"), a.opset)
    del vis
    export(txt, torch.full((1, ctx), 49407, dtype=torch.int64), "input_ids", "text_embeds",
           os.path.join(a.out, "textual"), a.opset)


if __name__ == "__main__":
    main()
