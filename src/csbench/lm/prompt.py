"""Prompt formats: the one place that turns a request's parts (a system instruction, the task's
description, few-shot examples, the item's text) into the text a model scores or continues, with
lm-evaluation-harness 0.4's semantics (``ConfigurableTask.fewshot_context`` and
``construct_requests``; ``HFLM.apply_chat_template``).

A context is a plain text or a :class:`Prompt`: the item's text (``question``), few-shot
``shots`` (question, answer), the task's ``description``; a plain text is a prompt with its
question only. Continuations carry their target delimiter (``" yes"``, ``" always got the
easier cases."``), as raw requests always have. The format (:class:`PromptFormat`;
``lm.chat_template`` and ``lm.system_instruction``, which a model spec may override) decides the
text:

* **raw** (``chat_template: off``, the default): lm-eval's plain text: the system prompt (the
  system instruction and the description joined by the few-shot delimiter where neither has
  whitespace at the join), directly followed by each example as ``question + target_delimiter +
  answer + fewshot_delimiter``, then the question; the continuation as given. Without a system
  instruction a request's text is exactly what the task built (as before chat templates existed).
* **chat** (``on``): the messages ``[system]`` (when the system prompt is not empty), then
  ``user: question, assistant: answer`` per example (few-shot as multi-turn, lm-eval's default with
  ``--apply_chat_template``), then ``user: question``, rendered by the tokenizer's chat template
  with the generation prompt added; the continuation follows it without its target delimiter
  (lm-eval scores ``"" + choice`` under a chat template when the task has no ``gen_prefix``).
  A template that refuses the system role (a Jinja ``TemplateError``) is rendered again without
  the system message, with a warning, as lm-eval does.

Requests with an empty context (an unconditional score, e.g. a topic's cross-entropy) are not
formatted in either format (lm-eval builds them outside ``fewshot_context``). The text scored is
the rendered one, so the LM cache, keyed by the request text, never mixes raw and chat scores.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from ..errors import ConfigError
from ..modelspec import lm_spec, on_off
from ..prompt import Prompt, as_prompt  # noqa: F401 - Prompt: the tasks' parts (torch-free)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PromptFormat:
    """``chat``: apply the tokenizer's chat template; ``system_instruction``: text before the
    task's own (None: none)."""
    chat: bool = False
    system_instruction: str | None = None

    @classmethod
    def of(cls, lm: dict | None) -> "PromptFormat":
        """The format of ``lm`` settings (``chat_template``, ``system_instruction``; missing
        keys: raw, none)."""
        lm = lm or {}
        return cls(on_off(lm.get("chat_template", False), "lm.chat_template"),
                   lm.get("system_instruction") or None)

    @property
    def raw(self) -> bool:
        """Whether a request's text is exactly what the task built."""
        return not self.chat and not self.system_instruction

    def columns(self) -> dict:
        """The prompt columns of a model's outputs (:data:`csbench.provenance.PROMPT_COLUMNS`)."""
        return {"prompt_format": "chat" if self.chat else "raw",
                "system_instruction": self.system_instruction or ""}

    def params(self) -> dict:
        """What a rule's params hold of the format: nothing for the default raw format (so
        runs made before chat templates existed keep their params), else both settings."""
        if self.raw:
            return {}
        return {"chat_template": self.chat, "system_instruction": self.system_instruction}


def has_chat_template(tokenizer) -> bool:
    return bool(getattr(tokenizer, "chat_template", None))


class Formatter:
    """Renders contexts in a :class:`PromptFormat` with a tokenizer's chat template
    (``tokenizer``: None where none is at hand, e.g. a served model without one: then a chat
    format can give only :meth:`messages`). ``where`` names the model in errors."""

    def __init__(self, fmt: PromptFormat | None = None, tokenizer=None, where: str = "the model"):
        self.format = fmt or PromptFormat()
        self.where = where
        self.tokenizer = tokenizer
        if self.format.chat and tokenizer is not None and not has_chat_template(tokenizer):
            raise ConfigError(f"lm.chat_template is on, but the tokenizer of {where} has no chat "
                              "template (tokenizer_config.json / chat_template.jinja): use a "
                              "model that has one, or chat_template: off for this model")
        self._warned = False
        self._memo: dict = {}

    @property
    def renders_here(self) -> bool:
        """Whether texts can be rendered here (raw, or chat with a tokenizer)."""
        return not self.format.chat or self.tokenizer is not None

    def messages(self, context) -> list[dict[str, str]]:
        return as_prompt(context).messages(self.format.system_instruction)

    def text(self, context) -> str:
        """The text of a context (for sampling, and the context of a scored request)."""
        p = as_prompt(context)
        if not self.format.chat:
            return p.raw(self.format.system_instruction)
        got = self._memo.get(p)
        if got is None:
            got = self._memo[p] = self._chat(p.messages(self.format.system_instruction))
        return got

    def request(self, context, continuation: str) -> tuple[str, str]:
        """The (context, continuation) texts scored for a request."""
        continuation = str(continuation)
        if not isinstance(context, Prompt):
            context = str(context)
            if context == "" or self.format.raw:
                return context, continuation
        if not self.format.chat:
            return self.text(context), continuation
        tgt = as_prompt(context).target_delimiter
        if tgt and continuation.startswith(tgt):
            continuation = continuation[len(tgt):]
        return self.text(context), continuation

    def _chat(self, messages: list[dict]) -> str:
        if self.tokenizer is None:
            raise ConfigError(f"lm.chat_template is on, but no tokenizer of {self.where} is at "
                              "hand to apply its chat template")
        from jinja2.exceptions import TemplateError

        kw = dict(tokenize=False, add_generation_prompt=True, continue_final_message=False)
        try:
            return self.tokenizer.apply_chat_template(messages, **kw)
        except TemplateError as exc:
            if not any(m["role"] == "system" for m in messages):
                raise
            if not self._warned:
                log.warning("%s: the chat template refused the system message (%s); rendered "
                            "without it, as lm-evaluation-harness does", self.where, exc)
                self._warned = True
            return self.tokenizer.apply_chat_template(
                [m for m in messages if m["role"] != "system"], **kw)


def model_lm(config: dict, name: str) -> dict:
    """The ``lm`` settings of model ``name`` (``models.lm.<name>``): the config's ``lm`` section
    with the spec's ``chat_template`` and ``system_instruction`` over it."""
    spec = lm_spec(config, name)
    out = dict(config.get("lm") or {})
    if spec.chat_template is not None:
        out["chat_template"] = spec.chat_template
    if spec.system_instruction is not None:
        out["system_instruction"] = spec.system_instruction
    return out


def model_format(config: dict, name: str) -> PromptFormat:
    """The prompt format of model ``name`` (:func:`model_lm`)."""
    return PromptFormat.of(model_lm(config, name))
