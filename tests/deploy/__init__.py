"""Tests of deploy/k8s: the manifests validated offline against the Kubernetes and KEDA
schemas, and the KEDA scalers' key and query run against real brokers."""
