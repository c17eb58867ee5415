"""quickstart.py - the README's Python quick start: resnet18 with its batch norms converted to
syncbn.torch.SyncBatchNorm trains one step on CPU (alone, or in a torch.distributed gloo group),
and torch's CUDA-only SyncBN op names run on CPU. tests/python/test_readme.py checks that the
README shows this file as it is and that it runs."""
import torch, torchvision
import syncbn.torch

model = syncbn.torch.convert_sync_batchnorm(torchvision.models.resnet18())  # BatchNorm2d -> SyncBatchNorm
x = torch.randn(8, 3, 64, 64)
model(x).sum().backward()  # alone: statistics of this batch; in a gloo process group (DDP): the world's
mean, invstd = syncbn.batch_norm_stats(x, 1e-5)  # torch's CUDA-only SyncBN op names, on CPU
print("syncbn", syncbn.__version__, "on", syncbn.library_path)
