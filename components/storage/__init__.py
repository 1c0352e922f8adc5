"""Storage: Azure Managed Lustre with Blob (HSM) and tiering, Blob and Disk classes, Azure NetApp Files."""
