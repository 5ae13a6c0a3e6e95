"""What the Python MCP client's checks share: the tool names, the arguments a report kind's
input schema asks for, and the check itself."""

import datetime

import jsonschema

# The tools besides the 14 `audit_start_<kind>`.
PLAIN_TOOLS = [
    "whoami",
    "quota",
    "audit_status",
    "audit_read",
    "audit_delete",
    "events_read",
    "webhooks_list",
    "webhooks_show",
    "webhooks_register",
    "webhooks_enable",
    "webhooks_disable",
    "webhooks_delete",
    "search",
]

# What the kinds need besides their schema's required fields (the files report needs a folder
# or a file pattern: a rule of the reference that a JSON Schema does not say).
EXTRAS = {"files": {"folders": ["/Shared"]}}


def check(ok, what):
    if not ok:
        raise AssertionError(what)


def check_schemas(tools):
    """Every tool has an input and an output schema that are JSON Schemas, and annotations."""
    for tool in tools:
        check(tool.input_schema.get("type") == "object", f"{tool.name}: input type")
        jsonschema.Draft7Validator.check_schema(tool.input_schema)
        check(tool.output_schema is not None, f"{tool.name}: no output schema")
        jsonschema.Draft7Validator.check_schema(tool.output_schema)
        check("act_as" in tool.input_schema["properties"], f"{tool.name}: no act_as")
        notes = tool.annotations
        destructive = tool.name in ("audit_delete", "webhooks_delete")
        check(bool(notes.destructive_hint) == destructive, f"{tool.name}: destructive {notes}")


def report_window():
    """The last three whole UTC days."""
    today = datetime.datetime.now(datetime.timezone.utc).date()
    return str(today - datetime.timedelta(days=3)), str(today - datetime.timedelta(days=1))


def _resolve(schema, root):
    ref = schema.get("$ref")
    if ref:
        for part in ref.lstrip("#/").split("/"):
            root = root[part]
        return root
    return schema


def arguments_for(kind, schema, start, end):
    """The dates, each required filter with the first value its schema lists, and the extras."""
    arguments = {"date_start": start, "date_end": end}
    for name in schema.get("required", []):
        if name in arguments:
            continue
        prop = _resolve(schema["properties"][name], schema)
        if prop.get("type") == "array":
            item = _resolve(prop["items"], schema)
            arguments[name] = [item["enum"][0]] if "enum" in item else []
        elif "enum" in prop:
            arguments[name] = prop["enum"][0]
    arguments.update(EXTRAS.get(kind, {}))
    return arguments
