"""Plays what a live EKS cluster runs besides its API server, in each local Kubernetes.

- `nodes`: HyperPod instances become Nodes (driven by the SageMaker gap);
- `cluster`: per cluster, the controllers that react to objects — the EBS provisioner
  (`provisioner`) and the volume binder (`volumes`), the scheduler and the kubelets
  (`pods`), running containers as their `programs` say (what a container prints, how long
  it runs, how it ends, the files it writes into a mounted bucket: `s3files`).

The Training, Inference and Workspace simulators build on `cluster` (they create pods or
the workloads that make them; the scheduler and kubelets run them) and on `programs` (a
workload registers what its containers do). The workspace controller (`workspaces`, the
Spaces add-on's jupyter-k8s) also gives each workspace's server an HTTP face
(`workspace_server`: under the base path its command line names, a listing of the bucket
at /s3; its last activity where the editor reports it — JupyterLab's `api/status` under
that path, Code Editor's `/api/idle` at the root —, reached through `pods/portforward` or
the service proxy) and idles it by the sandbox clock.
Kueue (`kueue`, `kueue_admission`, run by `cluster` before the operators) holds queued jobs
suspended until their Workloads are admitted; `kueue_objects` builds the queues the
task-governance add-on makes from SageMaker's compute quotas.
"""

from sandbox.simulator.nodes import (
    COMPUTE_TYPE,
    LABEL_ARCH,
    LABEL_COMPUTE_TYPE,
    LABEL_DEEP_HEALTH_CHECK,
    LABEL_HEALTH,
    LABEL_HOSTNAME,
    LABEL_INSTANCE_GROUP,
    LABEL_INSTANCE_TYPE,
    LABEL_INSTANCE_TYPE_BETA,
    LABEL_OS,
    LABEL_REGION,
    LABEL_ZONE,
    LABEL_ZONE_ID,
    RESOURCE_EFA,
    RESOURCE_GPU,
    RESOURCE_NEURON,
    RESOURCE_NEURON_CORE,
    TAINT_HEALTH,
    TAINT_NOT_READY,
    DeepHealthCheck,
    Health,
    InstanceInfo,
    NodeView,
    apply_node,
    delete_node,
    instance_info,
    node_manifest,
    node_name,
)

__all__ = [
    "COMPUTE_TYPE",
    "LABEL_ARCH",
    "LABEL_COMPUTE_TYPE",
    "LABEL_DEEP_HEALTH_CHECK",
    "LABEL_HEALTH",
    "LABEL_HOSTNAME",
    "LABEL_INSTANCE_GROUP",
    "LABEL_INSTANCE_TYPE",
    "LABEL_INSTANCE_TYPE_BETA",
    "LABEL_OS",
    "LABEL_REGION",
    "LABEL_ZONE",
    "LABEL_ZONE_ID",
    "RESOURCE_EFA",
    "RESOURCE_GPU",
    "RESOURCE_NEURON",
    "RESOURCE_NEURON_CORE",
    "TAINT_HEALTH",
    "TAINT_NOT_READY",
    "DeepHealthCheck",
    "Health",
    "InstanceInfo",
    "NodeView",
    "apply_node",
    "delete_node",
    "instance_info",
    "node_manifest",
    "node_name",
]
