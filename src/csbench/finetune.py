"""Causal-LM fine-tuning, materialised like any other model.

A ``models.lm`` spec ``{finetune: {base: <entry>, data: <source>/<table>, ...}}``
(:mod:`csbench.modelspec`) becomes ``resources/models/<name>/`` (rule ``finetune_model``): the
base entry's materialised weights trained on a normalised data table with ``prompt`` and
``completion`` columns, saved as a plain Hugging Face directory (float32 safetensors and the
base's tokenizer) with

* ``provenance.json``: the base (name, source, the sha256 of its weights file and of its
  safetensors), the training table (and dev table) with sha256 and row counts, every training
  setting and the seed, the device and dtype it trained with, and the training's cost (examples,
  optimizer steps, wall and CPU seconds, examples/s); its label (``model_source`` in every table
  made from it) reads ``finetune:<base>=<base source> on <data>``;
* ``training_log.tsv``: the loss curve, one row per optimizer step (``split: train``: the mean
  loss of its forward passes) and one per epoch on the dev table (``split: dev``).

Training (:func:`train`): the text of an example is ``prompt + completion``, tokenised as the
prompt (with the tokenizer's special tokens) followed by the completion (without), so the
boundary between them is exact; ``loss: completion`` computes the loss on the completion's
tokens only, ``all`` on every token. AdamW with a linear warm-up/decay schedule, ``batch``
examples per forward pass (right-padded, pads masked), ``grad_accum`` passes per optimizer step
(each pass's mean loss divided by ``grad_accum``; a last, shorter group still steps), gradients
clipped to ``max_grad_norm``. ``dtype: bfloat16`` runs the float32 model under autocast
(:func:`csbench.compute.autocast`). The example subset (``fraction``, ``max_examples``), the data
order and dropout follow ``seed`` alone: on a CPU one seed gives the same weights bit for bit. With
``epochs`` > 1 and a ``dev`` table, the epoch with the lowest dev loss is the one saved.
"""
from __future__ import annotations

import json
import logging
import random
import time
from pathlib import Path

from .errors import ConfigError, InputError
from .io import atomic_dir, sha256_file
from .modelspec.finetune import FINETUNE_SETTINGS
from .provenance import PROVENANCE, provenance

log = logging.getLogger(__name__)

TRAINING_LOG = "training_log.tsv"
COLUMNS = ("prompt", "completion")


def settings(config: dict, name: str) -> dict:
    """The resolved training settings of ``models.lm.<name>`` (a finetune spec): its base, data
    and dev, and every setting of :data:`csbench.modelspec.finetune.FINETUNE_SETTINGS`, the
    spec's over the config's ``finetune`` section (the schema's defaults where the config has
    none). ``dtype: auto`` is resolved here for ``lm.device``
    (:func:`csbench.compute.training_dtype`: bfloat16 only where the hardware has bf16 units),
    so the ``finetune_model`` rule's params, built by this function, hold the dtype the job
    trains in, and its provenance records it."""
    from .compute import training_dtype
    from .config import default

    spec = (config.get("models") or {}).get("lm", {}).get(name)
    if not isinstance(spec, dict) or not isinstance(spec.get("finetune"), dict):
        raise ConfigError(f"models.lm.{name}: not a finetune spec")
    own = spec["finetune"]
    base = {**default("finetune"), **(config.get("finetune") or {})}
    out = {"base": own["base"], "data": own["data"], "dev": own.get("dev")}
    out.update({k: own.get(k, base[k]) for k in FINETUNE_SETTINGS})
    device = {**default("lm"), **(config.get("lm") or {})}["device"]
    out["dtype"] = training_dtype(out["dtype"], device)
    return out


