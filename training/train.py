"""Train the csipose per-candidate refiner, pick the best VAL epoch, export ONNX + parity + report.

    /usr/bin/python3 training/train.py --data DIR --out models/csipose-refiner.onnx \
        [--epochs 40] [--minutes 12] [--seed 1] [--batch 64] [--gate 1.2] [--model-version 3.0.0]

Writes ``<stem>.onnx``, ``<stem>.pt``, ``<stem>.parity/`` and ``<stem>.report.json`` (stem = --out
without ``.onnx``). Deterministic for a given data set, seed and number of completed epochs: the
wall-clock budget only decides how many epochs run (the report says how many), never what one does.
Model selection (``--select``): by default the epoch with the lowest VAL selection score
(metrics.selection_score: count, floor, height, MPJPE, activity, fall F1 and heading errors on one
scale); ``--select loss`` uses the VAL set loss instead. Earliest epoch on a tie.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import time
from typing import Dict, List, Optional

import numpy as np
import scipy
import torch

import data as dataset
from data import DataError, Meta, Split
from export import export_all, output_paths, save_checkpoint
from loss import LossWeights, build_targets, frame_batch, match_predicted, set_loss
from metrics import evaluate, format_line, rounded, selection_score
from model import Refiner, RefinerConfig, count_params

REPORT_FORMAT = "csipose-refiner-report-v1"


def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
    d = LossWeights()
    ap = argparse.ArgumentParser(description="Train the csipose per-candidate refiner (set loss, Hungarian matching).")
    ap.add_argument("--data", required=True, help="dataset directory (format csipose-refiner-data-v1)")
    ap.add_argument("--out", required=True, help="ONNX path, e.g. models/csipose-refiner.onnx")
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--minutes", type=float, default=12.0, help="wall-clock budget; 0 = none. Checked between epochs")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--batch", type=int, default=64, help="frames per step (up to K candidates each)")
    ap.add_argument("--gate", type=float, default=1.2, help="max RAW candidate-to-person floor distance for a match, m")
    ap.add_argument("--lam", type=float, default=0.5, help="matching cost weight of -log person_prob")
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--lr-floor", type=float, default=0.05, help="cosine decay ends at lr * this")
    ap.add_argument("--clip", type=float, default=5.0, help="gradient norm clip")
    ap.add_argument("--activity-cap", type=float, default=10.0, help="cap of inverse-frequency activity weights")
    ap.add_argument("--fall-cap", type=float, default=20.0, help="cap of the fall BCE positive weight")
    for name in ("person", "offset", "height", "heading", "activity", "fall", "skeleton"):
        ap.add_argument(f"--w-{name}", type=float, default=getattr(d, name), help=f"loss weight (default {getattr(d, name)})")
    ap.add_argument("--select", choices=("score", "loss"), default="score",
                    help="VAL criterion for the exported epoch: metrics.selection_score (default) or the set loss")
    ap.add_argument("--dropout", type=float, default=0.0, help="dropout on the step embedding and the trunk (training only)")
    ap.add_argument("--weight-decay", type=float, default=0.0, help="AdamW weight decay (0 = Adam)")
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads (1 is fastest here, see README)")
    ap.add_argument("--model-version", default="3.0.0")
    ap.add_argument("--trained-on-date", default=None, help="optional date for trained_on (default: meta.json 'date')")
    args = ap.parse_args(argv)
    if args.epochs < 1 or args.batch < 1 or args.threads < 1 or args.gate <= 0:
        ap.error("--epochs, --batch and --threads must be >= 1 and --gate > 0")
    return args


def seed_everything(seed: int, threads: int) -> np.random.Generator:
    """Seed torch/python and return the numpy Generator that orders the frames.

    Threads default to 1: the per-step tensors are tiny (~400 candidates x 64 channels x 20 steps),
    and on the shared 2-core machine 2 intra-op threads measured 2-25x SLOWER than 1 (OpenMP
    threads wait on a busy core). One thread also keeps results bit-identical across machines.
    """
    random.seed(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    try:
        torch.use_deterministic_algorithms(True)
    except Exception as err:  # pragma: no cover - older/odd builds
        print(f"note: deterministic algorithms unavailable ({err})")
    return np.random.default_rng(seed)


def build_model(meta: Meta, train: Split, dropout: float = 0.0) -> Refiner:
    """Model with TRAIN normalisation and head biases at TRAIN means (height, skeleton), so the
    first epochs learn deviations rather than the mean body."""
    model = Refiner(RefinerConfig(features=meta.features, steps=meta.steps, activities=len(meta.activities), keypoints=meta.keypoints, dropout=dropout))
    mean, std = dataset.feature_stats(train)
    model.set_normalisation(torch.from_numpy(mean), torch.from_numpy(std))
    tm = train.truth_mask
    with torch.no_grad():
        if tm.any():
            model.head_height.bias.fill_(float(train.truth_pos[tm][:, 2].mean()))
            model.head_skeleton.bias.copy_(torch.from_numpy(train.truth_skeleton[tm].mean(0).reshape(-1).astype(np.float32)))
    return model


def run(args: argparse.Namespace) -> str:
    t0 = time.monotonic()
    rng = seed_everything(args.seed, args.threads)
    meta = dataset.load_meta(args.data)
    for need in ("train", "val"):
        if need not in meta.splits or meta.splits[need] == 0:
            raise DataError(f"meta.json: split '{need}' missing or empty")
    train = dataset.load_split(args.data, meta, "train")
    val = dataset.load_split(args.data, meta, "val")
    weights = LossWeights(**{n: getattr(args, f"w_{n}") for n in LossWeights().to_dict()})
    act_w = torch.from_numpy(dataset.activity_weights(train, len(meta.activities), args.activity_cap))
    fall_pw = dataset.fall_pos_weight(train, args.fall_cap)
    model = build_model(meta, train, args.dropout)
    params = count_params(model)
    steps = math.ceil(train.frames / args.batch)
    total = args.epochs * steps
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: args.lr_floor + (1 - args.lr_floor) * 0.5 * (1 + math.cos(math.pi * min(s, total) / total))
    )
    print(
        f"data {args.data}: recipe '{meta.recipe}', train {train.frames} / val {val.frames} frames, "
        f"T={meta.steps} F={meta.features} K={meta.max_candidates} P={meta.max_persons}; "
        f"model {params} params; fall pos_weight {fall_pw:.2f}; activity weights "
        + " ".join(f"{a}={w:.2f}" for a, w in zip(meta.activities, act_w.tolist())),
        flush=True,
    )
    budget = args.minutes * 60.0
    best_value, best_loss, best_epoch = math.inf, math.inf, 0
    best_state: Dict[str, torch.Tensor] = {}
    best_metrics: Dict[str, object] = {}
    baseline: Dict[str, object] = {}
    history: List[Dict[str, object]] = []
    stopped_by_budget = False
    epoch_times: List[float] = []
    for epoch in range(1, args.epochs + 1):
        te = time.monotonic()
        model.train()
        order = rng.permutation(train.frames)
        loss_sum, loss_n = 0.0, 0
        for b in range(steps):
            fb = frame_batch(train, order[b * args.batch : (b + 1) * args.batch])
            m = fb.frame_of.shape[0]
            if m > 0:
                raw = model.raw_heads(fb.x)
                match = match_predicted(fb, raw["offset"].detach().numpy(), raw["person"].detach().numpy(), args.gate, args.lam)
                loss, _ = set_loss(raw, build_targets(fb, match), weights, act_w, fall_pw)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
                opt.step()
                loss_sum += float(loss) * m
                loss_n += m
            sched.step()
        val_loss, vm, baseline = evaluate(model, val, meta.activities, args.gate, args.lam, weights, act_w, fall_pw)
        dt = time.monotonic() - te
        epoch_times.append(dt)
        train_loss = loss_sum / max(loss_n, 1)
        val_score = selection_score(vm)
        value = val_score if args.select == "score" else val_loss
        better = value < best_value
        if better:
            best_value, best_loss, best_epoch, best_metrics = value, val_loss, epoch, vm
            best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        history.append({"epoch": epoch, "train_loss": train_loss, "val_loss": val_loss, "val_score": val_score,
                        "count_exact": vm["count_exact"],
                        "floor_median_m": vm["floor_median_m"], "mpjpe_mm": vm["mpjpe_mm"],
                        "val_terms": vm["loss_terms"], "seconds": dt})
        print(f"ep {epoch:3d} loss {train_loss:.4f} val {val_loss:.4f} score {val_score:.4f}{'*' if better else ' '} {format_line(vm)} "
              f"lr {sched.get_last_lr()[0]:.2e} {dt:.1f}s", flush=True)
        if budget > 0 and epoch < args.epochs and time.monotonic() - t0 + dt > budget:
            stopped_by_budget = True
            print(f"wall-clock budget {args.minutes} min: stopping after {epoch} of {args.epochs} epochs", flush=True)
            break
    if best_epoch == 0:
        raise FloatingPointError("no epoch produced a finite VAL criterion")
    model.load_state_dict(best_state)
    model.eval()
    paths = output_paths(args.out)
    save_checkpoint(paths["checkpoint"], model, best_epoch, meta)
    props = export_all(model, meta, val, train, args.out, args.model_version, args.trained_on_date)
    report = {
        "format": REPORT_FORMAT,
        "files": paths,
        "epoch_chosen": best_epoch,
        "epochs_completed": len(history),
        "epochs_planned": args.epochs,
        "stopped_by_budget": stopped_by_budget,
        "selection": ("lowest VAL selection score (metrics.selection_score)" if args.select == "score"
                      else "lowest VAL set loss (training matching and weights)") + "; earliest on tie",
        "seconds": time.monotonic() - t0,
        "seconds_per_epoch": float(np.mean(epoch_times)),
        "params": params,
        "versions": {"torch": torch.__version__, "numpy": np.__version__, "scipy": scipy.__version__},
        "data": {"dir": args.data, "format": dataset.DATA_FORMAT, "recipe": meta.recipe, "seed": meta.seed,
                 "frames": meta.splits, "steps": meta.steps, "features": meta.features,
                 "max_candidates": meta.max_candidates, "max_persons": meta.max_persons},
        "hyper": {"seed": args.seed, "threads": args.threads, "dropout": args.dropout, "weight_decay": args.weight_decay, "select": args.select, "batch": args.batch, "gate": args.gate, "lam": args.lam, "lr": args.lr,
                  "lr_floor": args.lr_floor, "clip": args.clip, "loss_weights": weights.to_dict(),
                  "activity_weights": dict(zip(meta.activities, act_w.tolist())), "fall_pos_weight": fall_pw},
        "val_loss": best_loss,
        "val_score": selection_score(best_metrics),
        "val": best_metrics,
        "baseline_no_refiner": baseline,
        "metadata_props": props,
        "history": history,
    }
    with open(paths["report"], "w", encoding="utf-8") as fh:
        json.dump(rounded(report), fh, indent=2)
        fh.write("\n")
    print(f"chosen epoch {best_epoch}/{len(history)}: {format_line(best_metrics)}")
    print(f"baseline (no refiner): count {_fmt(baseline['count_exact'])} floor median {_fmt(baseline['floor_median_m'])} m")
    print(f"report: {paths['report']}")
    return paths["report"]


def _fmt(v: object) -> str:
    return "-" if v is None else f"{float(v):.3f}"  # type: ignore[arg-type]


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    try:
        run(args)
    except DataError as err:
        print(f"csipose-refiner: {err}", file=sys.stderr)
        return 2
    except FloatingPointError as err:
        print(f"csipose-refiner: {err}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
