"""The public plugin API: everything a plugin author needs, importable from one module.

A plugin should import from here and nowhere else in the harness, so that the modules behind it can move without
breaking plugins::

    from harness.api import hookimpl, ArgsScorer, Metric, Option, Options, positive_int, mean_metric

What each name is for:

- hooks: ``hookimpl`` marks a hook implementation; ``Register*`` are the types of each hook's ``register``
  callback (see ``harness.hookspecs`` and ``docs/plugins.md``);
- request kinds: ``RequestKind`` (subclass it to add a kind), ``Need``, and the built-in request and response types;
- model adapters: ``ModelAdapter``, ``ModelSpec``, and ``TokenLevelModel``, the optional token-level capability
  (a text as the model's tokens, next-token log-probabilities) the next-token games of ``harness collect`` use;
- scorers: ``Scorer``, ``ArgsScorer`` (a scorer whose ``options`` are checked), ``Metric``, ``ScorerUnavailable``,
  ``BOOTSTRAP_OPTIONS``, ``mean_metric`` / ``bootstrap_metric`` for confidence intervals, ``metric_rngs`` for one
  random stream per metric (``metric_rngs(rng)`` returns a function; call it with a metric's name), ``split_half``
  for a split-half human control (one random split of an instance's references into two halves),
  ``split_spread`` (the spread of a metric over its splits); for metrics over people's counts,
  ``counts_known`` / ``require_counted_people`` / ``counted_people_reason`` and ``PROPORTIONS_NOTE``;
- multiple-choice prompts (one prompt structure per item, shared by every way of asking): ``render_choice_prompt``,
  ``render_rating_prompt``, ``option_labels``, ``option_order``;
- sentence embeddings: ``sentence_encoders`` (sentence-transformers models loaded once per process and device,
  shared by every scorer and classifier: ``load``, ``encode``, ``resolve_device``);
- answer classifiers: ``AnswerClassifier``, ``ClassifyItem``, ``Classification``, and ``find_classifier`` (the
  classifier registered under a name, for a scorer whose argument names one);
- data loaders: ``LoadedData``, ``Loader``, ``takes_options``, ``hash_files``, ``downloads_allowed``,
  ``resolve_data_paths`` (a data path option read as the generic loaders read it: under the data root, ``task:``
  beside the task file, ``package:`` in an installed package), ``resolve_data_file`` (one such file),
  ``resolve_data_dir`` (the data root and how it was chosen) and the instance types ``Instance``,
  ``ClozeInstance``, ``GenerationInstance``, ``ChoiceInstance``;
- reading files so that every failure is one line naming the file: ``read_bytes``, ``read_utf8``, ``decode_utf8``,
  ``read_json``, ``read_jsonl``, ``check_no_nul``, ``unique_keys`` / ``DuplicateKeyError`` (JSON objects with a
  repeated key refused), ``load_yaml`` and ``yaml_problem`` (YAML read safely, its error as one line);
- a crash-safe cache of an API's responses: ``ResponseStore`` (one fsynced JSON line per record, the format of a
  run's own store, so ``harness store check|repair`` reads it);
- data sets (``harness data``): ``DataSet``, ``DataFile``;
- words: ``rule_word`` (a task's word rule, ``exact``, ``whole`` or ``paper``, with a segmenter: every word an
  adapter returns must already be written by it), ``human_word`` (the same rule on a person's response: what the
  next-word kinds apply to every loader's instances), ``normalise_word`` (``exact`` with ``spaces``), ``SEGMENTERS``
  and ``PAPER_FAILURE``; for an adapter that samples words itself, the rule's steps: ``decide_word``,
  ``decide_and_close``, ``word_a_space_closes``, ``Outcome``, ``WORD_MODES``, ``strip_punctuation``; for words in
  a model's reply: ``first_word_of_reply``, ``final_word``, ``parse_word_list``, ``recorded_word``;
- requests: ``add_usage`` (API usage totals added up), ``TOP_TOKENS``;
- options: ``Option``, ``Options``, ``OptionError`` and the converters (one grammar for booleans and numbers);
- errors: ``HarnessError`` (shown to the user as one line), ``TaskConfigError``, ``DataNotFoundError``,
  ``ModelLoadError``, and the helpers that keep a message on one line: ``one_line``, ``shorten``, ``shorten_repr``;
- progress: ``progress_enabled`` (whether a bar or log lines are wanted);
- extras (optional parts of the harness, ``docs/plugins.md``, "Optional dependencies"): ``require_extras`` and
  ``MissingExtraError``, for a plugin that checks one itself.
"""

from __future__ import annotations

