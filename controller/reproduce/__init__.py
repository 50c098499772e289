"""`ctl reproduce`: every paper's tables and figures regenerated on the current rack, as one group
of campaigns (a reproduction) and one morning report with a verdict per qualitative claim.

Pure core: `papers` (the papers' own numbers and claims' context), `design` (which campaigns a
reproduction queues in --smoke / --quick / --full, from the algorithms the rack can run),
`cells` (measured values per table cell, with their statistics), `verdicts` (one rule per
claim: reproduced / not reproduced / not runnable here / inconclusive, with the evidence),
`compare` (two reproductions side by side). Shell: `algorithms` (what the rack can run: the
kernel's congestion controls and ctl's BPF ones), `record` (the reproduction's record in the
state dir), `queue` (validates and submits the campaigns through the campaign machinery),
`measure` (reads the campaigns' run summaries), `figures` and `report` (HTML + Markdown).
Same layer as campaign/ and field/: may import them, run/, lab/, scenarios/, results/ and below.
"""
