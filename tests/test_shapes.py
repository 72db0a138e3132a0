"""kube/shapes.py and the bounded decoding of collect/api.py, one function at a time."""
import pytest

from kubectl_gpudoctor.collect.api import _TooDeep, _WithRefused, _json, _object_or_gap
from kubectl_gpudoctor.evidence import Evidence, Gap, Target
from kubectl_gpudoctor.kube import shapes
from kubectl_gpudoctor.kube.quantity import count, parse_quantity


def _node(**status):
    return {"kind": "Node", "apiVersion": "v1", "metadata": {"name": "gpu-node-01", "labels": {"a": "b"}},
            "spec": {"taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]},
            "status": {"allocatable": {"nvidia.com/gpu": "8"}, **status}}


@pytest.mark.parametrize("edit,problem", [
    (lambda n: n["metadata"].update(name=["a"]), "metadata.name is a list, not a string"),
    (lambda n: n.update(metadata="x"), "metadata is the string 'x', not a mapping"),
    (lambda n: n["metadata"].update(labels=[1]), "metadata.labels is a list, not a mapping"),
    (lambda n: n.update(spec="x"), "spec is the string 'x', not a mapping"),
    (lambda n: n["spec"].update(taints=[None]), "spec.taints[0] is null, not a mapping"),
    (lambda n: n["spec"]["taints"][0].pop("key"), "spec.taints[0].key is missing"),
    (lambda n: n["status"].update(allocatable="8"), "status.allocatable is the string '8', not a mapping"),
    (lambda n: n["status"]["allocatable"].update({"nvidia.com/gpu": "NaN"}),
     "status.allocatable.nvidia.com/gpu is the string 'NaN', not a quantity such as 16Gi or 2"),
    (lambda n: n["metadata"].update(creationTimestamp="0001-01-01T00:00:00Z"),
     "metadata.creationTimestamp is the string '0001-01-01T00:00:00Z', not a time such as 2026-12-02T08:30:00Z"),
])
def test_each_problem_names_its_field(edit, problem):
    node = _node()
    assert shapes.problems(node) == []
    edit(node)
    assert [p for _, p in shapes.problems(node)][:1] == [problem]


def test_a_side_object_is_dropped_and_counted_in_one_gap_per_source():
    ev = Evidence(target=Target("Pod", "p", "ns"))
    ev.mark_read("nodes")
    bad1, bad2, good = _node(), _node(), _node()
    bad1["metadata"]["name"] = "n1"
    bad1["spec"]["taints"] = [None]
    bad2["metadata"]["name"] = "n2"
    bad2["status"]["allocatable"] = "x"
    assert shapes.screened(ev, bad1, "Node") is None and shapes.screened(ev, bad2, "Node") is None
    assert shapes.screened(ev, good, "Node") is good
    gap = ev.gaps["nodes#malformed"]
    assert gap.source == "nodes" and gap.reason == "malformed"
    assert gap.detail == ("2 objects skipped: spec.taints[0] is null, not a mapping; status.allocatable is the "
                          "string 'x', not a mapping")
    assert ev.readable("nodes")                   # the other nodes are still read
    assert not ev.is_absent("Node", "n1")         # a skipped node is not a deleted one


def test_the_target_keeps_its_place_without_the_malformed_fields():
    ev = Evidence(target=Target("Pod", "p", "ns"))
    pod = {"kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
           "spec": {"containers": [{"name": "a"}, {"image": "no-name"}]},
           "status": {"containerStatuses": [{"name": "a", "restartCount": 1e100}, None]}}
    fixed = shapes.screened(ev, pod, "Pod")
    assert fixed["spec"]["containers"] == [{"name": "a"}]
    assert fixed["status"]["containerStatuses"] == [{"name": "a"}]
    assert pod["spec"]["containers"][1] == {"image": "no-name"}     # the original is not edited
    detail = ev.gaps["pods#malformed"].detail
    assert detail.startswith("pod p: field ignored: ") and "restartCount is the number 1e+100" in detail


def test_malformed_gaps_keep_their_own_key_when_merged_or_reloaded():
    ev = Evidence(target=Target("Pod", "p", "ns"))
    ev.add_gap(Gap("events", "malformed", "1 object skipped: x"))
    ev.add_gap(Gap("events", "forbidden", "no"))
    assert set(ev.gaps) == {"events#malformed", "events"}


def test_decoding_refuses_nan_and_infinities_as_values_and_survives_depth():
    doc = _json('{"items": [{"metadata": {"name": "a"}, "x": NaN}, {"metadata": {"name": "b"}, "y": 1e999}]}')
    assert isinstance(doc, _WithRefused)
    assert isinstance(doc["items"][0]["x"], shapes.Refused) and isinstance(doc["items"][1]["y"], shapes.Refused)
    assert _object_or_gap(200, doc).message == "refused numbers"
    assert shapes.problems(doc["items"][0], "ClusterPolicy")[0][1] == "x is NaN, not a number an API server writes"
    assert _json('{"a": 1.5, "b": 7}') == {"a": 1.5, "b": 7} and type(_json("{}")) is dict
    deep = _json('{"a":' * 5000 + "1" + "}" * 5000)
    assert isinstance(deep, _TooDeep) and _object_or_gap(200, deep).reason == "error"
    nested = {"metadata": {"name": "cp"}, "spec": {}}
    node = nested["spec"]
    for _ in range(150):
        node["a"] = {}
        node = node["a"]
    assert "nests deeper than 100 levels" in shapes.problems(nested, "ClusterPolicy")[0][1]


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Inf", "inf", "1e1000", "1_000", "1e999999999Gi", "", "Gi"])
def test_absurd_quantities_are_no_quantity(text):
    assert parse_quantity(text) is None and count(text) == 0


def test_real_quantities_still_parse():
    assert parse_quantity("16Gi") == 16 * 2 ** 30 and parse_quantity("500m") * 2 == 1
    assert count("8") == 8 and parse_quantity("1e3") == 1000 and parse_quantity("1E") == 10 ** 18
    assert parse_quantity(float("nan")) is None and parse_quantity(True) is None


def test_a_bundle_of_an_object_nested_past_any_bound_is_written_not_a_recursion_error():
    """for_bundle copies while masking, within a depth bound; copy.deepcopy of 3,000 levels would raise."""
    import yaml
    from kubectl_gpudoctor.safety.redact import for_bundle
    deep = node = {}
    for _ in range(3000):
        node["a"] = {}
        node = node["a"]
    pod = {"kind": "Pod", "metadata": {"name": "p"}, "spec": {"x": deep, "containers": [
        {"name": "c", "env": [{"name": "HF_TOKEN", "value": "v"}]}]}}
    out = for_bundle(pod)
    assert out["spec"]["containers"][0]["env"][0]["value"] == "<redacted>"
    assert pod["spec"]["containers"][0]["env"][0]["value"] == "v"   # the evidence is not edited
    assert "<redacted>" in yaml.safe_dump(out)
