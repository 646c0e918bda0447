"""The evaluation harness: every method on identical tasks and seeds, streamed to a run folder, summarised as
paper-style tables with paired 95% intervals, sweeps, plots and a report.

Modules, one job each: :mod:`.config` (what a run is), :mod:`.runfolder` (where it lives, refusal of a
different config; the episode records themselves are :mod:`steer_envs.episodes`), :mod:`.stats` (paired
bootstrap), :mod:`.tables` (markdown), :mod:`.runner` (episodes), :mod:`.sweeps`, :mod:`.plots`,
:mod:`.report`, :mod:`.demo`; :mod:`.setting` (the one setting card), :mod:`.provenance` (the one git helper).

The results pages are written by :mod:`benchmarks.pages` (one page builder; the generators ``results_doc``,
``actguide_doc`` here and ``benchmarks.handoff_results`` make the runs and hand the page to it); the perf suite
is not installed: it lives in the checkout's ``perf/`` folder.
"""
