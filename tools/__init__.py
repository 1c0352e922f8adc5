"""Offline tooling: evaluate the stack program under Pulumi mocks, render and check what it would create."""
