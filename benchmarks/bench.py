"""dmlpy against its peers, in one run: medians, GB/s against measured copy bandwidth, ratios.

    python benchmarks/bench.py                 # every workload, 1 thread and all cores
    python benchmarks/bench.py --filter pool   # workloads whose name contains "pool"
    python benchmarks/bench.py --json out.json

Peers: onnxruntime (CPU) and PyTorch when installed (`pip install torch==2.13.0`, optional).
The NumPy backend is timed too (it is the fallback, not a peer). Every implementation's output
is checked against the native one before its time counts. Timings are medians of repeated runs
on an already prepared operator (compiled, initialized and bound for dmlpy; a session with bound
inputs and outputs for onnxruntime), taken in rounds that alternate between the implementations of
a workload; the machine is shared, so compare ratios within one run. Convolution GFLOP/s count the
direct sum's 2 x multiply-adds, so a path that does fewer (Winograd) can exceed the matmul peak.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import dmlpy
from dmlpy import (
    DML_AVERAGE_POOLING_OPERATOR_DESC,
    DML_CONVOLUTION_DIRECTION,
    DML_CONVOLUTION_MODE,
    DML_CONVOLUTION_OPERATOR_DESC,
    DML_ELEMENT_WISE_ADD1_OPERATOR_DESC,
    DML_ELEMENT_WISE_ADD_OPERATOR_DESC,
    DML_ELEMENT_WISE_IDENTITY_OPERATOR_DESC,
    DML_GEMM_OPERATOR_DESC,
    DML_MATRIX_TRANSFORM,
    FusedActivation,
    buffer_tensor,
)

CORES = os.cpu_count() or 1


# ---------------------------------------------------------------------------------------
# Timing


def median_seconds(call: Callable[[], Any], *, min_time: float = 0.4, min_runs: int = 5, max_runs: int = 200, warmup: int = 2) -> float:
    for _ in range(warmup):
        call()
    samples: list[float] = []
    started = time.perf_counter()
    while len(samples) < min_runs or (time.perf_counter() - started < min_time and len(samples) < max_runs):
        t0 = time.perf_counter()
        call()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def interleaved_medians(calls: dict[str, Callable[[], Any]], *, rounds: int = 6, min_time: float = 0.4, min_runs: int = 5, max_runs: int = 200) -> dict[str, float]:
    """Median seconds per call of each implementation, timed in alternating rounds.

    On a shared machine the load drifts over seconds; timing one implementation after another
    lets a busy spell land on one of them and skew the ratio. Rounds spread every implementation
    over the same spells. Each burst starts after a pause, so the previous implementation's
    worker threads have stopped spinning, and drops its first call, which refills the caches.
    """
    samples: dict[str, list[float]] = {name: [] for name in calls}
    per_round_time, per_round_runs = min_time / rounds, max(1, -(-min_runs // rounds))
    for _ in range(rounds):
        for name, call in calls.items():
            time.sleep(0.05)
            call()
            burst: list[float] = []
            started = time.perf_counter()
            while len(burst) < per_round_runs or (time.perf_counter() - started < per_round_time and len(burst) < -(-max_runs // rounds)):
                t0 = time.perf_counter()
                call()
                burst.append(time.perf_counter() - t0)
            samples[name].extend(burst)
    return {name: statistics.median(times) for name, times in samples.items()}


_MATMUL_SCRIPT = r"""
import json, statistics, sys, time
import numpy as np
kernel = "unknown (threadpoolctl not installed)"
try:
    from threadpoolctl import threadpool_info
    kernel = "; ".join(f"{i.get('internal_api')} {i.get('version')} {i.get('architecture')}, {i.get('num_threads')} threads"
                       for i in threadpool_info() if i.get("user_api") == "blas") or "no BLAS found"
except ImportError:
    pass
a = np.random.default_rng(0).standard_normal((2048, 2048)).astype(np.float32)
b = np.random.default_rng(1).standard_normal((2048, 2048)).astype(np.float32)
c = np.empty_like(a)
for _ in range(2):
    np.matmul(a, b, out=c)
samples = []
started = time.perf_counter()
while len(samples) < 5 or (time.perf_counter() - started < 1.0 and len(samples) < 50):
    t0 = time.perf_counter()
    np.matmul(a, b, out=c)
    samples.append(time.perf_counter() - t0)
print(json.dumps({"gflops": 2 * 2048**3 / statistics.median(samples) / 1e9, "kernel": kernel}))
"""


def matmul_peak(threads: int) -> dict[str, Any]:
    """The machine's arithmetic yardstick: median GFLOP/s of np.matmul on two 2048x2048 float32 matrices.

    Measured in a subprocess with ``threads`` BLAS threads and without OPENBLAS_CORETYPE /
    OPENBLAS_L2_SIZE, which some environments set and which would pick a slower kernel (only for
    this measurement; the benchmark itself keeps the environment). ``kernel`` is what threadpoolctl
    reports about the BLAS in use, when it is installed.
    """
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
        env[name] = str(threads)
    try:
        done = subprocess.run([sys.executable, "-c", _MATMUL_SCRIPT], env=env, capture_output=True, text=True, timeout=300, check=True)
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (subprocess.SubprocessError, OSError, ValueError, IndexError) as error:
        return {"gflops": float("nan"), "kernel": f"not measured: {type(error).__name__}"}


def copy_bandwidth_gbs(megabytes: int = 256) -> float:
    """Bytes read + written per second by a single-threaded large np.copyto."""
    src = np.ones(megabytes * 2**20 // 8)
    dst = np.empty_like(src)
    seconds = median_seconds(lambda: np.copyto(dst, src), min_runs=5, min_time=0.5)
    return 2 * src.nbytes / seconds / 1e9


# ---------------------------------------------------------------------------------------
# Workloads


@dataclass
class Workload:
    name: str
    desc: Any
    inputs: dict[str, np.ndarray]
    onnx_model: Callable[[], Any] | None = None  # -> onnx.ModelProto
    onnx_inputs: Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]] | None = None
    torch_fn: Callable[[dict[str, Any]], Any] | None = None
    bytes_moved: int = 0
    notes: str = ""
    tolerance: float = 1e-4
    # Peers that work in another memory layout than the desc's logical (Sizes-order) arrays:
    torch_inputs: Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]] | None = None  # the arrays torch_fn gets
    peer_output: Callable[[np.ndarray], np.ndarray] | None = None  # a peer's output -> the desc's logical order (untimed)
    numpy_peer: Callable[[dict[str, np.ndarray]], tuple[Callable[[], None], Callable[[], np.ndarray]]] | None = None
    # Arithmetic work (2 x multiply-adds); > 0 adds GFLOP/s and % of the measured matmul peak to the table.
    flops: int = 0


def _pool_workload(name: str, shape: tuple[int, ...], window: int, stride: int, pad: int, *, include_padding: bool, dtype: Any = np.float32) -> Workload:
    spatial = len(shape) - 2
    out = dmlpy.average_pooling_output_sizes(shape, (window,) * spatial, (stride,) * spatial, (pad,) * spatial, (pad,) * spatial)
    desc = DML_AVERAGE_POOLING_OPERATOR_DESC(
        InputTensor=buffer_tensor(dtype, shape),
        OutputTensor=buffer_tensor(dtype, out),
        DimensionCount=spatial,
        Strides=(stride,) * spatial,
        WindowSize=(window,) * spatial,
        StartPadding=(pad,) * spatial,
        EndPadding=(pad,) * spatial,
        IncludePadding=include_padding,
    )
    x = np.random.default_rng(0).standard_normal(shape).astype(dtype)

    def onnx_model() -> Any:
        from onnx import TensorProto, helper  # noqa: PLC0415

        elem = TensorProto.FLOAT16 if dtype == np.float16 else TensorProto.FLOAT
        node = helper.make_node(
            "AveragePool", ["x"], ["y"], kernel_shape=[window] * spatial, strides=[stride] * spatial,
            pads=[pad] * (2 * spatial), count_include_pad=int(include_padding),
        )  # fmt: skip
        graph = helper.make_graph([node], name, [helper.make_tensor_value_info("x", elem, list(shape))], [helper.make_tensor_value_info("y", elem, list(out))])
        # IR 10 keeps the model loadable by onnxruntime releases older than the onnx package
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=10)

    def torch_fn(t: dict[str, Any]) -> Any:
        import torch.nn.functional as F  # noqa: N812, PLC0415

        pool = F.avg_pool2d if spatial == 2 else F.avg_pool3d
        return pool(t["InputTensor"], window, stride, pad, count_include_pad=include_padding)

    itemsize = np.dtype(dtype).itemsize
    return Workload(
        name, desc, {"InputTensor": x}, onnx_model, lambda i: {"x": i["InputTensor"]}, torch_fn,
        bytes_moved=(int(np.prod(shape)) + int(np.prod(out))) * itemsize, tolerance=2e-3 if dtype == np.float16 else 1e-4,
    )  # fmt: skip


def _max_pool_workload(name: str, shape: tuple[int, ...], window: int, stride: int, pad: int, *, dtype: Any = np.float32) -> Workload:
    """MAX_POOLING (values only, as ResNet's stem MaxPool) against MaxPool and F.max_pool2d."""
    spatial = len(shape) - 2
    out = dmlpy.average_pooling_output_sizes(shape, (window,) * spatial, (stride,) * spatial, (pad,) * spatial, (pad,) * spatial)
    desc = dmlpy.DML_MAX_POOLING_OPERATOR_DESC(
        InputTensor=buffer_tensor(dtype, shape), OutputTensor=buffer_tensor(dtype, out), DimensionCount=spatial,
        Strides=(stride,) * spatial, WindowSize=(window,) * spatial, StartPadding=(pad,) * spatial, EndPadding=(pad,) * spatial,
    )  # fmt: skip
    x = np.random.default_rng(0).standard_normal(shape).astype(dtype)

    def onnx_model() -> Any:
        from onnx import TensorProto, helper  # noqa: PLC0415

        elem = TensorProto.FLOAT16 if dtype == np.float16 else TensorProto.FLOAT
        node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[window] * spatial, strides=[stride] * spatial, pads=[pad] * (2 * spatial))
        graph = helper.make_graph([node], name, [helper.make_tensor_value_info("x", elem, list(shape))], [helper.make_tensor_value_info("y", elem, list(out))])
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=10)

    def torch_fn(t: dict[str, Any]) -> Any:
        import torch.nn.functional as F  # noqa: N812, PLC0415

        pool = F.max_pool2d if spatial == 2 else F.max_pool3d
        return pool(t["InputTensor"], window, stride, pad)

    itemsize = np.dtype(dtype).itemsize
    return Workload(
        name, desc, {"InputTensor": x}, onnx_model, lambda i: {"x": i["InputTensor"]}, torch_fn,
        bytes_moved=(int(np.prod(shape)) + int(np.prod(out))) * itemsize, tolerance=0.0,
    )  # fmt: skip


