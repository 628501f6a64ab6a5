"""Batch review building blocks (no flow here; the batch job is :mod:`clausegate.pipeline.batch`).

- :mod:`clausegate.batch.sources`  where contracts come from (folder, manifest, ``python:`` factory)
- :mod:`clausegate.batch.plan`     what to review: skip reviewed / in-flight / duplicate contracts
- :mod:`clausegate.batch.dispatch` how: reviews as tasks of the calling run, or deployment runs; the loop
- :mod:`clausegate.batch.summary`  per-contract rows and totals as CSV / JSON / artifacts
"""
