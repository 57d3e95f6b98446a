"""Reading the refiner dataset written by the TypeScript side (format ``csipose-refiner-data-v1``).

The TypeScript physics front end writes raw little-endian arrays so that neither side needs a
serialisation library; this module is the only place that knows their names, dtypes and shapes.
Everything is validated up front (sizes, index ranges, finiteness) because a silently misaligned
reshape would train a model on garbage without any error. Nothing happens at import time.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Dict, List

import numpy as np

DATA_FORMAT = "csipose-refiner-data-v1"


class DataError(Exception):
    """A missing or invalid dataset; the CLIs turn it into a one-line message and exit code 2."""


@dataclass(frozen=True)
class Meta:
    """The parts of ``meta.json`` the trainer uses (``raw`` keeps the whole document)."""

    steps: int
    features: int
    feature_names: List[str]
    step_s: float
    max_candidates: int
    max_persons: int
    activities: List[str]
    keypoints: int
    fall_window_s: float
    contract: Dict[str, str]
    splits: Dict[str, int]
    seed: Any
    recipe: str
    raw: Dict[str, Any]


@dataclass
class Split:
    """One split's arrays, shapes as documented in README.md (N frames, K slots, P persons)."""

    name: str
    candidates: np.ndarray  # float32 [N, K, T, F]
    cand_mask: np.ndarray  # bool    [N, K]
    cand_pos: np.ndarray  # float32 [N, K, 3]
    truth_mask: np.ndarray  # bool    [N, P]
    truth_pos: np.ndarray  # float32 [N, P, 3]
    truth_heading: np.ndarray  # float32 [N, P, 2]
    truth_activity: np.ndarray  # int64   [N, P]
    truth_fall: np.ndarray  # float32 [N, P] (0/1)
    truth_skeleton: np.ndarray  # float32 [N, P, J, 3]
    scenario: np.ndarray  # int32   [N]

    @property
    def frames(self) -> int:
        return int(self.cand_mask.shape[0])


def _need(doc: Dict[str, Any], key: str, kind: type) -> Any:
    if key not in doc:
        raise DataError(f"meta.json: missing key '{key}'")
    value = doc[key]
    if kind is int and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
        raise DataError(f"meta.json: '{key}' must be a positive integer, got {value!r}")
    if kind is not int and not isinstance(value, kind):
        raise DataError(f"meta.json: '{key}' must be {kind.__name__}, got {type(value).__name__}")
    return value


def load_meta(data_dir: str) -> Meta:
    """Read and validate ``<data>/meta.json``; raises DataError with a short reason."""
    if not os.path.isdir(data_dir):
        raise DataError(f"data directory not found: {data_dir}")
    path = os.path.join(data_dir, "meta.json")
    if not os.path.isfile(path):
        raise DataError(f"{path}: not found")
    try:
        with open(path, "r", encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError) as err:
        raise DataError(f"{path}: unreadable JSON ({err})") from err
    if not isinstance(doc, dict) or doc.get("format") != DATA_FORMAT:
        got = doc.get("format") if isinstance(doc, dict) else None
        raise DataError(f"{path}: format must be '{DATA_FORMAT}', got {got!r}")
    features = _need(doc, "features", int)
    names = _need(doc, "feature_names", list)
    if len(names) != features:
        raise DataError(f"meta.json: {len(names)} feature_names for {features} features")
    activities = _need(doc, "activities", list)
    if len(activities) < 2:
        raise DataError("meta.json: need at least two activities")
    contract = _need(doc, "contract", dict)
    splits_doc = _need(doc, "splits", dict)
    splits: Dict[str, int] = {}
    for name, info in splits_doc.items():
        frames = info.get("frames") if isinstance(info, dict) else None
        if isinstance(frames, bool) or not isinstance(frames, int) or frames < 0:
            raise DataError(f"meta.json: splits.{name}.frames must be a non-negative integer")
        splits[str(name)] = frames
    return Meta(
        steps=_need(doc, "steps", int),
        features=features,
        feature_names=[str(n) for n in names],
        step_s=float(doc.get("step_s", 0.0)),
        max_candidates=_need(doc, "max_candidates", int),
        max_persons=_need(doc, "max_persons", int),
        activities=[str(a) for a in activities],
        keypoints=_need(doc, "keypoints", int),
        fall_window_s=float(doc.get("fall_window_s", 0.0)),
        contract={str(k): v for k, v in contract.items()},
        splits=splits,
        seed=doc.get("seed"),
        recipe=str(doc.get("recipe", "")),
        raw=doc,
    )


def _read(path: str, dtype: str, shape: List[int]) -> np.ndarray:
    """Read one raw array, refusing a size that does not match the shape meta.json implies."""
    if not os.path.isfile(path):
        raise DataError(f"{path}: not found")
    want = int(np.prod(shape))
    have = os.path.getsize(path) // np.dtype(dtype).itemsize
    if os.path.getsize(path) % np.dtype(dtype).itemsize or have != want:
        raise DataError(f"{path}: expected {want} values of {dtype} for shape {shape}, file holds {have}")
    return np.fromfile(path, dtype=dtype).reshape(shape)


