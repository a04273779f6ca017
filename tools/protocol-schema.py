#!/usr/bin/env python3
"""Writes schema/protocol.schema.json, the JSON Schema (draft-07, what taplo / Even Better TOML
read) of the referee's protocol format (docs/protocol.md). The schema is data kept in the repo;
this script is how it was written, so a change to the format is one edit here and a re-run:

    python3 tools/protocol-schema.py > schema/protocol.schema.json

tests/it/user_protocol.rs checks the embedded protocols and the examples against the result, and
that a misspelled key fails it.
"""
import json

def s(desc=None, **kw):
    d = {"type": "string", **kw}
    if desc: d["description"] = desc
    return d

def b(desc=None):
    d = {"type": "boolean"}
    if desc: d["description"] = desc
    return d

def i(desc=None, minimum=0, **kw):
    d = {"type": "integer", "minimum": minimum, **kw}
    if desc: d["description"] = desc
    return d

def n(desc=None, **kw):
    d = {"type": "number", **kw}
    if desc: d["description"] = desc
    return d

def arr(items, desc=None, **kw):
    d = {"type": "array", "items": items, **kw}
    if desc: d["description"] = desc
    return d

def obj(props, required=(), desc=None):
    d = {"type": "object", "properties": props, "additionalProperties": False}
    if required: d["required"] = list(required)
    if desc: d["description"] = desc
    return d

GLOB = {"$ref": "#/definitions/glob"}
GLOBS = {"$ref": "#/definitions/globs"}
PATTERN = {"$ref": "#/definitions/pattern"}
PRED = {"$ref": "#/definitions/predicate"}
TIME = {"$ref": "#/definitions/time_ref"}
STRINGS = arr({"type": "string"})
ONE_OR_MANY = {"anyOf": [{"type": "string"}, STRINGS]}
SIZE = {"anyOf": [{"type": "integer", "minimum": 0},
                  {"type": "string", "description": "A size with a unit (`200KiB`, `5MB`) or a `${var}`."}]}
ANY_VALUE = {"description": "A TOML value, compared with the JSON value (numbers as numbers)."}

