"""The item table scored by every model: data sets x variants, with categories and requests.

Every set is a winograd data set of the ``datasets`` registry, read by
:func:`csbench.datasets.read_entry` (its normalised table: id, sentence, option1, option2, answer,
paraphrase, categories). What WinoWhat adds to the built-in ones (:data:`ADDED`):
``winogrande_dev`` (orig: all its items; transf: the WinoWhat rows aligned with them by
(sentence, option1, option2), answers checked), ``winogrande_test`` and ``wsc`` (seeded samples,
``winowhat.samples``; a user CSV with the WinoWhat columns adds labels, paraphrases and
categories; items it names join the sample). Test has no public labels: without a user file its
items carry no label. Any other set: all its items (orig), its paraphrases (transf).
"""
from __future__ import annotations

import pandas as pd

from ..data.winowhat import HEADER, read_winowhat_csv
from ..errors import InputError
from .requests import blank_at_end, requests_for, sentence_requests

ITEM_COLUMNS = ["item_id", "orig_id", "dataset", "variant", "sentence", "option1", "option2",
                "label", "categories", "in_original_experiment", "method", "flagged",
                "ctx1", "cont1", "ctx2", "cont2", "ctx_sentence", "cont1_sentence",
                "cont2_sentence"]
KEY = ["sentence", "option1", "option2"]


def _rows(df: pd.DataFrame, dataset: str, variant: str, sentence_col: str = "sentence"):
    out = []
    for r in df.itertuples(index=False):
        sent = getattr(r, sentence_col)
        reqs, method = requests_for(sent, r.option1, r.option2, variant)
        whole = sentence_requests(sent, r.option1, r.option2)  # the control: one method for all
        out.append({
            "item_id": r.item_id, "orig_id": r.orig_id, "dataset": dataset, "variant": variant,
            "sentence": sent, "option1": r.option1, "option2": r.option2, "label": r.label,
            "categories": list(r.categories), "in_original_experiment": r.ioe,
            "method": method, "flagged": variant == "transf" and not blank_at_end(sent),
            "ctx1": reqs[0][0], "cont1": reqs[0][1], "ctx2": reqs[1][0], "cont2": reqs[1][1],
            "ctx_sentence": whole[0][0], "cont1_sentence": whole[0][1],
            "cont2_sentence": whole[1][1],
        })
    return out


def align_winowhat(dev: pd.DataFrame, ww: pd.DataFrame, ww_path="WinoWhat",
                   part: bool = False) -> pd.DataFrame:
    """WinoWhat rows with the dev qID (``orig_id``) and a unique ``item_id`` per row; ``part``:
    ``dev`` holds only some of the dev items (its entry's ``settings.where`` or ``limit``), so the
    rows of the others are left out instead of being an error."""
    key = dev.set_index(KEY)
    out = []
    seen: dict[str, int] = {}
    for r in ww.itertuples(index=False):
        k = (r.sentence, r.option1, r.option2)
        if k not in key.index and part:
            continue
        if k not in key.index:
            raise InputError(ww_path, f"row {r.id} does not match any WinoGrande dev item "
                             f"(sentence, option1, option2): {r.sentence!r}")
        d = key.loc[k]
        if pd.notna(r.answer) and pd.notna(d["answer"]) and int(r.answer) != int(d["answer"]):
            raise InputError(ww_path, f"row {r.id}: answer {r.answer} differs from dev "
                             f"{d['id']} ({d['answer']})")
        qid = d["id"]
        seen[qid] = seen.get(qid, 0) + 1
        out.append({"item_id": qid if seen[qid] == 1 else f"{qid}#{seen[qid]}", "orig_id": qid,
                    "sentence": r.sentence, "paraphrased_sentence": r.paraphrased_sentence,
                    "option1": r.option1, "option2": r.option2, "label": d["answer"],
                    "categories": list(r.categories), "ioe": int(r.in_original_experiment)})
    return pd.DataFrame(out)


def sample(df: pd.DataFrame, size: int | None, seed: int) -> pd.DataFrame:
    """Seeded sample in original order (``size`` None or >= len: everything)."""
    if size is None or size >= len(df):
        return df
    return df.sample(n=size, random_state=seed).sort_index()


def read_user_file(path, items: pd.DataFrame, require_answer: bool) -> pd.DataFrame:
    """User CSV (WinoWhat columns) matched to ``items`` by (sentence, option1, option2)."""
    user = read_winowhat_csv(path, require_answer=require_answer)
    key = items.set_index(KEY)
    ids = []
    for r in user.itertuples(index=False):
        k = (r.sentence, r.option1, r.option2)
        if k not in key.index:
            raise InputError(path, "row matches no item of the data set (sentence, option1, "
                             "option2 must be copied exactly)", r.line)
        ids.append(key.loc[k]["id"])
    user["orig_id"] = ids
    return user


