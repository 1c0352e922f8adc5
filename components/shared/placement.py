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
            parent=self.owner, aliases=[pulumi.Alias(name=role, parent=None)], transforms=[self.former_name]
        )
        return pulumi.ResourceOptions.merge(previous, *extra) if extra else previous

    async def former_name(self, args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
        """A descendant `<name>-<role>-x` was `<role>-x`; the engine joins that alias to its parent's.

        The engine runs it on the child itself and on everything under it, packaged components' children included.
        It leaves alone the child (whose parent is the platform: `child` gave it its alias) and a descendant named
        after its parent, whose alias the engine derives itself from the parent's (pulumi/pulumi
        pkg/resource/deploy/step_generator.go, inheritedChildAlias). Those keep their options untouched: a
        transform's result cannot carry `deleteBeforeReplace: false` (pulumi/runtime/_callbacks.py, 3.272.0, sends
        it only when true), which the pools set.
        """
        prefix = f"{self.name}-"
        parent = args.opts.parent
        if not args.name.startswith(prefix) or parent is None:
            return None
        parent_urn = await parent.urn.future()
        if parent_urn == await self.owner.urn.future() or args.name.startswith(str(parent_urn).rsplit("::", 1)[-1]):
            return None
        alias = pulumi.ResourceOptions(aliases=[pulumi.Alias(name=args.name.removeprefix(prefix))])
        return pulumi.ResourceTransformResult(args.props, pulumi.ResourceOptions.merge(args.opts, alias))
