"""Space-to-depth: TensorFlow's NHWC examples as one DirectML operator, and DirectML's own example.

DirectML keeps every tensor's Sizes in NCHW order and says the memory layout with Strides.
So TensorFlow's ``tf.nn.space_to_depth(x, 2, data_format="NHWC")`` is a single
DML_SPACE_TO_DEPTH_OPERATOR_DESC whose tensors have NHWC strides: the input buffer holds
the TensorFlow array's bytes exactly as they are, and the output buffer's bytes are the
TensorFlow result. Nothing is transposed, before or after.

Part 1 runs the three examples of TensorFlow's SpaceToDepth documentation that way. Part 2
runs DirectML's documentation example ({1,2,4,6} -> {1,8,2,3}, B = 2) in both orders,
DEPTH_COLUMN_ROW and COLUMN_ROW_DEPTH, and back with depth-to-space.
"""

import numpy as np

import dmlpy
from dmlpy import (
    DML_DEPTH_SPACE_ORDER_COLUMN_ROW_DEPTH,
    DML_DEPTH_SPACE_ORDER_DEPTH_COLUMN_ROW,
    DML_DEPTH_TO_SPACE1_OPERATOR_DESC,
    DML_FEATURE_LEVEL_6_4,
    DML_SPACE_TO_DEPTH1_OPERATOR_DESC,
    DML_SPACE_TO_DEPTH_OPERATOR_DESC,
    DML_TENSOR_DATA_TYPE_FLOAT32,
    DML_TENSOR_DATA_TYPE_UINT32,
    buffer_tensor,
)

device = dmlpy.create_device(DML_FEATURE_LEVEL_6_4)
print(f"backend: {device.backend_name}")


def execute(desc, input_bytes: np.ndarray) -> dmlpy.Buffer:
    """The DirectML pipeline on raw bytes: create, compile, initialize, bind, record, execute."""
    compiled = device.compile_operator(device.create_operator(desc))
    recorder = device.create_command_recorder()
    command_list = device.create_command_list()
    initializer = device.create_operator_initializer([compiled])
    recorder.record_dispatch(command_list, initializer, device.create_binding_table(initializer))
    command_list.resource_barrier([dmlpy.D3D12_RESOURCE_BARRIER.uav()])  # the operator starts after its initializer
    input_buffer = dmlpy.Buffer.from_array(input_bytes)  # the bytes as they are, C order
    output_buffer = device.create_buffer(desc.OutputTensor.Desc.TotalTensorSizeInBytes)
    table = device.create_binding_table(compiled)
    table.bind_inputs([dmlpy.buffer_binding(input_buffer)])
    table.bind_outputs([dmlpy.buffer_binding(output_buffer)])
    recorder.record_dispatch(command_list, compiled, table)
    command_list.close()
    device.execute(command_list)
    return output_buffer


# ---------------------------------------------------------------------------------------
# Part 1: TensorFlow, NHWC, block_size 2 (the examples of TensorFlow's SpaceToDepth page)

print("\nPart 1: tf.nn.space_to_depth(x, 2, data_format='NHWC') as one DirectML operator")

# The first example by hand. x has TensorFlow's shape [N, H, W, C] = [1, 2, 2, 1].
x = np.array([[[[1], [2]], [[3], [4]]]], dtype=np.float32)
n, h, w, c = x.shape
in_sizes = (n, c, h, w)  # DirectML order
out_sizes = dmlpy.space_to_depth_output_sizes(in_sizes, 2)  # {N, C*2*2, H/2, W/2} = {1, 4, 1, 1}
desc = DML_SPACE_TO_DEPTH_OPERATOR_DESC(  # DEPTH_COLUMN_ROW: TensorFlow's order
    InputTensor=buffer_tensor(DML_TENSOR_DATA_TYPE_FLOAT32, in_sizes, dmlpy.nhwc_strides(in_sizes)),
    OutputTensor=buffer_tensor(DML_TENSOR_DATA_TYPE_FLOAT32, out_sizes, dmlpy.nhwc_strides(out_sizes)),
    BlockSize=2,
)
print(f"input  Sizes {in_sizes}, Strides {dmlpy.nhwc_strides(in_sizes)} (NHWC)")
print(f"output Sizes {out_sizes}, Strides {dmlpy.nhwc_strides(out_sizes)} (NHWC)")
raw = execute(desc, x)
y = np.frombuffer(raw.data, dtype=np.float32, count=4).reshape(1, 1, 1, 4)  # TensorFlow's [N, H/2, W/2, 4C]
print(f"{list(x.shape)} -> {list(y.shape)}: {y.ravel().tolist()}")
assert y.tolist() == [[[[1, 2, 3, 4]]]]

