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
  for a split-half human control (one random split of an instance's references into two halves);
- answer classifiers: ``AnswerClassifier``, ``ClassifyItem``, ``Classification``;
- data loaders: ``LoadedData``, ``Loader``, ``takes_options``, ``hash_files``, ``downloads_allowed``,
  ``resolve_data_paths`` (a data path option read as the generic loaders read it: under the data root, ``task:``
  beside the task file, ``package:`` in an installed package) and the instance types ``Instance``,
  ``ClozeInstance``, ``GenerationInstance``, ``ChoiceInstance``;
- data sets (``harness data``): ``DataSet``, ``DataFile``;
- words: ``rule_word`` (a task's word rule, ``exact``, ``whole`` or ``paper``, with a segmenter: every word an
  adapter returns must already be written by it), ``human_word`` (the same rule on a person's response: what the
  next-word kinds apply to every loader's instances), ``normalise_word`` (``exact`` with ``spaces``), ``SEGMENTERS``
  and ``PAPER_FAILURE``;
- options: ``Option``, ``Options``, ``OptionError`` and the converters (one grammar for booleans and numbers);
- errors: ``HarnessError`` (shown to the user as one line), ``TaskConfigError``, ``DataNotFoundError``,
  ``ModelLoadError``;
- extras (optional parts of the harness, ``docs/plugins.md``, "Optional dependencies"): ``require_extras`` and
  ``MissingExtraError``, for a plugin that checks one itself.
"""

from __future__ import annotations

from harness.data.loaders import LoadedData, Loader, downloads_allowed, hash_files, takes_options
from harness.data.paths import resolve_data_paths
from harness.data.sets import DataFile, DataSet
from harness.errors import DataNotFoundError, HarnessError, ModelLoadError, TaskConfigError
from harness.extras import MissingExtraError, require_extras
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
    integer,
    number,
    one_of,
    open_unit_float,
    optional,
    positive_float,
    positive_int,
    positive_number,
    text,
)
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
)
from harness.scoring.args import BOOTSTRAP_OPTIONS, ArgsScorer
from harness.scoring.base import Metric, Scorer, ScorerUnavailable
from harness.scoring.classifiers import AnswerClassifier, Classification, ClassifyItem
from harness.scoring.stats import bootstrap_metric, mean_metric, split_half
from harness.seeding import derive_rng, derive_seed, metric_rngs
from harness.words.rules import PAPER_FAILURE, human_word, normalise_word, rule_word
from harness.words.segmenters import SEGMENTERS

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
]
