"""Reusable Pulumi components of the AKS GPU platform."""
