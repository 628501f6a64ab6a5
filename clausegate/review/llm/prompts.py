"""One Jinja2 environment for every model prompt (``prompts/*.j2``), with StrictUndefined.

Contract text is untrusted: templates put it inside ``<contract_passage>`` delimiters and the
renderer escapes anything in the text that could close or open such a tag, so a contract
cannot steer the instructions around it.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import jinja2

from clausegate.errors import ConfigurationError

_REPO_PROMPTS = Path(__file__).resolve().parents[3] / "prompts"
_PACKAGED_PROMPTS = Path(__file__).resolve().parents[2] / "_prompts"


def prompts_dir() -> Path:
    for candidate in (_REPO_PROMPTS, _PACKAGED_PROMPTS):
        if candidate.is_dir():
            return candidate
    raise ConfigurationError("the prompts/ folder is missing", hint="reinstall clausegate (pip install -e .)")


def delimit(text: str) -> str:
    """Neutralise tag-like sequences so contract text cannot close our delimiters."""
    return text.replace("<", "‹").replace(">", "›")


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(prompts_dir())),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
    )
    env.filters["delimit"] = delimit
    env.filters["tojson_compact"] = lambda value: json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    env.filters["shape"] = shape
    return env


def shape(schema: dict) -> str:
    """A JSON schema as the shape of an answer, e.g. ``{"clauses": [{"category": string, ...}]}``: what the model
    must return in a tenth of the schema's tokens (the prompt says what each field means; a repair prompt shows
    the full schema)."""
    defs = schema.get("$defs", {})

    def show(node: dict) -> str:
        if "$ref" in node:
            node = defs[node["$ref"].rsplit("/", 1)[1]]
        kind = node.get("type")
        if kind == "object":
            return "{" + ", ".join(f'"{k}": {show(v)}' for k, v in node.get("properties", {}).items()) + "}"
        if kind == "array":
            return f"[{show(node.get('items', {}))}, ...]"
        if kind == "number" and "minimum" in node and "maximum" in node:
            return f"number {node['minimum']}-{node['maximum']}"
        return str(kind or "any")

    return show(schema)


def render(template: str, **context) -> str:
    try:
        return environment().get_template(template).render(**context).strip() + "\n"
    except jinja2.UndefinedError as exc:
        raise ConfigurationError(f"prompt {template} needs a value it was not given: {exc}",
                                 hint="pass every variable the template uses") from None
    except jinja2.TemplateNotFound:
        raise ConfigurationError(f"prompt template {template} not found in {prompts_dir()}",
                                 hint="check the prompts/ folder") from None