def pooling_workloads() -> list[Workload]:
    return [
        _max_pool_workload("maxpool 8x64x112x112 k3 s2 p1 fp32", (8, 64, 112, 112), 3, 2, 1),
        _pool_workload("avgpool 8x64x112x112 k3 s2 p1 excl-pad fp32", (8, 64, 112, 112), 3, 2, 1, include_padding=False),
        _pool_workload("avgpool 8x64x112x112 k3 s2 p1 incl-pad fp32", (8, 64, 112, 112), 3, 2, 1, include_padding=True),
        _pool_workload("avgpool 8x64x112x112 k3 s2 p1 excl-pad fp16", (8, 64, 112, 112), 3, 2, 1, include_padding=False, dtype=np.float16),
        _pool_workload("avgpool 1x256x56x56 k2 s2 fp32", (1, 256, 56, 56), 2, 2, 0, include_padding=False),
        _pool_workload("avgpool 1x512x14x14 k7 s1 fp32", (1, 512, 14, 14), 7, 1, 0, include_padding=False),
        _pool_workload("avgpool 5-D 1x32x32x56x56 k2 s2 fp32", (1, 32, 32, 56, 56), 2, 2, 0, include_padding=False),
    ]


def _space_depth_workload(to_depth: bool, shape: tuple[int, int, int, int], block: int, *, nhwc: bool = False, crd: bool = False) -> Workload:
    """Space-to-depth or depth-to-space of an fp32 NCHW ``shape`` (DML Sizes order), DCR unless ``crd``.

    ``nhwc``: both tensors in NHWC memory through Strides (TensorFlow's layout, one operator, no
    copies); the peers then get and give NHWC arrays. Peers: onnxruntime's SpaceToDepth /
    DepthToSpace (NCHW; CRD space-to-depth and NHWC as one Reshape-Transpose-Reshape, since ONNX
    has neither), PyTorch's pixel_unshuffle / pixel_shuffle (its order is CRD; DCR and NHWC as one
    view-permute-copy, faster here than pixel_unshuffle plus a channel regroup), NumPy's copy of
    the transposed view (single-threaded).
    """
    n, c, h, w = shape
    b = block
    out = dmlpy.space_to_depth_output_sizes(shape, b) if to_depth else dmlpy.depth_to_space_output_sizes(shape, b)
    cls: Any = (dmlpy.DML_SPACE_TO_DEPTH1_OPERATOR_DESC if to_depth else dmlpy.DML_DEPTH_TO_SPACE1_OPERATOR_DESC) if crd else (
        dmlpy.DML_SPACE_TO_DEPTH_OPERATOR_DESC if to_depth else dmlpy.DML_DEPTH_TO_SPACE_OPERATOR_DESC)  # fmt: skip
    fields = {"BlockSize": b, **({"Order": dmlpy.DML_DEPTH_SPACE_ORDER.COLUMN_ROW_DEPTH} if crd else {})}
    desc = cls(
        InputTensor=buffer_tensor(np.float32, shape, dmlpy.nhwc_strides(shape) if nhwc else None),
        OutputTensor=buffer_tensor(np.float32, out, dmlpy.nhwc_strides(out) if nhwc else None),
        **fields,
    )
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    # The peers' 6-D view of the input, its transpose, and the output shape, in the peers' layout.
    if nhwc:  # space [N, H, W, C] = [N, hs, b, ws, b, C]; depth [N, hs, ws, (b, b, C)]
        space6 = (n, h // b, b, w // b, b, c) if to_depth else (n, h, b, w, b, out[1])
        depth6 = (n, h // b, w // b, b, b, c) if to_depth else (n, h, w, b, b, out[1])
        peer_in, peer_out = (n, h, w, c), (out[0], out[2], out[3], out[1])
        axes = (0, 1, 3, 2, 4, 5)  # space6 <-> depth6, the same swap both ways
        src6, perm = (space6, axes) if to_depth else (depth6, axes)
    else:  # space [N, C, H, W] = [N, C, hs, b, ws, b]; depth DCR [N, (b, b, C), hs, ws], CRD [N, (C, b, b), hs, ws]
        cs = c if to_depth else out[1]
        hs, ws = (h // b, w // b) if to_depth else (h, w)
        space6 = (n, cs, hs, b, ws, b)
        depth6 = (n, cs, b, b, hs, ws) if crd else (n, b, b, cs, hs, ws)
        peer_in, peer_out = shape, out
        if to_depth:
            src6, perm = space6, ((0, 1, 3, 5, 2, 4) if crd else (0, 3, 5, 1, 2, 4))
        else:
            src6, perm = depth6, ((0, 1, 4, 2, 5, 3) if crd else (0, 3, 4, 1, 5, 2))
    to_peer = (lambda a: np.ascontiguousarray(a.transpose(0, 2, 3, 1))) if nhwc else (lambda a: a)
    from_peer = (lambda a: a.transpose(0, 3, 1, 2)) if nhwc else None

    def onnx_model() -> Any:
        from onnx import TensorProto, helper  # noqa: PLC0415

        value_in = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(peer_in))
        value_out = helper.make_tensor_value_info("y", TensorProto.FLOAT, list(peer_out))
        if not nhwc and not (crd and to_depth):
            attributes: dict[str, Any] = {"blocksize": b}
            if not to_depth:
                attributes["mode"] = "CRD" if crd else "DCR"
            nodes, initializers = [helper.make_node("SpaceToDepth" if to_depth else "DepthToSpace", ["x"], ["y"], **attributes)], []
        else:  # ONNX has no NHWC mode and no CRD SpaceToDepth: one transpose between two free reshapes
            nodes = [
                helper.make_node("Reshape", ["x", "shape6"], ["x6"]),
                helper.make_node("Transpose", ["x6"], ["t6"], perm=list(perm)),
                helper.make_node("Reshape", ["t6", "shape_out"], ["y"]),
            ]
            initializers = [
                helper.make_tensor("shape6", TensorProto.INT64, [6], list(src6)),
                helper.make_tensor("shape_out", TensorProto.INT64, [4], list(peer_out)),
            ]
        graph = helper.make_graph(nodes, "space_depth", [value_in], [value_out], initializer=initializers)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=10)

    def torch_fn(t: dict[str, Any]) -> Any:
        import torch.nn.functional as F  # noqa: N812, PLC0415

        xt = t["InputTensor"]
        if crd and not nhwc:
            return F.pixel_unshuffle(xt, b) if to_depth else F.pixel_shuffle(xt, b)
        return xt.view(src6).permute(perm).reshape(peer_out)

    def numpy_peer(inputs: dict[str, np.ndarray]) -> tuple[Callable[[], None], Callable[[], np.ndarray]]:
        source = to_peer(inputs["InputTensor"]).reshape(src6).transpose(perm)
        result = np.empty(peer_out, dtype=np.float32)
        target = result.reshape(source.shape)
        return (lambda: np.copyto(target, source)), (lambda: result)

    layout = "NHWC strides" if nhwc else "NCHW"
    name = f"{'space-to-depth' if to_depth else 'depth-to-space'} {'x'.join(map(str, shape))} b{b} {'CRD' if crd else 'DCR'} {layout} fp32"
    return Workload(
        name, desc, {"InputTensor": x}, onnx_model, lambda i: {"x": to_peer(i["InputTensor"])}, torch_fn,
        bytes_moved=2 * x.nbytes, notes=layout, tolerance=0.0,
        torch_inputs=lambda i: {"InputTensor": to_peer(i["InputTensor"])}, peer_output=from_peer, numpy_peer=numpy_peer,
    )  # fmt: skip


def space_depth_workloads() -> list[Workload]:
    """Space-to-depth 8x64x112x112 (B = 2) and 1x16x512x512 (B = 4), NCHW and NHWC, and depth-to-space back."""
    return [
        _space_depth_workload(True, (8, 64, 112, 112), 2),
        _space_depth_workload(True, (1, 16, 512, 512), 4),
        _space_depth_workload(True, (8, 64, 112, 112), 2, nhwc=True),
        _space_depth_workload(True, (1, 16, 512, 512), 4, nhwc=True),
        _space_depth_workload(False, (8, 256, 56, 56), 2),
        _space_depth_workload(False, (1, 256, 128, 128), 4),
        _space_depth_workload(False, (8, 256, 56, 56), 2, nhwc=True),
        _space_depth_workload(False, (1, 256, 128, 128), 4, nhwc=True),
        _space_depth_workload(True, (8, 64, 112, 112), 2, crd=True),
        _space_depth_workload(False, (8, 256, 56, 56), 2, crd=True),
    ]


def _conv_workload(name: str, shape: tuple[int, ...], out_channels: int, kernel: int, stride: int, pad: int, *, backward: bool = True,
                   groups: int = 1, output_padding: int = 0, dtype: Any = np.float32) -> Workload:
    """A CROSS_CORRELATION convolution without bias: BACKWARD = ONNX ConvTranspose / torch conv_transpose, FORWARD = Conv.

    ``output_padding`` is ONNX's / PyTorch's: DirectML gets OutputPadding 0 and the enlarged output, as onnxruntime's
    DirectML provider does. Weights are scaled by 1/sqrt(fan-in) so outputs are O(1) for the agreement check.
    """
    spatial = len(shape) - 2
    n, cin = shape[0], shape[1]
    k, s, p = (kernel,) * spatial, (stride,) * spatial, (pad,) * spatial
    if backward:
        wshape = (cin, out_channels // groups, *k)
        out_spatial = [(i - 1) * stride + kernel - 2 * pad + output_padding for i in shape[2:]]
        macs = int(np.prod(shape)) * (out_channels // groups) * kernel**spatial
    else:
        wshape = (out_channels, cin // groups, *k)
        out_spatial = [(i + 2 * pad - kernel) // stride + 1 for i in shape[2:]]
        macs = n * out_channels * int(np.prod(out_spatial)) * (cin // groups) * kernel**spatial
    out = (n, out_channels, *out_spatial)
    desc = DML_CONVOLUTION_OPERATOR_DESC(
        InputTensor=buffer_tensor(dtype, shape),
        FilterTensor=buffer_tensor(dtype, wshape),
        BiasTensor=None,
        OutputTensor=buffer_tensor(dtype, out),
        Mode=DML_CONVOLUTION_MODE.CROSS_CORRELATION,
        Direction=DML_CONVOLUTION_DIRECTION.BACKWARD if backward else DML_CONVOLUTION_DIRECTION.FORWARD,
        DimensionCount=spatial,
        Strides=s,
        Dilations=(1,) * spatial,
        StartPadding=p,
        EndPadding=p,
        OutputPadding=(0,) * spatial,
        GroupCount=groups,
    )
    rng = np.random.default_rng(0)
    fan_in = cin // groups * kernel**spatial
    x = rng.standard_normal(shape).astype(dtype)
    w = (rng.standard_normal(wshape) / np.sqrt(fan_in)).astype(dtype)

    def onnx_model() -> Any:
        from onnx import TensorProto, helper  # noqa: PLC0415

        elem = TensorProto.FLOAT16 if dtype == np.float16 else TensorProto.FLOAT
        attributes: dict[str, Any] = {"kernel_shape": list(k), "strides": list(s), "pads": list(p) * 2, "group": groups}
        if output_padding:
            attributes["output_padding"] = [output_padding] * spatial
        node = helper.make_node("ConvTranspose" if backward else "Conv", ["x", "w"], ["y"], **attributes)
        graph = helper.make_graph(
            [node], "conv",
            [helper.make_tensor_value_info("x", elem, list(shape)), helper.make_tensor_value_info("w", elem, list(wshape))],
            [helper.make_tensor_value_info("y", elem, list(out))],
        )  # fmt: skip
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=10)

    def torch_fn(t: dict[str, Any]) -> Any:
        import torch.nn.functional as F  # noqa: N812, PLC0415

        xt, wt = t["InputTensor"], t["FilterTensor"]
        if not backward:
            return F.conv2d(xt, wt, None, stride, pad, 1, groups)
        transpose = F.conv_transpose2d if spatial == 2 else F.conv_transpose3d
        return transpose(xt, wt, None, stride, pad, output_padding, groups)

    itemsize = np.dtype(dtype).itemsize
    return Workload(
        name, desc, {"InputTensor": x, "FilterTensor": w}, onnx_model, lambda i: {"x": i["InputTensor"], "w": i["FilterTensor"]}, torch_fn,
        bytes_moved=(x.size + w.size + int(np.prod(out))) * itemsize, tolerance=1e-2 if dtype == np.float16 else 1e-4, flops=2 * macs,
    )  # fmt: skip


def convolution_workloads() -> list[Workload]:
    """Transposed convolutions (decoder layers, depthwise, output_padding, 3-D) and forward ones (56x56 and few-position stages)."""
    return [
        _conv_workload("conv backward 1x256x32x32->128 k4 s2 p1 fp32", (1, 256, 32, 32), 128, 4, 2, 1),
        _conv_workload("conv backward 1x256x32x32->128 k4 s2 p1 fp16", (1, 256, 32, 32), 128, 4, 2, 1, dtype=np.float16),
        _conv_workload("conv backward 8x64x56x56->32 k3 s1 p1 fp32", (8, 64, 56, 56), 32, 3, 1, 1),
        _conv_workload("conv backward depthwise 1x128x64x64 g128 k4 s2 p1 fp32", (1, 128, 64, 64), 128, 4, 2, 1, groups=128),
        _conv_workload("conv backward 1x64x32x32->32 k3 s2 p1 output_padding 1 fp32", (1, 64, 32, 32), 32, 3, 2, 1, output_padding=1),
        _conv_workload("conv backward 1x128x28x28->64 k3 s2 p1 output_padding 1 fp32", (1, 128, 28, 28), 64, 3, 2, 1, output_padding=1),
        _conv_workload("conv backward 3-D 1x64x16x32x32->32 k2 s2 fp32", (1, 64, 16, 32, 32), 32, 2, 2, 0),
        _conv_workload("conv forward 1x64x56x56->64 k3 s1 p1 fp32", (1, 64, 56, 56), 64, 3, 1, 1, backward=False),
        # few output positions, many channels (the late stages of ResNets): the filter is the large operand
        _conv_workload("conv forward 1x512x7x7->512 k3 s1 p1 fp32", (1, 512, 7, 7), 512, 3, 1, 1, backward=False),
        _conv_workload("conv forward 1x256x14x14->1024 k1 s1 p0 fp32", (1, 256, 14, 14), 1024, 1, 1, 0, backward=False),
        _conv_workload("conv forward 1x128x4x4->128 k3 s1 p1 fp32", (1, 128, 4, 4), 128, 3, 1, 1, backward=False),
    ]


def _add_relu_workload(name: str, shape: tuple[int, ...], dtype: Any = np.float32) -> Workload:
    """A ResNet block's residual join: ELEMENT_WISE_ADD1 with a fused RELU; peers: onnxruntime Add + Relu, torch add + relu_."""
    a, b = (np.random.default_rng(seed).standard_normal(shape).astype(dtype) for seed in (0, 1))
    desc = DML_ELEMENT_WISE_ADD1_OPERATOR_DESC(buffer_tensor(dtype, shape), buffer_tensor(dtype, shape), buffer_tensor(dtype, shape), FusedActivation.relu())

    def onnx_model() -> Any:
        from onnx import TensorProto, helper  # noqa: PLC0415

        elem = TensorProto.FLOAT16 if dtype == np.float16 else TensorProto.FLOAT
        nodes = [helper.make_node("Add", ["a", "b"], ["s"]), helper.make_node("Relu", ["s"], ["y"])]
        inputs = [helper.make_tensor_value_info(n, elem, list(shape)) for n in ("a", "b")]
        graph = helper.make_graph(nodes, name, inputs, [helper.make_tensor_value_info("y", elem, list(shape))])
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=10)

    def torch_fn(t: dict[str, Any]) -> Any:
        import torch  # noqa: PLC0415

        return torch.relu_(torch.add(t["ATensor"], t["BTensor"]))

    return Workload(
        name, desc, {"ATensor": a, "BTensor": b}, onnx_model, lambda i: {"a": i["ATensor"], "b": i["BTensor"]}, torch_fn,
        bytes_moved=3 * a.nbytes, tolerance=1e-3 if dtype == np.float16 else 1e-6,
    )  # fmt: skip


def _bias_add_workload(name: str, shape: tuple[int, int, int, int]) -> Workload:
    """x + bias[c] over NCHW: the bias is a {1, C, 1, 1} tensor broadcast by strides {0, 1, 0, 0}."""
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    bias = np.random.default_rng(1).standard_normal((1, shape[1], 1, 1)).astype(np.float32)
    desc = DML_ELEMENT_WISE_ADD_OPERATOR_DESC(buffer_tensor(np.float32, shape), buffer_tensor(np.float32, shape, (0, 1, 0, 0)), buffer_tensor(np.float32, shape))

    def onnx_model() -> Any:
        from onnx import TensorProto, helper  # noqa: PLC0415

        inputs = [helper.make_tensor_value_info("a", TensorProto.FLOAT, list(shape)), helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, shape[1], 1, 1])]
        graph = helper.make_graph([helper.make_node("Add", ["a", "b"], ["y"])], name, inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(shape))])
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=10)

    def torch_fn(t: dict[str, Any]) -> Any:
        return t["ATensor"] + t["BTensor"]

    return Workload(
        name, desc, {"ATensor": x, "BTensor": np.broadcast_to(bias, shape)}, onnx_model, lambda i: {"a": i["ATensor"], "b": i["BTensor"][:, :, :1, :1]}, torch_fn,
        bytes_moved=2 * x.nbytes + bias.nbytes, tolerance=1e-6, torch_inputs=lambda i: {"ATensor": i["ATensor"], "BTensor": i["BTensor"][:, :, :1, :1]},
    )  # fmt: skip