predicates = {
    "all": arr(PRED, "Every part passes (the worst part decides).", minItems=1),
    "any": arr(PRED, "At least one part passes (else the mildest part decides).", minItems=1),
    "not": {**PRED, "description": "Passes when the inner predicate does not (something present and wrong still FAILs)."},
    "if": obj({"cond": PRED, "then": PRED, "else": PRED}, ["cond", "then"],
              "`then` when `cond` passes, else `else` (default: pass)."),
    "fail_if_missing": {**PRED, "description": "Missing inside counts as FAIL at once."},
    "always": b("`true` always passes; `false` never does."),
    "complete": b("The pipeline's verdict is a completing one (needs a `[verdict]` table)."),
    "verdict": obj({"files": GLOB, "is": STRINGS}, [],
                   "A verdict of the run is one of `is` (each `[verdict]` glob's verdict), or, with `files`, the verdict in those files can be read (a file there without one: INCONCLUSIVE). Needs a `[verdict]` table."),
    "exists": {**GLOBS, "description": "Every glob matches at least one file (a glob ending in `/`: a directory)."},
    "count": obj({"glob": GLOB, "min": i(), "max": i(),
                  "signature": s("Only files beginning with these bytes count: `png`, `jpeg`, `gif`, `webp`, `pdf`, or hex (`89 50 4E 47`).")},
                 ["glob"], "The number of regular files matching `glob` is within bounds."),
    "file_set": obj({"glob": GLOB, "key": PATTERN, "expect": STRINGS, "ignore_case": b()},
                    ["glob", "key", "expect"], "Files matching `glob` carry exactly the expected keys, each once."),
    "filled": {**ONE_OR_MANY, "description": "Every listed tracker field is present and non-empty."},
    "section_filled": obj({"section": s(), "exact": b()}, ["section"], "Every field row of a tracker section is non-empty."),
    "field_matches": obj({"fields": STRINGS, "pattern": PATTERN, "any": b()}, ["fields", "pattern"],
                         "Tracker field values match a pattern (all, or any with `any = true`)."),
    "column": obj({"section": s(), "column": s(), "pattern": PATTERN}, ["section", "column", "pattern"],
                  "Every filled cell of a tracker table column matches a pattern."),
    "has_time": {**TIME, "description": "A time reference resolves to at least one recorded time."},
    "time_order": obj({"chain": arr(TIME), "fields": STRINGS, "min_gap_seconds": {"type": "integer"},
                       "absent": s(enum=["missing", "inconclusive", "skip"]), "min_present": i()}, (),
                      "Times are in order (earliest first), optionally with a minimum gap."),
    "distinct": arr({"type": "string"}, "Tracker field values are pairwise different.", minItems=2),
    "dissimilar": obj({"files": arr(GLOB, minItems=2, maxItems=2), "threshold": n(minimum=0, maximum=1),
                       "if_absent": s(enum=["pass", "missing"])}, ["files", "threshold"],
                      "Two files are not near-identical (line similarity below `threshold`)."),
    "text": obj({"files": arr(GLOB), "fields": STRINGS, "extract": PATTERN, "min_chars": i(),
                 "require": obj({"patterns": arr(PATTERN), "terms": STRINGS, "at_least": i(minimum=1)}),
                 "forbid": arr(PATTERN), "forbid_terms": STRINGS}, (),
                "Text rules over files and/or tracker fields."),
    "heading": obj({"files": GLOB, "level": i(minimum=1, maximum=6), "text": s(), "last": b()},
                   ["files", "level", "text"], "Every matching file has the heading."),
    "json": obj({
        "file": GLOB,
        "path": s("A JSON pointer (RFC 6901): \"\" the whole document, \"/score\", \"/runs/0/name\"."),
        "exists": b("`true`: the value is there (the default without another test); `false`: it is not."),
        ">=": n(), "<=": n(), ">": n(), "<": n(),
        "==": ANY_VALUE, "!=": ANY_VALUE,
        "in": arr(ANY_VALUE, minItems=1),
        "matches": PATTERN,
    }, ["file"], "A value in every JSON file matching `file`, found by `path`, passes every test (strict JSON: a key written twice FAILs)."),
    "fill_rate": obj({"min": n(minimum=0, maximum=1)}, ["min"], "The tracker's fill rate is at least `min`."),
    "gate": obj({"files": GLOB, "id": s(), "result": s(), "require_result": b()}, ["files", "id"],
                "Gate results contain an entry (with an optional required result)."),
    "gate_files": obj({"files": GLOB, "min_files": i()}, ["files"], "Gate-results files exist and every one parses."),
    "gate_count": obj({"files": GLOB, "min": i()}, ["files", "min"], "At least `min` gate entries."),
    "gate_sources": obj({"files": GLOB, "forbid_contains": STRINGS, "forbid_equals": STRINGS}, ["files"],
                        "No gate entry has a forbidden source."),
    "paths_listed": obj({"section": s(), "column": s(), "skip": arr(GLOB)}, ["section", "column"],
                        "Every path listed in a tracker table column exists."),
    "task_record": b("The task record parses and has the required fields ([tasks] protocols)."),
    "unchanged": obj({"globs": arr(GLOB), "shadows": arr(obj({"ext": s(), "paths": STRINGS}, ["ext", "paths"]))},
                     ["globs"], "No path matching the globs changed against the baseline ([tasks] protocols)."),
    "changes_listed": b("Every change is listed in the task record, and every listed change happened."),
    "hashes_match": b("The record's pre/post hashes match."),
    "no_loss": b("No unlisted removal, no changed file emptied."),
    "parses": {"anyOf": [
        {"const": True},
        obj({"files": GLOBS,
             "commands": arr(obj({"ext": s(), "argv": arr({"type": "string"}, minItems=1),
                                  "timeout_seconds": i(minimum=1, maximum=600), "replaces_builtin": b()},
                                 ["ext", "argv"]))}),
    ], "description": "Files parse by their type: with `files`, every file matching them (any protocol); without, the files a task attempt changed ([tasks] protocols)."},
    "size_limit": obj({"by_extension": arr(obj({"ext": s(), "max": SIZE}, ["ext", "max"])), "default": SIZE},
                      ["default"], "Every changed file is within its size limit ([tasks] protocols)."),
    "added_lines": obj({"forbid": arr(obj({"name": s(), "pattern": PATTERN}, ["name", "pattern"])),
                        "forbid_patterns": arr(PATTERN, "More forbidden patterns, each reported as itself (`[\"${forbid}\"]`)."),
                        "secrets": s("`embedded` or an absolute path.")}, (),
                       "No added line matches a forbidden pattern or secret rule ([tasks] protocols)."),
    "record_field": obj({"field": s(), "pattern": PATTERN}, ["field", "pattern"], "A task record field matches a pattern."),
    "style": obj({"final_newline": b(), "trailing_whitespace": b()}, (), "Changed text files end with a newline / add no trailing whitespace."),
    "weakened": {"const": True, "description": "No test removed or skipped, no assertion removed, no coverage, lint, type-check or CI gate relaxed against the baseline, unless the record gives a reason for the path in `weakened` (CC-10)."},
}

