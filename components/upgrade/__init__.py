"""Upgrade: maintenance windows with freezes, per-pool upgrade settings, PodDisruptionBudgets."""
