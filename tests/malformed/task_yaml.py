"""Task YAML files: encoding, YAML itself (syntax, duplicates, aliases, depth, size) and the task schema.

Most cases run ``harness validate {tmp}/task.yaml``; the ones marked ``run`` give the file to ``harness run --tasks``
(both read it through ``harness.task_config``).
"""

from __future__ import annotations

from tests.malformed.case import FIXTURES, Case, make_dir, write_bytes, yaml_text

#: A valid task file (Provo, sample_words), field by field; cases change one field.
GOOD = {
    "task": "toy",
    "version": "1",
    "loader": "provo",
    "data": "{path: provo}",
    "request": "sample_words",
    "params": "{n_samples: 10}",
    "scorers": "[tvd]",
}
GENERATE = {
    **GOOD,
    "loader": "asset",
    "data": "{path: asset, split: valid}",
    "request": "generate",
    "params": "{n_samples: 2, max_new_tokens: 8}",
    "scorers": "[lexical]",
}
CHOICE = {
    **GOOD,
    "loader": "pragmatics_mcq",
    "data": "{path: pragmatics-mcq}",
    "request": "multiple_choice",
    "params": "{option_orders: 2}",
    "scorers": "[mcq_human]",
}
VALIDATE = ("validate", "{tmp}/task.yaml")
RUN = (
    "run",
    "--tasks",
    "{tmp}/task.yaml",
    "--model",
    "mock:t",
    "--data-dir",
    str(FIXTURES),
    "--output-dir",
    "{tmp}/out",
)

BILLION_LAUGHS = """task: toy
version: 1
loader: provo
request: sample_words
scorers: [tvd]
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
params: {n_samples: *i}
"""


def task(**changes: str | None) -> dict[str, bytes | str]:
    """``task.yaml``: ``GOOD`` with fields changed (a value of None drops the field)."""
    fields = {k: v for k, v in {**GOOD, **changes}.items() if v is not None}
    return {"task.yaml": yaml_text(fields)}


def generate(**changes: str) -> dict[str, bytes | str]:
    return {"task.yaml": yaml_text({**GENERATE, **changes})}


def choice(**changes: str) -> dict[str, bytes | str]:
    return {"task.yaml": yaml_text({**CHOICE, **changes})}


def raw(text: str | bytes) -> dict[str, bytes | str]:
    return {"task.yaml": text}


def schema(case_id: str, expect: str, **changes: str | None) -> Case:
    return Case(case_id, VALIDATE, expect, task(**changes))


GOOD_TEXT = yaml_text(GOOD)

