"""One Lightning training step with ``sync_batchnorm=True`` on CPU, run under torchrun.

Run by test_frameworks.py as ``python -m torch.distributed.run --nproc_per_node 2
lightning_ddp.py`` with LIGHTNING_OUT set: each rank calls ``syncbn.torch.patch()``,
trains a Conv2d + BatchNorm2d model one step with
``Trainer(accelerator="cpu", strategy="ddp", devices=2, sync_batchnorm=True)``
(Lightning converts the batch norm with torch's converter, which patch() serves,
and wraps the model in DistributedDataParallel), and writes to
LIGHTNING_OUT/rank<RANK>.npz the layer's running mean and variance beside those
of the whole batch (both ranks' samples; the learning rate is 0, so the
convolution that feeds the layer is the same after the step), and whether the
layer was a SyncBatchNorm during the step (Lightning reverts it after fit).
"""
import os

import numpy as np
import torch
import torch.nn as nn

import lightning as L

import syncbn.torch as st

N, C = 8, 4


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Conv2d(3, C, 1), nn.BatchNorm2d(C))

    def training_step(self, batch, index):
        (x,) = batch
        # Lightning converts the layer for fit and reverts it in teardown: look during the step
        self.synced = isinstance(self.net[1], nn.SyncBatchNorm)
        return self.net(x).square().mean()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.0)


def main():
    st.patch()
    data = torch.randn(N, 3, 5, 5, generator=torch.Generator().manual_seed(1)) * 2 + 1
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(data),
                                         batch_size=N // 2, shuffle=False)
    model = Model()
    trainer = L.Trainer(accelerator="cpu", strategy="ddp", devices=2, num_nodes=1,
                        sync_batchnorm=True, max_steps=1, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False)
    trainer.fit(model, loader)
    bn = model.net[1]  # reverted to a plain batch norm sharing the trained running stats
    with torch.no_grad():
        h = model.net[0](data)
    out = os.path.join(os.environ["LIGHTNING_OUT"], "rank%s.npz" % os.environ.get("RANK", "0"))
    np.savez(out, running_mean=bn.running_mean.numpy(), running_var=bn.running_var.numpy(),
             want_mean=(0.1 * h.mean((0, 2, 3))).numpy(),
             want_var=(0.9 + 0.1 * h.var((0, 2, 3), unbiased=True)).numpy(),
             has_syncbn=np.array(getattr(model, "synced", False)))


if __name__ == "__main__":
    main()