def read_examples(path: str | Path) -> list[tuple[str, str]]:
    """(prompt, completion) pairs of a training table, in file order (a table without those
    columns, or with a missing or empty completion, is an :class:`InputError`)."""
    import pandas as pd

    df = pd.read_parquet(path)
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise InputError(path, f"not a fine-tuning table: no column(s) {', '.join(missing)} "
                         f"(it has {', '.join(map(str, df.columns))})")
    out = []
    for i, (p, c) in enumerate(zip(df["prompt"], df["completion"])):
        if not isinstance(p, str) or not isinstance(c, str) or not c.strip():
            raise InputError(path, f"row {i}: prompt and completion must be texts and the "
                             f"completion non-empty, got {p!r}, {c!r}")
        out.append((p, c))
    if not out:
        raise InputError(path, "no training examples")
    return out


def subset(n: int, fraction: float = 1.0, max_examples: int | None = None,
           seed: int = 0) -> list[int]:
    """Indices (sorted) of a seeded sample of ``n`` examples: ``fraction`` of them, at most
    ``max_examples``; all of them when neither cuts."""
    k = max(1, round(n * fraction))
    if max_examples is not None:
        k = min(k, max_examples)
    if k >= n:
        return list(range(n))
    return sorted(random.Random(seed).sample(range(n), k))


def encode(tokenizer, examples, max_length: int, loss: str = "completion"):
    """``(encoded, n_cut)``: per example, ``(input_ids, labels)`` (labels -100 where no loss is
    computed: the prompt's tokens with ``loss: completion``), cut to ``max_length`` tokens;
    ``n_cut`` counts the examples cut."""
    if loss not in ("completion", "all"):
        raise ValueError(f"loss must be completion or all, got {loss!r}")
    prompts = tokenizer([p for p, _ in examples])["input_ids"]
    completions = tokenizer([c for _, c in examples], add_special_tokens=False)["input_ids"]
    out, n_cut = [], 0
    for p, c in zip(prompts, completions):
        ids = list(p) + list(c)
        labels = ([-100] * len(p) if loss == "completion" else list(p)) + list(c)
        if len(ids) > max_length:
            n_cut += 1
            ids, labels = ids[:max_length], labels[:max_length]
        out.append((ids, labels))
    return out, n_cut


def collate(encoded, idx, pad_id: int, device):
    """Right-padded tensors ``input_ids``, ``attention_mask``, ``labels`` of the examples
    ``idx``."""
    import torch

    width = max(len(encoded[i][0]) for i in idx)
    ids = torch.full((len(idx), width), pad_id, dtype=torch.long)
    labels = torch.full((len(idx), width), -100, dtype=torch.long)
    mask = torch.zeros((len(idx), width), dtype=torch.long)
    for row, i in enumerate(idx):
        x, y = encoded[i]
        ids[row, :len(x)] = torch.tensor(x)
        labels[row, :len(y)] = torch.tensor(y)
        mask[row, :len(x)] = 1
    return {"input_ids": ids.to(device), "attention_mask": mask.to(device),
            "labels": labels.to(device)}


def pad_id(tokenizer) -> int:
    for tid in (tokenizer.pad_token_id, tokenizer.eos_token_id, 0):
        if tid is not None:
            return int(tid)
    return 0


def mean_loss(model, encoded, pad: int, batch: int = 8, dtype: str = "float32") -> float:
    """Mean loss per label token over ``encoded`` (the dev loss)."""
    import torch

    from .compute import autocast

    device = next(model.parameters()).device
    total, tokens = 0.0, 0
    was_training = model.training
    model.eval()
    with torch.no_grad():
        for s in range(0, len(encoded), batch):
            idx = list(range(s, min(s + batch, len(encoded))))
            inputs = collate(encoded, idx, pad, device)
            n = int((inputs["labels"][:, 1:] != -100).sum())
            if n == 0:
                continue
            with autocast(device, dtype):
                out = model(**inputs)
            total += float(out.loss.float()) * n
            tokens += n
    model.train(was_training)
    return total / max(tokens, 1)


