"""WinoWhat: WinoGrande/WSC scored by partial evaluation, original vs paraphrased, per category.

* :mod:`.requests`: (context, continuation) requests of both methods;
* :mod:`.items`: the item table (datasets, variants, categories, alignment, user samples);
* :mod:`.scoring`: score items with a scorer of :func:`csbench.lm.open_scorer`;
* :mod:`.stats`: accuracy with bootstrap intervals, McNemar's exact test;
* :mod:`.plot`: the orig-vs-transf figure.
"""
