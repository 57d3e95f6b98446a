"""Export a trained refiner to ONNX (opset 13) with contract metadata, plus a parity bundle.

Files written for ``--out DIR/NAME.onnx`` (the stem drops a trailing ``.onnx``):
- ``DIR/NAME.onnx``            the model; input ``candidates`` [batch, T, F] float32 (raw features),
                               outputs ``person, offset, height, heading, activity, fall, skeleton``,
                               dynamic axis "batch" on all of them.
- ``DIR/NAME.parity/``         ``input.f32`` [B, T, F], ``shapes.json`` and ``<output>.f32`` computed by
                               PyTorch (eval mode) on that input, for the TypeScript parity test.
- ``DIR/NAME.pt``              (train.py only) the checkpoint to re-export or refit from.

The ONNX bytes depend only on the weights and meta.json (no timestamps), so the same checkpoint and
data give an identical file. Usage:
    /usr/bin/python3 training/export.py --checkpoint X.pt --data DIR --out Y.onnx [--model-version 3.0.0]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from typing import Dict, Optional, Tuple

import numpy as np
import torch

import data as dataset
from data import DataError, Meta, Split
from model import INPUT_NAME, OUTPUT_NAMES, Refiner, RefinerConfig

CHECKPOINT_FORMAT = "csipose-refiner-ckpt-v1"
PARITY_BATCH = 64
OPSET = 13


def output_paths(out: str) -> Dict[str, str]:
    """The files that belong to one exported model, derived from the ONNX path."""
    stem = out[: -len(".onnx")] if out.endswith(".onnx") else out
    return {
        "onnx": out,
        "checkpoint": stem + ".pt",
        "parity": stem + ".parity",
        "report": stem + ".report.json",
    }


def save_checkpoint(path: str, model: Refiner, epoch: int, meta: Meta) -> None:
    """Checkpoint = config + state dict (+ provenance). Head layer names are stable (head_<output>)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    torch.save(
        {
            "format": CHECKPOINT_FORMAT,
            "config": model.cfg.to_dict(),
            "state_dict": model.state_dict(),
            "epoch": epoch,
            "activities": meta.activities,
            "feature_names": meta.feature_names,
            "data": {"recipe": meta.recipe, "seed": meta.seed, "frames": meta.splits},
        },
        path,
    )


def load_checkpoint(path: str) -> Tuple[Refiner, Dict[str, object]]:
    """Rebuild the model from a checkpoint written by save_checkpoint."""
    if not os.path.isfile(path):
        raise DataError(f"checkpoint not found: {path}")
    ckpt = torch.load(path, map_location="cpu")
    if not isinstance(ckpt, dict) or ckpt.get("format") != CHECKPOINT_FORMAT:
        raise DataError(f"{path}: not a {CHECKPOINT_FORMAT} checkpoint")
    model = Refiner(RefinerConfig.from_dict(ckpt["config"]))
    model.load_state_dict(ckpt["state_dict"])
    return model.eval(), ckpt


def trained_on(meta: Meta, date: Optional[str] = None) -> str:
    """Short provenance string: recipe, seed, frames per split, optional date (never 'now')."""
    frames = " ".join(f"{k}={v}" for k, v in meta.splits.items())
    text = f"{meta.recipe or 'unnamed recipe'} seed={meta.seed} frames {frames}"
    date = date or meta.raw.get("date")
    return f"{text} date={date}" if date else text


def metadata(meta: Meta, model_version: str, trained_on_text: str) -> Dict[str, str]:
    """contract entries verbatim (non-strings JSON-encoded), then model_version and trained_on."""
    props = {k: v if isinstance(v, str) else json.dumps(v) for k, v in meta.contract.items()}
    props["model_version"] = model_version
    props["trained_on"] = trained_on_text
    return props


def export_onnx(model: Refiner, out: str, props: Dict[str, str]) -> None:
    """torch.onnx.export (opset 13, dynamic batch), then add metadata_props, check and save."""
    import onnx  # imported here so training does not need it until export

    cfg = model.cfg
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    tmp = out + ".tmp"
    dummy = torch.zeros(2, cfg.steps, cfg.features)
    axes = {name: {0: "batch"} for name in (INPUT_NAME, *OUTPUT_NAMES)}
    model.eval()
    with torch.no_grad(), warnings.catch_warnings():
        # torch 1.13 warns about prim::Constant shape inference; harmless, output shapes are fixed below.
        warnings.filterwarnings("ignore", message="The shape inference of prim::Constant")
        torch.onnx.export(
            model,
            (dummy,),
            tmp,
            input_names=[INPUT_NAME],
            output_names=list(OUTPUT_NAMES),
            dynamic_axes=axes,
            opset_version=OPSET,
            do_constant_folding=True,
        )
    proto = onnx.load(tmp)
    os.remove(tmp)
    with torch.no_grad():
        shapes = {name: list(t.shape) for name, t in zip(OUTPUT_NAMES, model(dummy))}
    for out_info in proto.graph.output:
        # The exporter leaves skeleton's 17 x 3 symbolic ("Reshapeskeleton_dim_1"); pin every
        # non-batch dimension to its concrete size so consumers see [batch, 17, 3].
        dims = out_info.type.tensor_type.shape.dim
        for i, size in enumerate(shapes[out_info.name]):
            if i == 0:
                dims[i].dim_param = "batch"
            else:
                dims[i].dim_value = size
    del proto.metadata_props[:]
    for key, value in props.items():
        entry = proto.metadata_props.add()
        entry.key, entry.value = key, value
    onnx.checker.check_model(proto)
    onnx.save(proto, out)


