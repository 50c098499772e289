"""The virtual rack: network namespaces standing in for the lab rack, with real sshd, dnpipe
forwarders, snmpd, modem test doubles and a local InfluxDB.

`rack` plans (pure) and builds or removes it, `ops` brings it up for a command and checks it
over SSH, `influxd` runs the InfluxDB server, `snmpd_conf` renders the agents' config. May
import the drivers and the base; nothing in a run depends on it (the physical rack path
is the same code).
"""
