"""The cluster's pure core: Slurm's rules for jobs, nodes, partitions, the configuration
and the scheduler, as plain functions and dataclasses. Nothing here imports Django, reads
the clock or touches a file the caller did not name; the services around it do."""
