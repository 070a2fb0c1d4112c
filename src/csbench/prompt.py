"""A request's context in lm-evaluation-harness's parts (the item's text, few-shot examples, the
task's description) and its plain text and chat messages: the data type the tasks build
(torch-free, so a job that only reads prompts imports nothing of the LM engine);
:mod:`csbench.lm.prompt` decides which text a model scores (raw or through its chat template)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Prompt:
    """A context in lm-eval's parts; ``shots``: (question, answer) examples, in order."""
    question: str
    shots: tuple[tuple[str, str], ...] = ()
    description: str = ""
    target_delimiter: str = " "
    fewshot_delimiter: str = "\n\n"

    def system(self, instruction: str | None = None) -> str:
        """The system prompt: the instruction and the description, joined by the few-shot
        delimiter unless either has whitespace at the join (lm-eval's ``maybe_delimit``)."""
        return join_delimited(instruction or "", self.description, self.fewshot_delimiter)

    def raw(self, instruction: str | None = None) -> str:
        """The plain text of this context (no chat template)."""
        shots = "".join(q + self.target_delimiter + a + self.fewshot_delimiter
                        for q, a in self.shots)
        return self.system(instruction) + shots + self.question

    def messages(self, instruction: str | None = None) -> list[dict[str, str]]:
        """The chat messages of this context: system (if any), the examples as turns, the
        question."""
        system = self.system(instruction)
        out = [{"role": "system", "content": system}] if system else []
        for q, a in self.shots:
            out += [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
        return out + [{"role": "user", "content": self.question}]


def join_delimited(prefix: str, suffix: str, delimiter: str) -> str:
    """``prefix + delimiter + suffix``, without the delimiter when either is empty or has
    whitespace at the join."""
    if not prefix or not suffix:
        return prefix or suffix
    if prefix[-1].isspace() or suffix[0].isspace():
        return prefix + suffix
    return prefix + delimiter + suffix


def as_prompt(context) -> Prompt:
    return context if isinstance(context, Prompt) else Prompt(str(context))
