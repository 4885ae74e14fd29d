"""A trained model's folder, by its files' names: ``emoharbor evolve`` writes it, ``hf:FOLDER`` and ``local:FOLDER``
serve it."""

MODEL_CARD = "evolve_model.json"  # written beside every adapter emoharbor trains
ADAPTER_CONFIG = "adapter_config.json"  # PEFT's
ADAPTER_WEIGHTS = "adapter_model.safetensors"  # PEFT's
TRAIN_HINT = "pip install 'emoharbor[train]'"
