"""aks-gpu-platform: Pulumi components and typed config for a production GPU platform on AKS.

Installed, everything lives under this one name. In the repository, `components/` and `config/`
stay at the top (the project's layout) and appear here through two directory links, so the
program, the tests and an installed wheel all import the same `aks_gpu_platform.*` modules.
"""
