class GraphModule(torch.nn.Module):
    def forward(self, a_0: "f32[33][1]cpu"):
        # File: scripts/capture_fixtures.py:132 in forward, code: return self.fn(*a)
        var: "f32[1][1]cpu" = torch.ops.aten.var.correction(a_0, [0], correction = 0, keepdim = True);  a_0 = None
        return (var,)
