"""torchdoctor: catches the mistakes PyTorch users make again and again."""

__version__ = "0.1.0"
