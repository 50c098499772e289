"""Endpoint and modem-host drivers, and code that runs on hosts: the MPTCP endpoint driver
(`mptcp`), the 10 Hz host sampler (`agent/`, shipped as a constant script), the modem
readers (`modem/`) and the field logger (`fieldlog/`, shipped as a zip). What runs on a
host is standard library only; the drivers may import the controller's base modules.
"""
