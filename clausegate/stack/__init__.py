"""The local stack behind `clausegate up` / `down` / `status`.

``up`` starts, in the project folder's ``.clausegate/`` (its own PREFECT_HOME, database, logs and a state
file):

1. an embedded PostgreSQL (``.clausegate/postgres``, Unix socket only; ``--database sqlite`` keeps Prefect's
   SQLite file) and a Prefect server on it (``prefect server start``; UI on the same port),
2. configuration, each step idempotent: the ``clausegate`` process work pool with queues
   ``high``/``normal``/``low`` (priorities 1/2/3), the global concurrency and rate limits the flows
   use, the ``clausegate_timezone`` variable (local IANA zone for the 02:00 schedule), the block
   types (so the UI can create blocks), the automations in ``deployments/automations.yaml``,
3. ``prefect deploy --no-prompt`` of every deployment in ``prefect.yaml`` whose entrypoint exists,
4. the warm-start process (flow runs fork from it instead of starting a new Python), a process worker
   on the pool, and the gateway (``clausegate gateway``) when a SlackSettings block exists (a local
   fake Slack + demo block is created when none does),
5. the supervisor, which restarts any of these that exits (``supervise``); ``up`` on a partly running
   stack starts only the missing processes.

Every process is started in its own session (process group); its pid, process start time and
command are written to ``.clausegate/stack.json`` *as soon as it starts*.  ``down`` stops exactly
those processes (a pid whose start time no longer matches is left alone: it is not ours any more).
``up --api-url URL`` uses an existing server instead of starting one (then ``down`` leaves it).

Modules (import from them directly; this package module imports nothing, so that the warm-start
client ``python -m clausegate.stack.warmstart warm-run``, started once per flow run, stays lean):

- ``lifecycle``      ``up``, ``down``, ``status``
- ``starters``       how each process starts, by name (used by ``up``, the supervisor and a partial ``up``)
- ``supervise``      the supervisor: restarts with back-off; what ``up`` does with a partly running stack
- ``state``          ``StackPaths``, ``StackOptions``, the state file and its lock, ``StackError`` and its codes
- ``processes``      ``ProcessRecord``; start/stop processes; port and health waits
- ``database``       the embedded PostgreSQL (start, fast shutdown), SQLite, or the environment's database URL
- ``environment``    the environment and Prefect client settings of the stack's processes; time zone
- ``configuration``  work pool, queues, limits, variables, block types; pool command; nightly schedule
- ``automations``    ``deployments/automations.yaml`` applied by name
- ``deploy``         ``prefect deploy`` of ``prefect.yaml``
- ``demo_slack``     the local fake Slack and demo SlackSettings block (safe default)
- ``warmstart``      the fork server (zygote), the pool's ``warm-run`` client and ``run_in_zygote`` (also used by
                     `clausegate review`, clausegate/cli/launch.py)
- ``temporary_server`` the temporary Prefect server of a one-off command with no stack, started with the command

Error codes: ``CG-STACK-PORT-IN-USE``, ``CG-STACK-START``, ``CG-STACK-DEPLOY``,
``CG-STACK-CONFIG``, ``CG-STACK-RUNNING``, ``CG-STACK-DATABASE`` (runbook: docs/runbook.md).
"""
