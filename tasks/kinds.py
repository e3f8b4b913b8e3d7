"""Every operation kind hypd runs, in one table (the web process submits only these; the
worker runs only these). Adding a kind adds a line here."""

from __future__ import annotations

from tasks.cluster_software import KUBERNETES_UPGRADE, SOFTWARE_UPDATE
from tasks.clusters import CLUSTER_CREATE, CLUSTER_DELETE, CLUSTER_STAGE
from tasks.endpoints import (
    ENDPOINT_CREATE,
    ENDPOINT_DELETE,
    ENDPOINT_REASSIGN,
    ENDPOINT_UPDATE,
)
from tasks.engine.kinds import kind_table
from tasks.features import FEATURE_UPDATE
from tasks.instance_groups import GROUP_CREATE, GROUP_DELETE, GROUP_UPDATE
from tasks.jobs import JOB_CREATE, JOB_DELETE
from tasks.mlflow import MLFLOW_ATTACH, MLFLOW_DETACH
from tasks.models import MODEL_DELETE, MODEL_DOWNLOAD
from tasks.networks import NETWORK_CREATE, NETWORK_DELETE
from tasks.nodes import NODES_DELETE, NODES_REBOOT, NODES_REPLACE
from tasks.spaces import SPACE_CREATE, SPACE_DELETE, SPACE_START, SPACE_STOP, SPACE_UPDATE
from tasks.storage import STORAGE_CREATE, STORAGE_DELETE
from tasks.teams import (
    SCHEDULER_DELETE,
    SCHEDULER_PUT,
    TEAM_CREATE,
    TEAM_DELETE,
    TEAM_UPDATE,
)

KINDS = kind_table(
    NETWORK_CREATE,
    NETWORK_DELETE,
    CLUSTER_CREATE,
    CLUSTER_STAGE,
    CLUSTER_DELETE,
    STORAGE_CREATE,
    STORAGE_DELETE,
    GROUP_CREATE,
    GROUP_UPDATE,
    GROUP_DELETE,
    SOFTWARE_UPDATE,
    KUBERNETES_UPGRADE,
    NODES_REBOOT,
    NODES_REPLACE,
    NODES_DELETE,
    FEATURE_UPDATE,
    JOB_CREATE,
    JOB_DELETE,
    MLFLOW_ATTACH,
    MLFLOW_DETACH,
    ENDPOINT_CREATE,
    ENDPOINT_UPDATE,
    ENDPOINT_REASSIGN,
    ENDPOINT_DELETE,
    MODEL_DOWNLOAD,
    MODEL_DELETE,
    SPACE_CREATE,
    SPACE_UPDATE,
    SPACE_STOP,
    SPACE_START,
    SPACE_DELETE,
    SCHEDULER_PUT,
    SCHEDULER_DELETE,
    TEAM_CREATE,
    TEAM_UPDATE,
    TEAM_DELETE,
)
