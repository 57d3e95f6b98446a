"""The per-candidate refiner network.

One candidate (a feature sequence of T steps, oldest first) in, the seven answers the service needs
out. It is deliberately small (~60k parameters) so it runs per candidate per frame on a CPU and
exports to plain ONNX opset 13 (MatMul/Gemm/Conv/Relu/Reduce*/Softmax/Sigmoid only).

Design choices, and why:
- Feature normalisation lives inside the model as buffers (``feat_mean``, ``feat_std``) so the ONNX
  takes the raw features the TypeScript front end computes; no second copy of the statistics.
- Absent steps are all-zero rows. The model derives the step mask itself (any raw feature non-zero)
  and zeroes normalised absent rows and every temporal layer's output there, so padding never looks
  like a (normalised, non-zero) measurement.
- Temporal context: a per-step Linear, then three residual dilated Conv1d (kernel 3, dilation
  1, 2, 4: a receptive field of 15 steps) instead of a GRU, which exports and runs more simply.
- Pooling: the last step (the current frame) concatenated with the mean over present steps.
- ReLU, not GELU: the Debian torch 1.13 build computes GELU wrongly on non-contiguous tensors
  (backward through the transpose/last-step select returned garbage up to 1e25, and NaN losses);
  ReLU is exact there and exports to a plain Relu.
- Heads are single Linear layers on a shared trunk, with stable names ``head_<output>``, so a later
  closed-form last-layer refit can load ``<out>.pt``, call ``trunk_features`` and replace
  ``head_*.weight`` / ``head_*.bias`` (see README.md).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Dict, Tuple

import torch
from torch import nn
import torch.nn.functional as fn

#: ONNX output names, in the order ``Refiner.forward`` returns them.
OUTPUT_NAMES: Tuple[str, ...] = ("person", "offset", "height", "heading", "activity", "fall", "skeleton")
INPUT_NAME = "candidates"


@dataclass(frozen=True)
class RefinerConfig:
    """Everything needed to rebuild the network (saved in the checkpoint)."""

    features: int
    steps: int
    activities: int = 5
    keypoints: int = 17
    width: int = 64
    trunk: int = 96
    dilations: Tuple[int, ...] = (1, 2, 4)
    #: dropout on the per-step embedding and on the trunk, while training only (none in the export)
    dropout: float = 0.0

    def to_dict(self) -> Dict[str, object]:
        d = asdict(self)
        d["dilations"] = list(self.dilations)
        return d

    @staticmethod
    def from_dict(d: Dict[str, object]) -> "RefinerConfig":
        d = dict(d)
        d["dilations"] = tuple(d.get("dilations", (1, 2, 4)))  # type: ignore[arg-type]
        return RefinerConfig(**d)  # type: ignore[arg-type]


class Refiner(nn.Module):
    """Candidate feature sequence [B, T, F] -> person, offset, height, heading, activity, fall, skeleton."""

    def __init__(self, cfg: RefinerConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.register_buffer("feat_mean", torch.zeros(cfg.features))
        self.register_buffer("feat_std", torch.ones(cfg.features))
        self.embed = nn.Linear(cfg.features, cfg.width)
        self.convs = nn.ModuleList(
            nn.Conv1d(cfg.width, cfg.width, kernel_size=3, dilation=d, padding=d) for d in cfg.dilations
        )
        self.trunk = nn.Linear(2 * cfg.width, cfg.trunk)
        h = cfg.trunk
        self.head_person = nn.Linear(h, 1)
        self.head_offset = nn.Linear(h, 2)
        self.head_height = nn.Linear(h, 1)
        self.head_heading = nn.Linear(h, 2)
        self.head_activity = nn.Linear(h, cfg.activities)
        self.head_fall = nn.Linear(h, 1)
        self.head_skeleton = nn.Linear(h, cfg.keypoints * 3)

    def set_normalisation(self, mean: torch.Tensor, std: torch.Tensor) -> None:
        """Install TRAIN feature statistics (std already floored at 1e-6 by the caller)."""
        self.feat_mean.copy_(mean)
        self.feat_std.copy_(torch.clamp(std, min=1e-6))

    def trunk_features(self, x: torch.Tensor) -> torch.Tensor:
        """Raw features [B, T, F] -> the shared trunk vector [B, trunk] every head reads."""
        present = (x.abs().sum(dim=-1) > 0).to(x.dtype)  # [B, T]
        m = present.unsqueeze(-1)  # [B, T, 1]
        z = (x - self.feat_mean) / self.feat_std * m
        h = fn.dropout(fn.relu(self.embed(z)), self.cfg.dropout, self.training) * m  # [B, T, W]
        hc = h.transpose(1, 2)  # [B, W, T]
        mc = present.unsqueeze(1)  # [B, 1, T]
        for conv in self.convs:
            hc = hc + fn.relu(conv(hc)) * mc
        last = hc[:, :, -1]
        mean = hc.sum(dim=2) / torch.clamp(present.sum(dim=1, keepdim=True), min=1.0)
        return fn.dropout(fn.relu(self.trunk(torch.cat([last, mean], dim=1))), self.cfg.dropout, self.training)

    def raw_heads(self, x: torch.Tensor) -> Dict[str, torch.Tensor]:
        """Pre-activation heads (logits, unnormalised heading) for numerically stable losses."""
        t = self.trunk_features(x)
        return {
            "person": self.head_person(t).squeeze(-1),
            "offset": self.head_offset(t),
            "height": self.head_height(t).squeeze(-1),
            "heading": self.head_heading(t),
            "activity": self.head_activity(t),
            "fall": self.head_fall(t).squeeze(-1),
            "skeleton": self.head_skeleton(t).reshape(-1, self.cfg.keypoints, 3),
        }

    def forward(self, x: torch.Tensor) -> Tuple[torch.Tensor, ...]:
        """The exported graph: probabilities and a unit heading, in OUTPUT_NAMES order."""
        return finalize(self.raw_heads(x))


def finalize(raw: Dict[str, torch.Tensor]) -> Tuple[torch.Tensor, ...]:
    """Raw heads -> service outputs (sigmoid, softmax, eps-guarded unit heading)."""
    hd = raw["heading"]
    heading = hd / torch.sqrt((hd * hd).sum(dim=-1, keepdim=True) + 1e-8)
    return (
        torch.sigmoid(raw["person"]),
        raw["offset"],
        raw["height"],
        heading,
        torch.softmax(raw["activity"], dim=-1),
        torch.sigmoid(raw["fall"]),
        raw["skeleton"],
    )


def count_params(model: nn.Module) -> int:
    """Trainable parameters (buffers such as the normalisation are not counted)."""
    return int(sum(p.numel() for p in model.parameters() if p.requires_grad))
