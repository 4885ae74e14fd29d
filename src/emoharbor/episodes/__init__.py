"""Whole conversations with the simulated user as an environment, for multi-turn RL (``evolve grpo`` with
``grpo.episodes``): ``env`` (an episode: reset, step, its reward), ``guards`` (reward hacking counted per
step), ``judged`` (the reward ``judge``: a judge card's rating of the talk), ``rollout`` (TRL's
``rollout_func``: the policy writes every supporter turn), ``reward_func`` (the episode's reward to TRL,
logged per step)."""