from harness.data.loaders import LoadedData, Loader, downloads_allowed, hash_files, resolve_data_dir, takes_options
from harness.data.paths import resolve_data_file, resolve_data_paths
from harness.data.sets import DataFile, DataSet
from harness.errors import (
    DataNotFoundError,
    HarnessError,
    ModelLoadError,
    TaskConfigError,
    one_line,
    shorten,
    shorten_repr,
)
from harness.extras import MissingExtraError, require_extras
from harness.files import (
    DuplicateKeyError,
    check_no_nul,
    decode_utf8,
    read_bytes,
    read_json,
    read_jsonl,
    read_utf8,
    unique_keys,
)
from harness.hookspecs import (
    RegisterClassifier,
    RegisterLoader,
    RegisterModel,
    RegisterRequestKind,
    RegisterScorer,
    RegisterTask,
    hookimpl,
)
from harness.instances import ChoiceInstance, ClozeInstance, GenerationInstance, Instance
from harness.kinds.base import Need, RequestKind
from harness.models import ModelAdapter, ModelSpec, TokenLevelModel
from harness.options import (
    Option,
    OptionError,
    Options,
    boolean,
    int_range,
    integer,
    non_negative_float,
    non_negative_int,
    number,
    number_range,
    one_of,
    open_unit_float,
    optional,
    or_auto,
    positive_float,
    positive_int,
    positive_number,
    text,
)
from harness.outputs.store import ResponseStore
from harness.progress import progress_enabled
from harness.prompts.choice import option_labels, option_order, render_choice_prompt, render_rating_prompt
from harness.requests import (
    DecodingConfig,
    GenerateRequest,
    GenerateResponse,
    LoglikelihoodRequest,
    LoglikelihoodResponse,
    MultipleChoiceRequest,
    MultipleChoiceResponse,
    NextTokenRequest,
    NextTokenResponse,
    OptionProbsRequest,
    OptionProbsResponse,
    SampleWordsRequest,
    SampleWordsResponse,
    ScoringRequest,
    ScoringResponse,
    SimilarityRequest,
    SimilarityResponse,
    Surface,
    WordDistributionRequest,
    WordDistributionResponse,
    add_usage,
)
from harness.requests.word_distribution import TOP_TOKENS
from harness.scoring import sentence_encoders
from harness.scoring.args import BOOTSTRAP_OPTIONS, ArgsScorer
from harness.scoring.base import (
    PROPORTIONS_NOTE,
    Metric,
    Scorer,
    ScorerUnavailable,
    counted_people_reason,
    counts_known,
    require_counted_people,
)
from harness.scoring.classifiers import AnswerClassifier, Classification, ClassifyItem
from harness.scoring.stats import bootstrap_metric, mean_metric, split_half, split_spread
from harness.seeding import derive_rng, derive_seed, metric_rngs
from harness.task_config import load_yaml, yaml_problem
from harness.words.replies import final_word, first_word_of_reply, parse_word_list, recorded_word
from harness.words.rules import (
    PAPER_FAILURE,
    WORD_MODES,
    Outcome,
    decide_and_close,
    decide_word,
    human_word,
    normalise_word,
    rule_word,
    strip_punctuation,
    word_a_space_closes,
)
from harness.words.segmenters import SEGMENTERS


def find_classifier(name: str) -> type[AnswerClassifier]:
    """The answer classifier registered under ``name`` (built in or a plugin's): for a scorer whose argument names
    one. An unknown name is a one-line error listing the registered classifiers."""
    from harness.registry.manager import get_registry

    return get_registry().classifier(name)


__all__ = [
    "BOOTSTRAP_OPTIONS",
    "AnswerClassifier",
    "ArgsScorer",
    "ChoiceInstance",
    "Classification",
    "ClassifyItem",
    "ClozeInstance",
    "DataFile",
    "DataNotFoundError",
    "DataSet",
    "DecodingConfig",
    "GenerateRequest",
    "GenerateResponse",
    "GenerationInstance",
    "HarnessError",
    "MissingExtraError",
    "Instance",
    "LoadedData",
    "Loader",
    "LoglikelihoodRequest",
    "LoglikelihoodResponse",
    "Metric",
    "ModelAdapter",
    "ModelLoadError",
    "ModelSpec",
    "MultipleChoiceRequest",
    "MultipleChoiceResponse",
    "Need",
    "NextTokenRequest",
    "NextTokenResponse",
    "OptionProbsRequest",
    "OptionProbsResponse",
    "Option",
    "OptionError",
    "PAPER_FAILURE",
    "Options",
    "RegisterClassifier",
    "RegisterLoader",
    "RegisterModel",
    "RegisterRequestKind",
    "RegisterScorer",
    "RegisterTask",
    "RequestKind",
    "SampleWordsRequest",
    "SampleWordsResponse",
    "Scorer",
    "ScorerUnavailable",
    "ScoringRequest",
    "ScoringResponse",
    "SimilarityRequest",
    "SimilarityResponse",
    "Surface",
    "TaskConfigError",
    "TokenLevelModel",
    "WordDistributionRequest",
    "WordDistributionResponse",
    "boolean",
    "bootstrap_metric",
    "derive_rng",
    "derive_seed",
    "downloads_allowed",
    "hash_files",
    "resolve_data_paths",
    "hookimpl",
    "integer",
    "mean_metric",
    "metric_rngs",
    "normalise_word",
    "number",
    "one_of",
    "open_unit_float",
    "optional",
    "positive_float",
    "positive_int",
    "positive_number",
    "rule_word",
    "split_half",
    "human_word",
    "SEGMENTERS",
    "text",
    "takes_options",
    "require_extras",
    "resolve_data_dir",
    "resolve_data_file",
    "one_line",
    "shorten",
    "shorten_repr",
    "DuplicateKeyError",
    "check_no_nul",
    "decode_utf8",
    "read_bytes",
    "read_json",
    "read_jsonl",
    "read_utf8",
    "unique_keys",
    "int_range",
    "non_negative_float",
    "non_negative_int",
    "number_range",
    "or_auto",
    "add_usage",
    "TOP_TOKENS",
    "ResponseStore",
    "progress_enabled",
    "option_labels",
    "option_order",
    "render_choice_prompt",
    "render_rating_prompt",
    "PROPORTIONS_NOTE",
    "counted_people_reason",
    "counts_known",
    "require_counted_people",
    "split_spread",
    "load_yaml",
    "yaml_problem",
    "final_word",
    "first_word_of_reply",
    "parse_word_list",
    "recorded_word",
    "WORD_MODES",
    "Outcome",
    "decide_and_close",
    "decide_word",
    "strip_punctuation",
    "word_a_space_closes",
    "find_classifier",
    "sentence_encoders",
]
