"""Field-test mode, controller side: ship and start the logger on modem hosts, read its status, stop
it, fetch its spool into a field run record, and report (the WiBro paper's Table 1 and Fig. 4).

The logger itself (nodes/fieldlog) runs on the modem host and needs no controller: this module only
talks to it over SSH, in short commands (argv tuples; the one `python3 -c` script is a constant with
its data in argv and stdin):

    install   the logger as one zip file `<root>/fieldlog-<sha12>.pyz` (sha256-checked, atomic; the
              link `<root>/fieldlog.pyz` names the latest, for a boot hook -- see nodes/fieldlog/__main__.py)
    start     `python3 <pyz> start --root R --config JSON --token-stdin` -> detached daemon, PID file
    status    `python3 <pyz> status --root R`
    stop      `python3 <pyz> stop --root R --pid P` (refused if P is not the logger's PID)
    cat       `python3 <pyz> cat ...` -> a chunk of a run file, base64 + sha256 (the fetch)

Where the logger keeps its runs on the host (`root`): /var/lib/ctl-field on a physical rack (survives a
reboot); `<runtime_dir>/hosts/<host>/field` on a virtual rack (its hosts share one file system).

Field run record `runs/<id>/` (controller.results.records conventions): manifest.json (scenario "field";
status `logging` while loggers run on their own -- deliberately not `running`, which crash recovery
would take for a controller that died mid-run --, then `stopped` / `completed`), commands.jsonl,
raw/<host>/ (the host's run files, byte for byte: metrics.jsonl, metrics.influx.json, run.json,
state.json, logger.log, raw radio/ping/workload/gps logs), metrics.jsonl (all hosts' spools, host by
host: for one host identical to its spool), summary.json, fig4_timeline.png, download_cdf.png.

Modules: `options` (settings, pure), `ship` (the zip and its commands, pure), `host` (the
remote operations: start, status, stop, fetch), `records` (field run records and spool
merging), `stats` (Table 1, pure), `figures` (Fig. 4 and the report). May import the run
record layer, telemetry, the modem drivers (nodes.modem) and the base; not the CLI.
"""
