"""Power saving's pure core: its slurm.conf keys, the decisions of the power cycle, the
resume file, the changeable node features and how the power programs are run. No Django,
no clock."""
