"""The daemon: the polling loop, the proposer thread, its log and its summary files."""
