"""Pictures: the SVG parses, draws the windows, taps, scatter lines, moved elements and buffer slots
counted by hand, refuses descs the validator refuses, and renders in a browser."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

import dmlpy
from dmlpy import (
    DML_AVERAGE_POOLING1_OPERATOR_DESC,
    DML_CONVOLUTION_DIRECTION,
    DML_CONVOLUTION_OPERATOR_DESC,
    DML_DEPTH_TO_SPACE1_OPERATOR_DESC,
    DML_DEPTH_SPACE_ORDER,
    DmlError,
    buffer_tensor,
)
from dmlpy import pictures
from browser import assert_pixels_not_blank, screenshot_bands
from conftest import assert_rule

NS = "{http://www.w3.org/2000/svg}"


def parse(svg: pictures.SVG) -> ET.Element:
    root = ET.fromstring(str(svg))
    assert root.tag == f"{NS}svg"
    return root


def shapes(root: ET.Element, tag: str, cls: str) -> list[ET.Element]:
    """Elements whose class list holds ``cls``."""
    return [e for e in root.iter(f"{NS}{tag}") if cls in e.get("class", "").split()]


def texts(root: ET.Element, cls: str) -> list[str]:
    return [e.text or "" for e in shapes(root, "text", cls)]


# ---------------------------------------------------------------------------------------
# The SVG object


def test_svg_object_gives_the_same_text_to_notebooks_str_and_files(tmp_path: Path) -> None:
    svg = pictures.tensor_layout(sizes=(2, 3))
    path = svg.save(tmp_path / "layout.svg")
    assert svg._repr_svg_() == str(svg) == path.read_text()
    assert "<svg" not in repr(svg)


# ---------------------------------------------------------------------------------------
# Pooling and convolution windows


def test_ceil_shape_pooling_draws_the_overhanging_window_and_its_divisor() -> None:
    # 7 inputs, padding 1 + 0, window 3, stride 2: floor (7 + 1 - 3) / 2 + 1 = 3; the ceil shape adds a
    # 4th window at positions 5, 6, 7, and position 7 lies past the padded input [-1, 7)
    root = parse(pictures.pooling_windows(input_size=7, window=3, strides=2, start_padding=1, end_padding=0, ceil_mode=True, include_padding=True))
    assert len(shapes(root, "rect", "window")) == 4
    taps = [r.get("class").split()[1] for r in shapes(root, "rect", "tap")]
    assert taps == ["pad", "input", "input"] + ["input"] * 6 + ["input", "input", "beyond"]  # y[0] starts at -1, y[3] ends at 7
    assert [r.get("class") for r in shapes(root, "rect", "cell")] == ["cell pad"] + ["cell input"] * 7 + ["cell beyond"]
    # IncludePadding: divisors count taps inside [-1, 7): 3, 3, 3 and 2 for the overhanging window
    assert texts(root, "divisor") == ["sum / 3", "sum / 3", "sum / 3", "sum / 2"]
    assert len(texts(root, "axis-title")) == 1  # a single size is a row: the height axis (1, window 1) is not drawn


def test_without_include_padding_the_divisor_counts_input_taps_only() -> None:
    root = parse(pictures.pooling_windows(input_size=7, window=3, strides=2, start_padding=1, end_padding=0, ceil_mode=True))
    assert texts(root, "divisor") == ["sum / 2", "sum / 3", "sum / 3", "sum / 2"]


def test_dilated_2d_pooling_draws_each_axis() -> None:
    # H: 5 inputs, window 2, stride 2, padding 0 + 1: (5 + 1 - 2) / 2 + 1 = 3 windows of 2 taps
    # W: 6 inputs, window 3 dilated 2 (spans 5), stride 2, padding 1 + 1: (6 + 2 - 5) / 2 + 1 = 2 windows of 3 taps
    svg = pictures.pooling_windows(input_size=(5, 6), window=(2, 3), strides=(2, 2), dilations=(1, 2), start_padding=(0, 1), end_padding=(1, 1), output_index=(1, 0))
    root = parse(svg)
    assert len(texts(root, "axis-title")) == 2
    assert len(shapes(root, "rect", "window")) == 5
    assert len(shapes(root, "rect", "tap")) == 3 * 2 + 2 * 3
    w_taps = [int(r.find(f"{NS}title").text.split(" at position ")[1].split(" ")[0]) for r in shapes(root, "rect", "tap")[6:]]
    assert w_taps == [-1, 1, 3, 1, 3, 5]  # o * 2 - 1 + k * 2
    faded = [r for r in shapes(root, "rect", "window") if r.get("opacity") == "0.3"]
    assert len(faded) == 2 + 1  # every window but y[1] along H and y[0] along W


def test_pooling_windows_from_a_desc_match_the_parameters() -> None:
    desc = DML_AVERAGE_POOLING1_OPERATOR_DESC(buffer_tensor("float32", (1, 3, 1, 7)), buffer_tensor("float32", (1, 3, 1, 4)), 2, (1, 2), (1, 3), (0, 1), (0, 0), (1, 1), True)
    assert str(pictures.pooling_windows(dmlpy.operator_desc(desc))) == str(
        pictures.pooling_windows(input_size=7, window=3, strides=2, start_padding=1, end_padding=0, ceil_mode=True, include_padding=True)
    )


def test_a_pooling_desc_the_validator_rejects_is_not_drawn() -> None:
    desc = DML_AVERAGE_POOLING1_OPERATOR_DESC(buffer_tensor("float32", (1, 1, 1, 7)), buffer_tensor("float32", (1, 1, 1, 5)), 2, (1, 2), (1, 3), (0, 1), (0, 0), (1, 1), True)
    with pytest.raises(DmlError) as caught:
        pictures.pooling_windows(desc)
    assert_rule(caught.value, "POOLING.OUTPUT_SIZE", "DML_AVERAGE_POOLING1_OPERATOR_DESC.OutputTensor.Sizes[3]")


@pytest.mark.parametrize(
    ("call", "error"),
    [
        pytest.param(lambda: pictures.pooling_windows(), TypeError, id="no desc and no sizes says what to pass"),
        pytest.param(lambda: pictures.pooling_windows(input_size=(1, 2, 3, 4), window=1), ValueError, id="four spatial sizes are refused"),
        pytest.param(lambda: pictures.pooling_windows(input_size=(4, 4), window=(2, 2, 2)), ValueError, id="a window per axis must match the axes"),
        pytest.param(lambda: pictures.pooling_windows(buffer_tensor("float32", (1, 2))), TypeError, id="a tensor is not a pooling desc"),
        pytest.param(lambda: pictures.tensor_layout(sizes=(1, 1, 100, 100)), ValueError, id="a picture too large to read is refused"),
        pytest.param(lambda: pictures.tensor_layout(sizes=(2, 2), data_type=dmlpy.DML_TENSOR_DATA_TYPE.UNKNOWN), ValueError, id="an UNKNOWN data type has no layout"),
        pytest.param(lambda: pictures.tensor_layout(sizes=(2, 0)), ValueError, id="a zero size has no layout"),
    ],
)
def test_bad_arguments_get_a_clear_error(call: object, error: type[Exception]) -> None:
    with pytest.raises(error):
        call()  # type: ignore[operator]


def test_forward_convolution_windows_count_taps_on_the_input() -> None:
    # 6 inputs, kernel 3, stride 2, padding 1 + 1: (6 + 2 - 3) / 2 + 1 = 3 outputs reading -1..1, 1..3, 3..5
    root = parse(pictures.convolution_windows(input_size=6, kernel=3, strides=2, start_padding=1, end_padding=1))
    assert len(shapes(root, "rect", "window")) == 3
    assert texts(root, "divisor") == ["2 taps on input", "3 taps on input", "3 taps on input"]


def test_a_backward_convolution_is_sent_to_backward_scatter() -> None:
    desc = pictures._convolution_desc(4, 4, 2, 1, 1, None, DML_CONVOLUTION_DIRECTION.BACKWARD)
    with pytest.raises(ValueError, match="backward_scatter"):
        pictures.convolution_windows(desc)
    with pytest.raises(TypeError):
        pictures.backward_scatter(pictures._convolution_desc(4, 3, 1, 0, 0, None, DML_CONVOLUTION_DIRECTION.FORWARD))


# ---------------------------------------------------------------------------------------
# BACKWARD scatter


def test_backward_scatter_draws_every_input_tap_and_the_cropped_ones(backend: str) -> None:
    # 4 inputs, kernel 4, stride 2, padding 1 + 1: output (4 - 1) * 2 + 4 - 1 - 1 = 8; input i tap k lands at 2i + k - 1
    root = parse(pictures.backward_scatter(input_size=4, kernel=4, strides=2, start_padding=1, end_padding=1))
    lines = shapes(root, "line", "scatter")
    assert len(lines) == 16
    assert len([line for line in lines if "cropped" in line.get("class").split()]) == 2  # (i 0, k 0) -> -1 and (i 3, k 3) -> 8
    terms = [int(t) for t in texts(root, "terms") if t]
    assert terms == [1, 2, 2, 2, 2, 2, 2, 1]
    # the kernel agrees: ones through ones sum one per term
    desc = pictures._convolution_desc(4, 4, 2, 1, 1, None, DML_CONVOLUTION_DIRECTION.BACKWARD)
    ran = dmlpy.run(desc, backend=backend, InputTensor=np.ones((1, 1, 1, 4)), FilterTensor=np.ones((1, 1, 1, 4)))
    assert ran.reshape(-1).tolist() == terms


def test_backward_scatter_draws_a_larger_accepted_output() -> None:
    # stride 2 accepts 8 or 9 outputs; position 8 now receives (i 3, k 3)
    root = parse(pictures.backward_scatter(input_size=4, kernel=4, strides=2, start_padding=1, end_padding=1, output_size=9))
    assert [int(t) for t in texts(root, "terms") if t] == [1, 2, 2, 2, 2, 2, 2, 1, 1]
    with pytest.raises(DmlError) as caught:
        pictures.backward_scatter(input_size=4, kernel=4, strides=2, start_padding=1, end_padding=1, output_size=10)
    assert_rule(caught.value, "CONVOLUTION.BACKWARD_OUTPUT_SIZE")


# ---------------------------------------------------------------------------------------
# SPACE_TO_DEPTH / DEPTH_TO_SPACE


def expected_depth(c_count: int, h: int, w: int, b: int, order: str) -> list[int]:
    """Input element numbers in output order, from the docs' formula: depth channel (by*B + bx)*C + c (DCR) or c*B*B + by*B + bx (CRD)."""
    out = {}
    for c in range(c_count):
        for y in range(h):
            for x in range(w):
                by, bx = y % b, x % b
                k = (by * b + bx) * c_count + c if order == "DCR" else c * b * b + by * b + bx
                out[(k, y // b, x // b)] = (c * h + y) * w + x
    return [out[key] for key in sorted(out)]


@pytest.mark.parametrize("order", ["DCR", "CRD"])
def test_space_to_depth_moves_every_element_where_the_formula_says(order: str) -> None:
    name = {"DCR": "DEPTH_COLUMN_ROW", "CRD": "COLUMN_ROW_DEPTH"}[order]
    root = parse(pictures.space_depth_blocks(channels=2, height=4, width=6, block_size=2, order=name))
    assert [int(t) for t in texts(root, "input")] == list(range(48))
    assert [int(t) for t in texts(root, "output")] == expected_depth(2, 4, 6, 2, order)
    assert len(shapes(root, "rect", "block")) == 2 * 2 * 3
    assert f"({order})" in root.find(f"{NS}title").text


def test_depth_to_space_is_drawn_as_the_inverse_move() -> None:
    depth = (1, 8, 2, 3)
    desc = DML_DEPTH_TO_SPACE1_OPERATOR_DESC(buffer_tensor("float32", depth), buffer_tensor("float32", (1, 2, 4, 6)), 2, DML_DEPTH_SPACE_ORDER.COLUMN_ROW_DEPTH)
    root = parse(pictures.space_depth_blocks(desc))
    space_order = expected_depth(2, 4, 6, 2, "CRD")  # space element at depth position j
    inverse = [0] * 48
    for j, element in enumerate(space_order):
        inverse[element] = j
    assert [int(t) for t in texts(root, "output")] == inverse


# ---------------------------------------------------------------------------------------
# Sizes + Strides -> bytes


@pytest.mark.parametrize(
    ("sizes", "strides", "slots"),
    [
        pytest.param((1, 2, 2, 3), None, [str(i) for i in range(12)], id="packed NCHW puts elements in logical order"),
        # NHWC: element (c, h, w) = 6c + 3h + w sits at c + 6h + 2w
        pytest.param((1, 2, 2, 3), (12, 1, 6, 2), ["0", "6", "1", "7", "2", "8", "3", "9", "4", "10", "5", "11"], id="NHWC interleaves the channels"),
        pytest.param((1, 3, 2, 2), (0, 1, 0, 0), ["x4", "x4", "x4"], id="a broadcast reads each of 3 values 4 times"),
        # rows of 3 padded to 4: the 4th slot of the first two rows is unused; the last row ends the buffer (11 slots, 44 bytes)
        pytest.param((1, 1, 3, 3), (12, 12, 4, 1), ["0", "1", "2", "", "3", "4", "5", "", "6", "7", "8"], id="padded rows leave gaps"),
    ],
)
def test_tensor_layout_puts_each_element_at_its_strided_offset(sizes: tuple[int, ...], strides: tuple[int, ...] | None, slots: list[str]) -> None:
    root = parse(pictures.tensor_layout(sizes=sizes, strides=strides))
    drawn = shapes(root, "rect", "slot")
    assert len(drawn) == len(slots)
    numbers = iter(texts(root, "slot-number"))
    assert ["" if "unused" in r.get("class").split() else next(numbers) for r in drawn] == slots
    assert [int(t) for t in texts(root, "logical-number")] == list(range(int(np.prod(sizes))))


def test_four_bit_elements_take_half_a_byte_each() -> None:
    root = parse(pictures.tensor_layout(sizes=(1, 3), data_type=dmlpy.DML_TENSOR_DATA_TYPE.UINT4))
    assert len(shapes(root, "rect", "slot")) == 8  # 3 nibbles round up to 4 bytes: 8 slots
    assert texts(root, "slot-number") == ["0", "1", "2"]


def test_tensor_layout_takes_a_desc_and_draws_its_whole_buffer() -> None:
    tensor = buffer_tensor("float16", (1, 1, 2, 2), total_size=16)  # 8 bytes of data, 16 in the buffer
    root = parse(pictures.tensor_layout(tensor))
    assert len(shapes(root, "rect", "slot")) == 8
    assert len(shapes(root, "rect", "unused")) == 4


# ---------------------------------------------------------------------------------------
# In a browser


def graph_example() -> pictures.SVG:
    g = dmlpy.GraphBuilder(backend="numpy")
    x = g.input("x", "float32", (1, 4, 8, 8))
    w = g.input("w", "float32", (4, 2, 4, 4), owned=True)
    y = g.conv_transpose(x, w, strides=2, start_padding=1, end_padding=1)
    program = g.compile({"z": g.space_to_depth(g.average_pooling(y, window=(2, 2), strides=(2, 2)), 2), "r": g.relu(x)})
    return pictures.graph_picture(program)


EXAMPLES = {
    "pooling_windows": lambda: pictures.pooling_windows(input_size=7, window=3, strides=2, start_padding=1, ceil_mode=True, include_padding=True),
    "convolution_windows": lambda: pictures.convolution_windows(input_size=(5, 6), kernel=(3, 3), strides=(2, 2), dilations=(1, 2), start_padding=(1, 1), end_padding=(1, 1)),
    "backward_scatter": lambda: pictures.backward_scatter(input_size=4, kernel=4, strides=2, start_padding=1, end_padding=1),
    "space_to_depth_crd": lambda: pictures.space_depth_blocks(channels=2, height=4, width=4, block_size=2, order="COLUMN_ROW_DEPTH"),
    "layout_nhwc": lambda: pictures.tensor_layout(sizes=(1, 2, 2, 3), strides=dmlpy.nhwc_strides((1, 2, 2, 3))),
    "layout_padded_rows": lambda: pictures.tensor_layout(sizes=(1, 1, 3, 3), strides=(12, 12, 4, 1)),
    "graph": graph_example,
}


@pytest.fixture(scope="module")
def rendered_pictures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    return screenshot_bands({kind: str(make()) for kind, make in EXAMPLES.items()}, tmp_path_factory.mktemp("pictures"))


@pytest.mark.parametrize("kind", list(EXAMPLES))
def test_picture_renders_in_chromium(kind: str, rendered_pictures: dict[str, object]) -> None:
    assert_pixels_not_blank(rendered_pictures[kind], kind)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------
# The checked-in pictures of docs/pictures


def _docs_pictures() -> object:
    import importlib.util  # noqa: PLC0415

    path = Path(__file__).resolve().parent.parent / "docs" / "pictures" / "make.py"
    spec = importlib.util.spec_from_file_location("docs_pictures_make", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_pictures_in_docs_are_what_make_py_draws_today() -> None:
    make = _docs_pictures()
    stale = [name for name, text in make.render().items() if (make.HERE / name).read_text(encoding="utf-8") != text]  # type: ignore[attr-defined]
    assert not stale, f"stale pictures (run python docs/pictures/make.py): {stale}"


def test_the_pictures_readme_shows_every_picture() -> None:
    make = _docs_pictures()
    readme = (make.HERE / "README.md").read_text(encoding="utf-8")  # type: ignore[attr-defined]
    assert all(f"({name})" in readme for name in make.PICTURES)  # type: ignore[attr-defined]
