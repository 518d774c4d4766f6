"""Devices and hosts: the mesh and its shardings (`sharding`), the hosts of a multi-host run
(`distributed`), and what a compiled step sends between devices (`hlo`)."""
