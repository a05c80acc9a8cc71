"""Make the PyTorch-exported models of test_byo_torch.py: PyTorch modules converted by litert-torch.

Not run by the suite (PyTorch and litert-torch are heavy and only this file needs
them); the .tflite files it writes are committed beside it. To remake them::

    python3 -m venv /tmp/torch-venv
    /tmp/torch-venv/bin/pip install torch==2.13.0 litert-torch==0.10.0
    /tmp/torch-venv/bin/python tests/tools/data/make_torch_models.py

The models are the ones a PyTorch user brings, channels-first inside, wrapped
with ``litert_torch.to_channel_last_io`` so the file takes an NHWC frame as the
sensor gives it:

- ``torch_yolov8.tflite``: a YOLOv8-layout detector (``[1, 4 + C, N]``, boxes in input pixels)
  with one object of class 1 at ``BOX`` whatever the input, plus low-scored spare candidates;
- ``torch_colour.tflite``: a classifier trained here, for a few hundred steps, to tell red, green
  and blue frames apart (softmax output).
"""

from __future__ import annotations

from pathlib import Path

import litert_torch
import numpy as np
import torch
from torch import nn

HERE = Path(__file__).resolve().parent
SIZE = 64
CLASSES = 2
BOX = (32.0, 24.0, 20.0, 16.0)


class Yolov8Like(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(1)
        self.conv = nn.Conv2d(3, 4 + CLASSES, 8, stride=8, bias=False)
        n = (SIZE // 8) ** 2
        base = torch.zeros(1, 4 + CLASSES, n)
        base[0, :4] = torch.tensor([[8.0], [8.0], [6.0], [6.0]])
        base[0, 4:] = 0.01
        base[0, :4, 0] = torch.tensor(BOX)
        base[0, 4 + 1, 0] = 0.98
        gain = torch.full((1, 4 + CLASSES, 1), 0.001)
        gain[0, :4] = 0.05
        self.register_buffer("base", base)
        self.register_buffer("gain", gain)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: 1 x 3 x SIZE x SIZE, pixels / 255
        feat = self.conv(x).flatten(2)  # 1 x (4 + C) x N
        return self.base + self.gain * feat


class ColourNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ReLU())
        self.head = nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: 1 x 3 x 32 x 48, pixels / 255
        return torch.softmax(self.head(self.features(x).mean(dim=(2, 3))), dim=-1)


def train_colour_net() -> ColourNet:
    torch.manual_seed(3)
    net = ColourNet()
    opt = torch.optim.Adam(net.parameters(), lr=0.03)
    rng = np.random.default_rng(3)
    for _ in range(300):
        labels = rng.integers(0, 3, 32)
        x = rng.uniform(0.0, 0.3, (32, 3, 32, 48)).astype(np.float32)
        x[np.arange(32), labels] += 0.6  # RGB channels: class 0 red, 1 green, 2 blue
        loss = nn.functional.nll_loss(torch.log(net(torch.from_numpy(x)) + 1e-6), torch.from_numpy(labels))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return net.eval()


def export(module: nn.Module, shape: tuple[int, ...], name: str) -> None:
    nhwc = litert_torch.to_channel_last_io(module.eval(), args=[0])
    sample = (torch.rand(1, shape[2], shape[3], shape[1]),)
    litert_torch.convert(nhwc, sample).export(str(HERE / name))


if __name__ == "__main__":
    export(Yolov8Like(), (1, 3, SIZE, SIZE), "torch_yolov8.tflite")
    export(train_colour_net(), (1, 3, 32, 48), "torch_colour.tflite")
