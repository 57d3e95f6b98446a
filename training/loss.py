"""Set loss with per-frame Hungarian matching (DETR-style) between candidates and true people.

The front end proposes up to K candidates per frame; which candidate "is" which person is not given,
so each frame is matched first and the losses follow from the matching:

    cost[k, p] = || cand_xy[k] + offset_pred[k] - truth_xy[p] ||  +  lambda * (-log person_prob[k])

Pairs whose RAW candidate position is farther than ``gate`` metres from the person are forbidden (a
huge cost; any such pair the solver still returns is dropped), so the refiner is never asked to move
a candidate across the room onto someone another candidate missed. The solver (scipy's
``linear_sum_assignment``) then maximises the number of gated matches and, among those, minimises
the cost. Matching uses detached predictions, on CPU, per frame.

Matched candidates are positives (person target 1; offset, height, heading, activity, fall and
skeleton losses apply). Every other PRESENT candidate is a negative (person target 0, fall target 0).
Padding slots never enter the loss. Deliberate lie-downs need no special handling: they are people
with fall = 0 in the data, so the fall BCE already treats them as hard negatives.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Dict, Tuple

import numpy as np
import torch
import torch.nn.functional as fn
from scipy.optimize import linear_sum_assignment

from data import Split

FORBIDDEN = 1e6


@dataclass(frozen=True)
class LossWeights:
    """Weights of the loss terms (each term is a mean, so they are comparable in size).

    Defaults: offset and skeleton (metres, smooth-L1/L1) are weighted 2 because their raw values are
    a few centimetres to decimetres, small next to the BCE terms; heading and activity 0.5 because
    they matter less than position and count for the service.
    """

    person: float = 1.0
    offset: float = 2.0
    height: float = 1.0
    heading: float = 0.5
    activity: float = 0.5
    fall: float = 1.0
    skeleton: float = 2.0

    def to_dict(self) -> Dict[str, float]:
        return asdict(self)


@dataclass
class FrameBatch:
    """A set of frames, with their present candidates flattened (row-major over frame, slot)."""

    frames: np.ndarray  # [Bf] indices into the split
    x: torch.Tensor  # [M, T, F] raw features of present candidates
    frame_of: np.ndarray  # [M] index 0..Bf-1
    slot_of: np.ndarray  # [M] slot 0..K-1
    cand_pos: np.ndarray  # [Bf, K, 3]
    cand_mask: np.ndarray  # [Bf, K]
    truth_mask: np.ndarray  # [Bf, P]
    truth_pos: np.ndarray  # [Bf, P, 3]
    truth_heading: np.ndarray  # [Bf, P, 2]
    truth_activity: np.ndarray  # [Bf, P]
    truth_fall: np.ndarray  # [Bf, P]
    truth_skeleton: np.ndarray  # [Bf, P, J, 3]


def frame_batch(split: Split, frames: np.ndarray) -> FrameBatch:
    """Gather the frames' arrays and their present candidates' feature sequences."""
    cm = split.cand_mask[frames]
    frame_of, slot_of = np.nonzero(cm)
    x = split.candidates[frames[frame_of], slot_of]
    return FrameBatch(
        frames=frames,
        x=torch.from_numpy(np.ascontiguousarray(x)),
        frame_of=frame_of,
        slot_of=slot_of,
        cand_pos=split.cand_pos[frames],
        cand_mask=cm,
        truth_mask=split.truth_mask[frames],
        truth_pos=split.truth_pos[frames],
        truth_heading=split.truth_heading[frames],
        truth_activity=split.truth_activity[frames],
        truth_fall=split.truth_fall[frames],
        truth_skeleton=split.truth_skeleton[frames],
    )


def hungarian(cost: np.ndarray, allowed: np.ndarray, cand_mask: np.ndarray, truth_mask: np.ndarray) -> np.ndarray:
    """Per-frame assignment. cost/allowed [Bf, K, P]; returns [Bf, K] person index or -1."""
    match = np.full(cand_mask.shape, -1, dtype=np.int64)
    cost = np.where(allowed, cost, FORBIDDEN)
    for b in range(cost.shape[0]):
        rows = np.flatnonzero(cand_mask[b])
        cols = np.flatnonzero(truth_mask[b])
        if rows.size == 0 or cols.size == 0:
            continue
        sub = cost[b][np.ix_(rows, cols)]
        r, c = linear_sum_assignment(sub)
        ok = sub[r, c] < FORBIDDEN
        match[b, rows[r[ok]]] = cols[c[ok]]
    return match


def match_predicted(fb: FrameBatch, offset: np.ndarray, person_logit: np.ndarray, gate: float, lam: float) -> np.ndarray:
    """The training matching: refined floor distance + lambda * -log(person prob), gated on RAW distance.

    offset [M, 2] and person_logit [M] are detached predictions for the batch's present candidates.
    """
    if not (np.all(np.isfinite(offset)) and np.all(np.isfinite(person_logit))):
        raise FloatingPointError("non-finite predictions (training diverged; try a lower --lr)")
    bf, k = fb.cand_mask.shape
    off = np.zeros((bf, k, 2), np.float64)
    nlp = np.zeros((bf, k), np.float64)
    off[fb.frame_of, fb.slot_of] = offset
    nlp[fb.frame_of, fb.slot_of] = np.logaddexp(0.0, -person_logit.astype(np.float64))  # -log sigmoid
    cxy = fb.cand_pos[:, :, None, :2].astype(np.float64)
    txy = fb.truth_pos[:, None, :, :2].astype(np.float64)
    raw = np.linalg.norm(cxy - txy, axis=-1)  # [Bf, K, P]
    refined = np.linalg.norm(cxy + off[:, :, None, :] - txy, axis=-1)
    return hungarian(refined + lam * nlp[:, :, None], raw <= gate, fb.cand_mask, fb.truth_mask)


def match_raw(fb: FrameBatch, gate: float) -> np.ndarray:
    """The "no refiner" baseline matching: raw candidate floor distance only, same gate."""
    raw = np.linalg.norm(fb.cand_pos[:, :, None, :2] - fb.truth_pos[:, None, :, :2], axis=-1).astype(np.float64)
    return hungarian(raw, raw <= gate, fb.cand_mask, fb.truth_mask)


@dataclass
class Targets:
    """Loss targets for the batch's present candidates (M) and matched subset (Mp)."""

    person: torch.Tensor  # [M] 0/1
    fall: torch.Tensor  # [M] truth for matched, 0 for negatives
    pos_idx: torch.Tensor  # [Mp] rows of M that are matched
    offset: torch.Tensor  # [Mp, 2]
    height: torch.Tensor  # [Mp]
    heading: torch.Tensor  # [Mp, 2]
    activity: torch.Tensor  # [Mp] long
    skeleton: torch.Tensor  # [Mp, J, 3]


