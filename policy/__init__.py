"""Guardrails: the CrossGuard pack that wraps the policy rules of aks_gpu_platform/policy_rules.py."""
