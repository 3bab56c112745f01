class GraphModule(torch.nn.Module):
    def forward(self, a_0: "f32[4][1]cpu"):
        # File: scripts/capture_fixtures.py:132 in forward, code: return self.fn(*a)
        _assert_tensor_metadata = torch.ops.aten._assert_tensor_metadata.default(a_0, None, None, torch.float32, device = device(type='cpu'), layout = torch.strided);  _assert_tensor_metadata = None
        _to_copy: "i32[4][1]cpu" = torch.ops.aten._to_copy.default(a_0, dtype = torch.int32);  a_0 = None
        return (_to_copy,)
