"""``prefect deploy`` of the deployments in ``prefect.yaml``, run exactly as documented (from the project
folder, ``--no-prompt``), for every deployment whose entrypoint file exists; and the UI form's drop-down of the
model blocks saved on the server (:func:`offer_model_blocks`)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml
from prefect.client.schemas.actions import DeploymentUpdate
from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterTags
from prefect.exceptions import ObjectNotFound

from clausegate.config import MODEL_BLOCK_KINDS
from clausegate.pipeline import parameters
from clausegate.stack.environment import base_env, prefect_argv
from clausegate.stack.state import DEPLOY_FAILED, StackError, StackPaths


def deployable(paths: StackPaths) -> tuple[list[str], list[tuple[str, str]]]:
    """Deployment names in prefect.yaml whose entrypoint file exists, and the skipped ones (+ why)."""
    config = yaml.safe_load(paths.prefect_yaml.read_text(encoding="utf-8"))
    ok: list[str] = []
    skipped: list[tuple[str, str]] = []
    for dep in config.get("deployments", []):
        entry = str(dep.get("entrypoint", ""))
        file = entry.split(":", 1)[0]
        if file and (paths.project / file).is_file():
            ok.append(dep["name"])
        else:
            skipped.append((dep.get("name", "?"), f"{file} not found"))
    return ok, skipped


def deploy(api_url: str, paths: StackPaths, names: list[str], *, log_file: Path, timeout: float = 600) -> None:
    """``prefect deploy --no-prompt -n NAME ...`` from the project folder (the documented command)."""
    argv = prefect_argv("deploy", "--no-prompt")
    for name in names:
        argv += ["--name", name]
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with open(log_file, "ab") as handle:
        handle.write(f"\n$ {' '.join(argv)}\n".encode())
        handle.flush()
        try:
            env = base_env(paths, api_url)
            # Left unresolved on purpose: each worker's flow-run process resolves it to its own checkout.
            env.pop("CLAUSEGATE_PROJECT_DIR", None)
            result = subprocess.run(argv, cwd=str(paths.project), env=env, stdout=handle,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise StackError(f"`prefect deploy` did not finish within {timeout:.0f} s.", code=DEPLOY_FAILED,
                             hint=f"see {log_file}") from None
    if result.returncode != 0:
        tail = log_file.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-8:]
        raise StackError(f"`prefect deploy` failed (exit {result.returncode}): " + " | ".join(tail),
                         code=DEPLOY_FAILED,
                         hint=f"see {log_file}; fix prefect.yaml or the flow it names, then run `clausegate up` again")


def offer_model_blocks(client) -> list[str]:
    """Offer the model blocks saved on ``client``'s server (``<kind>/<name>``) in the extractor drop-down of every
    deployed ClauseGate flow's form (clausegate.pipeline.parameters.offer_model_blocks); returns them.  Run by
    `clausegate up` after deploying and by `clausegate model-block` / `fake-model --save-block` after saving."""
    blocks = []
    for slug in MODEL_BLOCK_KINDS:
        try:
            docs = client.read_block_documents_by_type(slug, include_secrets=False)
        except ObjectNotFound:  # the block type is registered with the first block of its kind
            continue
        blocks += [f"{slug}/{doc.name}" for doc in docs if doc.name and not doc.is_anonymous]
    for dep in client.read_deployments(deployment_filter=DeploymentFilter(tags=DeploymentFilterTags(
            all_=["clausegate"]))):
        schema = dep.parameter_openapi_schema or {}
        offered = parameters.offer_model_blocks(schema, blocks)
        if offered != schema:
            client.update_deployment(dep.id, DeploymentUpdate(parameter_openapi_schema=offered))
    return blocks
