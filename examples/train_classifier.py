"""A small image classifier trained the way many tutorials from 2018 still teach it.

It does not train: its first step crashes in `forward`, at the `.view()`. Each pitfall is marked
with the moment of torchdoctor that catches it:
    torchdoctor check --select ALL examples/        reads the code: every `# check:` line
    torchdoctor run examples/train_classifier.py    runs it and explains the crash (`# run:`)
(`check` without `--select ALL` runs the default rules: all of those but TD002, which is opt-in.)
`python examples/train_classifier.py 2>&1 | torchdoctor explain` explains the crash as well.
`check` leaves that `.view()` alone on purpose: it reshapes a layer's output, whose memory layout
the code does not show (a channels_last feature map permuted this way is contiguous). On a GPU,
TD001 and TD002 would crash too (tensors on two devices); on a CPU they pass silently.
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.autograd import Variable
from torch.utils.data import DataLoader, TensorDataset


class SmallNet(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, padding=1)
        self.bn = nn.BatchNorm2d(16)
        self.drop = nn.Dropout(0.5)
        self.fc = nn.Linear(16 * 16 * 16, num_classes)
        self.mean = torch.tensor([0.49, 0.48, 0.45]).view(1, 3, 1, 1)  # check: TD002

    def forward(self, x):
        x = (x - self.mean) / 0.25
        x = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        x = x.permute(0, 2, 3, 1).view(x.size(0), -1)  # run: TD403
        return self.fc(self.drop(x))


def make_loaders(batch_size):
    images = torch.randn(512, 3, 32, 32)
    labels = torch.randint(0, 10, (512,))
    train = TensorDataset(images[:448], labels[:448])
    val = TensorDataset(images[448:], labels[448:])
    return (DataLoader(train, batch_size=batch_size, shuffle=True),
            DataLoader(val, batch_size=batch_size))


def validate(model, loader, device):
    correct = 0
    for images, labels in loader:
        images, labels = images.to(device), labels.to(device)
        outputs = model(images)  # check: TD205
        correct += (outputs.argmax(1) == labels).sum().item()
    return correct / len(loader.dataset)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=0.1)
    args = parser.parse_args()

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = SmallNet()
    model.to(device)
    criterion = nn.CrossEntropyLoss(size_average=True)  # check: TD802
    optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    train_loader, val_loader = make_loaders(batch_size=64)

    for epoch in range(args.epochs):
        model.train()
        total_loss = 0
        for images, labels in train_loader:  # check: TD201
            images, labels = Variable(images), Variable(labels)  # check: TD103
            images.to(device)  # check: TD001
            labels = labels.to(device)
            outputs = model(images)
            loss = criterion(outputs, labels)
            loss.backward()
            scheduler.step()  # check: TD203
            optimizer.step()
            total_loss += loss  # check: TD102
        print(f"epoch {epoch}: loss {total_loss.data[0] / len(train_loader):.3f}")  # check: TD101
        model.eval()
        print(f"epoch {epoch}: val accuracy {validate(model, val_loader, device):.3f}")


if __name__ == "__main__":
    main()
