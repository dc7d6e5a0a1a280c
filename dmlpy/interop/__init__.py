"""Interop: descs in from the frameworks (ONNX, TensorFlow, nGraph), out to what runs on Windows (DxDispatch, C++)."""
