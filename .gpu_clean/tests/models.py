"""Small networks built from the blocks of the torchvision classics, for tests and
validate_network.py on machines where torchvision does not import.

Each covers one family's building blocks: residual (ResNet), grouped conv (ResNeXt),
depthwise + squeeze-excite + hardswish (MobileNetV3), inverted residual + relu6
(MobileNetV2), dense concatenation (DenseNet), inception branches (GoogLeNet), channel
shuffle (ShuffleNet), layer-norm + GELU ConvNeXt block, and a plain VGG/AlexNet stack.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride=1, groups=1):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False, groups=groups)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.short = nn.Sequential()
        if stride != 1 or cin != cout:
            self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        return F.relu(self.b2(self.c2(F.relu(self.b1(self.c1(x))))) + self.short(x))


class TinyResNet(nn.Module):
    def __init__(self, groups=1, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        self.layers = nn.Sequential(BasicBlock(16, 16), BasicBlock(16, 32, 2, groups=groups))
        self.fc = nn.Linear(32, classes)

    def forward(self, x):
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.layers(self.stem(x)), 1), 1))


class SqueezeExcite(nn.Module):
    def __init__(self, c, r=4):
        super().__init__()
        self.fc1 = nn.Conv2d(c, c // r, 1)
        self.fc2 = nn.Conv2d(c // r, c, 1)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        return x * F.hardsigmoid(self.fc2(F.relu(self.fc1(s))))


class MobileV3Block(nn.Module):
    def __init__(self, cin, cexp, cout, stride):
        super().__init__()
        self.expand = nn.Sequential(nn.Conv2d(cin, cexp, 1, bias=False), nn.BatchNorm2d(cexp), nn.Hardswish())
        self.dw = nn.Sequential(nn.Conv2d(cexp, cexp, 3, stride, 1, groups=cexp, bias=False), nn.BatchNorm2d(cexp),
                                nn.Hardswish())
        self.se = SqueezeExcite(cexp)
        self.project = nn.Sequential(nn.Conv2d(cexp, cout, 1, bias=False), nn.BatchNorm2d(cout))
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        y = self.project(self.se(self.dw(self.expand(x))))
        return x + y if self.residual else y


class TinyMobileNetV3(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.Hardswish())
        self.blocks = nn.Sequential(MobileV3Block(16, 32, 16, 1), MobileV3Block(16, 48, 24, 2))
        self.head = nn.Sequential(nn.Linear(24, 32), nn.Hardswish(), nn.Dropout(0.2), nn.Linear(32, classes))

    def forward(self, x):
        return self.head(torch.flatten(F.adaptive_avg_pool2d(self.blocks(self.stem(x)), 1), 1))


class InvertedResidual(nn.Module):
    def __init__(self, c, expand=4):
        super().__init__()
        h = c * expand
        self.body = nn.Sequential(nn.Conv2d(c, h, 1, bias=False), nn.BatchNorm2d(h), nn.ReLU6(),
                                  nn.Conv2d(h, h, 3, 1, 1, groups=h, bias=False), nn.BatchNorm2d(h), nn.ReLU6(),
                                  nn.Conv2d(h, c, 1, bias=False), nn.BatchNorm2d(c))

    def forward(self, x):
        return x + self.body(x)


class TinyMobileNetV2(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU6(),
                                 InvertedResidual(16), InvertedResidual(16))
        self.fc = nn.Linear(16, classes)

    def forward(self, x):
        return self.fc(F.adaptive_avg_pool2d(self.net(x), 1).flatten(1))


class DenseLayer(nn.Module):
    def __init__(self, cin, growth):
        super().__init__()
        self.body = nn.Sequential(nn.BatchNorm2d(cin), nn.ReLU(), nn.Conv2d(cin, growth, 3, 1, 1, bias=False))

    def forward(self, x):
        return torch.cat([x, self.body(x)], 1)


class TinyDenseNet(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
        self.block = nn.Sequential(DenseLayer(16, 8), DenseLayer(24, 8), DenseLayer(32, 8))
        self.trans = nn.Sequential(nn.BatchNorm2d(40), nn.ReLU(), nn.Conv2d(40, 20, 1, bias=False), nn.AvgPool2d(2))
        self.fc = nn.Linear(20, classes)

    def forward(self, x):
        return self.fc(F.adaptive_avg_pool2d(self.trans(self.block(self.stem(x))), 1).flatten(1))


class Inception(nn.Module):
    def __init__(self, cin):
        super().__init__()
        self.b1 = nn.Conv2d(cin, 8, 1)
        self.b2 = nn.Sequential(nn.Conv2d(cin, 8, 1), nn.ReLU(), nn.Conv2d(8, 12, 3, padding=1))
        self.b3 = nn.Sequential(nn.Conv2d(cin, 4, 1), nn.ReLU(), nn.Conv2d(4, 6, 5, padding=2))
        self.b4 = nn.Sequential(nn.MaxPool2d(3, 1, 1), nn.Conv2d(cin, 6, 1))

    def forward(self, x):
        return F.relu(torch.cat([self.b1(x), self.b2(x), self.b3(x), self.b4(x)], 1))


class TinyGoogLeNet(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.ReLU())
        self.inc = Inception(16)
        self.fc = nn.Linear(32, classes)

    def forward(self, x):
        return self.fc(F.adaptive_avg_pool2d(self.inc(self.stem(x)), 1).flatten(1))


def channel_shuffle(x, groups):
    n, c, h, w = x.shape
    return x.view(n, groups, c // groups, h, w).transpose(1, 2).reshape(n, c, h, w)


class ShuffleUnit(nn.Module):
    def __init__(self, c):
        super().__init__()
        h = c // 2
        self.branch = nn.Sequential(nn.Conv2d(h, h, 1, bias=False), nn.BatchNorm2d(h), nn.ReLU(),
                                    nn.Conv2d(h, h, 3, 1, 1, groups=h, bias=False), nn.BatchNorm2d(h),
                                    nn.Conv2d(h, h, 1, bias=False), nn.BatchNorm2d(h), nn.ReLU())

    def forward(self, x):
        a, b = x.chunk(2, dim=1)
        return channel_shuffle(torch.cat([a, self.branch(b)], 1), 2)


class TinyShuffleNet(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 24, 3, 2, 1, bias=False), nn.BatchNorm2d(24), nn.ReLU())
        self.units = nn.Sequential(ShuffleUnit(24), ShuffleUnit(24))
        self.fc = nn.Linear(24, classes)

    def forward(self, x):
        return self.fc(self.units(self.stem(x)).mean([2, 3]))


class ConvNeXtBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dw = nn.Conv2d(c, c, 7, padding=3, groups=c)
        self.norm = nn.LayerNorm(c, eps=1e-6)
        self.pw1 = nn.Linear(c, 4 * c)
        self.pw2 = nn.Linear(4 * c, c)
        self.gamma = nn.Parameter(torch.full((c,), 0.5))

    def forward(self, x):
        y = self.dw(x).permute(0, 2, 3, 1)
        y = self.pw2(F.gelu(self.pw1(self.norm(y)))) * self.gamma
        return x + y.permute(0, 3, 1, 2)


class TinyConvNeXt(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 4, 4)
        self.blocks = nn.Sequential(ConvNeXtBlock(16), ConvNeXtBlock(16))
        self.head = nn.Sequential(nn.LayerNorm(16), nn.Linear(16, classes))

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)).mean([2, 3]))


class TinyVGG(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1),
                                      nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
                                      nn.MaxPool2d(2))
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(32 * 8 * 8, 64), nn.ReLU(), nn.Dropout(0.5),
                                        nn.Linear(64, classes))

    def forward(self, x):
        return self.classifier(self.features(x))


# name -> (constructor, input shape)
MODELS = {
    "tiny_resnet": (TinyResNet, (4, 3, 32, 32)),
    "tiny_resnext": (lambda: TinyResNet(groups=4), (4, 3, 32, 32)),
    "tiny_mobilenet_v2": (TinyMobileNetV2, (4, 3, 32, 32)),
    "tiny_mobilenet_v3": (TinyMobileNetV3, (4, 3, 32, 32)),
    "tiny_densenet": (TinyDenseNet, (4, 3, 32, 32)),
    "tiny_googlenet": (TinyGoogLeNet, (4, 3, 32, 32)),
    "tiny_shufflenet": (TinyShuffleNet, (4, 3, 32, 32)),
    "tiny_convnext": (TinyConvNeXt, (4, 3, 32, 32)),
    "tiny_vgg": (TinyVGG, (4, 3, 32, 32)),
}
