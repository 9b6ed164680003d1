"""glasstorch.optim: optimizers and learning-rate schedules, as torch.optim."""
from . import lr_scheduler  # noqa: F401
from . import swa_utils  # noqa: F401
from .optimizer import Optimizer
from .sgd import SGD
from .adam import Adam
from .adamw import AdamW
from .rmsprop import RMSprop
from .adagrad import Adagrad
from .adadelta import Adadelta
from .adamax import Adamax
from .nadam import NAdam
from .radam import RAdam
from .lbfgs import LBFGS
from .rprop import Rprop
from .asgd import ASGD
from .adafactor import Adafactor
from .muon import Muon
from .sparse_adam import SparseAdam
from ._stateless import swap_in_optimizer_params_and_state

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax",
           "NAdam", "RAdam", "LBFGS", "Rprop", "ASGD", "Adafactor", "Muon", "SparseAdam",
           "swap_in_optimizer_params_and_state", "lr_scheduler", "swa_utils"]
