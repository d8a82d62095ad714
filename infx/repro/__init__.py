"""Repro bundles: a hashed receipt per point (:mod:`infx.repro.writer`, the receipt itself is
:mod:`infx.results.receipt`), ``infx verify``, ``infx diff-env`` (:mod:`infx.repro.diffenv`) and the
verdict of a rerun against its original (:mod:`infx.repro.verdict`). ``infx repro`` itself runs a sweep, so
it sits above this stage, in :mod:`infx.sweep.rerun`."""
