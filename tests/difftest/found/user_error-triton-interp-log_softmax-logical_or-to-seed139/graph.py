class GraphModule(torch.nn.Module):
    def forward(self, a_0: "bf16[][]cpu"):
        # File: scripts/capture_fixtures.py:132 in forward, code: return self.fn(*a)
        _log_softmax: "bf16[][]cpu" = torch.ops.aten._log_softmax.default(a_0, 0, False)
        _assert_tensor_metadata = torch.ops.aten._assert_tensor_metadata.default(_log_softmax, None, None, torch.bfloat16, device = device(type='cpu'), layout = torch.strided);  _assert_tensor_metadata = None
        _to_copy: "u8[][]cpu" = torch.ops.aten._to_copy.default(_log_softmax, dtype = torch.uint8);  _log_softmax = None
        logical_or: "b8[][]cpu" = torch.ops.aten.logical_or.default(a_0, _to_copy);  a_0 = _to_copy = None
        return (logical_or,)
