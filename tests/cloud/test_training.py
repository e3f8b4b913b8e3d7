"""Training manifests: every RayJob a recipe makes fits KubeRay's CRD as a closed schema; the
HyperPodPyTorchJob builder's fields are pinned to AWS's documentation; every recipe mounts
the cluster's bucket at /s3; hyperpodrun is required and explained; elastic training's
limits come from one table."""

from __future__ import annotations

import jsonschema
import pytest

from cloud import recipes, training
from cloud.dependencies import MANIFEST_DIR
from cloud.training import HangRule, JobSpec, RunPolicy, TrainingError
from tests.crdkit import validate

RAYJOB_CRD = str(MANIFEST_DIR / "kuberay-crds" / "ray.io_rayjobs.yaml")  # the one hypd ships


def _spec(**over) -> JobSpec:
    base = dict(name="fit", namespace="team-a", recipe="torchrun", image="repo/train:1",
                command=(), nodes=2, processes_per_node=8, gpus_per_node=8, efa_per_node=4,
                instance_group="workers", env=(("WANDB_MODE", "offline"),))
    base.update(over)
    return JobSpec(**base)


CONFIGS = {"torchrun": {"script": "/s3/code/train.py", "args": ["--epochs", "1"]},
           "llama-factory": {"config": "/s3/configs/llama3_lora.yaml"},
           "ms-swift": {"config": "/s3/configs/qwen_sft.yaml"},
           "verl": {"config": "/s3/configs/ppo.yaml"},
           "pytorch": {"command": ["hyperpodrun", "--nnodes=2", "train.py"]},
           "ray": {"command": ["python", "rl.py", "--steps", "10"]}}


@pytest.mark.parametrize("recipe", ["verl", "ray"])
def test_every_generated_rayjob_validates_against_kuberays_crd_as_a_closed_schema(recipe):
    # with a service account too (a cluster with MLflow gives its jobs one)
    account = {"service_account": "hypd-mlflow"} if recipe == "verl" else {}
    built = recipes.build(recipe, _spec(recipe=recipe, **account), CONFIGS[recipe])
    assert built.kind == "ray"
    validate(built.manifest, RAYJOB_CRD, "v1")
    # the check is closed: a misspelt field fails
    broken = {**built.manifest, "spec": {**built.manifest["spec"], "entryPoint": "x"}}
    with pytest.raises(jsonschema.ValidationError):
        validate(broken, RAYJOB_CRD, "v1")


def test_the_verl_entrypoint_is_an_argv_joined_for_the_shell_not_a_formatted_string():
    built = recipes.build("verl", _spec(recipe="verl"), {"config": "/s3/rl/ppo.yaml",
                                                          "args": ["a b; rm -rf /"]})
    entry = built.manifest["spec"]["entrypoint"]
    assert entry.startswith("python3 -m verl.trainer.main_ppo --config-path=/s3/rl "
                            "--config-name=ppo ")
    assert entry.endswith("'a b; rm -rf /'")  # quoted: one argument, never a command


# Pinned from AWS's documentation of the training operator's job
# (https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-eks-operator-usage.html: apiVersion
# sagemaker.amazonaws.com/v1, kind HyperPodPyTorchJob, spec.nprocPerNode as a string,
# spec.replicaSpecs[].{name, replicas, template}, the elastic agent's containerPort 8080,
# runPolicy.{jobMaxRetryCount, restartPolicy.{numRestartBeforeFullJobRestart,
# evalPeriodSeconds, maxFullJobRestarts}, cleanPodPolicy, logMonitoringConfiguration[].{name,
# logPattern, expectedStartCutOffInSeconds, expectedRecurringFrequencyInSeconds}}) and from the
# HyperPod CLI's model of the CRD (aws/sagemaker-hyperpod-cli,
# src/sagemaker/hyperpod/training/config/hyperpod_pytorch_job_unified_config.py @ 011ca927:
# ReplicaSpec.maxReplicas, ElasticPolicy.{minReplicas, maxReplicas}, LogMonitoringConfiguration
# .{stopPattern, metricThreshold, operator, metricEvaluationDataPoints}).
DOCUMENTED = {
    "spec": {"nprocPerNode", "replicaSpecs", "runPolicy", "elasticPolicy"},
    "replica": {"name", "replicas", "template", "maxReplicas"},
    "runPolicy": {"jobMaxRetryCount", "restartPolicy", "cleanPodPolicy",
                  "logMonitoringConfiguration"},
    "restartPolicy": {"numRestartBeforeFullJobRestart", "evalPeriodSeconds",
                      "maxFullJobRestarts"},
    "rule": {"name", "logPattern", "expectedStartCutOffInSeconds",
             "expectedRecurringFrequencyInSeconds", "stopPattern", "metricThreshold",
             "operator", "metricEvaluationDataPoints"},
    "elasticPolicy": {"minReplicas", "maxReplicas"},
}


