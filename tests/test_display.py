"""REPL and notebook display: short reprs, HTML tables that parse, rule links that resolve, graphs as SVG."""

from __future__ import annotations

import dataclasses
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import dmlpy
from dmlpy import (
    DML_ACTIVATION_LEAKY_RELU_OPERATOR_DESC,
    DML_AVERAGE_POOLING_OPERATOR_DESC,
    DML_BINDING_PROPERTIES,
    DML_CONVOLUTION_OPERATOR_DESC,
    DML_TENSOR_DATA_TYPE,
    DML_TENSOR_FLAGS,
    DmlError,
    Finding,
    Report,
    Severity,
    buffer_tensor,
    graph_desc,
    input_edge,
    intermediate_edge,
    operator_node,
    output_edge,
)
from dmlpy.display import RULES_PAGE, rule_anchor
from dmlpy.enums import DML_CONVOLUTION_MODE
from dmlpy.pictures import graph_model
from dmlpy.structs import CStruct, Kind, c_field
from browser import assert_pixels_not_blank, page, screenshot_bands

ROOT = Path(__file__).resolve().parent.parent


def pooling() -> DML_AVERAGE_POOLING_OPERATOR_DESC:
    return DML_AVERAGE_POOLING_OPERATOR_DESC(buffer_tensor("float32", (1, 1, 4, 4)), buffer_tensor("float32", (1, 1, 2, 2)), 2, (2, 2), (2, 2), (0, 0), (0, 0), False)


def convolution() -> DML_CONVOLUTION_OPERATOR_DESC:
    return DML_CONVOLUTION_OPERATOR_DESC(
        buffer_tensor("float32", (1, 8, 32, 32)), buffer_tensor("float32", (16, 8, 3, 3)), buffer_tensor("float32", (1, 16, 1, 1)),
        buffer_tensor("float32", (1, 16, 32, 32)), DML_CONVOLUTION_MODE.CROSS_CORRELATION, DimensionCount=2, Strides=(1, 1),
        Dilations=(1, 1), StartPadding=(1, 1), EndPadding=(1, 1), OutputPadding=(0, 0), GroupCount=1,
        FusedActivation=DML_ACTIVATION_LEAKY_RELU_OPERATOR_DESC(Alpha=0.25),
    )  # fmt: skip


def parse(markup: str) -> ET.Element:
    """HTML reprs are well-formed XML too, so a strict parser checks them."""
    return ET.fromstring(markup)


def rows(root: ET.Element) -> list[list[str]]:
    """The text of every cell of the outermost table's body rows."""
    body = root.find(".//table/tbody")
    assert body is not None
    return [["".join(cell.itertext()) for cell in row] for row in body.findall("tr")]


# ---------------------------------------------------------------------------------------
# Enums and HRESULTs


@pytest.mark.parametrize(
    ("value", "printed"),
    [
        pytest.param(dmlpy.DML_TENSOR_DATA_TYPE.FLOAT16, "DML_TENSOR_DATA_TYPE_FLOAT16", id="a data type prints its C name"),
        pytest.param(dmlpy.HRESULT.E_INVALIDARG, "E_INVALIDARG", id="an HRESULT prints its name"),
        pytest.param(dmlpy.DML_FEATURE_LEVEL.LEVEL_6_2, "DML_FEATURE_LEVEL_6_2", id="a feature level prints its C name"),
        pytest.param(DML_TENSOR_FLAGS(0), "DML_TENSOR_FLAG_NONE", id="no flags print as the zero flag"),
        pytest.param(dmlpy.DML_EXECUTION_FLAGS(3), "DML_EXECUTION_FLAG_ALLOW_HALF_PRECISION_COMPUTATION | DML_EXECUTION_FLAG_DISABLE_META_COMMANDS", id="flags print joined by |"),
        pytest.param(DML_TENSOR_FLAGS(3), "DML_TENSOR_FLAG_OWNED_BY_DML | 0x2", id="undefined flag bits print as hex"),
    ],
)
def test_enums_print_by_c_name(value: object, printed: str) -> None:
    assert str(value) == printed


