"""The job-submit plugin's pure part: requests as Slurm's job_desc and back."""
