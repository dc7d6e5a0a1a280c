"""CompileGraph: every graph rule by id, and graphs that compute what their nodes compute one by one."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dmlpy
from dmlpy import D3D12_RESOURCE_BARRIER
from dmlpy import (
    DML_AVERAGE_POOLING_OPERATOR_DESC,
    DML_FEATURE_LEVEL_2_0,
    DML_FEATURE_LEVEL_6_1,
    DML_GRAPH_EDGE_DESC,
    DML_GRAPH_EDGE_TYPE,
    DML_GRAPH_NODE_DESC,
    DML_GRAPH_NODE_TYPE,
    DML_INPUT_GRAPH_EDGE_DESC,
    DmlError,
    buffer_tensor,
    constant_node,
    graph_desc,
    input_edge,
    intermediate_edge,
    operator_node,
    output_edge,
)
from conftest import assert_rule


def pool_desc(n: int, *, channels: int = 1, dtype: str = "float32", owned: bool = False) -> DML_AVERAGE_POOLING_OPERATOR_DESC:
    """A 2x2 / stride 2 pool from n x n to n/2 x n/2."""
    flags = dmlpy.DML_TENSOR_FLAG_OWNED_BY_DML if owned else 0
    return DML_AVERAGE_POOLING_OPERATOR_DESC(
        buffer_tensor(dtype, (1, channels, n, n), flags=flags), buffer_tensor(dtype, (1, channels, n // 2, n // 2)),
        2, (2, 2), (2, 2), (0, 0), (0, 0), False,
    )  # fmt: skip


def chain(device: dmlpy.Device) -> tuple[object, object]:
    return device.create_operator(pool_desc(8)), device.create_operator(pool_desc(4))


def compile_error(device: dmlpy.Device, desc: dmlpy.DML_GRAPH_DESC) -> DmlError:
    with pytest.raises(DmlError) as caught:
        device.compile_graph(desc)
    assert caught.value.hresult == dmlpy.E_INVALIDARG
    return caught.value


def run_graph(device: dmlpy.Device, compiled: object, inputs: list[np.ndarray | None], output_sizes: list[int]) -> list[bytes]:
    """Initialize, bind and execute a compiled graph by hand; returns the raw output bytes."""
    props = compiled.get_binding_properties()
    buffers = [dmlpy.Buffer.from_array(a) if a is not None else None for a in inputs]
    outs = [dmlpy.Buffer(size) for size in output_sizes]
    persistent = dmlpy.Buffer(props.PersistentResourceSize) if props.PersistentResourceSize else None
    temporary = dmlpy.Buffer(props.TemporaryResourceSize) if props.TemporaryResourceSize else None
    recorder, command_list = device.create_command_recorder(), device.create_command_list()
    initializer = device.create_operator_initializer([compiled])
    init_table = device.create_binding_table(initializer)
    slots = compiled.input_slots()
    init_table.bind_inputs([dmlpy.array_binding([dmlpy.buffer_binding(b).Desc if s.owned else None for s, b in zip(slots, buffers)])])
    init_table.bind_outputs([dmlpy.buffer_binding(persistent)])
    recorder.record_dispatch(command_list, initializer, init_table)
    command_list.resource_barrier([D3D12_RESOURCE_BARRIER.uav()])  # the dispatch after the initializer reads what it wrote
    table = device.create_binding_table(compiled)
    table.bind_inputs([dmlpy.DML_BINDING_DESC() if s.owned else dmlpy.buffer_binding(b) for s, b in zip(slots, buffers)])
    table.bind_outputs([dmlpy.buffer_binding(b) for b in outs])
    table.bind_temporary_resource(dmlpy.buffer_binding(temporary))
    table.bind_persistent_resource(dmlpy.buffer_binding(persistent))
    recorder.record_dispatch(command_list, compiled, table)
    command_list.close()
    device.execute(command_list)
    return [bytes(b.data) for b in outs]


# ---------------------------------------------------------------------------------------
# Rules


def test_graph_api_needs_feature_level_2_1() -> None:
    device = dmlpy.create_device(DML_FEATURE_LEVEL_2_0, backend="numpy")
    a, b = chain(device)
    error = compile_error(device, graph_desc(1, 1, [operator_node(a), operator_node(b)], [input_edge(0, 0)], [output_edge(1, 0, 0)], [intermediate_edge(0, 0, 1)]))
    assert_rule(error, "GRAPH.FEATURE_LEVEL", "DML_GRAPH_DESC")


def test_counts_that_disagree_with_the_arrays_name_the_count_field(numpy_device: dmlpy.Device) -> None:
    a, b = chain(numpy_device)
    desc = graph_desc(1, 1, [operator_node(a), operator_node(b)], [input_edge(0, 0)], [output_edge(1, 0, 0)], [intermediate_edge(0, 0, 1)])
    desc.NodeCount = 3
    assert_rule(compile_error(numpy_device, desc), "GRAPH.COUNTS", "DML_GRAPH_DESC.NodeCount")


def test_constant_nodes_need_feature_level_6_2() -> None:
    device = dmlpy.create_device(DML_FEATURE_LEVEL_6_1, backend="numpy")
    op = device.create_operator(pool_desc(4))
    desc = graph_desc(0, 1, [constant_node(np.zeros((1, 1, 4, 4), np.float32)), operator_node(op)], [], [output_edge(1, 0, 0)], [intermediate_edge(0, 0, 1)])
    assert_rule(compile_error(device, desc), "GRAPH.NODE_TYPE", "DML_GRAPH_DESC.Nodes[0].Type")


def test_a_node_of_unknown_type_is_refused(numpy_device: dmlpy.Device) -> None:
    a, _ = chain(numpy_device)
    desc = graph_desc(1, 1, [DML_GRAPH_NODE_DESC(DML_GRAPH_NODE_TYPE.INVALID, None)], [input_edge(0, 0)], [output_edge(0, 0, 0)])
    assert_rule(compile_error(numpy_device, desc), "GRAPH.NODE_TYPE")


def test_an_operator_from_another_device_is_refused(numpy_device: dmlpy.Device) -> None:
    other = dmlpy.create_device(backend="numpy").create_operator(pool_desc(4))
    desc = graph_desc(1, 1, [operator_node(other)], [input_edge(0, 0)], [output_edge(0, 0, 0)])
    assert_rule(compile_error(numpy_device, desc), "GRAPH.NODE_OPERATOR", "DML_GRAPH_DESC.Nodes[0].Operator")


def test_constant_data_smaller_than_its_datasize_is_refused(numpy_device: dmlpy.Device) -> None:
    op = numpy_device.create_operator(pool_desc(4))
    node = constant_node(np.zeros(16, np.float32))
    node.Desc.DataSize = 65
    desc = graph_desc(0, 1, [node, operator_node(op)], [], [output_edge(1, 0, 0)], [intermediate_edge(0, 0, 1)])
    assert_rule(compile_error(numpy_device, desc), "GRAPH.CONSTANT_DATA", "DML_GRAPH_DESC.Nodes[0].DataSize")


def test_an_edge_in_the_wrong_array_names_the_edge(numpy_device: dmlpy.Device) -> None:
    a, _ = chain(numpy_device)
    desc = graph_desc(1, 1, [operator_node(a)], [output_edge(0, 0, 0)], [output_edge(0, 0, 0)])
    assert_rule(compile_error(numpy_device, desc), "GRAPH.EDGE_TYPE", "DML_GRAPH_DESC.InputEdges[0]")


@pytest.mark.parametrize(
    ("edges", "rule", "path"),
    [
        pytest.param(dict(inputs=[input_edge(0, 5)]), "GRAPH.EDGE_NODE_INDEX", "DML_GRAPH_DESC.InputEdges[0].ToNodeIndex", id="an-input-edge-to-node-5-of-2-is-out-of-range"),
        pytest.param(dict(inputs=[input_edge(0, 0, 1)]), "GRAPH.EDGE_SLOT_INDEX", "DML_GRAPH_DESC.InputEdges[0].ToNodeInputIndex", id="pooling-has-no-input-1"),
        pytest.param(dict(inputs=[input_edge(1, 0)]), "GRAPH.INPUT_INDEX", "DML_GRAPH_DESC.InputEdges[0].GraphInputIndex", id="graph-input-1-of-1-is-out-of-range"),
        pytest.param(dict(outputs=[output_edge(1, 0, 3)]), "GRAPH.OUTPUT_INDEX", "DML_GRAPH_DESC.OutputEdges[0].GraphOutputIndex", id="graph-output-3-of-1-is-out-of-range"),
        pytest.param(dict(outputs=[output_edge(1, 1, 0)]), "GRAPH.EDGE_SLOT_INDEX", "DML_GRAPH_DESC.OutputEdges[0].FromNodeOutputIndex", id="pooling-has-no-output-1"),
        pytest.param(dict(mids=[intermediate_edge(0, 0, 1), intermediate_edge(0, 0, 1)]), "GRAPH.NODE_INPUT_CONNECTED_TWICE", "DML_GRAPH_DESC.IntermediateEdges[1]", id="one-node-input-fed-by-two-edges"),
        pytest.param(dict(mids=[]), "GRAPH.NODE_INPUT_UNCONNECTED", "DML_GRAPH_DESC.Nodes[1]", id="the-second-pool-input-is-left-unconnected"),
        pytest.param(dict(outputs=[output_edge(1, 0, 0), output_edge(0, 0, 0)]), "GRAPH.OUTPUT_WRITTEN_TWICE", "DML_GRAPH_DESC.OutputEdges[1].GraphOutputIndex", id="graph-output-0-written-twice"),
        pytest.param(dict(outputs=[]), "GRAPH.OUTPUT_UNWRITTEN", "DML_GRAPH_DESC.OutputCount", id="graph-output-0-never-written"),
    ],
)
def test_edge_rules_name_the_edge_and_field(numpy_device: dmlpy.Device, edges: dict, rule: str, path: str) -> None:
    a, b = chain(numpy_device)
    desc = graph_desc(
        1, 1, [operator_node(a), operator_node(b)], edges.get("inputs", [input_edge(0, 0)]),
        edges.get("outputs", [output_edge(1, 0, 0)]), edges.get("mids", [intermediate_edge(0, 0, 1)]),
    )  # fmt: skip
    assert_rule(compile_error(numpy_device, desc), rule, path)


def test_a_node_output_connected_nowhere_is_refused(numpy_device: dmlpy.Device) -> None:
    a, b = chain(numpy_device)
    c = numpy_device.create_operator(pool_desc(8))
    desc = graph_desc(1, 1, [operator_node(a), operator_node(b), operator_node(c)], [input_edge(0, 0), input_edge(0, 2)], [output_edge(1, 0, 0)], [intermediate_edge(0, 0, 1)])
    assert_rule(compile_error(numpy_device, desc), "GRAPH.NODE_OUTPUT_UNCONNECTED", "DML_GRAPH_DESC.Nodes[2]")


def test_a_cycle_names_the_nodes_in_it(numpy_device: dmlpy.Device) -> None:
    ops = [numpy_device.create_operator(pool_desc(4)) for _ in range(3)]
    # 0 -> 1 -> 2 -> 1 would need input 0 of node 1 twice; a real cycle: 1 -> 2 -> 1, fed by nothing else
    same = [numpy_device.create_operator(DML_AVERAGE_POOLING_OPERATOR_DESC(
        buffer_tensor("float32", (1, 1, 4, 4)), buffer_tensor("float32", (1, 1, 4, 4)), 2, (1, 1), (1, 1), (0, 0), (0, 0), False)) for _ in range(2)]  # fmt: skip
    desc = graph_desc(1, 1, [operator_node(ops[0], "head"), operator_node(same[0], "left"), operator_node(same[1], "right")],
                      [input_edge(0, 0)], [output_edge(0, 0, 0)], [intermediate_edge(1, 0, 2), intermediate_edge(2, 0, 1)])  # fmt: skip
    error = compile_error(numpy_device, desc)
    finding = assert_rule(error, "GRAPH.CYCLE")
    assert "left" in finding.message and "right" in finding.message


def test_edges_between_tensors_of_different_byte_sizes_are_refused(numpy_device: dmlpy.Device) -> None:
    a = numpy_device.create_operator(pool_desc(8))  # 4x4 output: 64 bytes
    b = numpy_device.create_operator(pool_desc(8))  # 8x8 input: 256 bytes
    desc = graph_desc(1, 1, [operator_node(a), operator_node(b)], [input_edge(0, 0)], [output_edge(1, 0, 0)], [intermediate_edge(0, 0, 1, 0, "mismatch")])
    assert_rule(compile_error(numpy_device, desc), "GRAPH.EDGE_SIZE_MISMATCH", "DML_GRAPH_DESC.IntermediateEdges[0] ('mismatch')")


def test_one_graph_input_read_at_two_byte_sizes_is_refused(numpy_device: dmlpy.Device) -> None:
    a = numpy_device.create_operator(pool_desc(8))
    b = numpy_device.create_operator(pool_desc(4))
    desc = graph_desc(1, 2, [operator_node(a), operator_node(b)], [input_edge(0, 0), input_edge(0, 1)], [output_edge(0, 0, 0), output_edge(1, 0, 1)])
    assert_rule(compile_error(numpy_device, desc), "GRAPH.INPUT_SIZE_MISMATCH", "DML_GRAPH_DESC.InputEdges[1]")


def test_an_owned_input_fed_by_another_node_is_refused(numpy_device: dmlpy.Device) -> None:
    a = numpy_device.create_operator(pool_desc(8))
    b = numpy_device.create_operator(pool_desc(4, owned=True))
    desc = graph_desc(1, 1, [operator_node(a), operator_node(b)], [input_edge(0, 0)], [output_edge(1, 0, 0)], [intermediate_edge(0, 0, 1)])
    assert_rule(compile_error(numpy_device, desc), "GRAPH.OWNED_INPUT_SOURCE", "DML_GRAPH_DESC.IntermediateEdges[0]")


def test_one_graph_input_both_owned_and_not_is_refused(numpy_device: dmlpy.Device) -> None:
    a = numpy_device.create_operator(pool_desc(8, owned=True))
    b = numpy_device.create_operator(pool_desc(8))
    desc = graph_desc(1, 2, [operator_node(a), operator_node(b)], [input_edge(0, 0), input_edge(0, 1)], [output_edge(0, 0, 0), output_edge(1, 0, 1)])
    assert_rule(compile_error(numpy_device, desc), "GRAPH.OWNED_INPUT_INCONSISTENT", "DML_GRAPH_DESC.InputEdges[1]")


def test_a_slot_whose_tensor_desc_is_null_cannot_be_connected() -> None:
    pytest.importorskip("dmlpy.operators.convolution")
    from dmlpy.operators.convolution import DML_CONVOLUTION_OPERATOR_DESC  # noqa: PLC0415

    device = dmlpy.create_device(backend="numpy")
    conv = device.create_operator(DML_CONVOLUTION_OPERATOR_DESC(
        buffer_tensor("float32", (1, 1, 4, 4)), buffer_tensor("float32", (1, 1, 1, 1)), None, buffer_tensor("float32", (1, 1, 4, 4)),
        dmlpy.DML_CONVOLUTION_MODE.CROSS_CORRELATION, dmlpy.DML_CONVOLUTION_DIRECTION.FORWARD, 2, (1, 1), (1, 1), (0, 0), (0, 0), (0, 0), 1, None))  # fmt: skip
    desc = graph_desc(3, 1, [operator_node(conv)], [input_edge(0, 0, 0), input_edge(1, 0, 1), input_edge(2, 0, 2)], [output_edge(0, 0, 0)])
    assert_rule(compile_error(device, desc), "GRAPH.ABSENT_TENSOR_CONNECTED", "DML_GRAPH_DESC.InputEdges[2]")


def test_validate_reports_graph_findings_without_a_device(numpy_device: dmlpy.Device) -> None:
    a, b = chain(numpy_device)
    desc = graph_desc(1, 1, [operator_node(a), operator_node(b)], [input_edge(0, 0)], [output_edge(1, 0, 0)], [])
    report = dmlpy.validate(desc)
    assert not report.ok
    assert_rule(report, "GRAPH.NODE_INPUT_UNCONNECTED")


def test_bad_edge_struct_types_are_type_errors_or_findings(numpy_device: dmlpy.Device) -> None:
    a, _ = chain(numpy_device)
    desc = graph_desc(1, 1, [operator_node(a)], [DML_GRAPH_EDGE_DESC(DML_GRAPH_EDGE_TYPE.INPUT, DML_INPUT_GRAPH_EDGE_DESC(-1, 0, 0))], [output_edge(0, 0, 0)])
    assert_rule(compile_error(numpy_device, desc), "GRAPH.INPUT_INDEX")
    desc.Nodes = "not a list"
    with pytest.raises(TypeError):
        numpy_device.compile_graph(desc)


# ---------------------------------------------------------------------------------------
# Execution


def test_a_chain_computes_what_its_nodes_compute_one_by_one(device: dmlpy.Device) -> None:
    a, b = chain(device)
    compiled = device.compile_graph(graph_desc(1, 1, [operator_node(a), operator_node(b)], [input_edge(0, 0)], [output_edge(1, 0, 0)], [intermediate_edge(0, 0, 1)]))
    assert compiled.get_binding_properties().TemporaryResourceSize >= 64  # the 4x4 intermediate
    x = np.arange(64, dtype=np.float32).reshape(1, 1, 8, 8)
    (raw,) = run_graph(device, compiled, [x], [16])
    # hand-computed: 2x2 means of 0..63 as 8x8, then 2x2 means of those
    expected = np.array([13.5, 17.5, 45.5, 49.5], np.float32)
    np.testing.assert_array_equal(np.frombuffer(raw, np.float32), expected)


def test_an_unused_graph_input_takes_a_slot_and_any_binding(device: dmlpy.Device) -> None:
    a = device.create_operator(pool_desc(4))
    compiled = device.compile_graph(graph_desc(2, 1, [operator_node(a)], [input_edge(1, 0)], [output_edge(0, 0, 0)]))
    assert len(compiled.input_slots()) == 2
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    (raw,) = run_graph(device, compiled, [np.zeros(4, np.float32), x], [16])
    np.testing.assert_array_equal(np.frombuffer(raw, np.float32), [2.5, 4.5, 10.5, 12.5])


def test_one_node_output_feeding_a_graph_output_and_a_node(device: dmlpy.Device) -> None:
    a, b = chain(device)
    compiled = device.compile_graph(graph_desc(1, 2, [operator_node(a), operator_node(b)], [input_edge(0, 0)], [output_edge(1, 0, 0), output_edge(0, 0, 1)], [intermediate_edge(0, 0, 1)]))
    x = np.arange(64, dtype=np.float32).reshape(1, 1, 8, 8)
    final, middle = run_graph(device, compiled, [x], [16, 64])
    np.testing.assert_array_equal(np.frombuffer(middle, np.float32)[:4], [4.5, 6.5, 8.5, 10.5])
    np.testing.assert_array_equal(np.frombuffer(final, np.float32), [13.5, 17.5, 45.5, 49.5])


def test_a_constant_node_feeds_its_bytes_to_the_consumer(device: dmlpy.Device) -> None:
    op = device.create_operator(pool_desc(4))
    data = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    compiled = device.compile_graph(graph_desc(0, 1, [constant_node(data, "weights"), operator_node(op)], [], [output_edge(1, 0, 0)], [intermediate_edge(0, 0, 1)]))
    (raw,) = run_graph(device, compiled, [], [16])
    np.testing.assert_array_equal(np.frombuffer(raw, np.float32), [2.5, 4.5, 10.5, 12.5])


def test_owned_graph_inputs_are_consumed_by_the_initializer_and_refused_at_execute(device: dmlpy.Device) -> None:
    op = device.create_operator(pool_desc(4, owned=True))
    compiled = device.compile_graph(graph_desc(1, 1, [operator_node(op)], [input_edge(0, 0)], [output_edge(0, 0, 0)]))
    assert compiled.get_binding_properties().PersistentResourceSize >= 64
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    (raw,) = run_graph(device, compiled, [x], [16])
    np.testing.assert_array_equal(np.frombuffer(raw, np.float32), [2.5, 4.5, 10.5, 12.5])
    table = device.create_binding_table(compiled)
    with pytest.raises(DmlError) as caught:
        table.bind_inputs([dmlpy.buffer_binding(dmlpy.Buffer.from_array(x))])
    assert_rule(caught.value, "BINDING.OWNED_INPUT_AT_EXECUTE")


def test_a_graph_runs_only_after_its_initializer(numpy_device: dmlpy.Device) -> None:
    a, b = chain(numpy_device)
    compiled = numpy_device.compile_graph(graph_desc(1, 1, [operator_node(a), operator_node(b)], [input_edge(0, 0)], [output_edge(1, 0, 0)], [intermediate_edge(0, 0, 1)]))
    table = numpy_device.create_binding_table(compiled)
    table.bind_inputs([dmlpy.buffer_binding(dmlpy.Buffer(256))])
    table.bind_outputs([dmlpy.buffer_binding(dmlpy.Buffer(16))])
    table.bind_temporary_resource(dmlpy.buffer_binding(dmlpy.Buffer(compiled.get_binding_properties().TemporaryResourceSize)))
    recorder, command_list = numpy_device.create_command_recorder(), numpy_device.create_command_list()
    recorder.record_dispatch(command_list, compiled, table)
    command_list.close()
    with pytest.raises(DmlError) as caught:
        numpy_device.execute(command_list)
    assert_rule(caught.value, "DISPATCH.NOT_INITIALIZED")


def test_dead_intermediates_share_temporary_memory(numpy_device: dmlpy.Device) -> None:
    # 64 -> 32 -> 16 -> 8 -> 4: each intermediate dies when the next node has read it
    sizes = [64, 32, 16, 8]
    ops = [numpy_device.create_operator(pool_desc(n)) for n in sizes]
    mids = [intermediate_edge(i, 0, i + 1) for i in range(3)]
    compiled = numpy_device.compile_graph(graph_desc(1, 1, [operator_node(op) for op in ops], [input_edge(0, 0)], [output_edge(3, 0, 0)], mids))
    # intermediates of 32x32, 16x16 and 8x8 floats (4096, 1024, 256 bytes): the third fits where the first was
    assert compiled.get_binding_properties().TemporaryResourceSize == 4096 + 1024


# ---------------------------------------------------------------------------------------
# The builder


def test_builder_infers_sizes_and_runs_like_the_operators_one_by_one(device: dmlpy.Device) -> None:
    g = dmlpy.GraphBuilder(device)
    x = g.input("x", "float32", (2, 3, 16, 16))
    y = g.average_pooling(x, window=(3, 3), strides=(2, 2), start_padding=(1, 1), end_padding=(1, 1), include_padding=True)
    z = g.average_pooling(y, window=(2, 2), strides=(2, 2))
    assert y.sizes == (2, 3, 8, 8) and z.sizes == (2, 3, 4, 4)
    program = g.compile({"z": z})
    data = np.random.default_rng(5).standard_normal((2, 3, 16, 16)).astype(np.float32)
    got = program(x=data)["z"]
    step = dmlpy.run(g._nodes[0].desc, device=device, InputTensor=data)  # noqa: SLF001 - the very descs the builder made
    expected = dmlpy.run(g._nodes[1].desc, device=device, InputTensor=step)  # noqa: SLF001
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_builder_nhwc_policy_lays_outputs_out_channels_last(numpy_device: dmlpy.Device) -> None:
    g = dmlpy.GraphBuilder(numpy_device, policy="nhwc")
    x = g.input("x", "float32", (1, 3, 4, 4))
    y = g.average_pooling(x, window=(2, 2), strides=(2, 2))
    assert y.desc.Strides == (12, 1, 6, 3)
    data = np.arange(48, dtype=np.float32).reshape(1, 3, 4, 4)
    got = g.compile([y])(x=data)["output0"]
    np.testing.assert_array_equal(got[0, 0], [[2.5, 4.5], [10.5, 12.5]])


def test_builder_reports_the_call_and_the_argument() -> None:
    g = dmlpy.GraphBuilder(backend="numpy")
    x = g.input("x", "float32", (1, 1, 4, 4))
    with pytest.raises(DmlError) as caught:
        g.average_pooling(x, window=(2, 2), strides=(0, 1))
    assert "average_pooling" in caught.value.summary and "'strides'" in caught.value.summary
    assert "test_graph.py" in caught.value.summary
    assert_rule(caught.value, "POOLING.STRIDE_ZERO")


def test_builder_accepts_an_explicit_ceil_shaped_output() -> None:
    g = dmlpy.GraphBuilder(backend="numpy")
    x = g.input("x", "float32", (1, 1, 5, 5))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = g.average_pooling(x, window=(2, 2), strides=(2, 2), output_sizes=(1, 1, 3, 3))
        out = g.compile([y])(x=np.ones((1, 1, 5, 5), np.float32))["output0"]
    assert any("POOLING.CEIL_OUTPUT" in str(w.message) for w in caught)
    np.testing.assert_array_equal(out, np.ones((1, 1, 3, 3)))  # the overhanging windows average only real taps


def test_builder_program_refuses_unknown_and_missing_inputs() -> None:
    g = dmlpy.GraphBuilder(backend="numpy")
    x = g.input("x", "float32", (1, 1, 4, 4))
    program = g.compile([g.average_pooling(x, window=(2, 2), strides=(2, 2))])
    with pytest.raises(TypeError, match="missing: x"):
        program()
    with pytest.raises(TypeError, match="unknown: y"):
        program(x=np.zeros((1, 1, 4, 4), np.float32), y=1)


def test_an_empty_window_nan_reaches_only_the_next_windows_that_read_it(device: dmlpy.Device) -> None:
    """A first pooling pads 1..9 (3x3) by one row and column in front without IncludePadding: row 0 and column 0
    are empty windows (NaN, documented). A 2x2 stride-1 pooling of that reads the NaNs in its first row and column
    only; the other four windows are hand-computed means of 2x2 blocks of 1..9."""
    g = dmlpy.GraphBuilder(device)
    x = g.input("x", "float32", (1, 1, 3, 3))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        padded = g.average_pooling(x, window=(1, 1), strides=(1, 1), start_padding=(1, 1), end_padding=(0, 0))
        y = g.average_pooling(padded, window=(2, 2), strides=(1, 1))
        out = g.compile([y])(x=np.arange(1, 10, dtype=np.float32).reshape(1, 1, 3, 3))["output0"]
    assert any("POOLING.EMPTY_WINDOW" in str(w.message) for w in caught)
    assert np.isnan(out[0, 0, 0, :]).all() and np.isnan(out[0, 0, :, 0]).all()
    np.testing.assert_array_equal(out[0, 0, 1:, 1:], [[3.0, 4.0], [6.0, 7.0]])
