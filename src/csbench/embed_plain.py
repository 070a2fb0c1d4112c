"""A standard sentence-transformers encoder run with ``transformers`` alone.

``import sentence_transformers`` costs several CPU seconds per process (it imports scikit-learn,
scipy.stats and every ``transformers`` model), paid by every job that embeds a text. Most sentence
encoders are the standard stack ``Transformer -> Pooling (mean or CLS) -> (Normalize)``:
:class:`PlainEncoder` runs that stack with ``AutoTokenizer`` + ``AutoModel`` and the tensor
operations of sentence-transformers 6.2, in the same order (encode's length sort and batches, the
tokenizer call, Pooling's arithmetic, both L2 normalisations), so its vectors are bit for bit the
ones ``SentenceTransformer.encode(texts, normalize_embeddings=True)`` returns
(``bench/embed_backend.py`` checks this on real texts). :func:`plain_stack` accepts only that
stack; for any other directory (Dense layers, other pooling modes, prompts, a truncation
dimension, an architecture outside :data:`ENCODERS`, no ``modules.json``) it returns ``None`` and
the caller loads a ``SentenceTransformer``.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

_KINDS = {
    "Transformer": ("sentence_transformers.models.Transformer",
                    "sentence_transformers.base.modules.Transformer",
                    "sentence_transformers.base.modules.transformer.Transformer"),
    "Pooling": ("sentence_transformers.models.Pooling",
                "sentence_transformers.sentence_transformer.modules.Pooling",
                "sentence_transformers.sentence_transformer.modules.pooling.Pooling"),
    "Normalize": ("sentence_transformers.models.Normalize",
                  "sentence_transformers.base.modules.Normalize",
                  "sentence_transformers.base.modules.normalize.Normalize"),
}
# Encoder-only architectures that sentence-transformers loads with plain ``AutoModel`` and feeds the
# tokenizer's output unchanged (no chat template, no left padding, no encoder-only subclass).
ENCODERS = ("bert", "mpnet", "roberta", "xlm-roberta", "distilbert")
_LEGACY_MODES = {"pooling_mode_cls_token": "cls", "pooling_mode_max_tokens": "max",
                 "pooling_mode_mean_tokens": "mean", "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
                 "pooling_mode_weightedmean_tokens": "weightedmean", "pooling_mode_lasttoken": "lasttoken"}


def _json(path: Path) -> dict | list | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _kind(module: dict) -> str | None:
    return next((k for k, types in _KINDS.items() if module.get("type") in types), None)


def plain_stack(path: str | Path) -> dict | None:
    """``{"max_seq_length", "do_lower_case", "pooling", "dim", "normalize"}`` when the model directory ``path`` is
    the standard stack this module reproduces exactly, else ``None``."""
    p = Path(path)
    modules = _json(p / "modules.json")
    if not isinstance(modules, list) or (p / "adapter_config.json").exists():
        return None
    kinds = [_kind(m) for m in modules]
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        return None
    if modules[0].get("path", "") != "":
        return None
    st = _json(p / "sentence_bert_config.json")
    if not isinstance(st, dict) or set(st) - {"max_seq_length", "do_lower_case"}:
        return None
    saved = _json(p / "config_sentence_transformers.json") or {}
    if (set(saved) - {"__version__", "prompts", "default_prompt_name", "similarity_fn_name", "model_type"}
            or saved.get("default_prompt_name") or saved.get("model_type", "SentenceTransformer")
            != "SentenceTransformer"):
        return None
    pool = _json(p / modules[1]["path"] / "config.json")
    if not isinstance(pool, dict):
        return None
    mode, dim = pool.get("pooling_mode"), pool.get("embedding_dimension", pool.get("word_embedding_dimension"))
    if mode is None:
        mode = [m for k, m in _LEGACY_MODES.items() if pool.get(k)] or ["mean"]
    mode = mode[0] if isinstance(mode, (list, tuple)) and len(mode) == 1 else mode
    if mode not in ("mean", "cls") or not isinstance(dim, int):
        return None
    if len(modules) == 3:
        norm = _json(p / modules[2].get("path", "") / "config.json") or {}
        if norm.get("module_input_name", "sentence_embedding") != "sentence_embedding" or \
                norm.get("module_output_name", "sentence_embedding") != "sentence_embedding":
            return None
    if (_json(p / "config.json") or {}).get("model_type") not in ENCODERS:
        return None
    return {"max_seq_length": st.get("max_seq_length"), "do_lower_case": bool(st.get("do_lower_case")),
            "pooling": mode, "dim": dim, "normalize": len(modules) == 3}


class PlainEncoder:
    """The stack of :func:`plain_stack` with the part of the ``SentenceTransformer`` interface that
    :class:`csbench.embed.Embedder` uses (``tokenizer``, ``max_seq_length``,
    ``get_sentence_embedding_dimension``, ``encode``)."""

    def __init__(self, path: str | Path, stack: dict, device: str | None = None):
        import torch
        from transformers import AutoConfig, AutoModel, AutoTokenizer

        self.stack = stack
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        config = AutoConfig.from_pretrained(str(path))
        if hasattr(config, "use_cache"):
            config.use_cache = False  # as sentence-transformers sets it
        kwargs = {} if stack["max_seq_length"] is None else {"model_max_length": stack["max_seq_length"]}
        self.tokenizer = AutoTokenizer.from_pretrained(str(path), **kwargs)
        if stack["max_seq_length"] is None and getattr(config, "max_position_embeddings", -1) != -1:
            self.tokenizer.model_max_length = min(self.tokenizer.model_max_length,
                                                  config.max_position_embeddings)
        if stack["do_lower_case"]:
            _lower_case(self.tokenizer)
        self.auto_model = AutoModel.from_pretrained(str(path), config=config).to(self.device).eval()

    @property
    def max_seq_length(self) -> int:
        return self.tokenizer.model_max_length

    def get_sentence_embedding_dimension(self) -> int:
        return int(self.stack["dim"])

    def encode(self, texts: list[str], batch_size: int = 32, **_) -> np.ndarray:
        """L2-normalised float32 vectors in input order: sentence-transformers' ``encode`` with
        ``normalize_embeddings=True`` (longest texts first by characters, ``batch_size`` at a time)."""
        import torch

        order = np.argsort([-len(t) for t in texts])
        out = np.empty((len(texts), self.stack["dim"]), dtype=np.float32)
        with torch.inference_mode():
            for start in range(0, len(texts), batch_size):
                idx = order[start:start + batch_size]
                out[idx] = self._batch([texts[i] for i in idx]).cpu().numpy()
        return out

    def _batch(self, texts: list[str]):
        import torch
        import torch.nn.functional as F

        feats = self.tokenizer(texts, padding=True, truncation="longest_first", return_tensors="pt")
        feats = {k: v.to(self.device) for k, v in feats.items()
                 if k in ("input_ids", "attention_mask", "token_type_ids")}
        tokens = self.auto_model(**feats, return_dict=True)["last_hidden_state"]
        mask = feats["attention_mask"]
        if self.stack["pooling"] == "cls":
            first = mask.to(torch.int).argmax(dim=1)
            index = first.unsqueeze(-1).unsqueeze(1).expand(-1, 1, tokens.shape[-1])
            vec = tokens.gather(1, index).squeeze(1)
        else:  # mean, as sentence-transformers' Pooling computes it
            m = mask.unsqueeze(-1).to(tokens.dtype)
            acc = torch.float32 if tokens.dtype in (torch.float16, torch.bfloat16) else tokens.dtype
            total = (tokens * m).sum(dim=1, dtype=acc)
            vec = (total / torch.clamp(m.sum(dim=1, dtype=acc), min=1e-9)).to(tokens.dtype)
        if self.stack["normalize"]:
            vec = F.normalize(vec, p=2, dim=-1)  # the Normalize module
        return F.normalize(vec, p=2, dim=1)  # encode(normalize_embeddings=True)


def _lower_case(tokenizer) -> None:
    """Lower-case inputs as sentence-transformers' ``do_lower_case`` does (a ``Lowercase`` in front of
    a fast tokenizer's normalizer, unless it already has one)."""
    from tokenizers.normalizers import Lowercase, Sequence

    norm = tokenizer.backend_tokenizer.normalizer
    parts = list(norm) if isinstance(norm, Sequence) else [] if norm is None else [norm]
    if not any(isinstance(n, Lowercase) for n in parts):
        tokenizer.backend_tokenizer.normalizer = Sequence([Lowercase(), *parts])
