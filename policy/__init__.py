"""Guardrails: plain policy rules and the CrossGuard pack that wraps them."""
