"""WinoWhat: WinoGrande/WSC scored by partial evaluation, original vs paraphrased, per category.

* :mod:`.requests`: (context, continuation) requests of the paper's methods and of the control;
* :mod:`.items`: the item table (datasets, variants, categories, alignment, user samples);
* :mod:`.scoring`: score items with a scorer of :func:`csbench.lm.open_scorer`;
* :mod:`.stats`: accuracy with bootstrap intervals, the paired comparison (McNemar's exact test);
* :mod:`.report`: its RESULTS.md section (one subset, the paired headline, the control beside it);
* :mod:`.plot`: the orig-vs-transf figure.
"""