def test_enums_still_format_as_numbers() -> None:
    assert f"{dmlpy.HRESULT.E_INVALIDARG:08X} {dmlpy.DML_TENSOR_DATA_TYPE.FLOAT16}" == "80070057 2"


# ---------------------------------------------------------------------------------------
# Descs


def test_desc_repr_is_one_field_a_line_with_nested_tensors_in_one_line() -> None:
    text = repr(convolution())
    lines = text.splitlines()
    assert lines[0] == "DML_CONVOLUTION_OPERATOR_DESC("
    assert lines[-1] == ")"
    assert len(lines) == 2 + len(dataclasses.fields(DML_CONVOLUTION_OPERATOR_DESC))
    assert "    InputTensor=DML_BUFFER_TENSOR_DESC(FLOAT32, {1, 8, 32, 32})," in lines
    assert "    Mode=DML_CONVOLUTION_MODE_CROSS_CORRELATION," in lines
    assert "    FusedActivation=DML_ACTIVATION_LEAKY_RELU_OPERATOR_DESC(Alpha=0.25)," in lines
    assert max(len(line) for line in lines) < 80


def test_desc_repr_says_bool_null_strides_and_flags_as_c_does() -> None:
    desc = pooling()
    desc.InputTensor = buffer_tensor("float16", (1, 1, 4, 4), (16, 16, 1, 4), DML_TENSOR_FLAGS.OWNED_BY_DML)
    text = repr(desc)
    assert "InputTensor=DML_BUFFER_TENSOR_DESC(FLOAT16, {1, 1, 4, 4}, Strides={16, 16, 1, 4}, DML_TENSOR_FLAG_OWNED_BY_DML)," in text
    assert "IncludePadding=FALSE," in text
    assert repr(DML_CONVOLUTION_OPERATOR_DESC()).count("=NULL,") == 4 + 5 + 1  # tensors, arrays, FusedActivation


def test_str_of_a_desc_still_prints_the_cpp() -> None:
    assert str(pooling()).endswith("const DML_AVERAGE_POOLING_OPERATOR_DESC desc = {&desc_InputTensor, &desc_OutputTensor, 2, desc_Strides, desc_WindowSize, desc_StartPadding, desc_EndPadding, FALSE};")


@dataclasses.dataclass
class DML_MADE_UP_OPERATOR_DESC(CStruct):  # noqa: N801 - a desc class display has never seen, as a generator would write it
    InputTensor: object = c_field(Kind.TENSOR)
    Axis: int = c_field(Kind.UINT, 3)
    Scale: float = c_field(Kind.FLOAT, 0.5)
    DataType: object = c_field(Kind.ENUM, DML_TENSOR_DATA_TYPE.INT8, enum_type=DML_TENSOR_DATA_TYPE)
    Flags: object = c_field(Kind.FLAGS, DML_TENSOR_FLAGS.OWNED_BY_DML, enum_type=DML_TENSOR_FLAGS)
    Offsets: object = c_field(Kind.UINT_ARRAY, (1, 2))
    Big: int = c_field(Kind.UINT64, 2**40)


def test_any_desc_dataclass_displays_from_its_field_kinds() -> None:
    desc = DML_MADE_UP_OPERATOR_DESC(buffer_tensor("int8", (2, 3)))
    assert repr(desc).splitlines()[1:-1] == [
        "    InputTensor=DML_BUFFER_TENSOR_DESC(INT8, {2, 3}),",
        "    Axis=3,",
        "    Scale=0.5,",
        "    DataType=DML_TENSOR_DATA_TYPE_INT8,",
        "    Flags=DML_TENSOR_FLAG_OWNED_BY_DML,",
        "    Offsets={1, 2},",
        "    Big=1099511627776,",
    ]
    table = rows(parse(desc._repr_html_()))
    assert [row[:2] for row in table] == [
        ["InputTensor", "const DML_TENSOR_DESC*"], ["Axis", "UINT"], ["Scale", "FLOAT"], ["DataType", "DML_TENSOR_DATA_TYPE"],
        ["Flags", "DML_TENSOR_FLAGS"], ["Offsets", "const UINT*"], ["Big", "UINT64"],
    ]  # fmt: skip


