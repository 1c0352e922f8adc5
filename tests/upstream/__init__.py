"""Models of the external systems the contracts run against, each written from its upstream source at a named
version or commit (the module's docstring names them), never from the platform's own code: they import none of it
(tests/project/test_oracles.py holds them to that), only the recording they read.

- scheduling: `kube_scheduler.py` (the NodeAffinity and TaintToleration filters), `scheduling.py` (node templates,
  chart templates), `azure_vm_sizes.py` (what Azure, AKS and NVIDIA say of a size), `autoscaler_template.py`
  (cluster-autoscaler 1.36.1, a pool at zero), `capacity.py` (Kueue admission beside the autoscaler),
  `node_image.py` (AgentBaker)
- metrics: `scrape.py` (managed Prometheus scraping a PodMonitor), `promql.py` (instant-query semantics),
  `gpu_metrics_world.py`, `metrics_day.py` (a day of stored series and the recording rules over it)
- access and admission: `rbac.py` (Kubernetes RBAC and Azure role assignments), `abac.py` (Azure ABAC conditions),
  `admission_cel.py` (ValidatingAdmissionPolicy with a real CEL interpreter), `pod_security_standard.py` (Pod
  Security admission), `pod_security_policy.py` (Azure Policy's baseline), `tenancy.py` and `storage.py` (what a team
  member's attempts meet), `reachability.py` (network paths), `credential_lifetime.py`
- APIs and releases: `crd_schema.py` and `kueue_schemas.py` (CRDs of the pinned releases), `arm_spec.py` (REST specs
  at the API version sent), `release_contract.py` (whether each Helm release can finish), `upgrade_owner.py`
  (one owner per upgrade), `cli.py` (the kubectl and kueuectl commands the team pages name), `member_api.py`,
  `serving.py` (the inferencepool chart's InferencePool and picker flags at v1.5.0, the HPA behind a KEDA trigger),
  `engine_semantics.py` (vLLM 0.34.0, Triton 25.01 and the endpoint picker at v1.5.0: what SIGTERM does, the memory
  vLLM budgets, where latency clocks start, the gateway's request timeout on a stream)
"""
