"""`torchdoctor ckpt`: read checkpoints without running them, diff them against a model, repair
their keys into a new file. `reader`, `inspect` and `diff` never import torch; `repair`,
`api` and the model side of a diff do."""