def test_an_enum_field_holding_an_unknown_number_says_so() -> None:
    desc = convolution()
    desc.Mode = 7
    assert "    Mode=7 (not a DML_CONVOLUTION_MODE value)," in repr(desc)


def test_desc_html_has_c_names_types_values_nested_activation_and_the_cpp() -> None:
    root = parse(convolution()._repr_html_())
    assert "DML_CONVOLUTION_OPERATOR_DESC (DML_OPERATOR_CONVOLUTION)" in root.find(".//caption").text
    table = rows(root)
    assert len(table) == len(dataclasses.fields(DML_CONVOLUTION_OPERATOR_DESC))
    assert table[0] == ["InputTensor", "const DML_TENSOR_DESC*", "DML_BUFFER_TENSOR_DESC(FLOAT32, {1, 8, 32, 32})"]
    assert table[6] == ["DimensionCount", "UINT (array length)", "2"]
    assert table[-1][0] == "FusedActivation" and "DML_ACTIVATION_LEAKY_RELU_OPERATOR_DESC" in table[-1][2]
    cpp = root.find(".//details/pre").text
    assert cpp == convolution().to_cpp()


def test_desc_html_escapes_what_it_shows() -> None:
    desc = DML_MADE_UP_OPERATOR_DESC()
    desc.Offsets = "<script>alert(1)</script>"  # not a valid value: displayed anyway, as text
    root = parse(desc._repr_html_())
    assert root.find(".//script") is None
    assert "'<script>alert(1)</script>'" in "".join(root.itertext())


def test_a_desc_c_could_not_hold_still_displays() -> None:
    desc = convolution()
    desc.Strides = 5
    desc.FusedActivation = 42
    text = repr(desc)
    assert "    Strides=5," in text and "    FusedActivation=42," in text
    root = parse(desc._repr_html_())
    cpp = root.find(".//details/pre").text
    assert cpp.startswith("//") and "[FIELD.TYPE]" in cpp


# ---------------------------------------------------------------------------------------
# Reports and errors


