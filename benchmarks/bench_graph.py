"""A decoder block as one compiled DirectML graph, against the same operators one by one and against onnxruntime.

    python benchmarks/bench_graph.py                  # 1 thread and every core
    python benchmarks/bench_graph.py --threads 1,2 --json out.json

The block: x {1, 64, 56, 56} -> ConvTranspose 64 -> 32, kernel 4, stride 2, padding 1, fused ReLU
{1, 32, 112, 112} -> AveragePool 2x2 stride 2 {1, 32, 56, 56} -> SpaceToDepth 2 (DCR) {1, 128, 28, 28}.

Implementations (all prepared once: compiled, initialized, bound and recorded; the timed call is execution only):

* ``dmlpy graph``: the block built with GraphBuilder and compiled with CompileGraph; one command list,
  one dispatch, intermediates in the temporary resource.
* ``dmlpy one by one``: the same three descs as three compiled operators, each bound to its own buffers
  (the intermediates in ordinary buffers), three command lists executed in order.
* ``onnxruntime``: the equivalent ONNX model (ConvTranspose, Relu, AveragePool, SpaceToDepth), CPU
  provider, IO binding, ``intra_op_num_threads`` = threads.

A tiny block (1x4x8x8, same operators) measures what the graph machinery itself costs per dispatch.
Outputs are checked against each other before anything is timed. Timing runs the implementations
in interleaved rounds (rotating order), so a shared machine's load falls on all of them alike; the
ratios are medians of per-round ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import dmlpy
from dmlpy import FusedActivation

CORES = os.cpu_count() or 1


@dataclass
class Block:
    name: str
    x: np.ndarray
    w: np.ndarray
    channels_out: int


def decoder_block(shape: tuple[int, int, int, int], channels_out: int) -> Block:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32)
    w = (rng.standard_normal((shape[1], channels_out, 4, 4)) / np.sqrt(shape[1] * 16)).astype(np.float32)
    return Block(f"decoder {'x'.join(map(str, shape))} convT->{channels_out} k4 s2 p1 +ReLU, avgpool 2, s2d 2", x, w, channels_out)


def build(block: Block, device: dmlpy.Device) -> dmlpy.GraphProgram:
    g = dmlpy.GraphBuilder(device)
    x = g.input("x", np.float32, block.x.shape)
    w = g.input("w", np.float32, block.w.shape)
    y = g.conv_transpose(x, w, strides=2, start_padding=1, end_padding=1, activation=FusedActivation.relu())
    y = g.space_to_depth(g.average_pooling(y, window=(2, 2), strides=(2, 2)), 2)
    return g.compile({"y": y})


def _init(device: dmlpy.Device, compiled: Any) -> None:
    initializer = device.create_operator_initializer([compiled])
    command_list = device.create_command_list()
    device.create_command_recorder().record_dispatch(command_list, initializer, device.create_binding_table(initializer))
    command_list.close()
    device.execute(command_list)


def prepared_graph(block: Block, threads: int) -> tuple[Callable[[], None], Callable[[], np.ndarray]]:
    device = dmlpy.create_device(backend="native", threads=threads)
    program = build(block, device)
    compiled = program.compiled
    _init(device, compiled)
    props = compiled.get_binding_properties()
    inputs = [dmlpy.Buffer.from_array(block.x), dmlpy.Buffer.from_array(block.w)]
    out_slot = compiled.output_slots()[0]
    out = dmlpy.Buffer(out_slot.tensor.TotalTensorSizeInBytes)
    table = device.create_binding_table(compiled)
    table.bind_inputs([dmlpy.buffer_binding(b) for b in inputs])
    table.bind_outputs([dmlpy.buffer_binding(out)])
    table.bind_temporary_resource(dmlpy.buffer_binding(dmlpy.Buffer(props.TemporaryResourceSize)))
    command_list = device.create_command_list()
    device.create_command_recorder().record_dispatch(command_list, compiled, table)
    command_list.close()
    return (lambda: device.execute(command_list)), (lambda: out.read(out_slot.tensor))


def prepared_one_by_one(block: Block, threads: int) -> tuple[Callable[[], None], Callable[[], np.ndarray]]:
    device = dmlpy.create_device(backend="native", threads=threads)
    descs = [node.Desc.Operator.desc for node in build(block, device).graph_desc.Nodes]  # the very descs of the graph
    recorder = device.create_command_recorder()
    lists = []
    source = {"InputTensor": dmlpy.Buffer.from_array(block.x), "FilterTensor": dmlpy.Buffer.from_array(block.w)}
    out = None
    for desc in descs:
        compiled = device.compile_operator(device.create_operator(desc))
        _init(device, compiled)
        out_slot = compiled.output_slots()[0]
        out = dmlpy.Buffer(out_slot.tensor.TotalTensorSizeInBytes)
        table = device.create_binding_table(compiled)
        table.bind_inputs([dmlpy.buffer_binding(source.get(slot.name)) for slot in compiled.input_slots()])
        table.bind_outputs([dmlpy.buffer_binding(out)])
        command_list = device.create_command_list()
        recorder.record_dispatch(command_list, compiled, table)
        command_list.close()
        lists.append(command_list)
        source = {"InputTensor": out}
    assert out is not None
    tensor = out_slot.tensor

    def call() -> None:
        for command_list in lists:
            device.execute(command_list)

    return call, (lambda: out.read(tensor))


def onnx_model(block: Block) -> Any:
    from onnx import TensorProto, helper  # noqa: PLC0415

    n, _, h, w = block.x.shape
    out = [n, block.channels_out * 4, h // 2, w // 2]
    nodes = [
        helper.make_node("ConvTranspose", ["x", "w"], ["up"], kernel_shape=[4, 4], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["up"], ["act"]),
        helper.make_node("AveragePool", ["act"], ["pooled"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("SpaceToDepth", ["pooled"], ["y"], blocksize=2),
    ]
    graph = helper.make_graph(
        nodes, "decoder_block",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(block.x.shape)), helper.make_tensor_value_info("w", TensorProto.FLOAT, list(block.w.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=10)


def prepared_onnxruntime(block: Block, threads: int) -> tuple[Callable[[], None], Callable[[], np.ndarray]]:
    import onnxruntime as ort  # noqa: PLC0415

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(onnx_model(block).SerializeToString(), options, providers=["CPUExecutionProvider"])
    binding = session.io_binding()
    binding.bind_cpu_input("x", block.x)
    binding.bind_cpu_input("w", block.w)
    binding.bind_output("y", "cpu")
    session.run_with_iobinding(binding)
    output = binding.get_outputs()[0]
    binding.bind_ortvalue_output("y", output)
    return (lambda: session.run_with_iobinding(binding)), (lambda: output.numpy())


IMPLEMENTATIONS: dict[str, Callable[[Block, int], tuple[Callable[[], None], Callable[[], np.ndarray]]]] = {
    "dmlpy graph": prepared_graph,
    "dmlpy one by one": prepared_one_by_one,
    "onnxruntime": prepared_onnxruntime,
}


def bench(block: Block, threads: int, *, min_time: float) -> dict[str, Any]:
    """Check every implementation against the graph, then time them in interleaved rounds.

    Each round runs every implementation once, in a rotating order, so load from other processes on
    a shared machine falls on all of them alike; the speed-up is the median of the per-round ratios.
    """
    calls: dict[str, Callable[[], None]] = {}
    results: dict[str, Any] = {}
    reference = None
    for name, prepare in IMPLEMENTATIONS.items():
        try:
            call, out = prepare(block, threads)
            call()
            got = out().astype(np.float64)
        except Exception as error:  # noqa: BLE001 - a peer that cannot run is reported, not fatal
            results[name] = f"n/a: {type(error).__name__}: {str(error).splitlines()[0][:80]}"
            continue
        if reference is None:
            reference = got
        elif got.shape != reference.shape or not np.allclose(got, reference, rtol=1e-4, atol=1e-4):
            results[name] = "DISAGREES with dmlpy graph"
            continue
        calls[name] = call
    names = list(calls)
    for call in calls.values():
        call()
        call()
    samples: dict[str, list[float]] = {name: [] for name in names}
    started = time.perf_counter()
    rounds = 0
    while rounds < 7 or (time.perf_counter() - started < min_time * len(names) and rounds < 2000):
        for name in names[rounds % len(names) :] + names[: rounds % len(names)]:
            t0 = time.perf_counter()
            calls[name]()
            samples[name].append(time.perf_counter() - t0)
        rounds += 1
    for name in names:
        results[name] = statistics.median(samples[name])
    if "dmlpy graph" in samples and "dmlpy one by one" in samples:
        results["speed-up"] = statistics.median(a / b for a, b in zip(samples["dmlpy one by one"], samples["dmlpy graph"], strict=True))
    if "dmlpy graph" in samples and "onnxruntime" in samples:
        results["vs onnxruntime"] = statistics.median(a / b for a, b in zip(samples["onnxruntime"], samples["dmlpy graph"], strict=True))
    results["rounds"] = rounds
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", default=",".join(dict.fromkeys(["1", str(CORES)])), help="comma-separated thread counts")
    parser.add_argument("--min-time", type=float, default=1.0, help="seconds of timed runs per implementation (at least 7 runs)")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args(argv)
    if not dmlpy.native_available():
        raise SystemExit(f"the native backend did not load: {dmlpy.native_status()}")
    blocks = [decoder_block((1, 64, 56, 56), 32), decoder_block((1, 4, 8, 8), 4)]
    rows = []
    for block in blocks:
        for threads in (int(t) for t in args.threads.split(",")):
            rows.append((block.name, threads, bench(block, threads, min_time=args.min_time)))
            print(f"done: {block.name}, {threads} thread(s)", flush=True)
    print(f"\ncores: {CORES}; {dmlpy.native_status()}")
    print("\n| block | threads | implementation | median ms | one by one / graph (paired median) | onnxruntime / graph (paired median) |")
    print("|---|---|---|---|---|---|")
    for name, threads, results in rows:
        for impl in IMPLEMENTATIONS:
            seconds = results.get(impl)
            if not isinstance(seconds, float):
                print(f"| {name} | {threads} | {impl} | - | - | {seconds} |")
                continue
            ms = f"{seconds * 1e3:.3f}" if seconds >= 1e-4 else f"{seconds * 1e6:.1f} us"
            graph_row = impl == "dmlpy graph"
            speedup = f"{results['speed-up']:.3f}x" if graph_row and "speed-up" in results else "-"
            vs_ort = f"{results['vs onnxruntime']:.2f}x" if graph_row and "vs onnxruntime" in results else "-"
            print(f"| {name} | {threads} | {impl} | {ms} | {speedup} | {vs_ort} |")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump({"cores": CORES, "rows": [{"block": n, "threads": t, "seconds": r} for n, t, r in rows]}, out, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
