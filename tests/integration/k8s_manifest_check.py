#!/usr/bin/env python3
"""Checks a manifest written by `batchscope submit k8s` against the Kubernetes API's schema, as the
models of the Kubernetes Python client (Debian's python3-kubernetes) describe it, with no cluster:
every field must be one the API object has, of the type it has there; required fields must be
present; and the Job must be the Indexed Job batchscope meant to write.

Usage: k8s_manifest_check.py MANIFEST --shards N --parallel K --gpus G [--command-has=WORD ...]
Exit 0 when it is valid, 1 with every problem listed, 77 where python3-kubernetes is not installed.
"""
import argparse
import re
import sys

try:
    import yaml
    import kubernetes
    from kubernetes import client
except ImportError as error:
    print(f"k8s_manifest_check: skipped: python3-kubernetes (or python3-yaml) is not installed: {error}")
    sys.exit(77)

# Fields newer than some client versions: (model, field) -> (client major version that has it, its type).
# Where the installed client is older, the field is checked by its type alone, and said so.
NEWER_FIELDS = {("V1JobSpec", "backoffLimitPerIndex"): (28, "int")}

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

problems = []
notes = []


def client_major():
    return int(kubernetes.__version__.split(".")[0])


def check(value, type_name, path):
    """Every field of value against the client's model type_name."""
    if type_name.startswith("list["):
        if not isinstance(value, list):
            problems.append(f"{path}: should be a list, is {type(value).__name__}")
            return
        for i, item in enumerate(value):
            check(item, type_name[5:-1], f"{path}[{i}]")
        return
    if type_name.startswith("dict("):
        if not isinstance(value, dict):
            problems.append(f"{path}: should be a mapping, is {type(value).__name__}")
            return
        inner = type_name[5:-1].split(", ", 1)[1]
        for key, item in value.items():
            check(item, inner, f"{path}.{key}")
        return
    primitives = {"str": str, "int": int, "bool": bool, "float": (int, float)}
    if type_name in primitives:
        # bool is an int in Python, and a YAML 1 is no string: both are wrong types here.
        if not isinstance(value, primitives[type_name]) or (type_name == "int" and isinstance(value, bool)):
            problems.append(f"{path}: should be {type_name}, is {type(value).__name__} ({value!r})")
        return
    if type_name == "object":
        return
    model = getattr(client, type_name, None)
    if model is None:
        problems.append(f"{path}: the client has no model {type_name}")
        return
    if not isinstance(value, dict):
        problems.append(f"{path}: should be a {type_name} mapping, is {type(value).__name__}")
        return
    by_key = {key: attr for attr, key in model.attribute_map.items()}
    for key, item in value.items():
        if key in by_key:
            check(item, model.openapi_types[by_key[key]], f"{path}.{key}")
            continue
        newer = NEWER_FIELDS.get((type_name, key))
        if newer and client_major() < newer[0]:
            notes.append(f"{path}.{key}: not in python3-kubernetes {kubernetes.__version__}'s {type_name} "
                         f"(it came with client {newer[0]}); checked as {newer[1]} only")
            check(item, newer[1], f"{path}.{key}")
            continue
        problems.append(f"{path}: {type_name} has no field {key!r}")
    # Required fields, at every depth: the models' own constructors refuse None for them.
    if "." in path or "[" in path:
        return
    try:
        client.ApiClient()._ApiClient__deserialize(
            {k: v for k, v in value.items() if k in by_key}, type_name)
    except (ValueError, TypeError) as error:
        problems.append(f"{path}: {error}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("manifest")
    parser.add_argument("--shards", type=int, required=True)
    parser.add_argument("--parallel", type=int, required=True)
    parser.add_argument("--gpus", type=int, required=True)
    parser.add_argument("--command-has", action="append", default=[], help="a word the command must hold (--command-has=--steps)")
    args = parser.parse_args()

    with open(args.manifest) as f:
        docs = [d for d in yaml.safe_load_all(f) if d is not None]
    kinds = [d.get("kind") for d in docs]
    if kinds != ["ConfigMap", "Job"]:
        problems.append(f"the manifest holds {kinds}, not a ConfigMap and a Job")
    for doc in docs:
        model = {("v1", "ConfigMap"): "V1ConfigMap", ("batch/v1", "Job"): "V1Job"}.get((doc.get("apiVersion"), doc.get("kind")))
        if model is None:
            problems.append(f"{doc.get('apiVersion')} {doc.get('kind')}: not an object batchscope writes")
            continue
        check(doc, model, doc["kind"])
        name = doc.get("metadata", {}).get("name", "")
        if not DNS_LABEL.match(name) or len(name) > 63:
            problems.append(f"{doc['kind']}.metadata.name {name!r} is not a DNS-1123 label of at most 63 characters")
        for key, value in doc.get("metadata", {}).get("labels", {}).items():
            if not LABEL_VALUE.match(str(value)) or len(str(value)) > 63:
                problems.append(f"{doc['kind']}.metadata.labels.{key}: {value!r} is not a label value")

    if len(docs) == 2 and not problems:
        config_map, job = docs
        spec = job["spec"]
        expect = {"completionMode": "Indexed", "completions": args.shards, "parallelism": args.parallel}
        for key, value in expect.items():
            if spec.get(key) != value:
                problems.append(f"Job.spec.{key} is {spec.get(key)!r}, not {value!r}")
        if "backoffLimitPerIndex" not in spec:
            problems.append("Job.spec has no backoffLimitPerIndex")
        pod = spec["template"]["spec"]
        if pod.get("restartPolicy") != "Never":
            problems.append("backoffLimitPerIndex needs the pods' restartPolicy to be Never")
        container = pod["containers"][0]
        gpus = container.get("resources", {}).get("limits", {}).get("nvidia.com/gpu")
        if (gpus is None and args.gpus > 0) or (gpus is not None and gpus != str(args.gpus)):
            problems.append(f"the container's nvidia.com/gpu limit is {gpus!r}, not {args.gpus}")
        command = container["command"]
        if "--shards" not in command or command[command.index("--shards") + 1] != str(args.shards):
            problems.append(f"the command {command} does not pass --shards {args.shards}")
        for word in args.command_has:
            if word not in command:
                problems.append(f"the command {command} lacks {word!r}")
        volumes = {v["name"]: v for v in pod.get("volumes", [])}
        for mount in container.get("volumeMounts", []):
            if mount["name"] not in volumes:
                problems.append(f"the volume mount {mount['name']!r} has no volume")
        if volumes.get("config", {}).get("configMap", {}).get("name") != config_map["metadata"]["name"]:
            problems.append("the config volume does not name the manifest's ConfigMap")
        config_mount = next((m["mountPath"] for m in container["volumeMounts"] if m["name"] == "config"), None)
        files = list(config_map.get("data", {}))
        if len(files) != 1 or f"{config_mount}/{files[0]}" not in command:
            problems.append(f"the command does not read the ConfigMap's experiment file {files}")

    for note in notes:
        print(f"k8s_manifest_check: note: {note}")
    if problems:
        for p in problems:
            print(f"k8s_manifest_check: {args.manifest}: {p}")
        return 1
    print(f"k8s_manifest_check: {args.manifest} is a valid ConfigMap and Indexed Job "
          f"(python3-kubernetes {kubernetes.__version__} models)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