def _nchw_to_nhwc_workload(name: str, shape: tuple[int, int, int, int]) -> Workload:
    """ELEMENT_WISE_IDENTITY from NCHW into an NHWC-strided output: a transpose; peers Transpose / permute().contiguous()."""
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    desc = DML_ELEMENT_WISE_IDENTITY_OPERATOR_DESC(buffer_tensor(np.float32, shape), buffer_tensor(np.float32, shape, dmlpy.nhwc_strides(shape)))
    nhwc = (shape[0], shape[2], shape[3], shape[1])

    def onnx_model() -> Any:
        from onnx import TensorProto, helper  # noqa: PLC0415

        node = helper.make_node("Transpose", ["x"], ["y"], perm=[0, 2, 3, 1])
        graph = helper.make_graph([node], name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))], [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(nhwc))])
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=10)

    def torch_fn(t: dict[str, Any]) -> Any:
        return t["InputTensor"].permute(0, 2, 3, 1).contiguous()

    def numpy_peer(inputs: dict[str, np.ndarray]) -> tuple[Callable[[], None], Callable[[], np.ndarray]]:
        target = np.empty(nhwc, np.float32)
        source = inputs["InputTensor"].transpose(0, 2, 3, 1)
        return (lambda: np.copyto(target, source)), (lambda: target)

    return Workload(
        name, desc, {"InputTensor": x}, onnx_model, lambda i: {"x": i["InputTensor"]}, torch_fn, bytes_moved=2 * x.nbytes, tolerance=0.0,
        peer_output=lambda y: y.transpose(0, 3, 1, 2), numpy_peer=numpy_peer,
    )  # fmt: skip


