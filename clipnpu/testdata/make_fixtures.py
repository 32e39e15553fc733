#!/usr/bin/env python3
"""Generate the small "unseen model" fixtures under clipnpu/testdata/.

Each fixture is a Hugging Face CLIP folder (config.json, model.safetensors)
with random weights of an unusual shape, stored in 16-bit, plus reference
outputs (reference.json in format clip-reference-v1, pixels/*.f32) computed
by the independent PyTorch forward below, in float64 from the 16-bit values.

    /usr/bin/python3 clipnpu/testdata/make_fixtures.py   # needs torch, numpy

The Go tests only read the generated files; they never run Python.
"""
import json
import math
import os
import struct

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))

# Two shapes nothing in the Go code was written against.
FIXTURES = [
    dict(
        name="qgelu-f16",
        seed=7,
        dtype="F16",
        logit_scale=math.log(42.0),
        projection_dim=24,
        vision=dict(hidden=48, heads=3, layers=2, mlp=96, patch=8, image=32, act="quick_gelu", eps=1e-5),
        # eos 500 is not the largest id: first-EOS pooling and argmax differ.
        text=dict(hidden=40, heads=2, layers=2, mlp=80, vocab=1000, context=16, act="quick_gelu", eps=1e-6,
                  bos=998, eos=500, pad=500),
    ),
    dict(
        name="legacy-eos-bf16",
        seed=11,
        dtype="BF16",
        logit_scale=math.log(100.0),
        projection_dim=16,
        vision=dict(hidden=32, heads=4, layers=1, mlp=128, patch=16, image=48, act="gelu", eps=1e-5),
        # eos_token_id 2: HF's legacy rule pools at the argmax of the ids;
        # the texts hold a 2 before the largest id, so first-EOS would differ.
        text=dict(hidden=32, heads=4, layers=1, mlp=64, vocab=600, context=20, act="gelu", eps=1e-5,
                  bos=598, eos=2, pad=0, real_eos=599),
    ),
]


def to_dtype_bits(a, dtype):
    """float32 array -> (16-bit raw values, float64 tensor of the exact stored values)."""
    t = torch.tensor(a, dtype=torch.float32)
    if dtype == "F16":
        s = t.to(torch.float16)
    elif dtype == "BF16":
        s = t.to(torch.bfloat16)
    else:
        raise ValueError(dtype)
    raw = s.view(torch.int16).numpy().astype("<i2").tobytes()
    return raw, s.to(torch.float64)


