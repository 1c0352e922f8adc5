"""How AksGpuPlatform names and parents what each concern's stage creates."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi


@dataclass(frozen=True)
class Placement:
    """Children of one platform: named `<platform name>-<role>`, so two platforms in one stack never collide.

    Stacks deployed before AksGpuPlatform existed had the same children at the top of the stack, named `<role>`:
    each child carries an alias to that URN (its own children inherit it through `former_name`), so such a stack
    updates in place instead of replacing its cluster.
    """

    owner: pulumi.Resource
    name: str

    def role(self, suffix: str) -> str:
        return f"{self.name}-{suffix}"

    def child(self, role: str, *extra: pulumi.ResourceOptions) -> pulumi.ResourceOptions:
        """Options of the child that had the name `role` at the top of the stack, merged with `extra`."""
        previous = pulumi.ResourceOptions(
            parent=self.owner, aliases=[pulumi.Alias(name=role, parent=None)], transformations=[self.former_name]
        )
        return pulumi.ResourceOptions.merge(previous, *extra) if extra else previous

    def former_name(self, args: pulumi.ResourceTransformationArgs) -> pulumi.ResourceTransformationResult | None:
        """A descendant `<name>-<role>-x` was `<role>-x`; the engine joins that alias to its parent's."""
        prefix = f"{self.name}-"
        if not args.name.startswith(prefix) or args.opts.parent is self.owner:
            return None
        alias = pulumi.ResourceOptions(aliases=[pulumi.Alias(name=args.name.removeprefix(prefix))])
        return pulumi.ResourceTransformationResult(args.props, pulumi.ResourceOptions.merge(args.opts, alias))
