"""GPU: the GPU pools and their node images, the NVIDIA stack (device plugin or GPU Operator, or AKS-managed),
AMD's GPU Operator, NVIDIA's DRA driver, sharing, the smoke test, validation, health and image pre-pull."""