CASES: list[Case] = [
    # ----------------------------------------------------------------------------------------------- encoding
    Case(
        "yaml-not-utf8",
        VALIDATE,
        "task.yaml: field '<file>': line 3: not valid UTF-8 (invalid start byte at byte offset",
        raw(GOOD_TEXT.encode().replace(b"loader: provo", b"loader: pr\xffvo")),
    ),
    Case(
        "yaml-not-utf8-run",
        RUN,
        "line 3: not valid UTF-8",
        raw(GOOD_TEXT.encode().replace(b"loader: provo", b"loader: pr\xe9vo")),
    ),
    Case("yaml-utf16", VALIDATE, "not valid UTF-8", raw(GOOD_TEXT.encode("utf-16"))),
    Case("yaml-latin1-comment", VALIDATE, "line 1: not valid UTF-8", raw(b"# caf\xe9\n" + GOOD_TEXT.encode())),
    Case(
        "yaml-nul-byte",
        VALIDATE,
        "line 2: NUL byte at byte offset",
        raw(GOOD_TEXT.replace("version: 1", "version: 1\0")),
    ),
    Case("yaml-binary", VALIDATE, "task.yaml", raw(bytes(range(256)) * 4)),
    # ------------------------------------------------------------------------------------------ YAML itself
    Case(
        "yaml-duplicate-key-top",
        VALIDATE,
        "duplicate key 'loader' (lines 3 and 8",
        raw(GOOD_TEXT + "loader: asset\n"),
    ),
    Case(
        "yaml-duplicate-key-run",
        RUN,
        "duplicate key 'params' (lines 6 and 8",
        raw(GOOD_TEXT + "params: {n_samples: 20}\n"),
    ),
    Case(
        "yaml-duplicate-key-nested",
        VALIDATE,
        "duplicate key 'n_samples' (lines 8 and 9",
        raw(
            yaml_text({k: v for k, v in GOOD.items() if k != "params"}) + "params:\n  n_samples: 10\n  n_samples: 20\n"
        ),
    ),
    Case(
        "yaml-duplicate-key-flow",
        VALIDATE,
        "duplicate key 'n_samples' (lines 6 and 6",
        task(params="{n_samples: 10, n_samples: 20}"),
    ),
    Case(
        "yaml-duplicate-key-deep",
        VALIDATE,
        "duplicate key 'n_bins' (lines 11 and 12",
        raw(
            yaml_text({k: v for k, v in GOOD.items() if k != "scorers"})
            + "scorers:\n  - tvd\n  - name: ece\n    args:\n      n_bins: 5\n      n_bins: 15\n"
        ),
    ),
    Case("yaml-duplicate-key-numeric", VALIDATE, "duplicate key 1 (lines 8 and 9", raw(GOOD_TEXT + "1: a\n1: b\n")),
    Case("yaml-alias-bomb", VALIDATE, "alias *a is not allowed", raw(BILLION_LAUGHS), protect=("task.yaml",)),
    Case("yaml-alias-bomb-run", RUN, "alias *a is not allowed", raw(BILLION_LAUGHS)),
    Case(
        "yaml-alias-simple",
        VALIDATE,
        "at line 8, column 9: alias *p is not allowed",
        raw(yaml_text({k: v for k, v in GOOD.items() if k != "params"}) + "tags: &p [a]\nparams: *p\n"),
    ),
    Case(
        "yaml-deep-flow-nesting", VALIDATE, "nested more than 64 levels deep", raw("task: " + "[" * 5000 + "]" * 5000)
    ),
    Case(
        "yaml-deep-flow-nesting-run",
        RUN,
        "nested more than 64 levels deep",
        raw("params: " + "{a: " * 3000 + "}" * 3000),
    ),
    Case(
        "yaml-deep-block-nesting",
        VALIDATE,
        "nested more than 64 levels deep",
        raw("".join(f"{'  ' * k}k{k}:\n" for k in range(200)) + "  " * 200 + "v\n"),
    ),
    Case(
        "yaml-not-mapping-list",
        VALIDATE,
        "field '<document>': a mapping of task fields, got ['a', 'b'] (list)",
        raw("- a\n- b\n"),
    ),
    Case("yaml-not-mapping-scalar", VALIDATE, "a mapping of task fields, got 'hello' (str)", raw("hello\n")),
    Case("yaml-not-mapping-run", RUN, "a mapping of task fields", raw("[1, 2, 3]\n")),
    Case("yaml-empty-file", VALIDATE, "a mapping of task fields, got an empty file", raw("")),
    Case(
        "yaml-only-comments",
        VALIDATE,
        "a mapping of task fields, got an empty document",
        raw("# a task, one day\n\n   \n"),
    ),
    Case("yaml-null-document", VALIDATE, "a mapping of task fields, got an empty document", raw("~\n")),
    Case(
        "yaml-tab-indent",
        VALIDATE,
        "at line 3, column 1: while scanning for the next token, found character '\\t' that cannot",
        raw("task: toy\nversion: 1\n\tloader: provo\n"),
    ),
    Case("yaml-syntax-unclosed-flow", VALIDATE, "valid YAML (safe subset) at line 3", raw("task: toy\nversion: [1\n")),
    Case("yaml-syntax-unclosed-quote", VALIDATE, "valid YAML (safe subset) at line", raw('task: "toy\nversion: 1\n')),
    Case(
        "yaml-syntax-bad-indent",
        VALIDATE,
        "at line 2, column 10: mapping values are not allowed here",
        raw("task: toy\n  version: 1\n"),
    ),
    Case(
        "yaml-python-tag",
        VALIDATE,
        "could not determine a constructor for the tag",
        raw("task: !!python/object/apply:os.system ['echo pwned']\nversion: 1\n"),
    ),
    Case(
        "yaml-custom-tag",
        VALIDATE,
        "could not determine a constructor for the tag '!include'",
        raw("task: !include other.yaml\n"),
    ),
    Case(
        "yaml-two-documents",
        VALIDATE,
        "expected a single document in the stream, but found another document",
        raw(GOOD_TEXT + "---\n" + GOOD_TEXT),
    ),
    Case("yaml-unhashable-key", VALIDATE, "found unhashable key", raw(GOOD_TEXT + "[a, b]: 1\n")),
    Case(
        "yaml-is-folder",
        ("validate", "{tmp}/dir.yaml"),
        "dir.yaml: field '<file>': is a folder, expected a task file",
        prepare=make_dir("dir.yaml"),
    ),
    Case(
        "yaml-is-folder-run",
        ("run", "--tasks", "{tmp}/dir.yaml", "--human-only", "--output-dir", "{tmp}/out"),
        "dir.yaml",
        prepare=make_dir("dir.yaml"),
    ),
    Case(
        "yaml-missing-file",
        ("validate", "{tmp}/missing.yaml"),
        "missing.yaml: field '<file>': cannot read the task file (No such file or directory)",
    ),
    Case(
        "yaml-missing-file-run",
        ("run", "--tasks", "{tmp}/missing.yaml", "--human-only", "--output-dir", "{tmp}/out"),
        "missing.yaml does not exist",
    ),
    Case(
        "yaml-huge-file",
        VALIDATE,
        "more than a task file may hold",
        prepare=write_bytes("task.yaml", GOOD_TEXT + "#" * (2 << 20) + "\n"),
    ),
    Case("yaml-huge-value", VALIDATE, "field 'task': a lower-case name", task(task="a" * 500_000 + " b")),
    # ------------------------------------------------------------------------------------------ top-level fields
    schema("field-unknown", "field 'extra': no such field; allowed fields are task, version", extra="1"),
    schema("field-unknown-typo", "field 'scorer': no such field", scorer="[tvd]"),
    Case("field-unknown-huge-key", VALIDATE, "no such field", raw(GOOD_TEXT + "? " + "k" * 100_000 + "\n: 1\n")),
    schema("field-missing-task", "field 'task': a value (this field is required)", task=None),
    schema("field-missing-version", "field 'version': a value (this field is required)", version=None),
    schema("field-missing-loader", "field 'loader': a value (this field is required)", loader=None),
    schema("field-missing-request", "field 'request': a value (this field is required)", request=None),
    schema("field-missing-scorers", "field 'scorers': a value (this field is required)", scorers=None),
    schema("task-name-spaces", "field 'task': a lower-case name", task="Bad Name"),
    schema("task-name-number", "field 'task': a lower-case name matching", task="5"),
    schema("task-name-list", "field 'task': a lower-case name", task="[a]"),
    schema("version-string", "field 'version': a non-negative integer", version="one"),
    schema("version-negative", "field 'version': a non-negative integer", version="-1"),
    schema("version-huge", "at most 1000000", version="99999999999999999999999999"),
    schema("version-float", "field 'version': a non-negative integer", version="1.5"),
    schema("version-bool", "field 'version': a non-negative integer", version="true"),
    schema("loader-list", "field 'loader': a string", loader="[provo]"),
    schema("loader-unknown", "field 'loader': a registered data loader", loader="nope"),
    schema("loader-huge-name", "field 'loader': a loader name (at most 100 characters)", loader="x" * 100_000),
    schema("request-unknown", "field 'request': one of sample_words", request="translate"),
    schema("request-list", "field 'request': one of", request="[sample_words]"),
    schema("request-not-task-kind", "field 'request': one of", request="loglikelihood"),
    schema("description-list", "field 'description': a string", description="[a, b]"),
    schema("tags-string", "field 'tags': a list of strings", tags="cloze"),
    schema("tags-numbers", "field 'tags': a list of strings", tags="[1, 2]"),
    schema("data-list", "field 'data': a mapping of loader options", data="[1]"),
    schema("data-empty-list", "field 'data': a mapping of loader options, got []", data="[]"),
    schema("data-number", "field 'data': a mapping of loader options, got 0", data="0"),
    schema("data-non-string-key", "field 'data.1': an option name", data="{1: x}"),
    schema("data-unknown-option", "field 'data': loader 'provo': unknown option 'pth'", data="{pth: provo}"),
    schema("data-bad-option-value", "option 'format': expected one of", data="{format: xml}"),
    # ---------------------------------------------------------------------------------------------- params
    schema("params-list", "field 'params': a mapping of request parameters", params="[1]"),
    schema("params-empty-list", "field 'params': a mapping of request parameters, got []", params="[]"),
    schema("params-unknown", "field 'params.top_k': no such parameter; known: n_samples", params="{top_k: 5}"),
    schema("params-n-samples-zero", "field 'params.n_samples': a positive integer, got 0", params="{n_samples: 0}"),
    schema(
        "params-n-samples-negative", "field 'params.n_samples': a positive integer, got -5", params="{n_samples: -5}"
    ),
    schema(
        "params-n-samples-huge",
        "field 'params.n_samples': a positive integer <= 1000000, got 1e+20",
        params="{n_samples: 1.0e+20}",
    ),
    schema(
        "params-n-samples-huge-int",
        "at line 6, column 21: an integer of 5000 characters is too long",
        params="{n_samples: " + "9" * 5000 + "}",
    ),
    schema(
        "params-n-samples-fraction", "field 'params.n_samples': a positive integer, got 1.5", params="{n_samples: 1.5}"
    ),
    schema(
        "params-n-samples-bool",
        "field 'params.n_samples': a positive integer, got True (bool)",
        params="{n_samples: true}",
    ),
    schema("params-n-samples-nan", "field 'params.n_samples'", params="{n_samples: .nan}"),
    schema("params-n-samples-inf", "field 'params.n_samples'", params="{n_samples: .inf}"),
    schema("params-n-samples-list", "field 'params.n_samples': a positive integer, got [1]", params="{n_samples: [1]}"),
    schema(
        "params-temperature-tiny",
        "lower ones only overflow the logits; greedy decoding is the generate setting top_k=1",
        params="{temperature: 1.0e-300}",
    ),
    schema("params-temperature-zero", "field 'params.temperature': a positive number", params="{temperature: 0}"),
    schema("params-temperature-negative", "field 'params.temperature': a positive number", params="{temperature: -1}"),
    schema("params-temperature-huge", "from 0.01 to 100, got 1e+300", params="{temperature: 1.0e+300}"),
    schema("params-temperature-nan", "field 'params.temperature'", params="{temperature: .nan}"),
    schema("params-temperature-string", "field 'params.temperature': a positive number", params="{temperature: hot}"),
    schema("params-mode-bad", "field 'params.mode': one of 'exact', 'paper'", params="{mode: greedy}"),
    schema(
        "params-max-new-tokens-huge",
        "field 'params.max_new_tokens': a positive integer <= 1024",
        params="{max_new_tokens: 1000000000}",
    ),
    Case(
        "generate-max-new-tokens-huge",
        VALIDATE,
        "field 'params.max_new_tokens': a positive integer <= 100000",
        generate(params="{max_new_tokens: 1000000000}"),
    ),
    Case(
        "generate-n-samples-zero",
        VALIDATE,
        "field 'params.n_samples': a positive integer",
        generate(params="{n_samples: 0}"),
    ),
    Case("generate-decoding-unknown", VALIDATE, "field 'params.decoding'", generate(params="{decoding: [beam=4]}")),
    Case(
        "generate-decoding-temperature-tiny",
        VALIDATE,
        "greedy decoding is the generate setting top_k=1",
        generate(params="{decoding: ['temperature=1e-300']}"),
    ),
    Case(
        "generate-decoding-temperature-zero",
        VALIDATE,
        "temperature must be > 0",
        generate(params="{decoding: ['temperature=0']}"),
    ),
    Case(
        "generate-decoding-temperature-inf",
        VALIDATE,
        "field 'params.decoding'",
        generate(params="{decoding: ['temperature=inf']}"),
    ),
    Case("generate-decoding-top-p", VALIDATE, "top_p must be in (0, 1]", generate(params="{decoding: ['top_p=1.5']}")),
    Case(
        "generate-decoding-top-p-nan", VALIDATE, "top_p must be in (0, 1]", generate(params="{decoding: ['top_p=nan']}")
    ),
    Case(
        "generate-decoding-top-k-negative",
        VALIDATE,
        "top_k must be from 0 to 1000000",
        generate(params="{decoding: ['top_k=-1']}"),
    ),
    Case(
        "generate-decoding-top-k-huge",
        VALIDATE,
        "top_k must be from 0 to 1000000",
        generate(params="{decoding: ['top_k=99999999999999999999']}"),
    ),
    Case(
        "generate-decoding-top-k-fraction",
        VALIDATE,
        "is not a number (an integer)",
        generate(params="{decoding: ['top_k=1.5']}"),
    ),
    Case(
        "generate-decoding-typical-zero",
        VALIDATE,
        "typical_p must be in (0, 1]",
        generate(params="{decoding: ['typical_p=0']}"),
    ),
    Case(
        "generate-decoding-twice", VALIDATE, "given twice", generate(params="{decoding: [ancestral, 'temperature=1']}")
    ),
    Case("generate-decoding-empty", VALIDATE, "field 'params.decoding'", generate(params="{decoding: []}")),
    Case(
        "generate-decoding-too-many",
        VALIDATE,
        "at most 64 decoding settings",
        generate(params="{decoding: [" + ", ".join(f"'top_k={k}'" for k in range(1, 101)) + "]}"),
    ),
    Case(
        "generate-decoding-mapping", VALIDATE, "field 'params.decoding'", generate(params="{decoding: [{top_p: 0.9}]}")
    ),
    Case(
        "generate-stop-string",
        VALIDATE,
        "field 'params.stop': a list of non-empty strings",
        generate(params="{stop: '\\n'}"),
    ),
    Case(
        "generate-stop-empty",
        VALIDATE,
        "field 'params.stop': a list of non-empty strings",
        generate(params="{stop: ['']}"),
    ),
    Case(
        "generate-template-unknown-field",
        VALIDATE,
        "field 'params.prompt_template'",
        generate(params="{prompt_template: 'Translate {sorce}'}"),
    ),
    Case(
        "generate-template-positional",
        VALIDATE,
        "field 'params.prompt_template'",
        generate(params="{prompt_template: 'x {0}'}"),
    ),
    Case(
        "generate-template-unbalanced",
        VALIDATE,
        "field 'params.prompt_template'",
        generate(params="{prompt_template: 'x {source'}"),
    ),
    Case(
        "generate-template-attribute",
        VALIDATE,
        "field 'params.prompt_template'",
        generate(params="{prompt_template: '{source.__class__}'}"),
    ),
    Case("generate-chat-not-bool", VALIDATE, "field 'params.chat': true or false", generate(params="{chat: maybe}")),
    Case(
        "choice-option-orders-zero",
        VALIDATE,
        "field 'params.option_orders': a positive integer",
        choice(params="{option_orders: 0}"),
    ),
    Case(
        "choice-option-orders-huge",
        VALIDATE,
        "field 'params.option_orders': a positive integer <= 1000",
        choice(params="{option_orders: 1000000}"),
    ),
    Case(
        "choice-label-style",
        VALIDATE,
        "field 'params.label_style': one of 'numbers', 'letters'",
        choice(params="{label_style: roman}"),
    ),
    Case("choice-order-seed", VALIDATE, "field 'params.order_seed': an integer", choice(params="{order_seed: abc}")),
    # ---------------------------------------------------------------------------------------------- scorers
    schema("scorers-string", "field 'scorers': a non-empty list", scorers="tvd"),
    schema("scorers-empty", "field 'scorers': a non-empty list", scorers="[]"),
    schema("scorers-number-entry", "field 'scorers[0]': a scorer name or a mapping", scorers="[5]"),
    schema("scorers-no-name", "field 'scorers[0]': a scorer name or a mapping with 'name'", scorers="[{args: {}}]"),
    schema("scorers-extra-field", "field 'scorers[0].weight': no such field", scorers="[{name: tvd, weight: 2}]"),
    schema("scorers-args-list", "field 'scorers[0].args': a mapping", scorers="[{name: ece, args: [1]}]"),
    schema(
        "scorers-args-non-string-key",
        "field 'scorers[0].args.1': an argument name",
        scorers="[{name: ece, args: {1: 2}}]",
    ),
    schema("scorers-twice", "'tvd' is listed twice", scorers="[tvd, tvd]"),
    schema("scorers-unknown", "field 'scorers[0]': a registered scorer for", scorers="[nope]"),
    schema(
        "scorers-huge-name", "field 'scorers[1]': a scorer name (at most 100", scorers="[tvd, " + "y" * 100_000 + "]"
    ),
    schema("scorers-wrong-kind", "field 'scorers[0]': a scorer for 'sample_words' requests", scorers="[lexical]"),
    schema("scorers-unknown-arg", "field 'scorers[0].args'", scorers="[{name: ece, args: {bogus: 1}}]"),
    schema(
        "scorers-bad-arg",
        "argument 'n_bins': expected a positive integer, got 0",
        scorers="[{name: ece, args: {n_bins: 0}}]",
    ),
    schema(
        "scorers-huge-arg",
        "argument 'n_bins': expected a positive integer <= 1000000",
        scorers="[{name: ece, args: {n_bins: 1.0e+20}}]",
    ),
    Case("scorers-unknown-run", RUN, "field 'scorers[0]': a registered scorer for", task(scorers="[nope]")),
]