def parity_input(meta: Meta, val: Split, train: Optional[Split], batch: int = PARITY_BATCH) -> Tuple[np.ndarray, Dict[str, int]]:
    """B present candidates, spread evenly over VAL (frame, slot) order; TRAIN fills any shortfall."""
    def spread(split: Split, want: int) -> np.ndarray:
        f, k = np.nonzero(split.cand_mask)
        if f.size == 0 or want <= 0:
            return np.zeros((0, meta.steps, meta.features), np.float32)
        idx = np.unique(np.linspace(0, f.size - 1, min(want, f.size)).round().astype(np.int64))
        return split.candidates[f[idx], k[idx]]

    rows = spread(val, batch)
    extra = np.zeros((0, meta.steps, meta.features), np.float32)
    if rows.shape[0] < batch and train is not None:
        extra = spread(train, batch - rows.shape[0])
    x = np.ascontiguousarray(np.concatenate([rows, extra]).astype("<f4"))
    if x.shape[0] == 0:
        raise DataError("no present candidates in val or train for the parity bundle")
    return x, {"val": int(rows.shape[0]), "train": int(extra.shape[0])}


def write_parity(model: Refiner, x: np.ndarray, directory: str, source: Dict[str, int]) -> None:
    """input.f32, <output>.f32 (PyTorch eval outputs, little-endian float32) and shapes.json."""
    os.makedirs(directory, exist_ok=True)
    model.eval()
    with torch.no_grad():
        outs = model(torch.from_numpy(x))
    x.astype("<f4").tofile(os.path.join(directory, "input.f32"))
    shapes: Dict[str, object] = {"input": list(x.shape), "outputs": {}}
    for name, value in zip(OUTPUT_NAMES, outs):
        arr = value.numpy().astype("<f4")
        arr.tofile(os.path.join(directory, f"{name}.f32"))
        shapes["outputs"][name] = list(arr.shape)  # type: ignore[index]
    shapes.update({"input_name": INPUT_NAME, "dtype": "float32", "byte_order": "little", "source": source})
    with open(os.path.join(directory, "shapes.json"), "w", encoding="utf-8") as fh:
        json.dump(shapes, fh, indent=2)
        fh.write("\n")


def export_all(model: Refiner, meta: Meta, val: Split, train: Optional[Split], out: str, model_version: str, date: Optional[str]) -> Dict[str, str]:
    """ONNX + parity bundle; returns the metadata written."""
    if model.cfg.features != meta.features or model.cfg.steps != meta.steps:
        raise DataError(
            f"model expects T={model.cfg.steps} F={model.cfg.features}, data has T={meta.steps} F={meta.features}"
        )
    props = metadata(meta, model_version, trained_on(meta, date))
    export_onnx(model, out, props)
    x, source = parity_input(meta, val, train)
    write_parity(model, x, output_paths(out)["parity"], source)
    return props


def main(argv: Optional[list] = None) -> int:
    ap = argparse.ArgumentParser(description="Re-export a csipose refiner checkpoint to ONNX + parity bundle.")
    ap.add_argument("--checkpoint", required=True, help="X.pt written by train.py")
    ap.add_argument("--data", required=True, help="dataset directory (meta.json contract, parity input)")
    ap.add_argument("--out", required=True, help="Y.onnx (parity bundle goes to Y.parity/)")
    ap.add_argument("--model-version", default="3.0.0")
    ap.add_argument("--trained-on-date", default=None, help="optional date for trained_on (default: meta.json 'date')")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    try:
        meta = dataset.load_meta(args.data)
        model, _ = load_checkpoint(args.checkpoint)
        val = dataset.load_split(args.data, meta, "val")
        need_train = int(val.cand_mask.sum()) < PARITY_BATCH and "train" in meta.splits
        train = dataset.load_split(args.data, meta, "train") if need_train else None
        export_all(model, meta, val, train, args.out, args.model_version, args.trained_on_date)
    except DataError as err:
        print(f"csipose-refiner: {err}", file=sys.stderr)
        return 2
    print(f"wrote {args.out} and {output_paths(args.out)['parity']}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
