"""An optimizer checks its hyperparameters (as torch.optim does)."""

import logging

logging.basicConfig(level=logging.INFO)
config = {"optimizer": "sgd", "lr": -0.01, "momentum": 0.9}
logging.getLogger("train").info("config: %s", config)


class SGD:
    def __init__(self, lr, momentum=0.0):
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        self.lr, self.momentum = lr, momentum


opt = SGD(config["lr"], config["momentum"])
