"""Self-evolution toward each user's implicit preferences: LoRA SFT (phase 1), then rounds of
reflect, refine and DPO (phase 2), preference pairs from evaluation runs, and the evaluation of every
round. Modules that train import torch; ``config``, ``pairs``, ``guard``, ``export`` and ``evaluate`` do not."""
