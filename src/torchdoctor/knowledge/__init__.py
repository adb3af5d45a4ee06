"""PyTorch knowledge shared by catalog entries and engines, owned by neither: how state dicts are
laid out and how `load_state_dict` reports them, what `torch.load(weights_only=True)` refuses,
which dtypes error messages name.
Entries reach it through `catalog.sdk`; engines import it directly."""