def load_split(data_dir: str, meta: Meta, name: str) -> Split:
    """Load split ``name`` into memory (a few hundred MB at most for the intended sizes)."""
    if name not in meta.splits:
        raise DataError(f"meta.json: no split '{name}' (have {sorted(meta.splits)})")
    n, k, p = meta.splits[name], meta.max_candidates, meta.max_persons
    t, f, j = meta.steps, meta.features, meta.keypoints
    base = os.path.join(data_dir, name)
    if not os.path.isdir(base):
        raise DataError(f"{base}: split directory not found")

    def rd(file: str, dtype: str, shape: List[int]) -> np.ndarray:
        return _read(os.path.join(base, file), dtype, shape)

    split = Split(
        name=name,
        candidates=rd("candidates.f32", "<f4", [n, k, t, f]),
        cand_mask=rd("cand_mask.u8", "u1", [n, k]) != 0,
        cand_pos=rd("cand_pos.f32", "<f4", [n, k, 3]),
        truth_mask=rd("truth_mask.u8", "u1", [n, p]) != 0,
        truth_pos=rd("truth_pos.f32", "<f4", [n, p, 3]),
        truth_heading=rd("truth_heading.f32", "<f4", [n, p, 2]),
        truth_activity=rd("truth_activity.u8", "u1", [n, p]).astype(np.int64),
        truth_fall=(rd("truth_fall.u8", "u1", [n, p]) != 0).astype(np.float32),
        truth_skeleton=rd("truth_skeleton.f32", "<f4", [n, p, j, 3]),
        scenario=rd("scenario.i32", "<i4", [n]),
    )
    _validate(split, meta)
    return split


def _validate(s: Split, meta: Meta) -> None:
    """Checks that would otherwise surface as NaN losses or index errors deep inside training."""
    cm, tm = s.cand_mask, s.truth_mask
    checks = {
        "candidates.f32": s.candidates[cm],
        "cand_pos.f32": s.cand_pos[cm],
        "truth_pos.f32": s.truth_pos[tm],
        "truth_heading.f32": s.truth_heading[tm],
        "truth_skeleton.f32": s.truth_skeleton[tm],
    }
    for file, values in checks.items():
        if not np.all(np.isfinite(values)):
            raise DataError(f"{s.name}/{file}: non-finite values in present rows")
    acts = s.truth_activity[tm]
    if acts.size and int(acts.max()) >= len(meta.activities):
        raise DataError(f"{s.name}/truth_activity.u8: index {int(acts.max())} >= {len(meta.activities)} activities")


def present_steps(candidates: np.ndarray) -> np.ndarray:
    """Step rows that exist: absent steps are written as all-zero rows (same rule as the model)."""
    return np.any(candidates != 0, axis=-1)


def feature_stats(train: Split) -> "tuple[np.ndarray, np.ndarray]":
    """Per-feature mean and std over TRAIN rows that are present (real slot and present step).

    Computed in float64, one slot at a time to bound memory; std is floored at 1e-6 so a constant
    feature (such as the present flag) normalises to 0 instead of dividing by zero.
    """
    f = train.candidates.shape[-1]
    total = np.zeros(f, np.float64)
    total_sq = np.zeros(f, np.float64)
    count = 0
    for k in range(train.candidates.shape[1]):
        rows = train.candidates[:, k][train.cand_mask[:, k]].reshape(-1, f)
        rows = rows[present_steps(rows)].astype(np.float64)
        total += rows.sum(0)
        total_sq += (rows * rows).sum(0)
        count += rows.shape[0]
    if count == 0:
        raise DataError("train split has no present candidate rows")
    mean = total / count
    var = np.maximum(total_sq / count - mean * mean, 0.0)
    return mean.astype(np.float32), np.maximum(np.sqrt(var), 1e-6).astype(np.float32)


def activity_weights(train: Split, classes: int, cap: float) -> np.ndarray:
    """Inverse-frequency class weights over TRAIN true persons, capped so 'falling' counts
    without a handful of examples dominating the loss (an unseen class gets the cap)."""
    counts = np.bincount(train.truth_activity[train.truth_mask], minlength=classes).astype(np.float64)
    total = max(counts.sum(), 1.0)
    weights = np.where(counts > 0, total / (classes * np.maximum(counts, 1.0)), cap)
    return np.minimum(weights, cap).astype(np.float32)


def fall_pos_weight(train: Split, cap: float) -> float:
    """BCE positive weight for falls: negatives/positives among TRAIN true persons, capped."""
    falls = train.truth_fall[train.truth_mask]
    pos = float(falls.sum())
    if pos == 0:
        return 1.0
    return float(min(cap, (falls.size - pos) / pos))
