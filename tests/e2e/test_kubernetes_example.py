"""docs/kubernetes, run as a cluster would: the manifests parsed, each container's commands run
in order against a real Open WebUI (the session's), with its mounts as local directories.

The only edits, the ones a user makes: the Secret holds a real admin's email and password, the
target's URL is this instance (not `open-webui.open-webui.svc.cluster.local`), and the pinned
`pip install` is skipped (this checkout's provision is on PATH). Paths the pod sees (/config,
/secrets/admin, /work) are mapped to temporary directories, in the commands and the config.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import yaml

from provisioner import __version__
from tests.support.builders import REPO
from tests.support.chat_support import get

DOCS = REPO / "docs" / "kubernetes"
MODEL = "aihub_agent_pipe.it-helpdesk.default"
PIN = f'pip install --quiet "aihub-provision=={__version__}"'


def manifests() -> dict[tuple[str, str], dict[str, Any]]:
    found = {}
    for path in sorted(DOCS.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            found[(doc["kind"], doc["metadata"]["name"])] = doc
    return found


class Pod:
    """One pod of a workload: its volumes as directories, its env, its script."""

    def __init__(self, spec: dict[str, Any], docs: dict, root: Path, secret: dict[str, str], url: str) -> None:
        [self.container] = spec["containers"]
        self.root = root
        mounts = {m["name"]: m["mountPath"] for m in self.container["volumeMounts"]}
        self.paths = {mount: str(root / name) for name, mount in mounts.items()}
        for volume in spec["volumes"]:
            where = root / volume["name"]
            where.mkdir(parents=True)
            if "configMap" in volume:
                data = docs[("ConfigMap", volume["configMap"]["name"])]["data"]
                for item in volume["configMap"]["items"]:
                    text = self.local(data[item["key"]])
                    if item["key"] == "targets.yaml":
                        text = text.replace("http://open-webui.open-webui.svc.cluster.local:8080", url)
                    (where / item["path"]).parent.mkdir(parents=True, exist_ok=True)
                    (where / item["path"]).write_text(text, encoding="utf-8")
            elif "secret" in volume:
                for item in volume["secret"]["items"]:
                    (where / item["path"]).write_text(secret[item["key"]], encoding="utf-8")
            else:
                assert volume["emptyDir"] == {"medium": "Memory"}  # the key never touches a disk
        self.env = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", "HOME": str(root)}
        for var in self.container["env"]:
            if "valueFrom" in var:
                self.env[var["name"]] = secret[var["valueFrom"]["secretKeyRef"]["key"]]
            else:
                self.env[var["name"]] = self.local(var["value"])

    def local(self, text: str) -> str:
        for mount in sorted(self.paths, key=len, reverse=True):
            text = text.replace(mount, self.paths[mount])
        return text

    def run(self) -> subprocess.CompletedProcess[str]:
        command = self.container["command"]
        assert command == ["/bin/sh", "-ec"]
        [script] = self.container["args"]
        lines = script.strip().splitlines()
        assert lines[0] == PIN, "the example pins the provision version it documents"
        script = self.local("\n".join(lines[1:]))
        return subprocess.run(
            ["/bin/sh", "-ec", script],
            cwd=self.local(self.container["workingDir"]),
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
        )


def test_the_helm_hook_job_and_the_drift_cronjob_run_against_a_real_open_webui(owui, tmp_path: Path) -> None:
    docs = manifests()
    job = docs[("Job", "provision-sync")]
    assert job["metadata"]["annotations"]["helm.sh/hook"] == "post-install,post-upgrade"
    cron = docs[("CronJob", "provision-drift")]
    assert cron["spec"]["schedule"] and cron["spec"]["concurrencyPolicy"] == "Forbid"
    assert set(docs[("Secret", "provision-admin")]["stringData"]) == {"email", "password"}

    email, password = f"k8s-{uuid.uuid4().hex[:8]}@example.com", "Pw-k8s-" + uuid.uuid4().hex[:12]
    with owui.client() as http:
        http.post(
            "/api/v1/auths/add", json={"name": "Cluster Admin", "email": email, "password": password, "role": "admin"}
        ).raise_for_status()
    secret = {"email": email, "password": password}

    def pod(spec: dict[str, Any], name: str) -> Pod:
        return Pod(spec, docs, tmp_path / name, secret, owui.url)

    sync = pod(job["spec"]["template"]["spec"], "job").run()
    assert sync.returncode == 0, sync.stdout + sync.stderr
    assert password not in sync.stdout + sync.stderr
    row = get(owui, "/api/v1/models/model", id=MODEL)
    groups = {g["name"]: g for g in get(owui, "/api/v1/groups/")}
    assert [g["principal_id"] for g in row["access_grants"]] == [groups["IT Staff"]["id"]]  # missing_groups: create
    [entry] = get(owui, "/api/v1/models/model/history", id=MODEL)
    assert entry["commit_message"] == "helm upgrade of open-webui" and entry["user"]["name"] == "Cluster Admin"

    cron_spec = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    clean = pod(cron_spec, "cron-1").run()
    assert clean.returncode == 0 and "No drift." in clean.stdout, clean.stdout + clean.stderr
    with owui.client() as http:
        live = http.get("/api/v1/models/model", params={"id": MODEL}).raise_for_status().json()
        form = {k: live[k] for k in ("id", "name", "meta", "params")}
        form["name"] = "Helpdesk (by hand)"
        http.post("/api/v1/models/model/update", json=form).raise_for_status()
    drifted = pod(cron_spec, "cron-2").run()
    assert drifted.returncode == 2, drifted.stdout + drifted.stderr
    assert MODEL in drifted.stdout and "changed in Open WebUI by" in drifted.stdout
    for result in (sync, clean, drifted):
        assert password not in result.stdout + result.stderr and "sk-" not in result.stdout + result.stderr
