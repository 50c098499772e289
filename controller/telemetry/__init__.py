"""Telemetry: the points schema (`points`), the per-host samplers and shaper counter streams
of a run (`hosts`), the SNMP poller (`snmp/`), the durable spool and exactly-once push
(`spool`), and where points go (`influx`). Drivers never call InfluxDB: they produce data,
this package turns it into points. May import the drivers, parsers and the base.
"""
