"""FreeBSD dummynet bridges: the `dummynet` shaper back-end.

Modules: `shaper` (the back-end: plan, verify, restore; its docstring explains the ipfw
rule design), `values` (dummynet's limits and how it reads and prints numbers), `queues`
(BDP queue sizing), `rules` (ipfw rules and counters as data). Parsing of ipfw's output is
`bridges.ipfw_parse` (records in `bridges.ipfw_records`, rules/sysctl/sampler in `bridges.ipfw_host`). Imports the shaper contract (bridges.base) and the base only.
"""