def _channel_shuffle_workload(name: str, shape: tuple[int, int, int, int], groups: int) -> Workload:
    """ShuffleNet's channel shuffle: {N, G, C/G, H, W} -> {N, C/G, G, H, W}, an ELEMENT_WISE_IDENTITY whose 5-D input
    reads the grouped tensor through permuted strides; peers Transpose(perm 0,2,1,3,4) / transpose(1, 2).contiguous()."""
    n, c, h, w = shape
    grouped = (n, groups, c // groups, h, w)
    shuffled = (n, c // groups, groups, h, w)
    packed = dmlpy.packed_strides(grouped)
    x = np.random.default_rng(0).standard_normal(grouped).astype(np.float32)
    read_shuffled = (packed[0], packed[2], packed[1], packed[3], packed[4])
    desc = DML_ELEMENT_WISE_IDENTITY_OPERATOR_DESC(buffer_tensor(np.float32, shuffled, read_shuffled), buffer_tensor(np.float32, shuffled))

    def onnx_model() -> Any:
        from onnx import TensorProto, helper  # noqa: PLC0415

        node = helper.make_node("Transpose", ["x"], ["y"], perm=[0, 2, 1, 3, 4])
        graph = helper.make_graph([node], name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(grouped))], [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(shuffled))])
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=10)

    def torch_fn(t: dict[str, Any]) -> Any:
        return t["InputTensor"].transpose(1, 2).contiguous()

    return Workload(
        name, desc, {"InputTensor": x.transpose(0, 2, 1, 3, 4)}, onnx_model, lambda i: {"x": x}, torch_fn, bytes_moved=2 * x.nbytes, tolerance=0.0,
        torch_inputs=lambda i: {"InputTensor": x},
    )  # fmt: skip


def element_wise_workloads() -> list[Workload]:
    return [
        _add_relu_workload("add+relu 1x256x56x56 fp32 (ResNet-50 block)", (1, 256, 56, 56)),
        _add_relu_workload("add+relu 1x256x56x56 fp16", (1, 256, 56, 56), np.float16),
        _add_relu_workload("add+relu 8x256x56x56 fp32 (out of cache)", (8, 256, 56, 56)),
        _bias_add_workload("bias add 1x256x56x56 fp32 (per-channel broadcast)", (1, 256, 56, 56)),
        _nchw_to_nhwc_workload("identity NCHW->NHWC 1x256x56x56 fp32 (transpose)", (1, 256, 56, 56)),
        _channel_shuffle_workload("channel shuffle 5-D 1x2x116x28x28 -> 1x116x2x28x28 fp32 (ShuffleNet v2)", (1, 232, 28, 28), 2),
        _channel_shuffle_workload("channel shuffle 5-D 8x2x116x28x28 -> 8x116x2x28x28 fp32 (batch 8)", (8, 232, 28, 28), 2),
    ]