def train(model, encoded, s: dict, pad: int, dev=None) -> tuple[list[dict], int | None]:
    """Fine-tune ``model`` in place on ``encoded`` with the settings ``s``
    (:func:`settings`); ``dev`` (encoded dev examples) gives a dev loss per epoch and, with more
    than one epoch, the epoch kept. Returns the log rows and the epoch kept (None: the last)."""
    import copy

    import torch

    from .compute import autocast
    from .training import Progress, linear_schedule, seeded

    device = next(model.parameters()).device
    n, batch, accum = len(encoded), s["batch"], s["grad_accum"]
    passes = -(-n // batch)
    steps_per_epoch = -(-passes // accum)
    opt = torch.optim.AdamW(model.parameters(), lr=s["lr"], weight_decay=s["weight_decay"])
    sched = linear_schedule(opt, steps_per_epoch * s["epochs"], s["warmup"])
    gen = seeded(s["seed"])
    rows, best, best_state = [], None, None
    progress = Progress(n * s["epochs"])
    step, done = 0, 0
    model.train()
    with torch.enable_grad():  # other code in the process may have switched autograd off
        for epoch in range(1, s["epochs"] + 1):
            order = torch.randperm(n, generator=gen).tolist()
            groups = [order[b:b + batch] for b in range(0, n, batch)]
            for g0 in range(0, len(groups), accum):
                group = groups[g0:g0 + accum]
                losses = []
                for idx in group:
                    with autocast(device, s["dtype"]):
                        out = model(**collate(encoded, idx, pad, device))
                    (out.loss / len(group)).backward()
                    losses.append(float(out.loss.detach().float()))
                    done += len(idx)
                if s["max_grad_norm"] > 0:
                    torch.nn.utils.clip_grad_norm_(model.parameters(), s["max_grad_norm"])
                lr = sched.get_last_lr()[0]
                opt.step()
                sched.step()
                opt.zero_grad(set_to_none=True)
                step += 1
                loss = sum(losses) / len(losses)
                rows.append({"step": step, "epoch": epoch, "examples": done, "split": "train",
                             "loss": loss, "lr": lr, "wall_s": progress.elapsed()})
                progress.update(done, epoch, loss)
            if dev is not None:
                d = mean_loss(model, dev, pad, max(batch, 8), s["dtype"])
                rows.append({"step": step, "epoch": epoch, "examples": done, "split": "dev",
                             "loss": d, "lr": None, "wall_s": progress.elapsed()})
                log.info("epoch %d: dev loss %.4f", epoch, d)
                if s["epochs"] > 1 and (best is None or d < best[1]):
                    best = (epoch, d)
                    best_state = copy.deepcopy({k: v.detach().cpu()
                                                for k, v in model.state_dict().items()})
    model.eval()
    if best is not None and best[0] != s["epochs"]:
        model.load_state_dict(best_state)
        log.info("kept epoch %d (dev loss %.4f)", best[0], best[1])
    return rows, best[0] if best is not None else None


def _weights_sha256(path: Path) -> str:
    """sha256 over the safetensors files of a model directory (in name order)."""
    import hashlib

    h = hashlib.sha256()
    for f in sorted(Path(path).rglob("*.safetensors")):
        h.update(f.relative_to(path).as_posix().encode() + b"\0" + sha256_file(f).encode())
    return h.hexdigest()


def finetune(base_dir: str | Path, data_path: str | Path, outdir: str | Path, s: dict,
             device: str = "auto", dev_path: str | Path | None = None,
             base_name: str | None = None) -> Path:
    """Train the model in ``base_dir`` on the table ``data_path`` with the settings ``s``
    (:func:`settings`) on ``device`` and materialise it into ``outdir`` (atomic), with its
    ``provenance.json`` and ``training_log.tsv``."""
    import pandas as pd
    import torch

    from .compute import compute_columns
    from .models.load import load_causal_lm
    from .models.materialise import package_versions

    outdir, base_dir = Path(outdir), Path(base_dir)
    t_wall, t_cpu = time.perf_counter(), time.process_time()
    all_examples = read_examples(data_path)
    keep = subset(len(all_examples), s["fraction"], s["max_examples"], s["seed"])
    examples = [all_examples[i] for i in keep]
    model, tok = load_causal_lm(base_dir, device, "float32")
    pad = pad_id(tok)
    encoded, n_cut = encode(tok, examples, s["max_length"], s["loss"])
    dev = dev_rows = None
    if dev_path is not None:
        dev_all = read_examples(dev_path)
        dkeep = subset(len(dev_all), 1.0, s["max_dev_examples"], s["seed"])
        dev, _ = encode(tok, [dev_all[i] for i in dkeep], s["max_length"], s["loss"])
        dev_rows = {"table": s["dev"], "sha256": sha256_file(dev_path), "rows": len(dev_all),
                    "used": len(dev)}
    tokens = sum(len(x) for x, _ in encoded)
    log.info("fine-tuning %s on %d of %d examples of %s (%d tokens, %d cut at %d), %s",
             base_name or base_dir.name, len(examples), len(all_examples), s["data"], tokens,
             n_cut, s["max_length"], {k: s[k] for k in FINETUNE_SETTINGS})
    compute = compute_columns(device, s["dtype"])
    t0 = time.perf_counter()
    rows, kept = train(model, encoded, s, pad, dev)
    train_s = time.perf_counter() - t0
    seen = len(encoded) * s["epochs"]
    log.info("trained %d optimizer steps in %.0f s: %.2f examples/s; loss %.4f -> %.4f",
             sum(r["split"] == "train" for r in rows), train_s, seen / max(train_s, 1e-9),
             rows[0]["loss"], [r for r in rows if r["split"] == "train"][-1]["loss"])
    base_prov = provenance(base_dir)
    base_spec = base_prov.get("spec") or {}
    label = (f"finetune:{base_name or base_dir.name}="
             f"{base_spec.get('label', str(base_dir)) if isinstance(base_spec, dict) else base_spec}"
             f" on {s['data']}")
    with atomic_dir(outdir) as tmp:
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        pd.DataFrame(rows, columns=["step", "epoch", "examples", "split", "loss", "lr",
                                    "wall_s"]).to_csv(tmp / TRAINING_LOG, sep="\t", index=False)
        prov = {
            "name": outdir.name,
            "spec": {"kind": "finetune", "label": label, "base": base_name, "data": s["data"],
                     "dev": s.get("dev")},
            "random": bool(base_prov.get("random", False)),
            "base": {"name": base_name, "source": base_spec.get("label")
                     if isinstance(base_spec, dict) else base_spec,
                     "sha256": base_prov.get("file_sha256"),
                     "weights_sha256": _weights_sha256(base_dir)},
            "data": {"table": s["data"], "sha256": sha256_file(data_path),
                     "rows": len(all_examples), "used": len(examples), "cut": n_cut,
                     "tokens": tokens},
            "dev": dev_rows,
            "settings": {k: s[k] for k in FINETUNE_SETTINGS},
            "seed": s["seed"],
            **compute,
            "training": {"epochs": s["epochs"], "epoch_kept": kept,
                         "optimizer_steps": sum(r["split"] == "train" for r in rows),
                         "examples_seen": seen, "train_wall_s": round(train_s, 2),
                         "examples_per_s": round(seen / max(train_s, 1e-9), 3),
                         "wall_s": round(time.perf_counter() - t_wall, 2),
                         "cpu_s": round(time.process_time() - t_cpu, 2),
                         "threads": torch.get_num_threads(),
                         "first_loss": rows[0]["loss"],
                         "last_loss": [r for r in rows if r["split"] == "train"][-1]["loss"],
                         "dev_loss": [r["loss"] for r in rows if r["split"] == "dev"]},
            "parameters": sum(p.numel() for p in model.parameters()),
            "packages": package_versions(),
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        prov["file_sha256"] = _weights_sha256(tmp)
        (tmp / PROVENANCE).write_text(json.dumps(prov, indent=1, default=str) + "\n")
    return outdir
