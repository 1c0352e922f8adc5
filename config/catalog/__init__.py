"""Dated facts with their sources, read by every section: GPU and CPU sizes, AKS versions, regions, Lustre SKUs,
prices, cold-start figures, images and the platforms they are built for."""