def _resize_workload(name: str, shape: tuple[int, ...], factor: int, *, nhwc: bool = False, dtype: Any = np.float32) -> Workload:
    """Bilinear upsampling by ``factor`` at pixel centres (RESAMPLE3 LINEAR, offsets 0.5 and -0.5): ONNX Resize
    linear half_pixel, PyTorch's F.interpolate bilinear with align_corners=False. ``nhwc``: both tensors in NHWC
    memory through Strides; PyTorch then gets a channels_last tensor, onnxruntime (NCHW only) the NCHW array."""
    out = (shape[0], shape[1], shape[2] * factor, shape[3] * factor)
    scales = (1.0, 1.0, float(factor), float(factor))
    desc = dmlpy.DML_RESAMPLE3_OPERATOR_DESC(
        InputTensor=buffer_tensor(dtype, shape, dmlpy.nhwc_strides(shape) if nhwc else None),
        OutputTensor=buffer_tensor(dtype, out, dmlpy.nhwc_strides(out) if nhwc else None),
        InterpolationMode=dmlpy.DML_INTERPOLATION_MODE.LINEAR,
        RoundingDirection=dmlpy.DML_AXIS_DIRECTION.INCREASING,
        DimensionCount=4,
        Scales=scales,
        InputPixelOffsets=(0.5,) * 4,
        OutputPixelOffsets=(-0.5,) * 4,
        Antialiased=False,
    )
    x = np.random.default_rng(0).standard_normal(shape).astype(dtype)

    def onnx_model() -> Any:
        from onnx import TensorProto, helper, numpy_helper  # noqa: PLC0415

        elem = TensorProto.FLOAT16 if dtype == np.float16 else TensorProto.FLOAT
        node = helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="linear", coordinate_transformation_mode="half_pixel")
        graph = helper.make_graph(
            [node], name, [helper.make_tensor_value_info("x", elem, list(shape))], [helper.make_tensor_value_info("y", elem, list(out))],
            initializer=[numpy_helper.from_array(np.array(scales, np.float32), "scales")],
        )  # fmt: skip
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=10)

    def torch_fn(t: dict[str, Any]) -> Any:
        import torch.nn.functional as F  # noqa: N812, PLC0415

        xt = t["InputTensor"].permute(0, 3, 1, 2) if nhwc else t["InputTensor"]  # NHWC memory: a channels_last NCHW view
        return F.interpolate(xt, scale_factor=factor, mode="bilinear", align_corners=False)

    itemsize = np.dtype(dtype).itemsize
    return Workload(
        name, desc, {"InputTensor": x}, onnx_model, lambda i: {"x": np.ascontiguousarray(i["InputTensor"])}, torch_fn,
        bytes_moved=(x.size + int(np.prod(out))) * itemsize, notes="NHWC strides" if nhwc else "NCHW",
        tolerance=2e-3 if dtype == np.float16 else 1e-5,
        torch_inputs=(lambda i: {"InputTensor": np.ascontiguousarray(i["InputTensor"].transpose(0, 2, 3, 1))}) if nhwc else None,
    )  # fmt: skip


def resize_workloads() -> list[Workload]:
    """2x bilinear upsampling at pixel centres, the resize decoders and feature pyramids use."""
    return [
        _resize_workload("resize 2x bilinear 1x64x56x56->1x64x112x112 half_pixel fp32", (1, 64, 56, 56), 2),
        _resize_workload("resize 2x bilinear 1x64x56x56 NHWC strides half_pixel fp32", (1, 64, 56, 56), 2, nhwc=True),
    ]


def _onnx_single_node(name: str, op: str, inputs: dict[str, np.ndarray], out_shape: tuple[int, ...], opset: int, **attrs: Any) -> Any:
    """A one-node float32 ONNX model whose inputs are ``inputs`` (in order) and whose output is ``y``."""
    from onnx import TensorProto, helper  # noqa: PLC0415

    node = helper.make_node(op, list(inputs), ["y"], **attrs)
    graph = helper.make_graph(
        [node], name, [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v.shape)) for k, v in inputs.items()],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(out_shape))],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def _batch_norm_workload(shape: tuple[int, int, int, int], epsilon: float = 1e-5) -> Workload:
    from dmlpy.operators.normalization import DML_BATCH_NORMALIZATION_OPERATOR_DESC  # noqa: PLC0415

    rng = np.random.default_rng(0)
    channels = shape[1]
    params = (1, channels, 1, 1)
    x = rng.standard_normal(shape).astype(np.float32)
    mean, scale, bias = (rng.standard_normal(params).astype(np.float32) for _ in range(3))
    variance = rng.uniform(0.5, 2.0, params).astype(np.float32)
    f32 = np.float32
    desc = DML_BATCH_NORMALIZATION_OPERATOR_DESC(
        buffer_tensor(f32, shape), buffer_tensor(f32, params), buffer_tensor(f32, params), buffer_tensor(f32, params), buffer_tensor(f32, params),
        buffer_tensor(f32, shape), Spatial=True, Epsilon=epsilon,
    )  # fmt: skip
    inputs = {"InputTensor": x, "MeanTensor": mean, "VarianceTensor": variance, "ScaleTensor": scale, "BiasTensor": bias}

    def onnx_inputs(i: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {"x": i["InputTensor"], "scale": i["ScaleTensor"].ravel(), "b": i["BiasTensor"].ravel(), "mean": i["MeanTensor"].ravel(), "var": i["VarianceTensor"].ravel()}

    def torch_fn(t: dict[str, Any]) -> Any:
        import torch.nn.functional as F  # noqa: N812, PLC0415

        flat = {k: t[k].reshape(-1) for k in ("MeanTensor", "VarianceTensor", "ScaleTensor", "BiasTensor")}
        return F.batch_norm(t["InputTensor"], flat["MeanTensor"], flat["VarianceTensor"], flat["ScaleTensor"], flat["BiasTensor"], training=False, eps=epsilon)

    name = "batchnorm " + "x".join(map(str, shape)) + " fp32"
    return Workload(
        name, desc, inputs, lambda: _onnx_single_node(name, "BatchNormalization", onnx_inputs(inputs), shape, 15, epsilon=epsilon), onnx_inputs, torch_fn,
        bytes_moved=2 * x.nbytes,
    )  # fmt: skip


def _layer_norm_workload(shape: tuple[int, int], epsilon: float = 1e-5) -> Workload:
    from dmlpy.operators.normalization import DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC  # noqa: PLC0415

    rng = np.random.default_rng(0)
    params = (1, shape[1])
    x = rng.standard_normal(shape).astype(np.float32)
    scale, bias = (rng.standard_normal(params).astype(np.float32) for _ in range(2))
    f32 = np.float32
    desc = DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC(
        buffer_tensor(f32, shape), buffer_tensor(f32, params), buffer_tensor(f32, params), buffer_tensor(f32, shape),
        Axes=[1], NormalizeVariance=True, Epsilon=epsilon,
    )  # fmt: skip
    inputs = {"InputTensor": x, "ScaleTensor": scale, "BiasTensor": bias}

    def onnx_inputs(i: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {"x": i["InputTensor"], "scale": i["ScaleTensor"].ravel(), "b": i["BiasTensor"].ravel()}

    def torch_fn(t: dict[str, Any]) -> Any:
        import torch.nn.functional as F  # noqa: N812, PLC0415

        return F.layer_norm(t["InputTensor"], (shape[1],), t["ScaleTensor"].reshape(-1), t["BiasTensor"].reshape(-1), eps=epsilon)

    name = "layernorm " + "x".join(map(str, shape)) + " (MVN1 last axis, scale+bias) fp32"
    return Workload(
        name, desc, inputs, lambda: _onnx_single_node(name, "LayerNormalization", onnx_inputs(inputs), shape, 17, axis=-1, epsilon=epsilon), onnx_inputs, torch_fn,
        bytes_moved=2 * x.nbytes,
    )  # fmt: skip


def _softmax_workload(shape: tuple[int, ...]) -> Workload:
    from dmlpy.operators.activation import DML_ACTIVATION_SOFTMAX1_OPERATOR_DESC  # noqa: PLC0415

    x = (np.random.default_rng(0).standard_normal(shape) * 4).astype(np.float32)
    desc = DML_ACTIVATION_SOFTMAX1_OPERATOR_DESC(buffer_tensor(np.float32, shape), buffer_tensor(np.float32, shape), Axes=[len(shape) - 1])

    def torch_fn(t: dict[str, Any]) -> Any:
        import torch  # noqa: PLC0415

        return torch.softmax(t["InputTensor"], -1)

    name = "softmax " + "x".join(map(str, shape)) + " last axis fp32"
    return Workload(
        name, desc, {"InputTensor": x}, lambda: _onnx_single_node(name, "Softmax", {"x": x}, shape, 13, axis=-1), lambda i: {"x": i["InputTensor"]}, torch_fn,
        bytes_moved=2 * x.nbytes, tolerance=1e-5,
    )  # fmt: skip


def normalization_workloads() -> list[Workload]:
    """The normalizations of real models: a ResNet BatchNorm, a ViT-B LayerNorm (197 tokens), a BERT-base LayerNorm
    over a batch (8 sequences of 128 tokens as 1024 rows) and ViT-B's attention softmax."""
    return [
        _batch_norm_workload((1, 256, 56, 56)), _layer_norm_workload((197, 768)), _layer_norm_workload((1024, 768)),
        _softmax_workload((12, 197, 197)),
    ]  # fmt: skip


def _reduce_workload(kind: str, shape: tuple[int, ...], axes: list[int], *, note: str = "") -> Workload:
    """ReduceMean / ReduceSum (REDUCE AVERAGE / SUM) or ArgMax (ARGMAX, an INT64 index) over ``axes`` with keepdims,
    as onnxruntime's DirectML provider lowers them."""
    from onnx import TensorProto, helper  # noqa: PLC0415

    from dmlpy.enums import DML_REDUCE_FUNCTION  # noqa: PLC0415
    from dmlpy.operators.reduction import DML_ARGMAX_OPERATOR_DESC, DML_REDUCE_OPERATOR_DESC  # noqa: PLC0415

    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    out_shape = tuple(1 if i in axes else s for i, s in enumerate(shape))
    f32 = np.float32
    if kind == "argmax":
        desc: Any = DML_ARGMAX_OPERATOR_DESC(buffer_tensor(f32, shape), buffer_tensor(np.int64, out_shape), len(axes), axes)
    else:
        function = DML_REDUCE_FUNCTION.AVERAGE if kind == "mean" else DML_REDUCE_FUNCTION.SUM
        desc = DML_REDUCE_OPERATOR_DESC(function, buffer_tensor(f32, shape), buffer_tensor(f32, out_shape), len(axes), axes)
    name = {"mean": "reduce mean", "sum": "reduce sum", "argmax": "reduce argmax"}[kind] + " " + "x".join(map(str, shape)) + f" axes {axes}{note} fp32"

    def onnx_model() -> Any:
        if kind == "argmax":  # an INT64 output, opset 13's axis attribute
            node = helper.make_node("ArgMax", ["x"], ["y"], axis=axes[0], keepdims=1)
            out_type = TensorProto.INT64
        else:  # opset 11: axes is an attribute of both
            node = helper.make_node("ReduceMean" if kind == "mean" else "ReduceSum", ["x"], ["y"], axes=axes, keepdims=1)
            out_type = TensorProto.FLOAT
        graph = helper.make_graph([node], name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                                  [helper.make_tensor_value_info("y", out_type, list(out_shape))])  # fmt: skip
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13 if kind == "argmax" else 11)], ir_version=10)

    def torch_fn(t: dict[str, Any]) -> Any:
        import torch  # noqa: PLC0415

        v = t["InputTensor"]
        if kind == "argmax":
            return torch.argmax(v, dim=axes[0], keepdim=True)
        return v.mean(dim=axes, keepdim=True) if kind == "mean" else v.sum(dim=axes, keepdim=True)

    return Workload(name, desc, {"InputTensor": x}, onnx_model, lambda i: {"x": i["InputTensor"]}, torch_fn, bytes_moved=x.nbytes, tolerance=1e-4)


