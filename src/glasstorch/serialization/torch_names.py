"""PyTorch's names for classes and functions in pickles, in both directions.

A model pickled whole by torch.save names its classes by PyTorch's module paths
(`torch.nn.modules.linear.Linear`, `torch.optim.adam.Adam`, `torch.nn.functional.relu`).
`resolve` answers such a name with glasstorch's object: `torch.X.Y` is looked up as
`glasstorch.X.Y` by import, and where glasstorch keeps the object elsewhere, in the nearest
parent package that exports it (`torch.nn.modules.batchnorm.BatchNorm2d` is
`glasstorch.nn.BatchNorm2d`). So a module glasstorch adds under PyTorch's path is found
without changing this file.

`torch_name` goes the other way for glasstorch.save: the PyTorch name of a glasstorch class
or function, when PyTorch has the same object under that name, so that torch.load builds
PyTorch objects from a glasstorch pickle. `_TORCH_HOMES` lists where PyTorch 2.x defines
its module, optimizer and scheduler classes; anything else of glasstorch's keeps its
glasstorch name (and needs glasstorch to load).
"""
from __future__ import annotations

import importlib
import types

__all__ = ["resolve", "torch_name"]

# Where PyTorch defines each class that a pickled model or optimizer names.
_TORCH_HOMES = {
    "torch.nn.modules.activation": "CELU ELU GELU GLU Hardshrink Hardsigmoid Hardswish "
    "Hardtanh LeakyReLU LogSigmoid LogSoftmax Mish MultiheadAttention PReLU RReLU ReLU ReLU6 "
    "SELU SiLU Sigmoid Softmax Softmax2d Softmin Softplus Softshrink Softsign Tanh "
    "Tanhshrink Threshold",
    "torch.nn.modules.adaptive": "AdaptiveLogSoftmaxWithLoss",
    "torch.nn.modules.batchnorm": "BatchNorm1d BatchNorm2d BatchNorm3d LazyBatchNorm1d "
    "LazyBatchNorm2d LazyBatchNorm3d SyncBatchNorm",
    "torch.nn.modules.channelshuffle": "ChannelShuffle",
    "torch.nn.modules.container": "ModuleDict ModuleList ParameterDict ParameterList "
    "Sequential",
    "torch.nn.modules.conv": "Conv1d Conv2d Conv3d ConvTranspose1d ConvTranspose2d "
    "ConvTranspose3d LazyConv1d LazyConv2d LazyConv3d LazyConvTranspose1d LazyConvTranspose2d "
    "LazyConvTranspose3d",
    "torch.nn.modules.distance": "CosineSimilarity PairwiseDistance",
    "torch.nn.modules.dropout": "AlphaDropout Dropout Dropout1d Dropout2d Dropout3d "
    "FeatureAlphaDropout",
    "torch.nn.modules.flatten": "Flatten Unflatten",
    "torch.nn.modules.fold": "Fold Unfold",
    "torch.nn.modules.instancenorm": "InstanceNorm1d InstanceNorm2d InstanceNorm3d "
    "LazyInstanceNorm1d LazyInstanceNorm2d LazyInstanceNorm3d",
    "torch.nn.modules.linear": "Bilinear Identity LazyLinear Linear "
    "NonDynamicallyQuantizableLinear",
    "torch.nn.modules.loss": "BCELoss BCEWithLogitsLoss CTCLoss CosineEmbeddingLoss "
    "CrossEntropyLoss GaussianNLLLoss HingeEmbeddingLoss HuberLoss KLDivLoss L1Loss MSELoss "
    "MarginRankingLoss MultiLabelMarginLoss MultiLabelSoftMarginLoss MultiMarginLoss NLLLoss "
    "NLLLoss2d PoissonNLLLoss SmoothL1Loss SoftMarginLoss TripletMarginLoss "
    "TripletMarginWithDistanceLoss",
    "torch.nn.modules.module": "Module",
    "torch.nn.modules.normalization": "CrossMapLRN2d GroupNorm LayerNorm LocalResponseNorm "
    "RMSNorm",
    "torch.nn.modules.padding": "CircularPad1d CircularPad2d CircularPad3d ConstantPad1d "
    "ConstantPad2d ConstantPad3d ReflectionPad1d ReflectionPad2d ReflectionPad3d "
    "ReplicationPad1d ReplicationPad2d ReplicationPad3d ZeroPad1d ZeroPad2d ZeroPad3d",
    "torch.nn.modules.pixelshuffle": "PixelShuffle PixelUnshuffle",
    "torch.nn.modules.pooling": "AdaptiveAvgPool1d AdaptiveAvgPool2d AdaptiveAvgPool3d "
    "AdaptiveMaxPool1d AdaptiveMaxPool2d AdaptiveMaxPool3d AvgPool1d AvgPool2d AvgPool3d "
    "FractionalMaxPool2d FractionalMaxPool3d LPPool1d LPPool2d LPPool3d MaxPool1d MaxPool2d "
    "MaxPool3d MaxUnpool1d MaxUnpool2d MaxUnpool3d",
    "torch.nn.modules.rnn": "GRU GRUCell LSTM LSTMCell RNN RNNBase RNNCell RNNCellBase",
    "torch.nn.modules.sparse": "Embedding EmbeddingBag",
    "torch.nn.modules.transformer": "Transformer TransformerDecoder TransformerDecoderLayer "
    "TransformerEncoder TransformerEncoderLayer",
    "torch.nn.modules.upsampling": "Upsample UpsamplingBilinear2d UpsamplingNearest2d",
    "torch.nn.parameter": "Buffer Parameter",
    "torch.optim.optimizer": "Optimizer",
    "torch.optim.adadelta": "Adadelta",
    "torch.optim.adagrad": "Adagrad",
    "torch.optim.adam": "Adam",
    "torch.optim.adamax": "Adamax",
    "torch.optim.adamw": "AdamW",
    "torch.optim.asgd": "ASGD",
    "torch.optim.lbfgs": "LBFGS",
    "torch.optim.nadam": "NAdam",
    "torch.optim.radam": "RAdam",
    "torch.optim.rmsprop": "RMSprop",
    "torch.optim.rprop": "Rprop",
    "torch.optim.sgd": "SGD",
    "torch.optim.lr_scheduler": "ChainedScheduler ConstantLR CosineAnnealingLR "
    "CosineAnnealingWarmRestarts CyclicLR ExponentialLR LRScheduler LambdaLR LinearLR "
    "MultiStepLR MultiplicativeLR OneCycleLR PolynomialLR ReduceLROnPlateau SequentialLR "
    "StepLR",
}
_HOME_OF = {name: module for module, names in _TORCH_HOMES.items() for name in names.split()}
# Classes glasstorch defines away from PyTorch's path and does not export from its package.
_ELSEWHERE = {"NonDynamicallyQuantizableLinear": "glasstorch.nn.modules.transformer"}

