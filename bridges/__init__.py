"""Link shapers (drivers): the `Shaper` contract and its I/O loop (`base`), Linux tc (`tc`),
the dnpipe forwarder (`dnpipe_driver`, C sources in dnpipe/), FreeBSD dummynet
(`dummynet/`, with ipfw's output parsed by `ipfw_parse`). A back-end plans commands (pure),
reads back, verifies and restores. May import the controller's base modules only.
"""