def reduction_workloads() -> list[Workload]:
    """ResNet's global average pool as ONNX exports it, a reduction over a ViT-B attention's last axis, a classifier's argmax."""
    return [
        _reduce_workload("mean", (8, 2048, 7, 7), [2, 3], note=" (ResNet global pool)"),
        _reduce_workload("sum", (12, 197, 197), [2]),
        _reduce_workload("sum", (12, 197, 197), [1]),
        _reduce_workload("argmax", (64, 1000), [1]),
    ]


def _gemm_workload(m: int, k: int, n: int, *, dtype: Any = np.float32, trans_b: bool = False) -> Workload:
    """Output {1, 1, M, N} = A {1, 1, M, K} x B {1, 1, K, N} (GEMM with Alpha 1, no C): onnxruntime's MatMul and torch.matmul.

    With ``trans_b`` B is stored {1, 1, N, K} and read with TransB, as a PyTorch Linear layer's weight is exported
    (ONNX Gemm with transB=1; torch.nn.functional.linear).

    Values are scaled by 1/sqrt(K) so outputs are O(1) for the agreement check. No np.matmul peer in the rounds:
    NumPy's BLAS takes every core whatever the row's thread count, and its threads keep spinning into the next
    implementation's burst (the machine's np.matmul peak is measured on its own, in a subprocess).
    """
    rng = np.random.default_rng(0)
    a = rng.standard_normal((1, 1, m, k)).astype(dtype)
    b = (rng.standard_normal((1, 1, n, k) if trans_b else (1, 1, k, n)) / np.sqrt(k)).astype(dtype)
    desc = DML_GEMM_OPERATOR_DESC(
        ATensor=buffer_tensor(dtype, a.shape), BTensor=buffer_tensor(dtype, b.shape), CTensor=None,
        OutputTensor=buffer_tensor(dtype, (1, 1, m, n)), TransB=DML_MATRIX_TRANSFORM(int(trans_b)), Alpha=1.0, Beta=0.0,
    )  # fmt: skip

    def onnx_model() -> Any:
        from onnx import TensorProto, helper  # noqa: PLC0415

        elem = TensorProto.FLOAT16 if dtype == np.float16 else TensorProto.FLOAT
        graph = helper.make_graph(
            [helper.make_node("Gemm", ["a", "b"], ["y"], transB=1) if trans_b else helper.make_node("MatMul", ["a", "b"], ["y"])], "gemm",
            [helper.make_tensor_value_info("a", elem, [m, k]), helper.make_tensor_value_info("b", elem, [n, k] if trans_b else [k, n])],
            [helper.make_tensor_value_info("y", elem, [m, n])],
        )  # fmt: skip
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=10)

    def torch_fn(t: dict[str, Any]) -> Any:
        import torch  # noqa: PLC0415

        return torch.nn.functional.linear(t["ATensor"], t["BTensor"][0, 0]) if trans_b else torch.matmul(t["ATensor"], t["BTensor"])

    itemsize = np.dtype(dtype).itemsize
    operands = f"{n}x{k} TransB" if trans_b else f"{k}x{n}"
    return Workload(
        f"gemm {m}x{k} by {operands} {'fp16' if dtype == np.float16 else 'fp32'}", desc, {"ATensor": a, "BTensor": b},
        onnx_model, lambda i: {"a": i["ATensor"][0, 0], "b": i["BTensor"][0, 0]}, torch_fn,
        bytes_moved=(m * k + k * n + m * n) * itemsize, tolerance=1e-3, flops=2 * m * n * k,
        peer_output=lambda y: y.reshape(1, 1, m, n),
    )  # fmt: skip


def gemm_workloads() -> list[Workload]:
    """A classifier head (one row by a 2048x1000 weight: a matrix-vector product, memory-bound), the same head as PyTorch
    exports it (the weight stored 1000x2048, TransB), and a transformer MLP block."""
    return [_gemm_workload(1, 2048, 1000), _gemm_workload(1, 2048, 1000, trans_b=True), _gemm_workload(256, 768, 3072)]


def _concat_workload(parts: int, shape: tuple[int, int, int, int]) -> Workload:
    """JOIN of ``parts`` fp32 NCHW tensors along channels: ONNX Concat, torch.cat, np.concatenate(out=)."""
    out = (shape[0], parts * shape[1], *shape[2:])
    desc = dmlpy.DML_JOIN_OPERATOR_DESC(parts, [buffer_tensor(np.float32, shape)] * parts, buffer_tensor(np.float32, out), 1)
    rng = np.random.default_rng(0)
    inputs = {f"InputTensors[{i}]": rng.standard_normal(shape).astype(np.float32) for i in range(parts)}
    names = [f"x{i}" for i in range(parts)]

    def onnx_model() -> Any:
        from onnx import TensorProto, helper  # noqa: PLC0415

        graph = helper.make_graph([helper.make_node("Concat", names, ["y"], axis=1)], "concat",
                                  [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(shape)) for n in names],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(out))])  # fmt: skip
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=10)

    def torch_fn(t: dict[str, Any]) -> Any:
        import torch  # noqa: PLC0415

        return torch.cat([t[f"InputTensors[{i}]"] for i in range(parts)], dim=1)

    def numpy_peer(i: dict[str, np.ndarray]) -> tuple[Callable[[], None], Callable[[], np.ndarray]]:
        arrays, result = [i[f"InputTensors[{k}]"] for k in range(parts)], np.empty(out, np.float32)
        return (lambda: np.concatenate(arrays, axis=1, out=result)), (lambda: result)

    name = f"concat (JOIN) {parts}x {'x'.join(map(str, shape))} axis 1 fp32"
    return Workload(name, desc, inputs, onnx_model, lambda i: {n: i[f"InputTensors[{k}]"] for k, n in enumerate(names)}, torch_fn,
                    bytes_moved=2 * 4 * int(np.prod(out)), tolerance=0.0, numpy_peer=numpy_peer)  # fmt: skip


