"""The host-side sampler of a run (`sampler.py`): shipped to Linux hosts as one constant
script (python3, standard library only) that prints interface counters and probe outputs
at 10 Hz on one SSH channel.
"""
