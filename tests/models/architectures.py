"""Ten small but realistic image and sequence networks and a control, with random weights, for the ONNX importer's model tests.

Every architecture is written here in plain ``torch.nn``, following the published design
(and torchvision's reference code where it has one), narrowed and fed small inputs so that
each runs in well under a second on dmlpy's NumPy backend. Nothing is downloaded: weights
are drawn from a seeded generator, and BatchNormalization's running statistics and affine
parameters are randomised too, so that no normalisation is the identity.

``ARCHITECTURES`` maps a name to an ``Architecture``: ``build()`` returns the module in
eval mode, ``example()`` the input tensor it is exported and tested with. Only
``tests/models/export.py`` imports this file, and only when torch is installed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

SEED = 20261126


def _bn(channels: int) -> nn.BatchNorm2d:
    return nn.BatchNorm2d(channels)


def _conv_bn(cin: int, cout: int, kernel: int, stride: int = 1, groups: int = 1, act: type[nn.Module] | None = nn.ReLU, dilation: int = 1) -> nn.Sequential:
    """Conv (no bias) + BatchNorm + activation, torchvision's Conv2dNormActivation."""
    layers: list[nn.Module] = [nn.Conv2d(cin, cout, kernel, stride, dilation * (kernel - 1) // 2, dilation=dilation, groups=groups, bias=False), _bn(cout)]
    if act is not None:
        layers.append(act())
    return nn.Sequential(*layers)


# ---------------------------------------------------------------------------------------
# ResNet-18's layout (He et al. 2015, torchvision.models.resnet18), half width


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = _bn(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = _bn(cout)
        self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), _bn(cout)) if stride != 1 or cin != cout else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + identity)


class ResNet18(nn.Module):
    """Stem (7x7/2 conv, 3x3/2 max pool), four stages of two basic blocks, global average pool, fc."""

    def __init__(self, width: int = 32, classes: int = 10) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 7, 2, 3, bias=False), _bn(width), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1))
        stages: list[nn.Module] = []
        cin = width
        for i, cout in enumerate([width, 2 * width, 4 * width, 8 * width]):
            stride = 1 if i == 0 else 2
            stages += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
            cin = cout
        self.stages = nn.Sequential(*stages)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(self.stages(self.stem(x)))
        return self.fc(torch.flatten(x, 1))


# ---------------------------------------------------------------------------------------
# MobileNetV2 (Sandler et al. 2018, torchvision.models.mobilenet_v2), width_mult 0.35


def _divisible(value: float, divisor: int = 8) -> int:
    new = max(divisor, int(value + divisor / 2) // divisor * divisor)
    return new + divisor if new < 0.9 * value else new


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int) -> None:
        super().__init__()
        hidden = cin * expand
        layers: list[nn.Module] = [] if expand == 1 else [_conv_bn(cin, hidden, 1, act=nn.ReLU6)]
        layers += [_conv_bn(hidden, hidden, 3, stride, groups=hidden, act=nn.ReLU6), nn.Conv2d(hidden, cout, 1, bias=False), _bn(cout)]
        self.conv = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.conv(x) if self.residual else self.conv(x)


