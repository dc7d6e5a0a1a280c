"""dmlpy against its peers, in one run: medians, GB/s against measured copy bandwidth, ratios.

    python benchmarks/bench.py                 # every workload, 1 thread and all cores
    python benchmarks/bench.py --filter pool   # workloads whose name contains "pool"
    python benchmarks/bench.py --json out.json

Peers: onnxruntime (CPU) and PyTorch when installed (`pip install torch==2.13.0`, optional).
The NumPy backend is timed too (it is the fallback, not a peer). Every implementation's output
is checked against the native one before its time counts. Timings are medians of repeated runs
on an already prepared operator (compiled, initialized and bound for dmlpy; a session with bound
inputs and outputs for onnxruntime); the machine is shared, so compare ratios within one run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import dmlpy
from dmlpy import DML_AVERAGE_POOLING_OPERATOR_DESC, buffer_tensor

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


def pooling_workloads() -> list[Workload]:
    return [
        _pool_workload("avgpool 8x64x112x112 k3 s2 p1 excl-pad fp32", (8, 64, 112, 112), 3, 2, 1, include_padding=False),
        _pool_workload("avgpool 8x64x112x112 k3 s2 p1 incl-pad fp32", (8, 64, 112, 112), 3, 2, 1, include_padding=True),
        _pool_workload("avgpool 8x64x112x112 k3 s2 p1 excl-pad fp16", (8, 64, 112, 112), 3, 2, 1, include_padding=False, dtype=np.float16),
        _pool_workload("avgpool 1x256x56x56 k2 s2 fp32", (1, 256, 56, 56), 2, 2, 0, include_padding=False),
        _pool_workload("avgpool 1x512x14x14 k7 s1 fp32", (1, 512, 14, 14), 7, 1, 0, include_padding=False),
        _pool_workload("avgpool 5-D 1x32x32x56x56 k2 s2 fp32", (1, 32, 32, 56, 56), 2, 2, 0, include_padding=False),
    ]


WORKLOAD_FAMILIES: list[Callable[[], list[Workload]]] = [pooling_workloads]


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
    tensors = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in workload.inputs.items()}
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
    if include_numpy:
        candidates.append(("dmlpy numpy", lambda: prepared_dmlpy(workload.desc, workload.inputs, "numpy", threads)))
    for impl, prepare in candidates:
        try:
            call, out = prepare()
            call()
            got = out().astype(np.float64)
        except Exception as error:  # noqa: BLE001 - a peer that cannot run a workload is reported, not fatal
            rows.append(Row(workload.name, threads, impl, None, note=f"n/a: {type(error).__name__}: {str(error).splitlines()[0][:80]}"))
            continue
        if got.shape != reference.shape or not np.allclose(got, reference, rtol=workload.tolerance, atol=workload.tolerance, equal_nan=True):
            worst = float(np.nanmax(np.abs(got - reference))) if got.shape == reference.shape else float("nan")
            rows.append(Row(workload.name, threads, impl, None, note=f"DISAGREES with native (max abs diff {worst:.3g})"))
            continue
        slow = impl == "dmlpy numpy"
        seconds = median_seconds(call, min_runs=3 if slow else 5, min_time=0.2 if slow else 0.4, warmup=1 if slow else 2)
        rows.append(Row(workload.name, threads, impl, seconds, workload.bytes_moved / seconds / 1e9))
    return rows


def overhead_rows() -> list[Row]:
    """Per-dispatch cost: a compiled, bound 1x4x4x4 operator executed again, and dmlpy.run on it."""
    workload = _pool_workload("tiny 1x4x4x4", (1, 4, 4, 4), 2, 2, 0, include_padding=False)
    call, _ = prepared_dmlpy(workload.desc, workload.inputs, "native", 1)
    execute = median_seconds(call, min_runs=2000, min_time=0.5, max_runs=20000)
    device = dmlpy.create_device(backend="native", threads=1)
    one_call = median_seconds(lambda: dmlpy.run(workload.desc, device=device, **workload.inputs), min_runs=200, min_time=0.5, max_runs=5000)
    return [
        Row("tiny 1x4x4x4: execute compiled+bound", 1, "dmlpy native", execute),
        Row("tiny 1x4x4x4: dmlpy.run", 1, "dmlpy native", one_call),
    ]


def print_table(rows: list[Row], copy_gbs: float) -> None:
    print(f"\nmachine copy bandwidth (np.copyto, 1 thread): {copy_gbs:.1f} GB/s; cores: {CORES}\n")
    print("| workload | threads | implementation | median ms | GB/s | % copy bw | vs fastest peer |")
    print("|---|---|---|---|---|---|---|")
    groups: dict[tuple[str, int], list[Row]] = {}
    for row in rows:
        groups.setdefault((row.workload, row.threads), []).append(row)
    for (name, threads), group in groups.items():
        peers = [r.seconds for r in group if r.impl in ("onnxruntime", "pytorch") and r.seconds]
        fastest_peer = min(peers) if peers else None
        for r in group:
            if r.seconds is None:
                print(f"| {name} | {threads} | {r.impl} | - | - | - | {r.note} |")
                continue
            ratio = f"{fastest_peer / r.seconds:.2f}x" if fastest_peer else "-"
            gbs = f"{r.gbs:.1f}" if r.gbs else "-"
            pct = f"{100 * r.gbs / copy_gbs:.0f}%" if r.gbs else "-"
            ms = f"{r.seconds * 1e3:.3f}" if r.seconds >= 1e-4 else f"{r.seconds * 1e6:.1f} us"
            print(f"| {name} | {threads} | {r.impl} | {ms} | {gbs} | {pct} | {ratio} |")


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
    print_table(rows, copy_gbs)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump({"copy_gbs": copy_gbs, "cores": CORES, "rows": [r.__dict__ for r in rows]}, out, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
