"""ctl: the controller of a hardware-in-the-loop network testbed."""
