"""Campaigns: many runs of one scenario, unattended, crash-safe and resumable.

Pure core: `spec` (the campaign file), `plan` (expansion, order, validation against the
scenario and inventory), `timing` (windows, estimates), `policy` (failure classes, retry
decisions, the next scheduler step). Shell: `store` (the interface) with `sqlite_store`
(the default back-end) behind `backends.open_store`, `health` (the check before each
run), `progress` (counts, ETA, telemetry), `scheduler` (the loop), `report` (the morning
report). May import run/, lab/, results/, telemetry/, scenarios/, drivers and base.
"""