# PyTorch modules whose functions glasstorch keeps under another path.
_ALIASES = {"torch._C._nn": "torch.nn.functional", "torch._C._VariableFunctions": "torch",
            "torch._C._special": "torch.special", "torch._C._linalg": "torch.linalg",
            "torch._C._fft": "torch.fft"}
_STOP = 2       # never look above glasstorch.<package> (glasstorch.nn, glasstorch.optim)
# The packages a name may point into: importing one runs no code but glasstorch's own
# library modules (never a script such as glasstorch.__main__).
_PACKAGES = ("torch.nn", "torch.optim", "torch.linalg", "torch.fft", "torch.special",
             "torch.distributions", "torch.utils.data")


def _lookup(module: str, qualname: str):
    try:
        obj = importlib.import_module(module)
    except ImportError:
        return None
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
        if obj is None or isinstance(obj, types.ModuleType):
            return None                 # a module is never what a pickle's global names
    return obj


def resolve(module: str, qualname: str):
    """glasstorch's object for PyTorch's global `module.qualname`, or None."""
    module = _ALIASES.get(module, module)
    if module == "torch":
        return _lookup("glasstorch", qualname)
    if "__main__" in module.split(".") or not any(
            module == p or module.startswith(p + ".") for p in _PACKAGES):
        return None
    parts = ["glasstorch"] + module.split(".")[1:]
    while True:
        obj = _lookup(".".join(parts), qualname)
        if obj is not None:
            return obj
        if len(parts) <= _STOP:
            break
        parts.pop()
    if _HOME_OF.get(qualname) == module and qualname in _ELSEWHERE:
        return _lookup(_ELSEWHERE[qualname], qualname)
    return None


def torch_name(obj):
    """(module, qualname) under which PyTorch has glasstorch's class or function `obj`,
    or None when PyTorch has no such object."""
    qualname = getattr(obj, "__qualname__", None)
    module = getattr(obj, "__module__", None) or ""
    if qualname is None or not module.startswith("glasstorch."):
        return None
    home = _HOME_OF.get(qualname)
    if home is not None and resolve(home, qualname) is obj:
        return home, qualname
    for public in ("torch.nn.functional", "torch.nn.init", "torch.linalg", "torch.fft",
                   "torch.special"):
        # a function of these packages' modules (glasstorch.nn.functional.activation.gelu)
        # is the package's function of that name, or the one the package exports for it
        if module.startswith("glasstorch" + public[5:]) and callable(resolve(public, qualname)):
            return public, qualname
    return None