def _pad_workload(shape: tuple[int, int, int, int], pad: int, mode: str) -> Workload:
    """PADDING1 of the two spatial dims of an fp32 NCHW tensor: ONNX Pad, torch.nn.functional.pad."""
    modes = {"constant": dmlpy.DML_PADDING_MODE.CONSTANT, "reflect": dmlpy.DML_PADDING_MODE.REFLECTION, "edge": dmlpy.DML_PADDING_MODE.EDGE}
    out = (*shape[:2], shape[2] + 2 * pad, shape[3] + 2 * pad)
    value = 0.5
    desc = dmlpy.DML_PADDING1_OPERATOR_DESC(
        buffer_tensor(np.float32, shape), buffer_tensor(np.float32, out), modes[mode], dmlpy.DML_TENSOR_DATA_TYPE.FLOAT32,
        dmlpy.DML_SCALAR_UNION(Float32=value), 4, [0, 0, pad, pad], [0, 0, pad, pad],
    )  # fmt: skip
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)

    def onnx_model() -> Any:
        from onnx import TensorProto, helper  # noqa: PLC0415

        pads = helper.make_tensor("pads", TensorProto.INT64, [8], [0, 0, pad, pad, 0, 0, pad, pad])
        fill = helper.make_tensor("value", TensorProto.FLOAT, [], [value])
        graph = helper.make_graph([helper.make_node("Pad", ["x", "pads", "value"], ["y"], mode=mode)], "pad",
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(out))], initializer=[pads, fill])  # fmt: skip
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=10)

    def torch_fn(t: dict[str, Any]) -> Any:
        import torch.nn.functional as F  # noqa: N812, PLC0415

        torch_mode = {"edge": "replicate"}.get(mode, mode)
        return F.pad(t["InputTensor"], (pad,) * 4, mode=torch_mode, value=value) if mode == "constant" else F.pad(t["InputTensor"], (pad,) * 4, mode=torch_mode)

    name = f"pad (PADDING1 {mode.upper()}) {'x'.join(map(str, shape))} by {pad} on H, W fp32"
    return Workload(name, desc, {"InputTensor": x}, onnx_model, lambda i: {"x": i["InputTensor"]}, torch_fn,
                    bytes_moved=4 * (int(np.prod(shape)) + int(np.prod(out))), tolerance=0.0)  # fmt: skip


def data_movement_workloads() -> list[Workload]:
    """JOIN (Concat) of four 1x64x56x56 and of four 8x64x56x56; PADDING1 (Pad) by 1 of 1x64x56x56 and by 2 of 8x64x112x112."""
    return [
        _concat_workload(4, (1, 64, 56, 56)),
        _concat_workload(4, (8, 64, 56, 56)),
        _pad_workload((1, 64, 56, 56), 1, "constant"),
        _pad_workload((1, 64, 56, 56), 1, "reflect"),
        _pad_workload((8, 64, 112, 112), 2, "constant"),
        _pad_workload((8, 64, 112, 112), 2, "reflect"),
    ]


WORKLOAD_FAMILIES: list[Callable[[], list[Workload]]] = [
    pooling_workloads, space_depth_workloads, convolution_workloads, gemm_workloads, element_wise_workloads, data_movement_workloads,
    resize_workloads, normalization_workloads, reduction_workloads,
]


# ---------------------------------------------------------------------------------------
# Implementations: each returns (call, output) or raises to say it cannot run the workload


def prepared_dmlpy(desc: Any, inputs: dict[str, np.ndarray], backend: str, threads: int) -> tuple[Callable[[], None], Callable[[], np.ndarray]]:
    """Compile, initialize and bind once; the timed call executes the recorded command list."""
    device = dmlpy.create_device(backend=backend, threads=threads)
    compiled = device.compile_operator(device.create_operator(desc))
    initializer = device.create_operator_initializer([compiled])
    recorder = device.create_command_recorder()
    init_list = device.create_command_list()
    recorder.record_dispatch(init_list, initializer, device.create_binding_table(initializer))
    init_list.close()
    device.execute(init_list)

    in_buffers = []
    for slot in compiled.input_slots():
        if slot.tensor is None:
            in_buffers.append(None)
            continue
        buffer = device.create_buffer(slot.tensor.TotalTensorSizeInBytes)
        buffer.view(slot.tensor, writeable=True)[...] = inputs[slot.name]
        in_buffers.append(buffer)
    out_slot = compiled.output_slots()[0]
    assert out_slot.tensor is not None
    out_buffer = device.create_buffer(out_slot.tensor.TotalTensorSizeInBytes)
    table = device.create_binding_table(compiled)
    table.bind_inputs([dmlpy.buffer_binding(b) for b in in_buffers])
    table.bind_outputs([dmlpy.buffer_binding(out_buffer)])
    command_list = device.create_command_list()
    recorder.record_dispatch(command_list, compiled, table)
    command_list.close()
    tensor = out_slot.tensor
    return (lambda: device.execute(command_list)), (lambda: out_buffer.read(tensor))


def prepared_onnxruntime(workload: Workload, threads: int) -> tuple[Callable[[], None], Callable[[], np.ndarray]]:
    import onnxruntime as ort  # noqa: PLC0415

    assert workload.onnx_model is not None and workload.onnx_inputs is not None
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(workload.onnx_model().SerializeToString(), options, providers=["CPUExecutionProvider"])
    feeds = workload.onnx_inputs(workload.inputs)
    binding = session.io_binding()
    for name, value in feeds.items():
        binding.bind_cpu_input(name, np.ascontiguousarray(value))
    out_name = session.get_outputs()[0].name
    binding.bind_output(out_name, "cpu")
    session.run_with_iobinding(binding)  # allocates the output once; later runs reuse it
    output = binding.get_outputs()[0]
    binding.bind_ortvalue_output(out_name, output)
    return (lambda: session.run_with_iobinding(binding)), (lambda: output.numpy())


def prepared_torch(workload: Workload, threads: int) -> tuple[Callable[[], None], Callable[[], np.ndarray]]:
    import torch  # noqa: PLC0415

    assert workload.torch_fn is not None
    torch.set_num_threads(threads)
    arrays = workload.torch_inputs(workload.inputs) if workload.torch_inputs is not None else workload.inputs
    tensors = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in arrays.items()}
    result: list[Any] = []

    def call() -> None:
        with torch.inference_mode():
            result[:] = [workload.torch_fn(tensors)]

    call()
    return call, lambda: result[0].numpy()


def torch_available() -> bool:
    try:
        import torch  # noqa: F401, PLC0415
    except ImportError:
        return False
    return True


# ---------------------------------------------------------------------------------------
# The run


@dataclass
class Row:
    workload: str
    threads: int
    impl: str
    seconds: float | None
    gbs: float | None = None
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    gflops: float | None = None


def bench_workload(workload: Workload, threads: int, *, include_numpy: bool) -> list[Row]:
    rows: list[Row] = []
    native_call, native_out = prepared_dmlpy(workload.desc, workload.inputs, "native", threads)
    native_call()
    reference = native_out().astype(np.float64)

    candidates: list[tuple[str, Callable[[], tuple[Callable[[], None], Callable[[], np.ndarray]]]]] = [
        ("dmlpy native", lambda: (native_call, native_out)),
        ("onnxruntime", lambda: prepared_onnxruntime(workload, threads)),
    ]
    if torch_available():
        candidates.append(("pytorch", lambda: prepared_torch(workload, threads)))
    if workload.numpy_peer is not None:
        numpy_peer = workload.numpy_peer
        candidates.append(("numpy", lambda: numpy_peer(workload.inputs)))
    if include_numpy:
        candidates.append(("dmlpy numpy", lambda: prepared_dmlpy(workload.desc, workload.inputs, "numpy", threads)))
    timed: dict[str, Callable[[], Any]] = {}
    for impl, prepare in candidates:
        try:
            call, out = prepare()
            call()
            got = out()
            if workload.peer_output is not None and not impl.startswith("dmlpy"):
                got = workload.peer_output(got)
            got = got.astype(np.float64)
        except Exception as error:  # noqa: BLE001 - a peer that cannot run a workload is reported, not fatal
            rows.append(Row(workload.name, threads, impl, None, note=f"n/a: {type(error).__name__}: {str(error).splitlines()[0][:80]}"))
            continue
        if got.shape != reference.shape or not np.allclose(got, reference, rtol=workload.tolerance, atol=workload.tolerance, equal_nan=True):
            worst = float(np.nanmax(np.abs(got - reference))) if got.shape == reference.shape else float("nan")
            rows.append(Row(workload.name, threads, impl, None, note=f"DISAGREES with native (max abs diff {worst:.3g})"))
            continue
        timed[impl] = call
    # The NumPy backend is 20-100x slower: timed on its own, it does not stretch the others' rounds.
    slow = {impl: timed.pop(impl) for impl in ("dmlpy numpy",) if impl in timed}
    medians = interleaved_medians(timed)
    medians.update({impl: median_seconds(call, min_runs=3, min_time=0.2, warmup=1) for impl, call in slow.items()})
    for impl, seconds in medians.items():
        gflops = workload.flops / seconds / 1e9 if workload.flops else None
        rows.append(Row(workload.name, threads, impl, seconds, workload.bytes_moved / seconds / 1e9, gflops=gflops))
    return rows