class MobileNetV2(nn.Module):
    SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1))  # t, c, n, s

    def __init__(self, width_mult: float = 0.35, classes: int = 10) -> None:
        super().__init__()
        cin = _divisible(32 * width_mult)
        last = _divisible(1280 * max(1.0, width_mult))
        layers: list[nn.Module] = [_conv_bn(3, cin, 3, 2, act=nn.ReLU6)]
        for t, c, n, s in self.SETTINGS:
            cout = _divisible(c * width_mult)
            for i in range(n):
                layers.append(InvertedResidual(cin, cout, s if i == 0 else 1, t))
                cin = cout
        layers.append(_conv_bn(cin, last, 1, act=nn.ReLU6))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(last, classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.adaptive_avg_pool2d(self.features(x), (1, 1))
        return self.classifier(torch.flatten(x, 1))


# ---------------------------------------------------------------------------------------
# EfficientNet-B0 (Tan and Le 2019, torchvision.models.efficientnet_b0): MBConv with SiLU and
# squeeze-excitation, depthwise convolutions; width 0.5, depth 0.5


class SqueezeExcitation(nn.Module):
    def __init__(self, channels: int, squeezed: int) -> None:
        super().__init__()
        self.fc1 = nn.Conv2d(channels, squeezed, 1)
        self.fc2 = nn.Conv2d(squeezed, channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale = F.adaptive_avg_pool2d(x, 1)
        scale = torch.sigmoid(self.fc2(F.silu(self.fc1(scale))))
        return x * scale


class MBConv(nn.Module):
    def __init__(self, cin: int, cout: int, kernel: int, stride: int, expand: int) -> None:
        super().__init__()
        hidden = cin * expand
        layers: list[nn.Module] = [] if expand == 1 else [_conv_bn(cin, hidden, 1, act=nn.SiLU)]
        layers += [_conv_bn(hidden, hidden, kernel, stride, groups=hidden, act=nn.SiLU), SqueezeExcitation(hidden, max(1, cin // 4)), _conv_bn(hidden, cout, 1, act=None)]
        self.block = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.block(x) if self.residual else self.block(x)  # stochastic depth is the identity in eval


class EfficientNetB0(nn.Module):
    SETTINGS = ((1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3), (6, 5, 1, 112, 3), (6, 5, 2, 192, 4), (6, 3, 1, 320, 1))  # expand, k, s, c, n

    def __init__(self, width: float = 0.5, depth: float = 0.5, classes: int = 10) -> None:
        super().__init__()
        cin = _divisible(32 * width)
        layers: list[nn.Module] = [_conv_bn(3, cin, 3, 2, act=nn.SiLU)]
        for expand, k, s, c, n in self.SETTINGS:
            cout = _divisible(c * width)
            for i in range(max(1, round(n * depth))):
                layers.append(MBConv(cin, cout, k, s if i == 0 else 1, expand))
                cin = cout
        last = 4 * cin
        layers.append(_conv_bn(cin, last, 1, act=nn.SiLU))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(last, classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))


# ---------------------------------------------------------------------------------------
# ShuffleNetV2 x0.5 (Ma et al. 2018, torchvision.models.shufflenet_v2_x0_5): channel split,
# channel shuffle (view-transpose-view), depthwise convolutions


def channel_shuffle(x: torch.Tensor, groups: int) -> torch.Tensor:
    n, c, h, w = x.shape
    x = x.view(n, groups, c // groups, h, w).transpose(1, 2).contiguous()
    return x.view(n, c, h, w)


class ShuffleUnit(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.stride = stride
        branch = cout // 2
        if stride > 1:
            self.branch1 = nn.Sequential(_conv_bn(cin, cin, 3, stride, groups=cin, act=None), _conv_bn(cin, branch, 1))
        self.branch2 = nn.Sequential(_conv_bn(cin if stride > 1 else branch, branch, 1), _conv_bn(branch, branch, 3, stride, groups=branch, act=None), _conv_bn(branch, branch, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.stride == 1:
            x1, x2 = x.chunk(2, dim=1)
            out = torch.cat((x1, self.branch2(x2)), dim=1)
        else:
            out = torch.cat((self.branch1(x), self.branch2(x)), dim=1)
        return channel_shuffle(out, 2)


class ShuffleNetV2(nn.Module):
    def __init__(self, repeats: tuple[int, ...] = (2, 3, 2), channels: tuple[int, ...] = (24, 48, 96, 192, 512), classes: int = 10) -> None:
        super().__init__()
        self.conv1 = _conv_bn(3, channels[0], 3, 2)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        stages: list[nn.Module] = []
        cin = channels[0]
        for n, cout in zip(repeats, channels[1:4], strict=True):
            stages += [ShuffleUnit(cin, cout, 2)] + [ShuffleUnit(cout, cout, 1) for _ in range(n - 1)]
            cin = cout
        self.stages = nn.Sequential(*stages)
        self.conv5 = _conv_bn(cin, channels[-1], 1)
        self.fc = nn.Linear(channels[-1], classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv5(self.stages(self.maxpool(self.conv1(x))))
        return self.fc(x.mean([2, 3]))  # torchvision's global pool: a mean over H and W


# ---------------------------------------------------------------------------------------
# DenseNet (Huang et al. 2017, torchvision.models.DenseNet): BN-ReLU-Conv bottlenecks,
# concatenation, transitions with average pooling; growth 8, blocks (2, 2, 2, 2)


class DenseLayer(nn.Module):
    def __init__(self, cin: int, growth: int, bn_size: int) -> None:
        super().__init__()
        self.norm1, self.conv1 = _bn(cin), nn.Conv2d(cin, bn_size * growth, 1, bias=False)
        self.norm2, self.conv2 = _bn(bn_size * growth), nn.Conv2d(bn_size * growth, growth, 3, 1, 1, bias=False)

    def forward(self, features: list[torch.Tensor]) -> torch.Tensor:
        x = torch.cat(features, 1)
        x = self.conv1(F.relu(self.norm1(x)))
        return self.conv2(F.relu(self.norm2(x)))


class DenseBlock(nn.Module):
    def __init__(self, layers: int, cin: int, growth: int, bn_size: int) -> None:
        super().__init__()
        self.layers = nn.ModuleList(DenseLayer(cin + i * growth, growth, bn_size) for i in range(layers))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = [x]
        for layer in self.layers:
            features.append(layer(features))
        return torch.cat(features, 1)


class DenseNet(nn.Module):
    def __init__(self, growth: int = 8, blocks: tuple[int, ...] = (2, 2, 2, 2), init_features: int = 16, bn_size: int = 2, classes: int = 10) -> None:
        super().__init__()
        layers: list[nn.Module] = [nn.Conv2d(3, init_features, 7, 2, 3, bias=False), _bn(init_features), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1)]
        c = init_features
        for i, n in enumerate(blocks):
            layers.append(DenseBlock(n, c, growth, bn_size))
            c += n * growth
            if i != len(blocks) - 1:
                layers += [_bn(c), nn.ReLU(inplace=True), nn.Conv2d(c, c // 2, 1, bias=False), nn.AvgPool2d(2, 2)]
                c //= 2
        layers.append(_bn(c))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(c, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.adaptive_avg_pool2d(F.relu(self.features(x)), (1, 1))
        return self.classifier(torch.flatten(x, 1))


# ---------------------------------------------------------------------------------------
# Segmentation: a DeepLabV3-like net (Chen et al. 2017): strided backbone, ASPP with dilated
# branches and an image-pooling branch, bilinear upsampling to the input size


class ASPP(nn.Module):
    def __init__(self, cin: int, cout: int, rates: tuple[int, ...] = (2, 3)) -> None:
        super().__init__()
        self.branches = nn.ModuleList([_conv_bn(cin, cout, 1)] + [_conv_bn(cin, cout, 3, dilation=r) for r in rates])
        self.pooling = _conv_bn(cin, cout, 1)
        self.project = _conv_bn(cout * (len(rates) + 2), cout, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pooled = self.pooling(F.adaptive_avg_pool2d(x, 1))
        pooled = F.interpolate(pooled, size=x.shape[-2:], mode="bilinear", align_corners=False)
        return self.project(torch.cat([b(x) for b in self.branches] + [pooled], 1))


class DeepLabMini(nn.Module):
    def __init__(self, classes: int = 5) -> None:
        super().__init__()
        self.backbone = nn.Sequential(_conv_bn(3, 16, 3, 2), _conv_bn(16, 24, 3, 2), _conv_bn(24, 32, 3, 2), _conv_bn(32, 32, 3))
        self.aspp = ASPP(32, 24)
        self.head = nn.Sequential(_conv_bn(24, 24, 3), nn.Conv2d(24, classes, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.head(self.aspp(self.backbone(x)))
        return F.interpolate(y, size=x.shape[-2:], mode="bilinear", align_corners=False)


# ---------------------------------------------------------------------------------------
# UNet (Ronneberger et al. 2015): max-pool encoder, ConvTranspose decoder, skip concatenation


def _double_conv(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(_conv_bn(cin, cout, 3), _conv_bn(cout, cout, 3))


class UNet(nn.Module):
    def __init__(self, cin: int = 3, classes: int = 2, width: int = 8, depth: int = 3) -> None:
        super().__init__()
        widths = [width * 2**i for i in range(depth + 1)]
        self.inc = _double_conv(cin, widths[0])
        self.downs = nn.ModuleList(_double_conv(widths[i], widths[i + 1]) for i in range(depth))
        self.ups = nn.ModuleList(nn.ConvTranspose2d(widths[i + 1], widths[i], 2, 2) for i in reversed(range(depth)))
        self.decs = nn.ModuleList(_double_conv(2 * widths[i], widths[i]) for i in reversed(range(depth)))
        self.outc = nn.Conv2d(widths[0], classes, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skips = [self.inc(x)]
        for down in self.downs:
            skips.append(down(F.max_pool2d(skips[-1], 2)))
        y = skips.pop()
        for up, dec in zip(self.ups, self.decs, strict=True):
            y = dec(torch.cat([skips.pop(), up(y)], 1))
        return self.outc(y)


# ---------------------------------------------------------------------------------------
# Super-resolution: an ESPCN-style x2 upscaler (Shi et al. 2016) that works on a
# pixel-unshuffled input and ends in a sub-pixel convolution (PixelShuffle), plus the bilinear skip


class SuperResolution(nn.Module):
    def __init__(self, scale: int = 2, features: int = 32) -> None:
        super().__init__()
        self.unshuffle = nn.PixelUnshuffle(2)
        self.body = nn.Sequential(nn.Conv2d(12, features, 5, 1, 2), nn.Tanh(), nn.Conv2d(features, features, 3, 1, 1), nn.Tanh(), nn.Conv2d(features, 3 * (2 * scale) ** 2, 3, 1, 1))
        self.shuffle = nn.PixelShuffle(2 * scale)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.shuffle(self.body(self.unshuffle(x)))


# ---------------------------------------------------------------------------------------
# DCGAN generator (Radford et al. 2015): ConvTranspose-BN-ReLU from a latent vector, Tanh out


class DCGANGenerator(nn.Module):
    def __init__(self, latent: int = 16, width: int = 16, channels: int = 3) -> None:
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(latent, width * 4, 4, 1, 0, bias=False), _bn(width * 4), nn.ReLU(True),
            nn.ConvTranspose2d(width * 4, width * 2, 4, 2, 1, bias=False), _bn(width * 2), nn.ReLU(True),
            nn.ConvTranspose2d(width * 2, width, 4, 2, 1, bias=False), _bn(width), nn.ReLU(True),
            nn.ConvTranspose2d(width, channels, 4, 2, 1, bias=False), nn.Tanh(),
        )  # fmt: skip

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.main(z)


# ---------------------------------------------------------------------------------------
# Vision Transformer (Dosovitskiy et al. 2020): patch embedding, class token, position
# embedding, pre-norm encoder blocks (LayerNorm, multi-head attention with MatMul and Softmax,
# GELU MLP), written out as timm's and torchvision's blocks compute them


class Attention(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attention = (q @ k.transpose(-2, -1)) * (d // self.heads) ** -0.5
        y = attention.softmax(dim=-1) @ v
        return self.proj(y.transpose(1, 2).reshape(b, n, d))


class EncoderBlock(nn.Module):
    def __init__(self, dim: int, heads: int, mlp: int) -> None:
        super().__init__()
        self.norm1, self.attention = nn.LayerNorm(dim), Attention(dim, heads)
        self.norm2, self.mlp = nn.LayerNorm(dim), nn.Sequential(nn.Linear(dim, mlp), nn.GELU(), nn.Linear(mlp, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class VisionTransformer(nn.Module):
    def __init__(self, image: int = 32, patch: int = 8, dim: int = 32, depth: int = 2, heads: int = 4, mlp: int = 64, classes: int = 10) -> None:
        super().__init__()
        self.embed = nn.Conv2d(3, dim, patch, patch)
        self.cls = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.position = nn.Parameter(torch.randn(1, (image // patch) ** 2 + 1, dim) * 0.02)
        self.blocks = nn.Sequential(*(EncoderBlock(dim, heads, mlp) for _ in range(depth)))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.embed(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1) + self.position
        x = self.norm(self.blocks(x))
        return self.head(x[:, 0])


# ---------------------------------------------------------------------------------------
# A control: only operators main's importer mapped when this file was written (Conv with
# fused Relu / LeakyRelu, AveragePool, ConvTranspose, DepthToSpace, Sigmoid), so the harness
# is proven on a model that imports, whatever else is missing


class ConvControl(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 16, 3, 1, 1), nn.ReLU(), nn.AvgPool2d(2), nn.Conv2d(16, 32, 3, 1, 1), nn.LeakyReLU(0.1),
            nn.ConvTranspose2d(32, 16, 4, 2, 1), nn.ReLU(), nn.Conv2d(16, 12, 3, 1, 1), nn.PixelShuffle(2), nn.Sigmoid(),
        )  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


# ---------------------------------------------------------------------------------------
# The table


@dataclass(frozen=True)
class Architecture:
    name: str
    factory: Callable[[], nn.Module]
    input_shape: tuple[int, ...]
    what: str  # the operators it is here for

    def build(self) -> nn.Module:
        """The module with seeded random weights and randomised BatchNorm statistics, in eval mode."""
        torch.manual_seed(SEED)
        model = self.factory()
        generator = torch.Generator().manual_seed(SEED + 1)
        with torch.no_grad():
            for module in model.modules():
                if isinstance(module, (nn.BatchNorm2d, nn.LayerNorm)):
                    if isinstance(module, nn.BatchNorm2d):
                        module.running_mean.copy_(torch.randn(module.num_features, generator=generator) * 0.1)
                        module.running_var.copy_(torch.rand(module.num_features, generator=generator) + 0.5)
                    module.weight.copy_(torch.rand(module.weight.shape, generator=generator) + 0.5)
                    module.bias.copy_(torch.randn(module.bias.shape, generator=generator) * 0.1)
        return model.eval()

    def example(self) -> torch.Tensor:
        generator = torch.Generator().manual_seed(SEED + 2)
        return torch.randn(self.input_shape, generator=generator)


ARCHITECTURES: dict[str, Architecture] = {
    a.name: a
    for a in [
        Architecture("resnet18", lambda: ResNet18(width=32), (1, 3, 64, 64), "Conv, BatchNormalization, Relu, MaxPool, Add, GlobalAveragePool, Flatten, Gemm"),
        Architecture("mobilenet_v2", lambda: MobileNetV2(width_mult=0.35), (1, 3, 64, 64), "depthwise Conv, Clip (ReLU6), inverted residual Add, Gemm"),
        Architecture("efficientnet_b0", lambda: EfficientNetB0(width=0.5, depth=0.5), (1, 3, 64, 64), "SiLU (Sigmoid x Mul), squeeze-excitation (GlobalAveragePool, broadcast Mul), depthwise 5x5 Conv"),
        Architecture("shufflenet_v2", ShuffleNetV2, (1, 3, 64, 64), "channel split (Split/Slice), channel shuffle (Reshape-Transpose-Reshape), Concat, ReduceMean"),
        Architecture("densenet", DenseNet, (1, 3, 64, 64), "Concat of growing feature lists, BatchNormalization before Relu, AveragePool transitions"),
        Architecture("deeplab_mini", DeepLabMini, (1, 3, 64, 64), "dilated Conv, image pooling branch, bilinear Resize (align_corners=False) to the input size"),
        Architecture("unet", UNet, (1, 3, 32, 32), "MaxPool encoder, ConvTranspose 2x2/2 decoder, skip Concat"),
        Architecture("super_resolution", SuperResolution, (1, 3, 32, 32), "PixelUnshuffle (SpaceToDepth or Reshape-Transpose-Reshape), Tanh, PixelShuffle (DepthToSpace)"),
        Architecture("dcgan_generator", DCGANGenerator, (1, 16, 1, 1), "ConvTranspose from 1x1, BatchNormalization, Relu, Tanh"),
        Architecture("vit_tiny", VisionTransformer, (1, 3, 32, 32), "patch Conv, Concat of a class token, LayerNormalization, MatMul, Softmax, Gelu (or Erf), Gather/Slice"),
        Architecture("conv_control", ConvControl, (1, 3, 32, 32), "the control: Conv + Relu/LeakyRelu, AveragePool, ConvTranspose, DepthToSpace, Sigmoid only"),
    ]
}
