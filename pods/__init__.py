"""PODS: down-sampling rollouts in GRPO (Xu et al., arXiv 2504.13818), a reproducibility package.

The library is small on purpose: ``pods.selectors`` (down-sampling rules), ``pods.grpo`` (the
objective as pure tensor functions), ``pods.rewards`` (task rewards), and the trainer glue on TRL.
"""

__version__ = "0.1.0"
