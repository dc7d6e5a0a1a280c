"""Writes the pictures docs/pictures/README.md shows, with dmlpy.pictures: ``python docs/pictures/make.py``.

tests/test_pictures.py checks that the checked-in files are what this script writes today.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

import dmlpy
from dmlpy import pictures

HERE = Path(__file__).resolve().parent


def decoder_graph() -> dmlpy.GraphProgram:
    g = dmlpy.GraphBuilder(backend="numpy")
    x = g.input("x", np.float32, (1, 8, 8, 8))
    w = g.input("w", np.float32, (8, 4, 4, 4), owned=True)
    y = g.conv_transpose(x, w, strides=2, start_padding=1, end_padding=1, activation=dmlpy.FusedActivation.relu())
    return g.compile({"y": g.space_to_depth(g.average_pooling(y, window=(2, 2), strides=(2, 2)), 2)})


PICTURES: dict[str, Callable[[], pictures.SVG]] = {
    # a 3-wide window at stride 2 over 6 inputs padded by 1 on each side, ceil shape: the last window overhangs
    "pooling_windows.svg": lambda: pictures.pooling_windows(input_size=6, window=3, strides=2, start_padding=1, end_padding=1, ceil_mode=True),
    "convolution_windows.svg": lambda: pictures.convolution_windows(input_size=6, kernel=3, strides=1, start_padding=1, end_padding=1, dilations=2),
    "backward_scatter.svg": lambda: pictures.backward_scatter(input_size=4, kernel=4, strides=2, start_padding=1, end_padding=1),
    "space_to_depth_dcr.svg": lambda: pictures.space_depth_blocks(channels=2, height=4, width=4, block_size=2, order="DEPTH_COLUMN_ROW"),
    "space_to_depth_crd.svg": lambda: pictures.space_depth_blocks(channels=2, height=4, width=4, block_size=2, order="COLUMN_ROW_DEPTH"),
    "layout_nhwc.svg": lambda: pictures.tensor_layout(sizes=(1, 3, 2, 2), strides=dmlpy.nhwc_strides((1, 3, 2, 2))),
    "layout_broadcast.svg": lambda: pictures.tensor_layout(sizes=(1, 3, 2, 2), strides=(0, 1, 0, 0)),
    "layout_padded_rows.svg": lambda: pictures.tensor_layout(sizes=(1, 1, 3, 3), strides=(15, 15, 5, 1)),
    "graph.svg": lambda: pictures.graph_picture(decoder_graph()),
}


def render() -> dict[str, str]:
    return {name: str(make()) for name, make in PICTURES.items()}


def main() -> int:
    for name, text in render().items():
        (HERE / name).write_text(text, encoding="utf-8")
        print(f"wrote {HERE / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
