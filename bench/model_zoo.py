"""The model suite, in one place: bench/models_bench.py times it at full size, and
tests/python/test_models.py checks it through torch.compile(backend="coil") at tiny sizes.

Every model is built from its config with random weights (torchvision, transformers; no
downloads), in eval mode; `build_training` gives the training steps (a model with its loss). `build(name, device, dtype, tiny)` returns (model, args). Tiny
sizes: 2 layers, hidden 64, 32x32 images, batch 2, so that the whole suite compiles and
runs on two CPU cores within a few minutes. The transformers attend through PyTorch's
scaled_dot_product_attention (attn_implementation="sdpa", transformers' default), which
coil compiles as one fused attention kernel.
"""
from __future__ import annotations

from typing import Callable

import torch


def _images(device, dtype, batch, size, channels_last=False):
    x = torch.randn(batch, 3, size, size, device=device, dtype=dtype)
    return x.contiguous(memory_format=torch.channels_last) if channels_last else x


def resnet50(device, dtype, tiny, batch=64):
    from torchvision.models.resnet import Bottleneck, ResNet

    # Tiny: one bottleneck per stage (the widths are the architecture's).
    m = ResNet(Bottleneck, [1, 1, 1, 1], num_classes=10) if tiny else ResNet(Bottleneck, [3, 4, 6, 3])
    m = m.to(device=device, dtype=dtype, memory_format=torch.channels_last)
    return m, (_images(device, dtype, 2 if tiny else batch, 32 if tiny else 224, channels_last=True),)


def mobilenetv3(device, dtype, tiny, batch=64):
    import torchvision

    m = torchvision.models.mobilenet_v3_small(num_classes=10 if tiny else 1000).to(device=device, dtype=dtype)
    return m, (_images(device, dtype, 2 if tiny else batch, 32 if tiny else 224),)


def convnext(device, dtype, tiny, batch=32):
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt

    if tiny:
        m = ConvNeXt([CNBlockConfig(32, 64, 1), CNBlockConfig(64, None, 1)], num_classes=10)
    else:  # convnext_tiny
        m = ConvNeXt([CNBlockConfig(96, 192, 3), CNBlockConfig(192, 384, 3), CNBlockConfig(384, 768, 9),
                      CNBlockConfig(768, None, 3)], stochastic_depth_prob=0.1)
    return m.to(device=device, dtype=dtype), (_images(device, dtype, 2 if tiny else batch, 32 if tiny else 224),)


def vit(device, dtype, tiny, batch=32):
    from torchvision.models.vision_transformer import VisionTransformer

    if tiny:
        m = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=64, mlp_dim=128,
                              num_classes=10)
    else:  # vit_b_16
        m = VisionTransformer(image_size=224, patch_size=16, num_layers=12, num_heads=12, hidden_dim=768,
                              mlp_dim=3072)
    return m.to(device=device, dtype=dtype), (_images(device, dtype, 2 if tiny else batch, 32 if tiny else 224),)


def _token_ids(device, vocab, batch, seq):
    return torch.randint(0, vocab, (batch, seq), device=device)


def gpt2(device, dtype, tiny, batch=1, seq=128):
    from transformers import GPT2Config, GPT2Model

    size = dict(n_layer=2, n_embd=64, n_head=2, vocab_size=512, n_positions=64, bos_token_id=0, eos_token_id=0) if tiny else \
        dict(n_layer=12, n_embd=768, n_head=12)
    config = GPT2Config(**size, use_cache=False, attn_implementation="sdpa")
    m = GPT2Model(config).to(device=device, dtype=dtype)
    return m, (_token_ids(device, config.vocab_size, 2 if tiny else batch, 16 if tiny else seq),)


def bert(device, dtype, tiny, batch=8, seq=128):
    from transformers import BertConfig, BertModel

    size = dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=2, intermediate_size=128, vocab_size=512,
                max_position_embeddings=64) if tiny else {}
    config = BertConfig(**size, attn_implementation="sdpa")
    m = BertModel(config, add_pooling_layer=False).to(device=device, dtype=dtype)
    return m, (_token_ids(device, config.vocab_size, 2 if tiny else batch, 16 if tiny else seq),)


# The LLaMA-style model's sizes: tiny for the tests, and a 0.3B-parameter one for the bench.
LLAMA_SIZES = {
    "tiny": dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
                 intermediate_size=128, vocab_size=512, max_position_embeddings=64),
    "full": dict(num_hidden_layers=8, hidden_size=1024, num_attention_heads=16, num_key_value_heads=4,
                 intermediate_size=2816, vocab_size=32000),
}


def llama(device, dtype, tiny, batch=1, seq=128):
    from transformers import LlamaConfig, LlamaModel

    config = LlamaConfig(**LLAMA_SIZES["tiny" if tiny else "full"], use_cache=False, attn_implementation="sdpa")
    m = LlamaModel(config).to(device=device, dtype=dtype)
    return m, (_token_ids(device, config.vocab_size, 2 if tiny else batch, 16 if tiny else seq),)


# name: (device, dtype, tiny) -> (model, args). The bench's gpt2_b8 is GPT-2 at batch 8, seq 512.
MODELS: dict[str, Callable] = {
    "resnet50": resnet50,
    "mobilenetv3": mobilenetv3,
    "convnext": convnext,
    "vit": vit,
    "gpt2_b1": gpt2,
    "gpt2_b8": lambda d, t, tiny: gpt2(d, t, tiny, batch=8, seq=512),
    "bert": bert,
    "llama": llama,
}


