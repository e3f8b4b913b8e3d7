"""The identifier patterns: each compiles in Python and in the dashboard's ECMAScript, takes
the whole value, and accepts and refuses what AWS (or Kubernetes) does — botocore's patterns
are written in Java's dialect, so this is where a translation slip would show."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import botocore.session
import pytest

from vocabulary import patterns

ACCOUNT = "123456789012"

SAMPLES: dict[str, tuple[list[str], list[str]]] = {
    # name: (accepted, refused)
    "INSTANCE_GROUP_NAME": (["workers", "gpu-1", "a--b", "A" * 63],
                            ["-x", "x-", "a" * 64, "under_score", ""]),
    "HYPERPOD_CLUSTER_NAME": (["hypd-lab", "x"], ["hypd_lab", "-lab", "a" * 64]),
    "ROLE_ARN": ([f"arn:aws:iam::{ACCOUNT}:role/hypd-lab-hp-exec",
                  f"arn:aws-cn:iam::{ACCOUNT}:role/service-role/r+=,.@-_"],
                 ["arn:aws:iam::12345:role/r", f"arn:aws:iam::{ACCOUNT}:user/u",
                  # Arabic-Indic digits: Python's \d takes them, AWS and ECMAScript do not
                  "arn:aws:iam::١٢٣٤٥٦٧٨٩٠١٢:role/r"]),
    "TRAINING_PLAN_ARN": ([f"arn:aws:sagemaker:us-west-2:{ACCOUNT}:training-plan/p5-res-1"],
                          [f"arn:aws:sagemaker:us-west-2:{ACCOUNT}:cluster/abcdefghijkl",
                           f"arn:aws:eks:us-west-2:{ACCOUNT}:training-plan/p",
                           # no name (the fuzzer's: 502 from DescribeTrainingPlan once)
                           "arn:aws:sagemaker:0000:000000000000:training-plan/",
                           f"arn:aws:sagemaker:us-west-2:{ACCOUNT}:training-plan/-p5"]),
    "EKS_CLUSTER_ARN": ([f"arn:aws:eks:us-west-2:{ACCOUNT}:cluster/hypd-lab"],
                        [f"arn:aws:eks:us-west-2:{ACCOUNT}:cluster/-lab",
                         f"arn:aws:eks:us-west-2:{ACCOUNT}:nodegroup/hypd-lab"]),
    "NODE_ID": (["i-0123456789abcdef0", "i-01234567"],
                ["i-0123456789abcdef", "i-0123456789ABCDEF0", "group-0"]),
    "IMAGE_ID": (["ami-0123456789abcdef0", "default"], ["ami-xyz", "latest"]),
    "TRACKING_SERVER": (["hypd-lab", f"arn:aws:sagemaker:us-west-2:{ACCOUNT}:"
                         "mlflow-tracking-server/hypd-lab"],
                        ["-lab", f"arn:aws:sagemaker:us-west-2:{ACCOUNT}:cluster/x",
                         f"arn:aws:sagemaker:us-west-2:{ACCOUNT}:mlflow-tracking-server/"]),
    "TRACKING_SERVER_NAME": (["hypd-lab"], ["-lab", "a" * 257]),
    "TEAM_NAME": (["research", "team-a", "7b"], ["Team", "-team", "team-", "team_a", ""]),
    "PRIORITY_CLASS_NAME": (["inference", "p-1"], ["High", "-p", "p-", "p.1", ""]),
    "TRACKING_SERVER_ARN": ([f"arn:aws:sagemaker:us-west-2:{ACCOUNT}:mlflow-tracking-server/x"],
                            ["hypd-lab",
                             f"arn:aws:sagemaker:us-west-2:{ACCOUNT}:mlflow-tracking-server/",
                             f"arn:aws:sagemaker:us-west-2:{ACCOUNT}:mlflow-tracking-server/-x"]),
    "EKS_CLUSTER_NAME": (["hypd-lab", "A_b-1", "a" * 100], ["-x", "_x", "a" * 101, "a.b"]),
    "VPC_ID": (["vpc-0123456789abcdef0", "vpc-01234567"], ["vpc-0123", "subnet-01234567"]),
    "SUBNET_ID": (["subnet-0123456789abcdef0"], ["subnet-XYZ01234", "sg-01234567"]),
    "SECURITY_GROUP_ID": (["sg-0123456789abcdef0"], ["sg-0123", "vpc-01234567"]),
    "ML_INSTANCE_TYPE": (["ml.p5.48xlarge", "ml.g5.8xlarge"], ["p5.48xlarge", "ml.p5"]),
    "REGION": (["us-west-2", "us-gov-west-1", "cn-north-1"], ["us-west-2a", "west-2"]),
    "ZONE": (["us-west-2a", "us-gov-east-1b"], ["us-west-2", "usw2-az1"]),
    "S3_BUCKET": (["sagemaker-hypd-lab", "a.b-c"], ["ab", "Bucket", "-ab", "ab-"]),
    "S3_OBJECT_URI": (["s3://my-models/llama/", "s3://b-1/p/q"],
                      ["s3://my-models", "https://b-1/p", "s3://B/p"]),
    "CONTAINER_IMAGE": (["python:3.12-slim", "public.ecr.aws/sagemaker/sagemaker-distribution:"
                         "latest-cpu", "nginx@sha256:" + "a" * 64, "repo/img"],
                        ["Registry/Image:1", "img:", "img;rm", "", "-img"]),
    "DNS_LABEL": (["hypd", "a-1", "a" * 63], ["A", "-a", "a-", "a" * 64, "a.b"]),
    "LABEL_KEY": (["team", "team.example.com/tier", "a_b.c"],
                  ["-x", "Team.example.com/x", "a/b/c", "x" * 64]),
    "LABEL_VALUE": (["", "gpu", "A_b.c-1"], ["-gpu", "gpu-", "x" * 64]),
    "NAME": (["lab", "lab-1", "a" * 32], ["Lab", "1lab", "lab-", "a" * 33]),
    "OPERATION_ID": (["op_01ARZ3NDEKTSV4RRFFQ69G5FAV"],
                     ["op_01arz3ndektsv4rrffq69g5fav", "op_01ARZ3NDEKTSV4RRFFQ69G5FA",
                      "01ARZ3NDEKTSV4RRFFQ69G5FAVX", "op_01ARZ3NDEKTSV4RRFFQ69G5FAV/x"]),
}
"""Known good and bad values for every pattern (names as AWS documents them)."""


def _all() -> dict[str, re.Pattern[str]]:
    return {name: value for name, value in vars(patterns).items()
            if isinstance(value, re.Pattern)}


def test_every_pattern_has_samples():
    assert set(_all()) == set(SAMPLES)


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_each_pattern_accepts_and_refuses_what_aws_does(name):
    pattern = _all()[name]
    good, bad = SAMPLES[name]
    assert [v for v in good if not patterns.fits(pattern, v)] == []
    assert [v for v in bad if patterns.fits(pattern, v)] == []
    # anchored for every reader, `re.match` and ECMAScript's `test` too (Python's `$` still
    # lets a trailing newline through: readers use fullmatch)
    assert not pattern.match(" " + good[0]) and not pattern.fullmatch(good[0] + "\n")


def test_the_length_aws_states_beside_a_pattern_is_kept_beside_it():
    """Not folded into the expression (a look-ahead there defeats value generators): the
    schemas put it in the document as minLength/maxLength."""
    assert patterns.bounds(patterns.INSTANCE_GROUP_NAME) == (1, 63)
    assert patterns.bounds(patterns.TRAINING_PLAN_ARN) == (50, 2048)
    assert patterns.bounds(patterns.SUBNET_ID) is None
    assert all("(?=" not in p.pattern for p in _all().values())
    assert patterns.INSTANCE_GROUP_NAME.fullmatch("a" * 64)
    assert not patterns.fits(patterns.INSTANCE_GROUP_NAME, "a" * 64)
    assert not patterns.fits(patterns.INSTANCE_GROUP_NAME, None)


def test_awss_patterns_are_botocores_own():
    """Read from the service model, not re-typed: the text botocore holds is in each."""
    model = botocore.session.get_session().get_service_model("sagemaker")
    for name, shape in (("INSTANCE_GROUP_NAME", "ClusterInstanceGroupName"),
                        ("ROLE_ARN", "RoleArn"),
                        ("EKS_CLUSTER_ARN", "EksClusterArn"), ("NODE_ID", "ClusterNodeId"),
                        ("IMAGE_ID", "ImageId")):
        assert model.shape_for(shape).metadata["pattern"] in _all()[name].pattern, name
    # an ARN's name part is its name's own pattern, in place of botocore's trailing `.*`
    arn = model.shape_for("TrainingPlanArn").metadata["pattern"]
    name = model.shape_for("TrainingPlanName").metadata["pattern"]
    assert patterns.TRAINING_PLAN_ARN.pattern == f"^(?:{arn[:-2]}(?:{name}))$"
    arn = model.shape_for("TrackingServerArn").metadata["pattern"]
    name = model.shape_for("TrackingServerName").metadata["pattern"]
    assert patterns.TRACKING_SERVER_ARN.pattern == f"^(?:{arn[:-2]}(?:{name}))$"


def test_the_dashboard_reads_each_pattern_the_same_way():
    """The OpenAPI document hands these texts to the dashboard's `new RegExp(...)`: the
    same verdicts there, for every sample. Needs node (./dev.sh test installs it)."""
    if shutil.which("node") is None:
        pytest.fail("node is not installed: ./dev.sh test installs it to run ECMAScript")
    cases = {name: {"source": _all()[name].pattern, "values": good + bad,
                    "bounds": patterns.bounds(_all()[name])}
             for name, (good, bad) in SAMPLES.items()}
    script = ("const cases = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
              "const out = {};"
              "for (const [n, c] of Object.entries(cases)) {"
              "  const re = new RegExp(c.source);"
              "  const [lo, hi] = c.bounds || [0, Infinity];"
              "  out[n] = c.values.map((v) => re.test(v) && v.length >= lo && v.length <= hi); }"
              "process.stdout.write(JSON.stringify(out));")
    run = subprocess.run(["node", "-e", script], input=json.dumps(cases), text=True,
                         capture_output=True, check=True, timeout=30)
    verdicts = json.loads(run.stdout)
    for name, (good, bad) in SAMPLES.items():
        assert verdicts[name] == [True] * len(good) + [False] * len(bad), name
