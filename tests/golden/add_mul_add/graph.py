class GraphModule(torch.nn.Module):
    def forward(self, a: "f32[1000][1]cpu", b: "f32[1000][1]cpu"):
        add: "f32[1000][1]cpu" = torch.ops.aten.add.Tensor(a, b)
        mul: "f32[1000][1]cpu" = torch.ops.aten.mul.Tensor(add, 2)
        add_1: "f32[1000][1]cpu" = torch.ops.aten.add.Tensor(mul, a)
        return (add_1,)
