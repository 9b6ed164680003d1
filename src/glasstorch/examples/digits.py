"""Train a small CNN on handwritten digits: `python -m glasstorch.examples.digits`.

The data are the 1,797 8x8 images of the UCI digits set (vendored in examples/data, no
download). 80% train a two-convolution network with Adam; the other 20% measure the test
accuracy printed after every epoch. Each epoch ends with a checkpoint; `--resume` continues
from it up to `--epochs` in all. `--amp` runs the forward passes under autocast (bfloat16 on
the CPU; float16 on a GPU, with a GradScaler), weights and gradients staying float32;
`--device cuda` trains on a GPU. The code is what one would write with PyTorch: replace
`glasstorch` by `torch` and it runs.
"""
from __future__ import annotations

import gzip
from importlib import resources

import numpy as np

import glasstorch as torch
from glasstorch import nn
from glasstorch.utils.data import DataLoader, TensorDataset

from ._training import Progress, example_parser, load_checkpoint, save_checkpoint


def load_digits():
    """(images as float32 N x 1 x 8 x 8 scaled to [0, 1], labels as int64 N)."""
    with resources.files(__package__).joinpath("data/digits.csv.gz").open("rb") as f:
        table = np.loadtxt(gzip.open(f), delimiter=",")
    images = torch.tensor(table[:, :64].reshape(-1, 1, 8, 8) / 16.0, dtype=torch.float32)
    return images, torch.tensor(table[:, 64], dtype=torch.int64)


class DigitsNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(),
            nn.MaxPool2d(2),                                   # 64 x 4 x 4
        )
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Dropout(0.25), nn.Linear(64 * 4 * 4, 128), nn.ReLU(),
            nn.Linear(128, 10),
        )

    def forward(self, x):
        return self.classifier(self.features(x))


def accuracy(model, images, labels) -> float:
    model.eval()
    with torch.no_grad():
        predicted = model(images).argmax(1)
    model.train()
    return (predicted == labels).float().mean().item()


def main(argv=None) -> float:
    parser = example_parser("digits", __doc__)
    parser.add_argument("--epochs", type=int, default=10,
                        help="total epochs to have trained, counting those in a resumed "
                             "checkpoint")
    parser.add_argument("--batch-size", type=int, default=64, help="images per step")
    parser.add_argument("--lr", type=float, default=3e-3, help="Adam's learning rate")
    parser.add_argument("--seed", type=int, default=0, help="seed of the weights and shuffling")
    parser.add_argument("--checkpoint", default="digits-checkpoint.pt",
                        help="file written after every epoch")
    parser.add_argument("--resume", action="store_true",
                        help="continue from --checkpoint up to --epochs in all")
    parser.add_argument("--amp", action="store_true",
                        help="mixed precision: forward passes under autocast")
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    args = parser.parse_args(argv)
    device = torch.device(args.device)

    torch.manual_seed(args.seed)
    images, labels = load_digits()
    images, labels = images.to(device), labels.to(device)
    order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(1234)).to(device)
    n_test = len(labels) // 5
    test, train = order[:n_test], order[n_test:]
    loader = DataLoader(TensorDataset(images[train], labels[train]),
                        batch_size=args.batch_size, shuffle=True)

    model = DigitsNet().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()
    # float16 (a GPU's autocast dtype) needs loss scaling; bfloat16 does not
    scaler = torch.amp.GradScaler(device.type, enabled=args.amp and device.type == "cuda")
    first_epoch = 0
    if args.resume:
        first_epoch = load_checkpoint(args.checkpoint, model, optimizer,
                                      map_location=device)["epoch"]
        print(f"resumed from {args.checkpoint} after epoch {first_epoch}")
        if first_epoch >= args.epochs:
            print(f"the checkpoint has already trained {first_epoch} epochs and --epochs "
                  f"{args.epochs} is the total: nothing to train (pass --epochs "
                  f"{first_epoch + 5}, say, to train 5 more)")

    last_epoch = max(args.epochs, first_epoch)
    progress = Progress(total=last_epoch * len(loader), desc="digits CNN",
                        initial=first_epoch * len(loader))
    result = None
    for epoch in range(first_epoch, args.epochs):
        for x, y in loader:
            with torch.autocast(device.type, enabled=args.amp):
                loss = loss_fn(model(x), y)
            optimizer.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            progress.step(loss.item(), len(y))
        save_checkpoint(args.checkpoint, model, optimizer, epoch=epoch + 1)
        result = accuracy(model, images[test], labels[test])
        progress.write(f"epoch {epoch + 1}/{args.epochs}: loss {progress.loss:.4f}, "
                       f"test accuracy {100 * result:.2f}%")
    seconds = progress.close()

    if result is None:                     # nothing trained: the checkpoint's accuracy
        result = accuracy(model, images[test], labels[test])
    print(f"trained {last_epoch - first_epoch} epochs in {seconds:.1f} s; "
          f"checkpoint: {args.checkpoint}")
    print(f"test accuracy: {100 * result:.2f}% ({n_test} held-out digits)")
    return result


if __name__ == "__main__":
    main()