time_refs = {
    "field": s("A tracker field whose value is a timestamp."),
    "field_time": s("The time cell of a tracker field row."),
    "column": obj({"section": s(), "column": s()}, ["section", "column"]),
    "mtime": GLOB,
    "first_of": arr(TIME, minItems=1),
    "earliest": TIME,
    "latest": TIME,
}

STATUS = s(enum=["PASS", "FAIL", "WAITING", "SKIP", "INCONCLUSIVE"])

schema = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "referee protocol",
    "description": "A referee protocol file (docs/protocol.md): passes, checks and their predicates.",
    "type": "object",
    "additionalProperties": False,
    "required": ["schema_version", "id", "version", "title", "pass", "check"],
    "properties": {
        "schema_version": {"const": 1, "description": "The protocol format's version: 1."},
        "id": s("The protocol's id (shown in reports)."),
        "version": s("The protocol's own version."),
        "title": s(),
        "description": s(),
        "globs": obj({"variant_marker": s("A glob that does not contain it never matches a name that does.")}),
        "verdict": obj({"files": arr(GLOB, minItems=1), "pattern": PATTERN, "complete": STRINGS},
                       ["files", "pattern", "complete"],
                       "How the pipeline's verdict is read; optional (without it the run completes at `--final`, `--exit-with` or `--timeout`)."),
        "tasks": obj({"judge_status": STRINGS, "required": STRINGS}, ["judge_status", "required"],
                     "Task records (`.tasks/*.json`) judged one by one."),
        "grade": arr(obj({"verdict": s(), "when": arr(obj({"severity": {"$ref": "#/definitions/severity"},
                                                             "status": arr(STATUS)}, ["severity", "status"])),
                          "cleanup": b(), "restore": b(),
                          "outcome": s("What the verdict means: `pass` and `cleanup` let the attempt through (exit 0), `reject` exits 1. Default: `cleanup` with `cleanup = true`, `pass` when a `guards.final_verdicts` name, else `reject`.",
                                       enum=["pass", "cleanup", "reject"])}, ["verdict"])),
        "guards": obj({"final_verdicts": STRINGS, "reject": s(), "max_rejects": i(minimum=1),
                       "identical_diff": b(), "convergence_from_attempt": i(),
                       "convergence_ratio": n(minimum=0, maximum=1),
                       "escalate": s("The verdict the guards give when rejections or a diff repeat (default `ESCALATE`); exits 1."),
                       "escalate_convergence": s("The verdict the convergence guard gives (default `ESCALATE_CONVERGENCE`); exits 1.")},
                      ["reject", "max_rejects", "convergence_from_attempt", "convergence_ratio"]),
        "vars": {"type": "object", "description": "Variant tables: `[vars.main]` and others a pass names.",
                 "additionalProperties": {"type": "object", "additionalProperties": ONE_OR_MANY}},
        "pass": arr(obj({"id": s(), "title": s(), "optional": b(), "vars": s(), "for_each": s(enum=["task"]),
                         "trigger": PRED, "deadline": PRED, "checks": STRINGS,
                         "repeat": arr(obj({"passes": STRINGS, "vars": s()}, ["passes", "vars"]))},
                        ["id", "title", "trigger", "checks"]), minItems=1),
        "check": arr(obj({"id": s(), "severity": {"anyOf": [
                              {"$ref": "#/definitions/severity"},
                              s("A `${var}` of [vars.main] holding blocking, significant or off (off: the check is SKIP).",
                                pattern="^\\$\\{[A-Za-z0-9_]+\\}$")]}, "title": s(),
                          "description": s(), "action": s(), "recommendation": s(),
                          "missing": s(enum=["fail", "inconclusive"]), "tag": s(), "veto": b(),
                          "deadline": PRED, "when": PRED, "predicate": PRED},
                         ["id", "severity", "title", "description", "action", "recommendation", "predicate"])),
    },
    "definitions": {
        "glob": s("A glob relative to the build directory; `/` at the end names directories."),
        "globs": {"anyOf": [GLOB, arr(GLOB)]},
        "pattern": s("A regular expression (Rust regex syntax, multi-line mode, matched on bytes)."),
        "severity": s(enum=["blocking", "significant"]),
        "predicate": {"type": "object", "minProperties": 1, "maxProperties": 1,
                      "additionalProperties": False, "properties": predicates},
        "time_ref": {"type": "object", "minProperties": 1, "maxProperties": 1,
                     "additionalProperties": False, "properties": time_refs},
    },
}
print(json.dumps(schema, indent=2))
