"""What every concern builds with: the cluster handle, role assignments, workload identities, one-shot pods and
namespaces, and the scan exceptions declared beside a resource."""
