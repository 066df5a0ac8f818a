"""What pages show, sans I/O: formatting, paging and sorting, the job form, the map."""
