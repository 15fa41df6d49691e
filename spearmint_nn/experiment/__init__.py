"""What is on disk: the config, the folder layout, the job store and its rules; torch-free."""
