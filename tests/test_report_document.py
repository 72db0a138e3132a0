"""report.py's documents key by key (the contract's JSON shape: keys never disappear, an empty value is null or
[]), the scan's grouping and its table rows, on hand-built documents."""
from kubectl_gpudoctor.evidence import Line
from kubectl_gpudoctor.report import Check, Diagnosis, Finding, ScanReport, cut, pod_rows, scan_rows, target_ref

OOM = Finding(id="oom-killed", phase="crash", severity="critical", title="Container killed (OOMKilled)",
              message="Container server was OOMKilled 41 s after start.",
              evidence=[Line("status", "containerStatuses[server].lastState", "OOMKilled exitCode=137")],
              remediation="Raise the memory limit.", snippet="", docs="https://example/rules.md#oom-killed",
              summary="OOMKilled", table=[{"node": "gpu-1"}])


def pod(name="inference-0", ns="serving", status="failing", rc="oom-killed", findings=(OOM,), health="failing"):
    return Diagnosis(kind="PodDiagnosis", target={"kind": "Pod", "namespace": ns, "name": name, "node": "gpu-1"},
                     status=status, phase="CrashLoopBackOff", root_cause=rc, summary="s " * 80,
                     findings=list(findings), checks=[Check("oom-killed", "failed", "OOMKilled")],
                     gaps=[{"source": "events", "reason": "forbidden", "detail": "d"}],
                     next_commands=["kubectl describe pod inference-0 -n serving"],
                     collected_at="2026-12-02T08:30:00Z", health=health)


def test_finding_document():
    assert OOM.to_dict() == {
        "id": "oom-killed", "phase": "crash", "severity": "critical", "title": "Container killed (OOMKilled)",
        "message": "Container server was OOMKilled 41 s after start.",
        "evidence": [{"source": "status", "ref": "containerStatuses[server].lastState", "text": "OOMKilled exitCode=137"}],
        "remediation": "Raise the memory limit.", "snippet": None, "docs": "https://example/rules.md#oom-killed",
        "table": [{"node": "gpu-1"}]}
    assert Check("x", "unknown", "forbidden").to_dict() == {"id": "x", "result": "unknown", "reason": "forbidden"}


def test_pod_document_keeps_every_key():
    doc = pod().to_dict()
    assert list(doc) == ["apiVersion", "kind", "target", "status", "phase", "rootCause", "summary", "findings",
                         "checks", "gaps", "nextCommands", "collectedAt"]
    assert doc["apiVersion"] == "gpudoctor/v1" and doc["kind"] == "PodDiagnosis" and doc["rootCause"] == "oom-killed"
    assert doc["checks"] == [{"id": "oom-killed", "result": "failed", "reason": "OOMKilled"}]
    assert doc["gaps"][0]["source"] == "events" and doc["nextCommands"][0].startswith("kubectl describe")
    assert doc["collectedAt"] == "2026-12-02T08:30:00Z" and doc["summary"] == "s " * 80
    empty = Diagnosis(kind="PodDiagnosis", target={}, status="healthy", phase="Running", root_cause=None,
                      summary="ok").to_dict()
    assert (empty["rootCause"], empty["findings"], empty["gaps"], empty["nextCommands"], empty["collectedAt"]) == \
        (None, [], [], [], None)


def test_workload_document_lists_its_pods_and_extra_tables():
    wl = Diagnosis(kind="WorkloadDiagnosis", target={"kind": "Deployment", "namespace": "serving", "name": "llm",
                                                     "node": None},
                   status="failing", phase="0/2 ready", root_cause="oom-killed", summary="2 of 2 pods failing",
                   members=[pod(), pod("inference-1")], extra={"pods": [{"pod": "inference-0"}]})
    doc = wl.to_dict()
    assert [m["target"]["name"] for m in doc["items"]] == ["inference-0", "inference-1"]
    assert doc["pods"] == [{"pod": "inference-0"}]
    assert "items" not in pod().to_dict()


def test_table_rows_and_references():
    d = pod()
    row = pod_rows([d])[0]
    assert row == {"namespace": "serving", "pod": "inference-0", "node": "gpu-1", "status": "failing",
                   "phase": "CrashLoopBackOff", "rootCause": "oom-killed", "summary": cut(d.summary)}
    wl = Diagnosis(kind="WorkloadDiagnosis", target={"kind": "StatefulSet", "namespace": "ml", "name": "db", "node": None},
                   status="failing", phase="-", root_cause=None, summary="x")
    assert [r["name"] for r in scan_rows([d, wl])] == ["inference-0", "statefulset/db"]
    assert target_ref(Diagnosis(kind="NodeDiagnosis", target={"kind": "Node", "name": "gpu-1"}, status="healthy",
                                phase="Ready", root_cause=None, summary="")) == "gpu-1"


def test_cut_marks_where_it_cuts():
    assert cut("short") == "short"
    assert cut("a" * 100) == "a" * 100
    assert cut("a" * 101) == "a" * 99 + "…" and len(cut("word " * 40, 20)) == 20
    assert cut("abc def ghi", 8) == "abc def…" and cut("abc   def", 5) == "abc…"   # no space before the mark


def test_scan_report_groups_by_root_cause_most_first():
    healthy = pod("ok-0", status="healthy", rc=None, findings=(), health="healthy")
    unexplained = pod("odd-0", rc=None, findings=())
    items = [pod("a"), pod("b"), unexplained, healthy]
    report = ScanReport(scope="namespace serving", items=items, gpu_pods=7, collected_at="2026-12-02T08:30:00Z",
                        gaps=[{"source": "nodes"}])
    assert report.by_root_cause == {"oom-killed": 2, "unexplained": 1, "none": 1}
    assert list(report.by_root_cause) == ["oom-killed", "unexplained", "none"]
    doc = report.to_dict()
    assert list(doc) == ["apiVersion", "kind", "status", "scope", "gpuPods", "items", "byRootCause", "gaps",
                         "collectedAt"]
    assert (doc["kind"], doc["status"], doc["scope"], doc["gpuPods"], len(doc["items"]), doc["gaps"]) == \
        ("ScanReport", "failing", "namespace serving", 7, 4, [{"source": "nodes"}])
