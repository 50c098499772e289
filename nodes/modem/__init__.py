"""Modem and GPS readers for the field test: parsers per tool family, the normalized RadioSample,
handover detection, a serial AT poller and (for tests) an AT modem emulator.

Everything in this package is stdlib-only: it also runs on the modem host under /usr/bin/python3.
"""