def make_weights(fx, rng):
    """Random weights with HF names; returns {name: float32 numpy array}."""
    v, t, D = fx["vision"], fx["text"], fx["projection_dim"]
    w = {}

    def mat(name, out, inp):
        w[name] = (rng.standard_normal((out, inp)) / math.sqrt(inp)).astype(np.float32)

    def vec(name, n, center=0.0, scale=0.05):
        w[name] = (center + scale * rng.standard_normal(n)).astype(np.float32)

    def layers(prefix, c):
        H, M = c["hidden"], c["mlp"]
        for i in range(c["layers"]):
            p = f"{prefix}.encoder.layers.{i}."
            for q in ("q", "k", "v", "out"):
                mat(p + f"self_attn.{q}_proj.weight", H, H)
                vec(p + f"self_attn.{q}_proj.bias", H)
            for ln in ("layer_norm1", "layer_norm2"):
                vec(p + ln + ".weight", H, 1.0, 0.1)
                vec(p + ln + ".bias", H)
            mat(p + "mlp.fc1.weight", M, H)
            vec(p + "mlp.fc1.bias", M)
            mat(p + "mlp.fc2.weight", H, M)
            vec(p + "mlp.fc2.bias", H)

    H, P, S = v["hidden"], v["patch"], v["image"]
    tokens = (S // P) ** 2 + 1
    w["vision_model.embeddings.patch_embedding.weight"] = (
        rng.standard_normal((H, 3, P, P)) / math.sqrt(3 * P * P)).astype(np.float32)
    vec("vision_model.embeddings.class_embedding", H, 0.0, 0.5)
    w["vision_model.embeddings.position_embedding.weight"] = (0.3 * rng.standard_normal((tokens, H))).astype(np.float32)
    vec("vision_model.pre_layrnorm.weight", H, 1.0, 0.1)
    vec("vision_model.pre_layrnorm.bias", H)
    layers("vision_model", v)
    vec("vision_model.post_layernorm.weight", H, 1.0, 0.1)
    vec("vision_model.post_layernorm.bias", H)
    mat("visual_projection.weight", D, H)

    Ht = t["hidden"]
    w["text_model.embeddings.token_embedding.weight"] = (0.5 * rng.standard_normal((t["vocab"], Ht))).astype(np.float32)
    w["text_model.embeddings.position_embedding.weight"] = (0.3 * rng.standard_normal((t["context"], Ht))).astype(np.float32)
    layers("text_model", t)
    vec("text_model.final_layer_norm.weight", Ht, 1.0, 0.1)
    vec("text_model.final_layer_norm.bias", Ht)
    mat("text_projection.weight", D, Ht)
    return w


def write_safetensors(path, weights, dtype, logit_scale):
    """Write the safetensors format by hand: u64 LE header length, JSON, data."""
    header, blobs, exact, off = {"__metadata__": {"format": "pt"}}, [], {}, 0
    for name in sorted(weights):
        raw, ex = to_dtype_bits(weights[name], dtype)
        header[name] = {"dtype": dtype, "shape": list(weights[name].shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        exact[name] = ex
        off += len(raw)
    # logit_scale stays float32 and scalar, as HF checkpoints store it.
    raw = struct.pack("<f", logit_scale)
    header["logit_scale"] = {"dtype": "F32", "shape": [], "data_offsets": [off, off + 4]}
    blobs.append(raw)
    exact["logit_scale"] = torch.tensor(struct.unpack("<f", raw)[0], dtype=torch.float64)
    js = json.dumps(header, separators=(",", ":")).encode()
    js += b" " * (-(8 + len(js)) % 8)  # align the data section to 8 bytes
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(js)))
        f.write(js)
        for b in blobs:
            f.write(b)
    return exact


def act_fn(name, x):
    if name == "quick_gelu":
        return x * torch.sigmoid(1.702 * x)
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def encoder(x, w, prefix, c, causal):
    """Pre-LN transformer layers; x [batch, L, H] float64."""
    B, L, H = x.shape
    nh = c["heads"]
    hd = H // nh
    mask = torch.zeros(L, L, dtype=torch.float64)
    if causal:
        mask = torch.triu(torch.full((L, L), float("-inf"), dtype=torch.float64), diagonal=1)
    for i in range(c["layers"]):
        p = f"{prefix}.encoder.layers.{i}."
        g = lambda n: w[p + n]
        h = F.layer_norm(x, (H,), g("layer_norm1.weight"), g("layer_norm1.bias"), c["eps"])
        def proj(n):
            return (h @ g(f"self_attn.{n}_proj.weight").T + g(f"self_attn.{n}_proj.bias")).view(B, L, nh, hd).transpose(1, 2)
        q, k, v = proj("q"), proj("k"), proj("v")
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(hd) + mask
        a = torch.softmax(scores, dim=-1) @ v  # [B, nh, L, hd]
        a = a.transpose(1, 2).reshape(B, L, H)
        x = x + a @ g("self_attn.out_proj.weight").T + g("self_attn.out_proj.bias")
        h = F.layer_norm(x, (H,), g("layer_norm2.weight"), g("layer_norm2.bias"), c["eps"])
        h = act_fn(c["act"], h @ g("mlp.fc1.weight").T + g("mlp.fc1.bias"))
        x = x + h @ g("mlp.fc2.weight").T + g("mlp.fc2.bias")
    return x


def image_features(w, v, pixels):
    """pixels [n, 3, S, S] float64 -> projected embeddings [n, D]."""
    H, P = v["hidden"], v["patch"]
    e = F.conv2d(pixels, w["vision_model.embeddings.patch_embedding.weight"], stride=P)  # [n, H, G, G]
    e = e.flatten(2).transpose(1, 2)  # [n, G*G, H]
    cls = w["vision_model.embeddings.class_embedding"].expand(e.shape[0], 1, H)
    x = torch.cat([cls, e], dim=1) + w["vision_model.embeddings.position_embedding.weight"]
    x = F.layer_norm(x, (H,), w["vision_model.pre_layrnorm.weight"], w["vision_model.pre_layrnorm.bias"], v["eps"])
    x = encoder(x, w, "vision_model", v, causal=False)
    pooled = F.layer_norm(x[:, 0], (H,), w["vision_model.post_layernorm.weight"], w["vision_model.post_layernorm.bias"], v["eps"])
    return pooled @ w["visual_projection.weight"].T


def text_features(w, t, ids):
    """ids [n, T] int64 -> projected embeddings [n, D]."""
    H = t["hidden"]
    x = w["text_model.embeddings.token_embedding.weight"][ids] + w["text_model.embeddings.position_embedding.weight"]
    x = encoder(x, w, "text_model", t, causal=True)
    x = F.layer_norm(x, (H,), w["text_model.final_layer_norm.weight"], w["text_model.final_layer_norm.bias"], t["eps"])
    if t["eos"] == 2:
        pos = ids.argmax(dim=-1)
    else:
        pos = (ids == t["eos"]).int().argmax(dim=-1)
    return x[torch.arange(ids.shape[0]), pos] @ w["text_projection.weight"].T


def make_ids(t, rng, n):
    """n token sequences with BOS, random tokens, the end token, padding."""
    T, out = t["context"], []
    end = t.get("real_eos", t["eos"])
    lengths = [3, 5, T - 2, 1, 7, T][:n]  # tokens between BOS and the end token
    for k, L in enumerate(lengths):
        L = min(L, T - 2)
        body = rng.integers(3, t["vocab"] - 3, size=L)
        body[body == t["eos"]] = t["eos"] + 1  # the end token appears once
        if t["eos"] == 2 and L >= 2:
            body[L // 2] = 2  # a literal 2 before the real end token
        seq = [t["bos"]] + list(body) + [end]
        seq += [t["pad"]] * (T - len(seq))
        out.append(seq[:T])
    return torch.tensor(out, dtype=torch.int64)


def config_json(fx):
    v, t = fx["vision"], fx["text"]
    return {
        "_name_or_path": "clipidx-testdata/" + fx["name"],
        "architectures": ["CLIPModel"],
        "model_type": "clip",
        "projection_dim": fx["projection_dim"],
        "torch_dtype": {"F16": "float16", "BF16": "bfloat16"}[fx["dtype"]],
        "text_config": {
            "model_type": "clip_text_model", "hidden_size": t["hidden"], "intermediate_size": t["mlp"],
            "num_hidden_layers": t["layers"], "num_attention_heads": t["heads"], "vocab_size": t["vocab"],
            "max_position_embeddings": t["context"], "hidden_act": t["act"], "layer_norm_eps": t["eps"],
            "bos_token_id": t["bos"], "eos_token_id": t["eos"], "pad_token_id": t["pad"],
            "projection_dim": fx["projection_dim"],
        },
        "vision_config": {
            "model_type": "clip_vision_model", "hidden_size": v["hidden"], "intermediate_size": v["mlp"],
            "num_hidden_layers": v["layers"], "num_attention_heads": v["heads"], "patch_size": v["patch"],
            "image_size": v["image"], "hidden_act": v["act"], "layer_norm_eps": v["eps"], "num_channels": 3,
            "projection_dim": fx["projection_dim"],
        },
    }


def build(fx):
    out = os.path.join(HERE, fx["name"])
    os.makedirs(os.path.join(out, "pixels"), exist_ok=True)
    rng = np.random.default_rng(fx["seed"])
    v, t = fx["vision"], fx["text"]
    weights = make_weights(fx, rng)
    w = write_safetensors(os.path.join(out, "model.safetensors"), weights, fx["dtype"], fx["logit_scale"])
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config_json(fx), f, indent=2)
        f.write("\n")

    S = v["image"]
    n_img = 4
    pix = (rng.standard_normal((n_img, 3, S, S)) * 1.2).astype(np.float32)
    pix[1] = np.clip(pix[1], -1.8, 2.1)  # a CLIP-normalised-looking range
    pix[2] = np.linspace(-1.7, 2.0, 3 * S * S, dtype=np.float32).reshape(3, S, S)
    ids = make_ids(t, rng, 6)

    img = image_features(w, v, torch.tensor(pix, dtype=torch.float64))
    txt = text_features(w, t, ids)
    scale = math.exp(float(w["logit_scale"]))
    logits = scale * F.normalize(img, dim=-1) @ F.normalize(txt, dim=-1).T

    img_names = [f"img{i}" for i in range(n_img)]
    txt_names = [f"txt{i}" for i in range(ids.shape[0])]
    images = []
    for i, name in enumerate(img_names):
        rel = f"pixels/{name}.f32"
        pix[i].astype("<f4").tofile(os.path.join(out, rel))
        images.append({"name": name, "pixel_values_file": rel, "pixel_values_shape": [3, S, S],
                       "image_embeds": img[i].tolist()})
    texts = [{"name": txt_names[j], "ids": ids[j].tolist(), "text_embeds": txt[j].tolist()} for j in range(len(txt_names))]
    lpi = {img_names[i]: {txt_names[j]: float(logits[i, j]) for j in range(len(txt_names))} for i in range(n_img)}
    top = {}
    margin = {}
    for i, name in enumerate(img_names):
        s = torch.sort(logits[i], descending=True)
        top[name] = txt_names[int(s.indices[0])]
        margin[name] = float(s.values[0] - s.values[1])
    ref = {
        "format": "clip-reference-v1",
        "variant": fx["name"],
        "weights_dtype": {"F16": "float16", "BF16": "bfloat16"}[fx["dtype"]],
        "compute_dtype": "float64",
        "seed": fx["seed"],
        "logit_scale_exp": scale,
        "context_length": t["context"],
        "texts": texts,
        "images": images,
        "logits_per_image": lpi,
        "zero_shot_top1": top,
        "zero_shot_top1_margin": margin,
        "generator": "clipnpu/testdata/make_fixtures.py (own PyTorch float64 forward)",
    }
    with open(os.path.join(out, "reference.json"), "w") as f:
        json.dump(ref, f, indent=1)
        f.write("\n")
    print(fx["name"], "min zero-shot margin", min(margin.values()))


if __name__ == "__main__":
    for fx in FIXTURES:
        build(fx)
