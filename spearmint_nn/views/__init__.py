"""Reading an experiment: live progress, status, plots and the HTML report."""