def build_targets(fb: FrameBatch, match: np.ndarray) -> Targets:
    """Turn a [Bf, K] matching into per-candidate targets."""
    p_of = match[fb.frame_of, fb.slot_of]
    pos = np.flatnonzero(p_of >= 0)
    fr, pp = fb.frame_of[pos], p_of[pos]
    fall = np.zeros(p_of.shape[0], np.float32)
    fall[pos] = fb.truth_fall[fr, pp]
    t = lambda a: torch.from_numpy(np.ascontiguousarray(a))  # noqa: E731
    return Targets(
        person=t((p_of >= 0).astype(np.float32)),
        fall=t(fall),
        pos_idx=t(pos.astype(np.int64)),
        offset=t((fb.truth_pos[fr, pp, :2] - fb.cand_pos[fr, fb.slot_of[pos], :2]).astype(np.float32)),
        height=t(fb.truth_pos[fr, pp, 2].astype(np.float32)),
        heading=t(fb.truth_heading[fr, pp].astype(np.float32)),
        activity=t(fb.truth_activity[fr, pp].astype(np.int64)),
        skeleton=t(fb.truth_skeleton[fr, pp].astype(np.float32)),
    )


def set_loss(
    raw: Dict[str, torch.Tensor],
    tg: Targets,
    w: LossWeights,
    activity_weight: torch.Tensor,
    fall_pos_weight: float,
    offset_beta: float = 0.1,
) -> Tuple[torch.Tensor, Dict[str, float]]:
    """Weighted sum of the terms; returns (total, per-term floats for logging).

    person/fall: BCE on every present candidate (fall positives weighted by ``fall_pos_weight``);
    the rest only on matched candidates: smooth-L1 offset and height (beta 0.1 m, i.e. L1 beyond
    10 cm), 1 - cosine heading, class-weighted cross-entropy activity, L1 skeleton (mean per joint
    coordinate). A batch without matches contributes only the person and fall terms.
    """
    parts: Dict[str, torch.Tensor] = {
        "person": fn.binary_cross_entropy_with_logits(raw["person"], tg.person),
        "fall": fn.binary_cross_entropy_with_logits(
            raw["fall"], tg.fall, pos_weight=torch.tensor(fall_pos_weight, dtype=raw["fall"].dtype)
        ),
    }
    if tg.pos_idx.numel() > 0:
        i = tg.pos_idx
        heading = fn.normalize(raw["heading"][i], dim=-1, eps=1e-8)
        parts["offset"] = fn.smooth_l1_loss(raw["offset"][i], tg.offset, beta=offset_beta)
        parts["height"] = fn.smooth_l1_loss(raw["height"][i], tg.height, beta=offset_beta)
        parts["heading"] = (1.0 - (heading * tg.heading).sum(-1)).mean()
        parts["activity"] = fn.cross_entropy(raw["activity"][i], tg.activity, weight=activity_weight)
        parts["skeleton"] = (raw["skeleton"][i] - tg.skeleton).abs().mean()
    weights = w.to_dict()
    total = sum(weights[name] * value for name, value in parts.items())
    return total, {name: float(value.detach()) for name, value in parts.items()}  # type: ignore[return-value]
