"""Monitoring: the managed Prometheus pipeline, the DCGM exporter and its label contract, recording and alert
rules, Kueue metrics, Log Analytics and the Grafana dashboards (`dashboards/`)."""
