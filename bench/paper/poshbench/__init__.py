"""posh's benchmark harness: the POSH paper's evaluation, reproduced on an emulated link or a real
deployment, in one command (`bench/paper/run --help`)."""
