#!/usr/bin/env python3
"""Checks docs/schema/*.schema.json (the editor schemas of the contract and
scenario formats) against every bundled contract and scenario and every YAML
example in the docs, with the jsonschema package. Examples that are sections
or endpoints of a contract are checked inside a contract made around them,
as Tests/DoppelCoreTests/Loading/DocumentationExampleTests.swift does."""
import glob, json, os, re, sys

import jsonschema
import yaml

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
os.chdir(root)


class CoreLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """YAML as Doppel reads it (libyaml, as Doppel uses): dates and times stay strings; only true/false are booleans."""


CoreLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in ("tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:bool")]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
CoreLoader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))

contract_schema = json.load(open("docs/schema/contract.schema.json"))
scenario_schema = json.load(open("docs/schema/scenario.schema.json"))
jsonschema.Draft7Validator.check_schema(contract_schema)
jsonschema.Draft7Validator.check_schema(scenario_schema)
contract_validator = jsonschema.Draft7Validator(contract_schema)
scenario_validator = jsonschema.Draft7Validator(scenario_schema)
top_level = set(contract_schema["properties"])
failures = []
checked = 0


def check(document, place):
    global checked
    if not isinstance(document, dict):
        return
    validator = scenario_validator if "contract" in document else contract_validator
    checked += 1
    for error in sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path)):
        path = "/".join(str(p) for p in error.absolute_path)
        failures.append(f"{place}: {path or '(root)'}: {error.message[:300]}")


for path in sorted(glob.glob("contracts/*.yaml") + glob.glob("scenarios/*/*.yaml")):
    check(yaml.load(open(path, encoding="utf-8"), Loader=CoreLoader), path)

placeholder = {"docs-placeholder": {"request": "GET /docs-placeholder", "responses": [{"status": 200}]}}
for doc in sorted(glob.glob("docs/*.md")) + ["README.md"]:
    for match in re.finditer(r"^```yaml\n(.*?)^```$", open(doc, encoding="utf-8").read(), re.M | re.S):
        place = f"{doc}:{open(doc, encoding='utf-8').read()[:match.start()].count(chr(10)) + 2}"
        try:
            example = yaml.load(match.group(1), Loader=CoreLoader)
        except yaml.YAMLError:
            continue  # DocumentationExampleTests reports YAML that does not parse
        if not isinstance(example, dict) or not example:
            continue
        keys = set(example)
        if "doppel" in keys or "contract" in keys:
            check(example, place)
        elif keys <= top_level:
            check({"doppel": 1, **example, **({} if "endpoints" in keys else {"endpoints": placeholder})}, place)
        elif all(isinstance(value, dict) and "request" in value for value in example.values()):
            check({"doppel": 1, "endpoints": example}, place)

if failures:
    print("\n".join(failures), file=sys.stderr)
    sys.exit(f"{len(failures)} schema error(s) in {checked} documents")
print(f"docs/schema: {checked} contracts, scenarios and doc examples are valid")