def build(name: str, device, dtype, tiny: bool = False):
    """The model `name` in eval mode and its inputs."""
    model, args = MODELS[name](device, dtype, tiny)
    return model.eval(), args


# ---- training ---------------------------------------------------------------------------
# A training step's model is the suite's model with its task's head and loss inside: a
# module whose forward returns the loss, so that the loss and its gradient are compiled
# with the rest. Language models predict their next token (masked-LM BERT its own), image
# models a label per image. Dropout is off: training tests compare with eager, and coil
# draws random numbers from its own generator.


class TrainStep(torch.nn.Module):
    """`model` and its loss: forward(*args) returns a scalar."""

    def __init__(self, model, loss):
        super().__init__()
        self.model = model
        self.loss = loss

    def forward(self, *args):
        return self.loss(self.model, *args)


def _lm_loss(model, ids):
    return model(ids, labels=ids).loss


def _image_loss(model, images):
    logits = model(images)
    labels = torch.arange(images.shape[0], device=images.device) % logits.shape[-1]
    return torch.nn.functional.cross_entropy(logits.float(), labels)


def _language_model(cls_name, config_name, size, device, dtype, tiny, batch, seq):
    import transformers

    config = getattr(transformers, config_name)(**size, use_cache=False, attn_implementation="sdpa")
    for key in [k for k in vars(config) if "dropout" in k or "pdrop" in k]:
        if isinstance(getattr(config, key), float):
            setattr(config, key, 0.0)
    m = getattr(transformers, cls_name)(config).to(device=device, dtype=dtype)
    return TrainStep(m, _lm_loss), (_token_ids(device, config.vocab_size, 2 if tiny else batch, 16 if tiny else seq),)


def resnet18(device, dtype, tiny, batch=64):
    from torchvision.models.resnet import BasicBlock, ResNet

    # Tiny: one block per stage, and 4 images of 64x64, so that batch norm's last statistics
    # are over 16 values per channel (over 2 they make training chaotic: eager's own steps
    # part from float64's).
    m = ResNet(BasicBlock, [1, 1, 1, 1] if tiny else [2, 2, 2, 2], num_classes=10 if tiny else 1000)
    m = m.to(device=device, dtype=dtype, memory_format=torch.channels_last)
    return m, (_images(device, dtype, 4 if tiny else batch, 64 if tiny else 224, channels_last=True),)


def _image_model(builder):
    def make(device, dtype, tiny, batch=64):
        m, args = builder(device, dtype, tiny, batch=batch)
        for mod in m.modules():
            if isinstance(mod, torch.nn.Dropout):
                mod.p = 0.0
        return TrainStep(m, _image_loss), args
    return make


_GPT2 = dict(n_layer=2, n_embd=64, n_head=2, vocab_size=512, n_positions=64, bos_token_id=0, eos_token_id=0)
_BERT = dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=2, intermediate_size=128, vocab_size=512,
             max_position_embeddings=64)

# name: (device, dtype, tiny) -> (TrainStep, args): the training benchmark's sizes
# (GPT-2 small at batch 8, seq 512; BERT-base at batch 8, seq 512; ResNet-50 at batch 64).
TRAINING: dict[str, Callable] = {
    "gpt2": lambda d, t, tiny: _language_model("GPT2LMHeadModel", "GPT2Config", _GPT2 if tiny else {}, d, t, tiny, 8, 512),
    "bert": lambda d, t, tiny: _language_model("BertForMaskedLM", "BertConfig", _BERT if tiny else {}, d, t, tiny, 8, 512),
    "llama": lambda d, t, tiny: _language_model("LlamaForCausalLM", "LlamaConfig",
                                                LLAMA_SIZES["tiny" if tiny else "full"], d, t, tiny, 4, 512),
    "resnet18": _image_model(resnet18),
    "resnet50": _image_model(resnet50),
    "vit": _image_model(vit),
}


def build_training(name: str, device, dtype, tiny: bool = False):
    """The training step of model `name` (a module returning its loss) in train mode, and its inputs."""
    model, args = TRAINING[name](device, dtype, tiny)
    return model.train(), args


# The models whose inputs are token ids (batch, sequence); the others take images.
LANGUAGE_MODELS = {"gpt2_b1", "gpt2_b8", "bert", "llama"}


def resized(args, batch: int, seq: int | None = None) -> list:
    """The model's inputs at another batch size (rows repeated) and sequence length (tokens
    cut or repeated); new tensors, not views (Dynamo guards on a view's base)."""
    out = []
    for a in args:
        a = a.repeat(*([-(-batch // a.shape[0])] + [1] * (a.dim() - 1)))[:batch]
        if seq is not None:
            a = a.repeat(1, -(-seq // a.shape[1]))[:, :seq]
        out.append(a.clone())
    return out


def dynamic_sizes(name: str, args) -> list[tuple[int, int | None]]:
    """(batch, sequence length or None) a model runs at with dynamic shapes: three batch sizes,
    and for a language model two more sequence lengths."""
    batch = args[0].shape[0]
    sizes = [(batch, None), (batch + 1, None), (batch + 3, None)]
    if name in LANGUAGE_MODELS:
        seq = args[0].shape[1]
        sizes = [(b, seq) for b, _ in sizes] + [(batch, seq - 5), (batch, seq + 8)]
    return sizes
