"""A small regression model whose training goes wrong only at run time.

`torchdoctor check` finds nothing here: both pitfalls show only at run time. Watch it with
    torchdoctor run --report-html report.html examples/train_regression.py
and the report shows where the loss went non-finite and why (the lines marked `# run:`).
"""
import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def make_loader(batch_size):
    torch.manual_seed(0)
    features = torch.randn(1024, 16)
    targets = features @ torch.randn(16, 1) + 0.1 * torch.randn(1024, 1)
    features[700, 3] = float("inf")  # one corrupt sample, as real data has
    return DataLoader(TensorDataset(features, targets), batch_size=batch_size, shuffle=False)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=0.01)
    args = parser.parse_args()

    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Dropout(0.1), nn.Linear(64, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loader = make_loader(batch_size=32)
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()  # run: TD211 (the NaN is born in the data: line 18)
            if step % 8 == 0:
                print(f"epoch {epoch} step {step}: loss {loss.item():.4f}")
        with torch.no_grad():  # validation, but the model is still in train mode
            inputs, targets = loader.dataset[:64]
            val = nn.functional.mse_loss(model(inputs), targets)  # run: TD205
        print(f"epoch {epoch}: validation loss {val.item():.4f}")


if __name__ == "__main__":
    main()
