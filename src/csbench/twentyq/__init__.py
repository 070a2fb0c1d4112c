"""20Q: an overlap-free world-knowledge benchmark built from AllenAI Twenty Questions.

* :mod:`.clean` — step-by-step cleaning with a count table;
* :mod:`.split` — overlap-free train/test split (lexical, WordNet and embedding admission rules);
* :mod:`.prompts` — zero-shot, few-shot and topic-less prompts of the paper;
* :mod:`.scoring` — yes/no scoring through :mod:`csbench.lm`, metrics, topic-frequency proxy;
* :mod:`.calibration` — AUROC and cross-fitted accuracy/F1 of the yes/no log-odds, bootstrap intervals.
"""
