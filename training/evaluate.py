"""Score a trained refiner on one split of a data set (e.g. the held-out TEST rooms), beside the
"no refiner" baseline and the front end's oracle (the share of true people with a candidate within
the gate: what a perfect refiner of these candidates could find at most).

    /usr/bin/python3 training/evaluate.py --checkpoint models/csipose-refiner.pt --data DIR --split test [--out FILE]

Nothing here is tuned on the split it scores. Prints one line and writes the metrics as JSON.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import List, Optional

import torch

import data as dataset
from data import DataError
from export import load_checkpoint
from loss import LossWeights
from metrics import evaluate, format_line, rounded


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description="Score a refiner checkpoint on one split.")
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--split", default="test")
    ap.add_argument("--gate", type=float, default=1.2)
    ap.add_argument("--lam", type=float, default=0.5)
    ap.add_argument("--out", help="JSON file for the metrics")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    try:
        model, _ = load_checkpoint(args.checkpoint)
        meta = dataset.load_meta(args.data)
        if args.split not in meta.splits or meta.splits[args.split] == 0:
            raise DataError(f"meta.json: split '{args.split}' missing or empty")
        split = dataset.load_split(args.data, meta, args.split)
    except DataError as e:
        print(f"csipose-refiner: {e}", file=sys.stderr)
        return 2
    ones = torch.ones(len(meta.activities))
    with torch.no_grad():
        _, metrics, baseline = evaluate(model, split, meta.activities, args.gate, args.lam, LossWeights(), ones, 1.0)
    report = {"split": args.split, "data": {"recipe": meta.recipe, "seed": meta.seed, "frames": split.frames},
              "refiner": metrics, "baseline_no_refiner": baseline,
              "oracle_truth_coverage": baseline.get("truth_coverage")}
    print(f"{args.split}: {format_line(metrics)}")
    print(f"baseline (no refiner): count {baseline['count_exact']:.3f} floor median {baseline['floor_median_m']:.3f} m; "
          f"oracle coverage {baseline['truth_coverage']:.3f}")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump(rounded(report), fh, indent=2)
            fh.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
