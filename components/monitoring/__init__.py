"""Monitoring: the managed Prometheus pipeline, the registry that serves the DCGM exporter image, the exporter and
its label contract, recording and alert rules, Log Analytics and the Grafana dashboards (`dashboards/`)."""