# The other two with the helper, which builds the same kind of desc from a TensorFlow shape.
examples = [
    ([[[[1, 2, 3], [4, 5, 6]], [[7, 8, 9], [10, 11, 12]]]], [[[[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]]]]),
    (
        [[[[1], [2], [5], [6]], [[3], [4], [7], [8]], [[9], [10], [13], [14]], [[11], [12], [15], [16]]]],
        [[[[1, 2, 3, 4], [5, 6, 7, 8]], [[9, 10, 11, 12], [13, 14, 15, 16]]]],
    ),
]
for x_list, expected in examples:
    x = np.array(x_list, dtype=np.float32)
    op = dmlpy.tensorflow_space_to_depth(x.shape, 2, "NHWC", np.float32)
    raw = execute(op.desc, x)
    y = np.frombuffer(raw.data, dtype=np.float32, count=int(np.prod(op.output_shape))).reshape(op.output_shape)
    print(f"{list(x.shape)} -> {list(y.shape)}: {y.reshape(-1, y.shape[-1]).tolist()}")
    assert y.tolist() == expected, y
    # and back: tf.nn.depth_to_space(y, 2) is the inverse
    back = dmlpy.tensorflow_depth_to_space(y.shape, 2, "NHWC", np.float32)
    raw = execute(back.desc, y)
    assert np.array_equal(np.frombuffer(raw.data, dtype=np.float32, count=x.size).reshape(x.shape), x)
print("depth_to_space gives every input back.")

# ---------------------------------------------------------------------------------------
# Part 2: DirectML's example, {1,2,4,6} -> {1,8,2,3} with B = 2, in both orders

print("\nPart 2: DirectML's SPACE_TO_DEPTH1 example in both orders")
depth = np.array([[[[9 * c + 3 * h + w for w in range(3)] for h in range(2)] for c in range(8)]], dtype=np.uint32)
spaces = {
    DML_DEPTH_SPACE_ORDER_DEPTH_COLUMN_ROW: [
        [[0, 18, 1, 19, 2, 20], [36, 54, 37, 55, 38, 56], [3, 21, 4, 22, 5, 23], [39, 57, 40, 58, 41, 59]],
        [[9, 27, 10, 28, 11, 29], [45, 63, 46, 64, 47, 65], [12, 30, 13, 31, 14, 32], [48, 66, 49, 67, 50, 68]],
    ],
    DML_DEPTH_SPACE_ORDER_COLUMN_ROW_DEPTH: [
        [[0, 9, 1, 10, 2, 11], [18, 27, 19, 28, 20, 29], [3, 12, 4, 13, 5, 14], [21, 30, 22, 31, 23, 32]],
        [[36, 45, 37, 46, 38, 47], [54, 63, 55, 64, 56, 65], [39, 48, 40, 49, 41, 50], [57, 66, 58, 67, 59, 68]],
    ],
}
space_tensor = buffer_tensor(DML_TENSOR_DATA_TYPE_UINT32, (1, 2, 4, 6))
depth_tensor = buffer_tensor(DML_TENSOR_DATA_TYPE_UINT32, (1, 8, 2, 3))
for order, space in spaces.items():
    x = np.array([space], dtype=np.uint32)
    to_depth = DML_SPACE_TO_DEPTH1_OPERATOR_DESC(space_tensor, depth_tensor, 2, order)
    y = dmlpy.run(to_depth, device=device, InputTensor=x)
    print(f"{order.name}: output channel 1 = {y[0, 1].tolist()} (the doc prints [[9, 10, 11], [12, 13, 14]])")
    assert np.array_equal(y, depth)
    back = dmlpy.run(
        DML_DEPTH_TO_SPACE1_OPERATOR_DESC(depth_tensor, space_tensor, 2, order), device=device, InputTensor=y
    )
    assert np.array_equal(back, x)
print("Both orders give the documented {1,8,2,3} output, and DEPTH_TO_SPACE1 inverts them.")
print(
    "\nThe DEPTH_COLUMN_ROW desc in C++:\n"
    + DML_SPACE_TO_DEPTH1_OPERATOR_DESC(space_tensor, depth_tensor, 2).to_cpp("to_depth")
)
