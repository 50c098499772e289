"""One run on the rack: `prepare` (everything refusable before the rack is touched),
`runner` (the state machine: prepare, configure, measure, collect, restore, summarize),
`recovery` (restore a rack a dead controller left shaped), `replay` (a run rebuilt from
its record). May import scenarios/, results/, telemetry/, traffic/, drivers and base.
"""
