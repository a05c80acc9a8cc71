"""The detector family: training data, the network, training, the bundle and its evaluation."""
