"""One module per replicated paper: run specs, experiments, aggregation, figures and claims."""