def test_the_hyperpodpytorchjob_builder_uses_only_documented_fields():
    rules = (HangRule("JobStart", ".*Experiment configuration.*", expected_start_cutoff_s=120),
             HangRule("JobHang", r".*step (\d+).*", expected_recurring_frequency_s=300,
                      stop_pattern=".*done.*"),
             HangRule("Slow", r".*throughput=(\d+).*", metric_threshold=100, operator="lt",
                      metric_evaluation_data_points=5))
    policy = RunPolicy(job_max_retry_count=50, restarts_before_full_job_restart=3,
                       eval_period_s=21600, max_full_job_restarts=1, rules=rules)
    spec = _spec(command=("hyperpodrun", "--nnodes=2:4", "train.py"), max_nodes=4,
                 run_policy=policy)
    job = training.pytorch_job(spec)
    assert (job["apiVersion"], job["kind"]) == ("sagemaker.amazonaws.com/v1",
                                                "HyperPodPyTorchJob")
    body = job["spec"]
    assert set(body) <= DOCUMENTED["spec"] and body["nprocPerNode"] == "8"
    (replica,) = body["replicaSpecs"]
    assert set(replica) <= DOCUMENTED["replica"] and replica["replicas"] == 2
    assert replica["maxReplicas"] == 4
    assert body["elasticPolicy"] == {"minReplicas": 2, "maxReplicas": 4}
    run = body["runPolicy"]
    assert set(run) == DOCUMENTED["runPolicy"] and run["jobMaxRetryCount"] == 50
    assert run["restartPolicy"] == {"numRestartBeforeFullJobRestart": 3,
                                    "evalPeriodSeconds": 21600, "maxFullJobRestarts": 1}
    for rule in run["logMonitoringConfiguration"]:
        assert set(rule) <= DOCUMENTED["rule"]
    assert run["logMonitoringConfiguration"][0] == {
        "name": "JobStart", "logPattern": ".*Experiment configuration.*",
        "expectedStartCutOffInSeconds": 120}
    pod = replica["template"]["spec"]
    (container,) = pod["containers"]
    assert container["ports"] == [{"containerPort": 8080}]  # the elastic agent
    assert container["resources"]["limits"] == {"nvidia.com/gpu": "8",
                                                "vpc.amazonaws.com/efa": "4"}
    assert pod["nodeSelector"] == {"sagemaker.amazonaws.com/instance-group-name": "workers"}


@pytest.mark.parametrize("recipe", sorted(CONFIGS))
def test_a_recipes_manifest_mounts_the_clusters_bucket_at_s3(recipe):
    built = recipes.build(recipe, _spec(recipe=recipe), CONFIGS[recipe])
    spec = built.manifest["spec"]
    templates = ([r["template"] for r in spec["replicaSpecs"]] if built.kind == "pytorch" else
                 [spec["rayClusterSpec"]["headGroupSpec"]["template"],
                  *[g["template"] for g in spec["rayClusterSpec"]["workerGroupSpecs"]]])
    for template in templates:
        assert {"name": "s3", "persistentVolumeClaim": {"claimName": "hypd-s3"}} in \
            template["spec"]["volumes"]
        for container in template["spec"]["containers"]:
            assert {"name": "s3", "mountPath": "/s3"} in container["volumeMounts"]
            env = {e["name"]: e["value"] for e in container["env"]}
            assert env["HYPD_OUTPUT_DIR"] == "/s3/jobs/fit/output"
            assert env["HYPD_CHECKPOINT_DIR"] == "/s3/jobs/fit/checkpoints"
        assert template["metadata"]["labels"]["hypd.io/job"] == "fit"
    assert built.paths == {"data": "/s3/data", "output": "/s3/jobs/fit/output",
                           "checkpoints": "/s3/jobs/fit/checkpoints"}


def test_the_torchrun_recipe_launches_the_script_with_hyperpodrun():
    built = recipes.build("torchrun", _spec(max_nodes=4), CONFIGS["torchrun"])
    (replica,) = built.manifest["spec"]["replicaSpecs"]
    assert replica["template"]["spec"]["containers"][0]["command"] == [
        "hyperpodrun", "--nnodes=2:4", "--nproc-per-node=8", "/s3/code/train.py",
        "--epochs", "1"]


def test_a_command_without_hyperpodrun_is_refused_with_the_reason():
    with pytest.raises(TrainingError) as refused:
        recipes.build("pytorch", _spec(recipe="pytorch"),
                      {"command": ["torchrun", "--nnodes=2", "train.py"]})
    assert refused.value.field == "command"
    assert "hyperpodrun" in str(refused.value) and "hyperpod-elastic-agent" in str(refused.value)


def test_paths_outside_the_bucket_are_refused():
    for bad in ("/etc/passwd", "/s3/../etc", "s3/x", "/s3/a b"):
        with pytest.raises(TrainingError):
            recipes.build("torchrun", _spec(), {"script": bad})


def test_elastic_training_limits_are_one_table_with_its_source():
    assert [limit.key for limit in training.ELASTIC_LIMITS] == [
        "spot", "tiered_checkpointing", "checkpointless"]
    assert "sagemaker-eks-checkpointless-considerations" in training.ELASTIC_LIMITS_SOURCE
    assert ".md" not in training.ELASTIC_LIMITS_SOURCE  # a user reads it: no file of ours
    assert training.elastic_refusal({}) is None
    reason = training.elastic_refusal({"spot": True, "checkpointless": True})
    assert reason.startswith("elastic training (a node range) cannot be combined with spot "
                             "capacity or checkpointless training")