def overhead_rows(*, include_torch: bool = True) -> list[Row]:
    """What a user's call costs beyond the kernel, one thread: ReLU on a 1x1x8x8 and a 1 MB (1x64x64x64) float32
    tensor through a compiled GraphProgram and through dmlpy.run (both backends), next to onnxruntime's
    session.run and PyTorch's functional call on the same arrays; then Buffer.read of a packed 16 MB tensor.
    The program and run rows' "overhead" is their time less the best time of a plain copy in and out
    (np.copyto of the input and np.array of the output), the copies every implementation makes."""
    from onnx import TensorProto, helper  # noqa: PLC0415

    tiny = _pool_workload("tiny 1x4x4x4", (1, 4, 4, 4), 2, 2, 0, include_padding=False)
    execute, _ = prepared_dmlpy(tiny.desc, tiny.inputs, "native", 1)
    rows = [Row("tiny 1x4x4x4 pooling: execute a recorded command list", 1, "dmlpy native", median_seconds(execute, min_runs=2000, min_time=0.5, max_runs=20000))]
    for label, shape in (("1x1x8x8", (1, 1, 8, 8)), ("1 MB 1x64x64x64", (1, 64, 64, 64))):
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        desc = dmlpy.DML_ACTIVATION_RELU_OPERATOR_DESC(buffer_tensor(np.float32, shape), buffer_tensor(np.float32, shape))
        staging = np.empty_like(x)
        copies = median_seconds(lambda: (np.copyto(staging, x), np.array(staging)), min_runs=2000, min_time=0.3, max_runs=20000)
        calls: dict[str, Callable[[], Any]] = {}
        for backend in ("native", "numpy"):
            builder = dmlpy.GraphBuilder(dmlpy.create_device(backend=backend, threads=1))
            program = builder.compile({"y": builder.relu(builder.input("x", np.float32, shape))})
            device = dmlpy.create_device(backend=backend, threads=1)
            calls[f"dmlpy {backend}: GraphProgram call"] = lambda program=program: program(x=x)
            calls[f"dmlpy {backend}: dmlpy.run"] = lambda device=device: dmlpy.run(desc, device=device, InputTensor=x)
        graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)])  # fmt: skip
        import onnxruntime as ort  # noqa: PLC0415

        options = ort.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = 1, 1
        session = ort.InferenceSession(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString(), options, providers=["CPUExecutionProvider"])
        calls["onnxruntime: session.run"] = lambda: session.run(None, {"x": x})
        if include_torch and torch_available():
            import torch  # noqa: PLC0415

            torch.set_num_threads(1)
            calls["pytorch: torch.relu(from_numpy).numpy()"] = lambda: torch.relu(torch.from_numpy(x)).numpy()
        expected = np.maximum(x, 0)
        for name, call in calls.items():
            got = call()
            got = got["y"] if isinstance(got, dict) else got[0] if isinstance(got, list) else got
            np.testing.assert_array_equal(got, expected, err_msg=name)
        medians = interleaved_medians(calls, min_time=0.2, min_runs=200, max_runs=20000)
        for name, seconds in medians.items():
            extra = {"overhead_us": (seconds - copies) * 1e6} if "dmlpy" in name else {}
            rows.append(Row(f"call path, ReLU {label}", 1, name, seconds, extra=extra,
                            note=f"{(seconds - copies) * 1e6:.1f} us beyond the copies" if extra else ""))  # fmt: skip
    tensor = buffer_tensor(np.float32, (1, 4, 1024, 1024))  # 16 MiB, packed
    buffer = dmlpy.create_device(backend="numpy").create_buffer(tensor.Desc.TotalTensorSizeInBytes)
    read = median_seconds(lambda: buffer.read(tensor), min_runs=20, min_time=0.5)
    rows.append(Row("Buffer.read, packed 16 MB", 1, "dmlpy", read, gbs=2 * tensor.Desc.TotalTensorSizeInBytes / read / 1e9))
    return rows


def print_table(rows: list[Row], copy_gbs: float, matmul: dict[int, dict[str, Any]] | None = None) -> None:
    print(f"\nmachine copy bandwidth (np.copyto, 1 thread): {copy_gbs:.1f} GB/s; cores: {CORES}")
    for threads, peak in sorted((matmul or {}).items()):
        print(f"machine matmul peak (np.matmul 2048x2048 float32, {threads} thread(s)): {peak['gflops']:.1f} GFLOP/s ({peak['kernel']})")
    print("\n| workload | threads | implementation | median ms | GB/s | % copy bw | GFLOP/s | % matmul peak | vs fastest peer |")
    print("|---|---|---|---|---|---|---|---|---|")
    groups: dict[tuple[str, int], list[Row]] = {}
    for row in rows:
        groups.setdefault((row.workload, row.threads), []).append(row)
    for (name, threads), group in groups.items():
        peers = [r.seconds for r in group if r.impl.split(":")[0] in ("onnxruntime", "pytorch") and r.seconds]
        fastest_peer = min(peers) if peers else None
        for r in group:
            if r.seconds is None:
                print(f"| {name} | {threads} | {r.impl} | - | - | - | - | - | {r.note} |")
                continue
            ratio = f"{fastest_peer / r.seconds:.2f}x" if fastest_peer else "-"
            ratio += f" ({r.note})" if r.note else ""
            gbs = f"{r.gbs:.1f}" if r.gbs else "-"
            pct = f"{100 * r.gbs / copy_gbs:.0f}%" if r.gbs else "-"
            ms = f"{r.seconds * 1e3:.3f}" if r.seconds >= 1e-4 else f"{r.seconds * 1e6:.1f} us"
            gflops = f"{r.gflops:.1f}" if r.gflops else "-"
            peak = (matmul or {}).get(threads, {}).get("gflops")
            of_peak = f"{100 * r.gflops / peak:.0f}%" if r.gflops and peak else "-"
            print(f"| {name} | {threads} | {r.impl} | {ms} | {gbs} | {pct} | {gflops} | {of_peak} | {ratio} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--filter", default="", help="only workloads whose name contains this")
    parser.add_argument("--threads", default=f"1,{CORES}", help="comma-separated thread counts")
    parser.add_argument("--no-numpy", action="store_true", help="skip the (slow) NumPy backend")
    parser.add_argument("--json", help="also write the rows here")
    args = parser.parse_args(argv)
    if not dmlpy.native_available():
        raise SystemExit(f"the native backend did not load: {dmlpy.native_status()}")
    copy_gbs = copy_bandwidth_gbs()
    rows: list[Row] = []
    workloads = [w for family in WORKLOAD_FAMILIES for w in family() if args.filter in w.name]
    for workload in workloads:
        for threads in (int(t) for t in args.threads.split(",")):
            rows += bench_workload(workload, threads, include_numpy=not args.no_numpy and threads == CORES)
            print(f"done: {workload.name}, {threads} thread(s)", flush=True)
    rows += overhead_rows()
    thread_counts = sorted({int(t) for t in args.threads.split(",")})
    matmul = {t: matmul_peak(t) for t in thread_counts} if any(w.flops for w in workloads) else {}
    print_table(rows, copy_gbs, matmul)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump({"copy_gbs": copy_gbs, "cores": CORES, "matmul": matmul, "rows": [r.__dict__ for r in rows]}, out, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
