class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[1000][1]cpu"):
        pow_1: "f32[1000][1]cpu" = torch.ops.aten.pow.Tensor_Scalar(x, 2)
        return (pow_1,)