def github_anchors(markdown: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation other than - and _ dropped, spaces to -."""
    anchors = set()
    for line in markdown.splitlines():
        match = re.match(r"#+ (.*)", line)
        if match:
            anchors.add(re.sub(r"[^\w\- ]", "", match.group(1).strip().lower()).replace(" ", "-"))
    return anchors


def test_every_rule_links_to_its_family_heading_on_the_rules_page() -> None:
    anchors = github_anchors((ROOT / "docs" / "rules.md").read_text())
    assert "space_depth" in anchors  # the one family whose anchor keeps an underscore
    for rule_id in dmlpy.RULES:
        assert rule_anchor(rule_id) in anchors, rule_id


def test_report_html_lists_each_finding_with_severity_linked_rule_path_and_message() -> None:
    bad = pooling()
    bad.OutputTensor = buffer_tensor("float32", (1, 1, 3, 2))
    report = dmlpy.validate(bad)
    root = parse(report._repr_html_())
    table = rows(root)
    assert table == [[f.severity.value, f.rule, f.path, f.message] for f in report.findings]
    assert table[0][:3] == ["error", "POOLING.OUTPUT_SIZE", "DML_AVERAGE_POOLING_OPERATOR_DESC.OutputTensor.Sizes[2]"]
    link = root.find(".//a")
    assert link.get("href") == f"{RULES_PAGE}#pooling"
    assert "1 error, 0 warnings" in root.find(".//caption").text


def test_report_repr_counts_and_lists_findings() -> None:
    finding = Finding("POOLING.CEIL_OUTPUT", Severity.WARNING, "X.Sizes[2]", 2, 3, "is 3")
    assert repr(Report()) == "<dmlpy.Report 0 errors, 0 warnings>"
    assert repr(Report([finding])) == "<dmlpy.Report 0 errors, 1 warnings\nwarning: [POOLING.CEIL_OUTPUT] X.Sizes[2]: is 3>"


def test_report_html_escapes_messages() -> None:
    report = Report([Finding("TENSOR.SIZE_ZERO", Severity.ERROR, "a<b>", 1, 0, "x < y & <b>bold</b>")])
    root = parse(report._repr_html_())
    assert root.find(".//b") is None
    assert rows(root)[0][2:] == ["a<b>", "x < y & <b>bold</b>"]


def test_a_dml_error_shows_its_hresult_by_name_and_number() -> None:
    with pytest.raises(DmlError) as caught:
        dmlpy.create_device(backend="numpy").create_operator(DML_AVERAGE_POOLING_OPERATOR_DESC())
    root = parse(caught.value._repr_html_())
    assert root.find(".//caption").text.startswith("DmlError E_INVALIDARG (0x80070057)")
    assert [row[1] for row in rows(root)] == caught.value.rule_ids


# ---------------------------------------------------------------------------------------
# Devices, operators, binding properties


def test_device_repr_names_backend_feature_level_debug_strict_and_state() -> None:
    device = dmlpy.create_device(dmlpy.DML_FEATURE_LEVEL_5_0, backend="numpy", strict=True)
    assert repr(device) == "<dmlpy.Device backend='numpy' feature_level=DML_FEATURE_LEVEL_5_0 debug=True strict=True alive>"
    table = rows(parse(device._repr_html_()))
    assert table[1] == ["feature level", "DML_FEATURE_LEVEL_5_0 (5.0)"]


def test_a_removed_device_says_removed_and_why() -> None:
    device = dmlpy.create_device(backend="numpy")
    compiled = device.compile_operator(device.create_operator(pooling()))
    table = device.create_binding_table(compiled)
    with pytest.raises(DmlError):
        table.bind_inputs([dmlpy.DML_BINDING_DESC(), dmlpy.DML_BINDING_DESC()])  # one slot, two bindings: removes the device
    assert repr(device).endswith(" removed (E_INVALIDARG)>")
    root = parse(device._repr_html_())
    assert "BINDING.INPUT_COUNT" in "".join(root.find(".//ul").itertext())


def test_operator_and_compiled_operator_name_their_c_type_and_slots() -> None:
    device = dmlpy.create_device(backend="numpy")
    operator = device.create_operator(convolution())
    assert repr(operator).splitlines() == [
        "<dmlpy.Operator DML_OPERATOR_CONVOLUTION (DML_CONVOLUTION_OPERATOR_DESC)",
        "    inputs:  InputTensor=DML_BUFFER_TENSOR_DESC(FLOAT32, {1, 8, 32, 32}), FilterTensor=DML_BUFFER_TENSOR_DESC(FLOAT32, {16, 8, 3, 3}), "
        "BiasTensor=DML_BUFFER_TENSOR_DESC(FLOAT32, {1, 16, 1, 1})",
        "    outputs: OutputTensor=DML_BUFFER_TENSOR_DESC(FLOAT32, {1, 16, 32, 32})>",
    ]
    compiled = device.compile_operator(operator)
    # 3 inputs + 1 output bound, nothing owned: RequiredDescriptorCount 4, no resources
    assert repr(compiled).splitlines()[-1] == "    DML_BINDING_PROPERTIES(RequiredDescriptorCount=4, TemporaryResourceSize=0, PersistentResourceSize=0)>"
    table = rows(parse(compiled._repr_html_()))
    assert [row[:2] for row in table] == [["input 0", "InputTensor"], ["input 1", "FilterTensor"], ["input 2", "BiasTensor"], ["output 0", "OutputTensor"]]
    assert rows(parse(operator._repr_html_()))[4] == ["Mode", "DML_CONVOLUTION_MODE", "DML_CONVOLUTION_MODE_CROSS_CORRELATION"]


def test_binding_properties_show_their_three_numbers_by_name() -> None:
    props = DML_BINDING_PROPERTIES(5, 1024, 256)
    assert repr(props) == "DML_BINDING_PROPERTIES(RequiredDescriptorCount=5, TemporaryResourceSize=1024, PersistentResourceSize=256)"
    root = parse(props._repr_html_())
    assert [["".join(c.itertext()) for c in row] for row in root.iter("tr")] == [
        ["RequiredDescriptorCount", "5"], ["TemporaryResourceSize", "1024"], ["PersistentResourceSize", "256"],
    ]  # fmt: skip


# ---------------------------------------------------------------------------------------
# Graphs


def builder_program() -> dmlpy.GraphProgram:
    g = dmlpy.GraphBuilder(backend="numpy")
    x = g.input("x", "float32", (1, 4, 8, 8))
    w = g.input("w", "float32", (4, 2, 4, 4), owned=True)
    y = g.conv_transpose(x, w, strides=2, start_padding=1, end_padding=1)  # (8 - 1) * 2 + 4 - 1 - 1 = 16
    z = g.space_to_depth(g.average_pooling(y, window=(2, 2), strides=(2, 2)), 2)  # 16 / 2 = 8, then {1, 2*4, 4, 4}
    return g.compile({"z": z, "r": g.relu(x)})


def test_graph_model_has_inputs_nodes_outputs_and_edge_tensors() -> None:
    model = graph_model(builder_program().graph_desc)
    assert [(b.kind, b.label) for b in model.boxes] == [
        ("node", "conv_transpose0"), ("node", "average_pooling1"), ("node", "space_to_depth2"), ("node", "relu3"),
        ("input", "x"), ("input", "w"), ("output", "z"), ("output", "r"),
    ]  # fmt: skip
    labels = {(model.boxes[e.source].label, model.boxes[e.target].label): e.label for e in model.edges}
    assert labels == {
        ("x", "conv_transpose0"): "FLOAT32 {1, 4, 8, 8}",
        ("w", "conv_transpose0"): "FLOAT32 {4, 2, 4, 4}",
        ("x", "relu3"): "FLOAT32 {1, 4, 8, 8}",
        ("conv_transpose0", "average_pooling1"): "FLOAT32 {1, 2, 16, 16}",
        ("average_pooling1", "space_to_depth2"): "FLOAT32 {1, 2, 8, 8}",
        ("space_to_depth2", "z"): "FLOAT32 {1, 8, 4, 4}",
        ("relu3", "r"): "FLOAT32 {1, 4, 8, 8}",
    }


def svg_boxes(svg: ET.Element) -> dict[str, float]:
    """Box label -> the box's top edge."""
    ns = "{http://www.w3.org/2000/svg}"
    tops = [float(r.get("y")) for r in svg.iter(f"{ns}rect") if r.get("class", "").startswith("box ")]
    labels = [t.text for t in svg.iter(f"{ns}text") if t.get("class") == "box-label"]
    return dict(zip(labels, tops, strict=True))


def test_graph_svg_draws_every_edge_downwards() -> None:
    program = builder_program()
    svg = ET.fromstring(program.graph_desc._repr_html_())[0]
    ns = "{http://www.w3.org/2000/svg}"
    assert len([line for line in svg.iter(f"{ns}line") if line.get("class") == "edge"]) == 7
    top = svg_boxes(svg)
    model = graph_model(program.graph_desc)
    for edge in model.edges:
        assert top[model.boxes[edge.source].label] < top[model.boxes[edge.target].label], edge
    assert ET.fromstring(program._repr_html_())[0].tag == f"{ns}svg"


def test_a_compiled_graph_shows_its_slots_and_binding_properties() -> None:
    compiled = builder_program().compiled
    lines = repr(compiled).splitlines()
    assert lines[0] == "<dmlpy.CompiledOperator IDMLCompiledOperator (graph) flags=DML_EXECUTION_FLAG_NONE"
    assert lines[1].startswith("    inputs:  ") and "DML_BUFFER_TENSOR_DESC(FLOAT32, {4, 2, 4, 4}, DML_TENSOR_FLAG_OWNED_BY_DML)" in lines[1]
    props = compiled.get_binding_properties()
    assert lines[-1] == f"    DML_BINDING_PROPERTIES(RequiredDescriptorCount={props.RequiredDescriptorCount}, TemporaryResourceSize={props.TemporaryResourceSize}, PersistentResourceSize={props.PersistentResourceSize})>"
    table = rows(parse(compiled._repr_html_()))
    assert [row[0] for row in table] == ["input 0", "input 1", "output 0", "output 1"]
    assert table[1][3] == "OWNED_BY_DML"


def test_a_cyclic_graph_still_displays() -> None:
    device = dmlpy.create_device(backend="numpy")
    a, b = (device.create_operator(DML_ACTIVATION_LEAKY_RELU_OPERATOR_DESC(buffer_tensor("float32", (1, 4)), buffer_tensor("float32", (1, 4)))) for _ in range(2))
    desc = graph_desc(1, 1, [operator_node(a, "a"), operator_node(b, "b<")], [input_edge(0, 0)], [output_edge(1, 0, 0)],
                      [intermediate_edge(0, 0, 1), intermediate_edge(1, 0, 0)])  # fmt: skip
    svg = ET.fromstring(desc._repr_html_())[0]
    assert set(svg_boxes(svg)) == {"a", "b<", "input 0", "output 0"}
    assert repr(desc).splitlines()[0] == "DML_GRAPH_DESC(InputCount=1, OutputCount=1, NodeCount=2, InputEdgeCount=1, OutputEdgeCount=1, IntermediateEdgeCount=2)"


def test_a_graph_with_malformed_edges_draws_what_it_can() -> None:
    device = dmlpy.create_device(backend="numpy")
    a = device.create_operator(DML_ACTIVATION_LEAKY_RELU_OPERATOR_DESC(buffer_tensor("float32", (1, 4)), buffer_tensor("float32", (1, 4))))
    broken = [dmlpy.DML_GRAPH_EDGE_DESC(dmlpy.DML_GRAPH_EDGE_TYPE.INPUT, None), input_edge([0], 0), input_edge(0, 5)]
    desc = graph_desc(1, 1, [operator_node(a, "a")], [*broken, input_edge(0, 0)], [output_edge(0, 0, 0)])
    model = graph_model(desc)
    assert [(model.boxes[e.source].label, model.boxes[e.target].label) for e in model.edges] == [("input 0", "a"), ("a", "output 0")]
    parse(desc._repr_html_())


# ---------------------------------------------------------------------------------------
# In a browser


def compiled_convolution() -> dmlpy.CompiledOperator:
    device = dmlpy.create_device(backend="numpy")
    return device.compile_operator(device.create_operator(convolution()))


def invalid_pooling_report() -> Report:
    bad = pooling()
    bad.OutputTensor = buffer_tensor("float32", (1, 1, 3, 2))
    return dmlpy.validate(bad)


HTML_EXAMPLES = {
    "desc": lambda: convolution()._repr_html_(),
    "report": lambda: invalid_pooling_report()._repr_html_(),
    "device": lambda: dmlpy.create_device(backend="numpy")._repr_html_(),
    "operator": lambda: compiled_convolution().operator._repr_html_(),
    "compiled operator": lambda: compiled_convolution()._repr_html_(),
    "binding properties": lambda: compiled_convolution().get_binding_properties()._repr_html_(),
    "graph": lambda: builder_program().graph_desc._repr_html_(),
}


def test_the_browser_check_sees_a_known_square_and_fails_on_a_blank_page(tmp_path: Path) -> None:
    square = '<div style="position:absolute;left:0;top:0;width:100px;height:50px;background:#ff0000"></div>'
    white = '<body style="margin:0;background:#ffffff">'
    bands = screenshot_bands({"square": page(square).replace("<body>", white), "blank": page("").replace("<body>", white)}, tmp_path)
    red = (bands["square"][..., :3] == (255, 0, 0)).all(axis=-1)
    assert red.sum() == 100 * 50 and red[:50, :100].all()
    assert_pixels_not_blank(bands["square"], "square")
    with pytest.raises(AssertionError, match="one flat colour"):
        assert_pixels_not_blank(bands["blank"], "blank")


@pytest.fixture(scope="module")
def rendered_reprs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    return screenshot_bands({kind: page(make()) for kind, make in HTML_EXAMPLES.items()}, tmp_path_factory.mktemp("reprs"))


@pytest.mark.parametrize("kind", list(HTML_EXAMPLES))
def test_html_repr_renders_in_chromium(kind: str, rendered_reprs: dict[str, object]) -> None:
    assert_pixels_not_blank(rendered_reprs[kind], kind)  # type: ignore[arg-type]
