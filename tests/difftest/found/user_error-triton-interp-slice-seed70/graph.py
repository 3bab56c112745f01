class GraphModule(torch.nn.Module):
    def forward(self, a_0: "f32[1][1]cpu"):
        # File: scripts/capture_fixtures.py:132 in forward, code: return self.fn(*a)
        slice_1: "f32[1][3]cpu" = torch.ops.aten.slice.Tensor(a_0, 0, -1, 3, 3);  a_0 = None
        return (slice_1,)
