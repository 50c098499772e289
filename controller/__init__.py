"""ctl: the controller of a hardware-in-the-loop network testbed.

Packages, highest layer first; a module imports only its own layer or layers below
(tests/unit/controller/test_layout.py checks it, and that there are no import cycles):

    cli/         the thin argv layer: one module per command
    campaign/    sweeps: file spec, expansion, policy, store, health, scheduler, report
    field/       field tests on modem hosts: ship the logger, control it, Table 1, figures
    run/         one run: the state machine, recovery after a dead controller, replay
    lab/         the virtual rack (namespaces, sshd, dnpipe, snmpd) and its InfluxDB
    rack/        operations on any rack outside a run (a link's shaping and calibration)
    scenarios/   the experiments: parameters, plan, summary, figures, paper tables
    results/     run records, summaries, statistics and figures over runs
    telemetry/   samplers, SNMP, the spool and InfluxDB
    traffic/     traffic generators driven over SSH (iperf3, BitTorrent)
    (drivers)    nodes/ (endpoints, modem hosts) and bridges/ (link shapers)
    base         the flat modules here (errors, settings, units, registry, commands, ssh,
                 inventory, topology, lock, plots, argutil), parsers/ and labdb/ (the
                 optional lab database: connection, versioned migrations)
"""
import os

# pydantic scans every installed distribution's entry points for plugins when it builds its first
# model (~30 ms of every ctl start-up). ctl uses none: no third-party code runs inside its
# validation of untrusted input. A PYDANTIC_DISABLE_PLUGINS the caller set is kept.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