def build_sampled(table: pd.DataFrame, dataset: str, size, seed: int, user_path=None):
    """Items of a sampled dataset (orig, plus transf where the user file has paraphrases)."""
    base = table.reset_index(drop=True)
    picked = sample(base, size, seed)
    user = None
    if user_path:
        user = read_user_file(user_path, base, require_answer=dataset != "winogrande_test")
        picked = base[base.index.isin(picked.index) | base["id"].isin(user["orig_id"])]
    cats = {}
    labels = dict(zip(base["id"], base["answer"]))
    if user is not None:
        for r in user.itertuples(index=False):
            cats[r.orig_id] = sorted(set(cats.get(r.orig_id, [])) | set(r.categories))
            if pd.notna(r.answer):
                if pd.notna(labels[r.orig_id]) and int(labels[r.orig_id]) != int(r.answer):
                    raise InputError(user_path, f"answer {r.answer} differs from the data set's "
                                     f"label {labels[r.orig_id]}", r.line)
                labels[r.orig_id] = int(r.answer)
    orig = pd.DataFrame({
        "item_id": picked["id"], "orig_id": picked["id"], "sentence": picked["sentence"],
        "option1": picked["option1"], "option2": picked["option2"],
        "label": [labels[i] for i in picked["id"]],
        "categories": [cats.get(i, []) for i in picked["id"]], "ioe": None})
    rows = _rows(orig, dataset, "orig")
    if user is not None:
        tr = user[user["paraphrased_sentence"].notna()]
        seen: dict[str, int] = {}
        t_ids = []
        for q in tr["orig_id"]:
            seen[q] = seen.get(q, 0) + 1
            t_ids.append(q if seen[q] == 1 else f"{q}#{seen[q]}")
        transf = pd.DataFrame({
            "item_id": t_ids, "orig_id": tr["orig_id"].values,
            "sentence": tr["paraphrased_sentence"].values, "option1": tr["option1"].values,
            "option2": tr["option2"].values, "label": [labels[i] for i in tr["orig_id"]],
            "categories": list(tr["categories"]), "ioe": None})
        rows += _rows(transf, dataset, "transf")
    return rows


def build_dataset(table: pd.DataFrame, dataset: str) -> list[dict]:
    """Items of a winograd data set of the registry (:func:`csbench.datasets.read_dataset`): every
    item as ``orig``; its paraphrase, where it has one, as ``transf`` paired by ``orig_id``."""
    orig = pd.DataFrame({
        "item_id": table["id"], "orig_id": table["id"], "sentence": table["sentence"],
        "option1": table["option1"], "option2": table["option2"], "label": table["answer"],
        "categories": table["categories"], "ioe": None})
    rows = _rows(orig, dataset, "orig")
    para = table[table["paraphrase"].notna()]
    transf = orig[table["paraphrase"].notna()].assign(paraphrased_sentence=para["paraphrase"])
    return rows + _rows(transf, dataset, "transf", sentence_col="paraphrased_sentence")


# built-in sets whose paraphrases and categories WinoWhat takes from elsewhere: set -> from where
ADDED = {"winogrande_dev": "the WinoWhat table", "winogrande_test": "winowhat.user_files",
         "wsc": "winowhat.user_files"}


def build_dev(dev: pd.DataFrame, winowhat: pd.DataFrame, winowhat_path="WinoWhat",
              part: bool = False) -> list[dict]:
    """WinoGrande dev (every item read, ``orig``) with the WinoWhat paraphrases aligned to it
    (``transf``; ``part``: see :func:`align_winowhat`), each dev item's categories the union of
    its WinoWhat rows'."""
    ww = align_winowhat(dev, winowhat, winowhat_path, part)
    cats = ww.groupby("orig_id")["categories"].agg(lambda s: sorted({c for x in s for c in x}))
    ioe = ww.groupby("orig_id")["ioe"].max()
    orig = pd.DataFrame({
        "item_id": dev["id"], "orig_id": dev["id"], "sentence": dev["sentence"],
        "option1": dev["option1"], "option2": dev["option2"], "label": dev["answer"],
        "categories": [cats.get(i, []) for i in dev["id"]],
        "ioe": [ioe.get(i) for i in dev["id"]]})
    return (_rows(orig, "winogrande_dev", "orig")
            + _rows(ww, "winogrande_dev", "transf", sentence_col="paraphrased_sentence"))


def build_items(sets: dict, winowhat: pd.DataFrame, sample_size: int | None = 100, seed: int = 0,
                user_files: dict | None = None, winowhat_path="WinoWhat",
                parts=()) -> pd.DataFrame:
    """The full item table (columns :data:`ITEM_COLUMNS`) of ``sets`` (name -> the normalised
    table of a winograd data set, in order; ``winogrande_dev`` among them, which ``winowhat``
    paraphrases), the samples' ``user_files`` (name -> path); ``parts``: the sets read in part
    (a ``settings.where`` filter or a ``limit`` sample:
    :func:`csbench.datasets.read_in_part`)."""
    if "winogrande_dev" not in sets:
        raise ValueError("WinoWhat's paraphrases belong to winogrande_dev: it must be among the sets")
    user_files = user_files or {}
    rows = []
    for name, table in sets.items():
        if name in ADDED and ("paraphrase" in table and table["paraphrase"].notna().any()
                              or "categories" in table and table["categories"].map(len).any()):
            raise ValueError(f"data set {name}: WinoWhat takes its paraphrases and categories from "
                             f"{ADDED[name]}, not from the set's paraphrase and categories roles")
        if name == "winogrande_dev":
            rows += build_dev(table, winowhat, winowhat_path, name in parts)
        elif name in ADDED:
            rows += build_sampled(table, name, sample_size, seed, user_files.get(name))
        else:
            rows += build_dataset(table, name)
    df = pd.DataFrame(rows, columns=ITEM_COLUMNS)
    df["label"] = df["label"].astype("Int8")
    df["in_original_experiment"] = df["in_original_experiment"].astype("Int8")
    return df


def template(items: pd.DataFrame, dataset: str) -> pd.DataFrame:
    """A CSV template (WinoWhat columns) for the user to add labels/paraphrases to a sample."""
    o = items[(items["dataset"] == dataset) & (items["variant"] == "orig")]
    return pd.DataFrame({
        "sentence": o["sentence"], "paraphrased_sentence": "", "option1": o["option1"],
        "option2": o["option2"], "answer": o["label"].astype("string").fillna(""),
        "gpt_category": "", "gpt_category_names": "", "in_original_experiment": 1,
    })[HEADER]
